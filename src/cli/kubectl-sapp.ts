#!/usr/bin/env node
// kubectl-sapp, the `kubectl sapp` plugin's entry (kubectl runs any
// `kubectl-<name>` on the PATH as `kubectl <name>`); the plugin is plugin.ts.
// A plan's wall time is mostly node starting and compiling the plugin's ~70
// modules, each run anew: so the entry first turns on node's on-disk compile
// cache (node >= 22.1; in the OS temp directory, or NODE_COMPILE_CACHE; off
// with NODE_DISABLE_COMPILE_CACHE), then loads the plugin. The import must be
// dynamic: static imports are compiled before any line here runs.

import { enableCompileCache } from 'node:module';

enableCompileCache?.();
await import('./plugin.ts');
