// A package loaded on its first use instead of at start, synchronously (so its
// callers stay plain functions). For packages only some apps need: with no app
// the operator never compiles a regex or steps a cron schedule, and RE2JS and
// cron-parser (with luxon) cost about 2 MiB of RSS each once loaded
// (docs/benchmarks.md, "RSS at zero objects").

import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** `lazyRequire<typeof import('pkg')>('pkg')()` loads `pkg` on the first call and returns it ever after. */
export function lazyRequire<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(specifier) as T);
}
