// What the operator loads at run time is what its image ships: every package
// that src/ imports for real (not `import type`) is a production dependency,
// and @kubernetes/client-node, which tests, the demo and the rig still use,
// is not among them (importing it alone costs a process ~80 MiB of RSS).
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { globalUses, loadsOf, moduleId, parse, type Source } from './testing/module-loads.ts';

const src = dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(readFileSync(join(src, '..', 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };

/** The runtime's source files: what tsconfig.build.json compiles into dist/ (tests and src/testing aside). */
function runtimeFiles(dir = src): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return path === join(src, 'testing') ? [] : runtimeFiles(path);
    return /\.c?ts$/.test(e.name) && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Packages a file loads when it runs, however (src/testing/module-loads.ts): not `import type`, nor `typeof import()`. */
function loadedPackages(file: string, source: Source): string[] {
  return loadsOf(source).flatMap((l) => (l.specifier === undefined ? [] : [moduleId(src, file, l.specifier)]))
    .filter((m) => m.startsWith('npm:')).map((m) => m.slice('npm:'.length));
}

describe('the runtime\'s dependencies', () => {
  const trees = new Map(runtimeFiles().map((f) => [relative(src, f), parse(readFileSync(f, 'utf8'), f)]));
  const loaded = new Map<string, string[]>();
  for (const [file, tree] of trees) {
    for (const p of loadedPackages(file, tree)) loaded.set(p, [...(loaded.get(p) ?? []), file]);
  }

  it('finds the packages it should (the scan works)', () => {
    assert.ok(loaded.has('prom-client') && loaded.has('yaml'), `found: ${[...loaded.keys()].join(', ')}`);
    // Loaded on first use only (util/lazy-require.ts), and by name in a type too: only the load counts.
    assert.deepEqual(loadedPackages('util/x.ts', "const re2js = lazyRequire<typeof import('re2js')>('re2js');\ntype C = typeof import('cron-parser');"), ['re2js']);
  });

  it('are all production dependencies', () => {
    const missing = [...loaded].filter(([p]) => !pkg.dependencies?.[p]).map(([p, files]) => `${p} (${files.join(', ')})`);
    assert.deepEqual(missing, [], 'imported at run time but not in dependencies');
  });

  it('do not include @kubernetes/client-node, which is for tests, the demo and the rig', () => {
    assert.equal(loaded.get('@kubernetes/client-node'), undefined);
    assert.equal(pkg.dependencies?.['@kubernetes/client-node'], undefined);
    assert.ok(pkg.devDependencies?.['@kubernetes/client-node'], 'tests still use it');
  });

  it('load node:http only as CommonJS (an ES import of it loads undici: ~13 MiB)', () => {
    const esImports = [...trees].filter(([f, tree]) => loadsOf(tree).some((l) => l.how !== 'require' && l.specifier && moduleId(src, f, l.specifier) === 'node:http'));
    assert.deepEqual(esImports.map(([f]) => f), [], 'import { http } from runtime/node-http.ts instead');
  });

  it('need no WebAssembly, which the image\'s --lite-mode leaves out (so no fetch or WebSocket: Node\'s undici compiles its parser to it)', () => {
    const users = [...trees].filter(([, tree]) => ['fetch', 'WebSocket', 'WebAssembly'].some((g) => globalUses(tree, g).length > 0));
    assert.deepEqual(users.map(([f]) => f), [], 'use runtime/node-http.ts or runtime/outbound.ts');
  });

  it('leave out packages nothing loads at run time', () => {
    const unused = Object.keys(pkg.dependencies ?? {}).filter((p) => !loaded.has(p));
    assert.deepEqual(unused, [], 'in dependencies, but only type-imported or not at all: devDependencies');
  });
});
