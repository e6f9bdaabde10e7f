// The node-side half of the cache usage reporter: how many bytes each model
// folder KServe's agent made holds under the node's models directory
// (<models volume>/models/<storage key>, render/model-cache-usage.ts). The
// walk is bounded (a depth and a number of entries per folder) and follows no
// symbolic link, so a model laid out to be slow or endless to walk costs a
// known amount; a folder past a bound is reported with what was counted by
// then, which its declared size is already below when the bound is large.
// Sizes are apparent sizes (st.size): what a model server reads, which a
// sparse file cannot hide.

import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isStorageKey } from '../render/model-cache-usage.ts';

export interface WalkBounds { maxDepth: number; maxEntries: number }

export const DEFAULT_BOUNDS: WalkBounds = { maxDepth: 16, maxEntries: 100_000 };

/** Bytes in each storage-key folder under `<modelsDir>/models`; no folder (no model yet) reads as none. */
export async function measureModelFolders(modelsDir: string, bounds: WalkBounds = DEFAULT_BOUNDS): Promise<Map<string, number>> {
  const root = join(modelsDir, 'models');
  const sizes = new Map<string, number>();
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return sizes;
    throw err;
  }
  for (const name of names.filter(isStorageKey)) {
    const st = await lstat(join(root, name)).catch(() => undefined);
    if (st?.isDirectory()) sizes.set(name, await folderBytes(join(root, name), bounds));
  }
  return sizes;
}

/** The bytes of the regular files under `dir`, within `bounds`; links are not followed, a folder gone meanwhile counts nothing. */
async function folderBytes(dir: string, bounds: WalkBounds): Promise<number> {
  let bytes = 0;
  let entries = 0;
  const stack: Array<{ path: string; depth: number }> = [{ path: dir, depth: 0 }];
  while (stack.length) {
    const { path, depth } = stack.pop()!;
    const children = await readdir(path, { withFileTypes: true }).catch(() => []);
    for (const c of children) {
      if (++entries > bounds.maxEntries) return bytes;
      const child = join(path, c.name);
      if (c.isDirectory()) {
        if (depth + 1 < bounds.maxDepth) stack.push({ path: child, depth: depth + 1 });
      } else if (c.isFile()) {
        bytes += (await lstat(child).catch(() => undefined))?.size ?? 0;
      }
    }
  }
  return bytes;
}
