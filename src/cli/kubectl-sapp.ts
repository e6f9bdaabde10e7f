#!/usr/bin/env node
// kubectl-sapp, the `kubectl sapp` plugin's entry (kubectl runs any
// `kubectl-<name>` on the PATH as `kubectl <name>`); the plugin is plugin.ts.
// A plan's wall time is mostly node starting and compiling the plugin's ~70
// modules, each run anew: so the entry first turns on node's on-disk compile
// cache (node >= 22.1), then loads the plugin. The import must be dynamic:
// static imports are compiled before any line here runs.
//
// The cache lives in the user's cache directory ($XDG_CACHE_HOME or ~/.cache,
// under serverlessapp-operator/), not node's default in the shared temp
// directory: it outlives a reboot's cleanup of /tmp and is no other user's.
// NODE_COMPILE_CACHE names another directory, NODE_DISABLE_COMPILE_CACHE
// turns it off. A cache that cannot be written is no error: node then just
// compiles (enableCompileCache reports, never throws). The first run writes
// it; later runs read it.
//
// A node older than the plugin needs stops here with a message naming both
// versions. node:module is imported whole: a named import of a function an
// old node lacks fails before any line here runs.

import * as nodeModule from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { MINIMUM_NODE, olderThan } from './node-version.ts';

if (olderThan(process.versions.node, MINIMUM_NODE)) {
  process.stderr.write(`error: kubectl sapp needs Node.js ${MINIMUM_NODE} or later; ${process.execPath} is ${process.version}\n`);
  process.exit(1);
}

function compileCacheDir(): string | undefined {
  if (process.env['NODE_COMPILE_CACHE']) return undefined; // node reads it itself
  const base = process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache');
  return join(base, 'serverlessapp-operator', 'kubectl-sapp-compile-cache');
}

try {
  nodeModule.enableCompileCache?.(compileCacheDir());
} catch {
  // homedir() throws without a home directory and a passwd entry: run uncached.
}
await import('./plugin.ts');
