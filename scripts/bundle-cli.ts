// Bundles the kubectl plugin into dist/cli/ with esbuild (`npm run build` runs
// it after tsc, which builds the operator). A plan's wall time is mostly node
// starting and loading modules: the plugin loads about 90 of its own and 72 of
// `yaml`'s, and each costs about half a millisecond to resolve, read and link
// (docs/benchmarks.md, "Reads before the planner"); a few files cost a few.
// Code splitting keeps the plugin's lazy steps lazy: the entry still turns on
// the compile cache before the plugin loads, and the planner's modules still
// load while the reads are in flight (plugin.ts).
//
// Not bundled: node's own modules, and what the source loads by a name chosen
// at run time (util/lazy-require.ts: cron-parser, re2js), which node resolves
// from the node_modules above the output directory, as for the source.

import { build } from 'esbuild';
import { chmodSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Writes `outdir`/kubectl-sapp.js and its chunks; returns the files written. Throws on an esbuild warning. */
export async function bundleCli(outdir: string): Promise<string[]> {
  // A chunk's name carries its content's hash: old ones would pile up.
  rmSync(`${outdir}/chunks`, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { 'kubectl-sapp': 'src/cli/kubectl-sapp.ts' },
    outdir,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // The plugin's stack traces can point at src/ (node --enable-source-maps).
    sourcemap: true,
    logLevel: 'silent',
    metafile: true,
    // `yaml` ships CommonJS that requires node's modules; ES module output has no `require` of its own
    // (esbuild's answer in its issue #1921: give each output file one).
    banner: { js: "import { createRequire as __sappCreateRequire } from 'node:module'; const require = __sappCreateRequire(import.meta.url);" },
  });
  // A warning here (a require esbuild cannot follow, say) is a plugin that may fail at run time.
  if (result.warnings.length) throw new Error(`esbuild warned bundling the kubectl plugin:\n${result.warnings.map((w) => `  ${w.text}${w.location ? ` (${w.location.file}:${w.location.line})` : ''}`).join('\n')}`);
  // Run directly or through a link on the PATH, as kubectl runs a plugin.
  chmodSync(`${outdir}/kubectl-sapp.js`, 0o755);
  return Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js'));
}

if (import.meta.main) {
  const files = await bundleCli(`${root}dist/cli`);
  console.log(`bundled the kubectl plugin with esbuild: dist/cli/kubectl-sapp.js and ${files.length - 1} chunks`);
}
