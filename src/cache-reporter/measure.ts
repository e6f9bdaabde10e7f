// The node-side half of the cache usage reporter: how many bytes each model
// folder KServe's agent made holds under the node's models directory
// (<models volume>/models/<storage key>, render/model-cache-usage.ts). The
// walk is bounded (a depth and a number of entries per folder), reads each
// directory as a stream (a folder of millions of entries is never listed
// whole) and follows no symbolic link, so a model laid out to be slow or
// endless to walk costs a known amount. A folder the walk cannot measure
// whole (past a bound, or a directory or file it may not read) is reported as
// UNMEASURED, which is more than any declared size: a tenant cannot hide a
// model's bytes behind depth, padding entries or permissions.
// Sizes are apparent sizes (st.size): what a model server reads, which a
// sparse file cannot hide.

import { lstat, opendir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isStorageKey, UNMEASURED } from '../render/model-cache-usage.ts';

export interface WalkBounds { maxDepth: number; maxEntries: number }

export const DEFAULT_BOUNDS: WalkBounds = { maxDepth: 16, maxEntries: 100_000 };

/** Bytes in each storage-key folder under `<modelsDir>/models` (UNMEASURED past the bounds); no folder (no model yet) reads as none. */
export async function measureModelFolders(modelsDir: string, bounds: WalkBounds = DEFAULT_BOUNDS): Promise<Map<string, number>> {
  const root = join(modelsDir, 'models');
  const sizes = new Map<string, number>();
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if (isGone(err)) return sizes;
    throw err;
  }
  for (const name of names.filter(isStorageKey)) {
    const st = await lstat(join(root, name)).catch(() => undefined);
    if (st?.isDirectory()) sizes.set(name, await folderBytes(join(root, name), bounds));
  }
  return sizes;
}

/** A file or folder removed while the walk ran (KServe deleting a model): it holds nothing. */
const isGone = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/** The bytes of the regular files under `dir`, or UNMEASURED when the walk cannot see all of it within `bounds`. Links are not followed. */
async function folderBytes(dir: string, bounds: WalkBounds): Promise<number> {
  let bytes = 0;
  let entries = 0;
  const stack: Array<{ path: string; depth: number }> = [{ path: dir, depth: 0 }];
  try {
    while (stack.length) {
      const { path, depth } = stack.pop()!;
      let listing;
      try {
        listing = await opendir(path);
      } catch (err) {
        if (isGone(err)) continue;
        throw err;
      }
      for await (const c of listing) {
        if (++entries > bounds.maxEntries) return UNMEASURED;
        const child = join(path, c.name);
        if (c.isDirectory()) {
          if (depth + 1 >= bounds.maxDepth) return UNMEASURED;
          stack.push({ path: child, depth: depth + 1 });
        } else if (c.isFile()) {
          bytes += await lstat(child).then((st) => st.size, (err: unknown) => { if (isGone(err)) return 0; throw err; });
        }
      }
    }
  } catch {
    // Not readable (EACCES, EIO): what it holds is not known, so it is not taken as small.
    return UNMEASURED;
  }
  return bytes;
}
