// What the operator loads at run time is what its image ships: every package
// that src/ imports for real (not `import type`) is a production dependency,
// and @kubernetes/client-node, which tests, the demo and the rig still use,
// is not among them (importing it alone costs a process ~80 MiB of RSS).
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(readFileSync(join(src, '..', 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };

/** The runtime's source files: what tsconfig.build.json compiles into dist/. */
function runtimeFiles(dir = src): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return runtimeFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && e.name !== 'fixtures.ts' ? [path] : [];
  });
}

/** Packages a file loads when it runs: static imports and re-exports that are not type-only, and dynamic import(). */
function loadedPackages(text: string): string[] {
  const code = text.replace(/^\s*\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '');
  const specifiers = [
    ...[...code.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\bfrom\s+'([^']+)'/gm)].map((m) => m[1]!),
    ...[...code.matchAll(/^\s*import\s+'([^']+)'/gm)].map((m) => m[1]!),
    ...[...code.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].map((m) => m[1]!),
  ];
  return specifiers
    .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
    .map((s) => s.split('/').slice(0, s.startsWith('@') ? 2 : 1).join('/'));
}

describe('the runtime\'s dependencies', () => {
  const loaded = new Map<string, string[]>();
  for (const file of runtimeFiles()) {
    for (const p of loadedPackages(readFileSync(file, 'utf8'))) loaded.set(p, [...(loaded.get(p) ?? []), relative(src, file)]);
  }

  it('finds the packages it should (the scan works)', () => {
    assert.ok(loaded.has('prom-client') && loaded.has('yaml'), `found: ${[...loaded.keys()].join(', ')}`);
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
    const esImports = runtimeFiles().filter((f) => /^\s*import\s+(?!type\s)[^;]*?\bfrom\s+'node:http'/m.test(readFileSync(f, 'utf8')));
    assert.deepEqual(esImports.map((f) => relative(src, f)), [], 'import { http } from runtime/node-http.ts instead');
  });

  it('need no WebAssembly, which the image\'s --lite-mode leaves out (so no fetch or WebSocket: Node\'s undici compiles its parser to it)', () => {
    const users = runtimeFiles().filter((f) => /\bfetch\(|\bnew\s+WebSocket\b|\bWebAssembly\./.test(readFileSync(f, 'utf8').replace(/\/\/.*$/gm, '')));
    assert.deepEqual(users.map((f) => relative(src, f)), [], 'use runtime/node-http.ts or runtime/outbound.ts');
  });

  it('leave out packages nothing loads at run time', () => {
    const unused = Object.keys(pkg.dependencies ?? {}).filter((p) => !loaded.has(p));
    assert.deepEqual(unused, [], 'in dependencies, but only type-imported or not at all: devDependencies');
  });
});
