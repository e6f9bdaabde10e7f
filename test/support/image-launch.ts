// How the image launches the operator, read from the Dockerfile so the
// benchmarks run node exactly as a pod does: the node flags of its
// ENTRYPOINT and its NODE_OPTIONS. The Dockerfile is the one place they are
// written; the chart leaves the image's command alone.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ImageLaunch {
  /** Flags between node and the script, e.g. ['--lite-mode']. */
  nodeArgs: string[];
  /** The image's NODE_OPTIONS ('' when it sets none). */
  nodeOptions: string;
}

const DOCKERFILE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'Dockerfile');

export function imageLaunch(dockerfile = readFileSync(DOCKERFILE, 'utf8')): ImageLaunch {
  const lines = dockerfile.replace(/\\\n/g, ' ').split('\n');
  // The runtime stage is the last FROM; only its ENV and ENTRYPOINT count.
  const runtime = lines.slice(lines.findLastIndex((l) => /^FROM\s/i.test(l)));
  const entrypoint = runtime.findLast((l) => /^ENTRYPOINT\s/i.test(l));
  if (!entrypoint) throw new Error('the Dockerfile\'s runtime stage has no ENTRYPOINT');
  const argv = JSON.parse(entrypoint.replace(/^ENTRYPOINT\s+/i, '')) as string[];
  const script = argv.indexOf('dist/main.js');
  if (script < 1) throw new Error(`the Dockerfile's ENTRYPOINT does not run dist/main.js: ${entrypoint}`);
  const env = runtime.findLast((l) => /^ENV\s+NODE_OPTIONS=/i.test(l));
  return { nodeArgs: argv.slice(1, script), nodeOptions: env ? unquote(env.replace(/^ENV\s+NODE_OPTIONS=/i, '').trim()) : '' };
}

function unquote(value: string): string {
  return /^".*"$/.test(value) ? JSON.parse(value) as string : value;
}
