// The folder layout is the architecture, and this test keeps it true: pure
// layers never reach into the I/O edges or the layers above them, and no module
// imports itself back through a cycle. Type-only imports are free (they vanish
// at run time); value imports are what the rules below govern.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const src = new URL('.', import.meta.url).pathname;

/**
 * Which top-level folders each folder may import values from (its own is always
 * allowed). api, scaling and rollout are one pure domain layer: validation reads
 * window and analysis rules, the rollout reads durations (file cycles are still refused).
 */
const ALLOWED: Record<string, string[]> = {
  util: [],
  api: ['util', 'scaling', 'rollout'],
  scaling: ['util', 'api', 'rollout'],
  rollout: ['util', 'api', 'scaling'],
  render: ['util', 'api', 'rollout', 'scaling'],
  prewarm: ['util', 'api'],
  runtime: ['util'],
  // The planner decides what a reconcile does, purely: it reads the domain and renders, never the I/O edges.
  planner: ['util', 'api', 'scaling', 'rollout', 'render', 'prewarm'],
  controllers: ['util', 'api', 'scaling', 'rollout', 'render', 'prewarm', 'runtime', 'planner'],
  '.': ['util', 'api', 'scaling', 'rollout', 'render', 'prewarm', 'runtime', 'planner', 'controllers'],
  // The kubectl plugin, an entry point of its own beside main.ts: it reads the API and uses the runtime's client; no layer imports it.
  cli: ['util', 'api', 'runtime'],
};

/** The I/O edges that live beside pure code on purpose: each may also use the runtime's outbound HTTP client. */
const IO_EDGES: Record<string, string[]> = {
  'rollout/analysis.ts': ['runtime/outbound.ts'],
  'prewarm/warmup-runner.ts': ['runtime/outbound.ts', 'runtime/clock.ts'],
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Value imports of a file, as paths relative to src/. */
function valueImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^(import|export)\s+(type\s+)?([^;]*?)\s+from\s+'(\.[^']+)'/gms)) {
    if (m[2]) continue;
    const names = m[3] ?? '';
    // `import { type A, type B }` is type-only too.
    if (/^\{[^}]*\}$/s.test(names.trim()) && names.replace(/[{}\s]/g, '').split(',').filter(Boolean).every((n) => n.startsWith('type'))) continue;
    out.push(relative(src, resolve(dirname(file), m[4]!)));
  }
  return out;
}

const layerOf = (path: string) => (path.includes('/') ? path.split('/')[0]! : '.');

describe('architecture', () => {
  const files = sources(src).map((f) => relative(src, f));
  const graph = new Map(files.map((f) => [f, valueImports(join(src, f))]));

  it('each folder imports only from the layers below it', () => {
    const violations: string[] = [];
    for (const [file, imports] of graph) {
      const from = layerOf(file);
      for (const target of imports) {
        const to = layerOf(target);
        if (to === from || ALLOWED[from]?.includes(to) || IO_EDGES[file]?.includes(target)) continue;
        violations.push(`${file} -> ${target}`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it('nothing outside the kubectl plugin imports it', () => {
    const into = [...graph].flatMap(([file, imports]) => imports.filter((t) => layerOf(t) === 'cli' && layerOf(file) !== 'cli').map((t) => `${file} -> ${t}`));
    assert.deepEqual(into, []);
    assert.ok(Object.entries(ALLOWED).every(([layer, allowed]) => layer === 'cli' || !allowed.includes('cli')));
  });

  it('has no import cycles', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'visiting') {
        cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
        return;
      }
      state.set(file, 'visiting');
      for (const next of graph.get(file) ?? []) if (graph.has(next)) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of graph.keys()) visit(file, []);
    assert.deepEqual(cycles, []);
  });

  it('has one write path: in controllers/ only children.ts writes to the API server (status goes through runtime/status.ts)', () => {
    const writers = sources(join(src, 'controllers'))
      .filter((f) => /\bclient\.(apply|create|delete|mergePatch|patch|update)\(/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(src, f));
    assert.deepEqual(writers, ['controllers/children.ts']);
  });
});
