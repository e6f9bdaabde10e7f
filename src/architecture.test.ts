// The folder layout is the architecture, and this test keeps it true: pure
// layers never reach into the I/O edges or the layers above them, and no module
// imports itself back through a cycle. Type-only imports are free (they vanish
// at run time); value imports are what the rules below govern.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = new URL('.', import.meta.url).pathname;

/**
 * The layers from the bottom up: a folder may import only from folders before
 * it, never up the list (api's validation judges a schedule with util/schedule.ts
 * and an analysis target with api's own rule, not with scaling's or rollout's).
 */
const ORDER = ['util', 'api', 'rollout', 'scaling', 'render', 'prewarm', 'planner', 'runtime', 'effects', 'controllers', '.', 'cli'];

/** Which earlier folders each folder may import values from (its own is always allowed). */
const ALLOWED: Record<string, string[]> = {
  util: [],
  api: ['util'],
  rollout: ['util', 'api'],
  scaling: ['util', 'api', 'rollout'],
  render: ['util', 'api', 'rollout', 'scaling'],
  prewarm: ['util', 'api'],
  runtime: ['util'],
  // The planner decides what a reconcile does, purely: it reads the domain and renders, never the I/O edges.
  planner: ['util', 'api', 'scaling', 'rollout', 'render', 'prewarm'],
  // The outbound side of a plan (warmup requests, metric queries): the domain's rules, sent over the runtime's client.
  effects: ['util', 'api', 'rollout', 'prewarm', 'runtime'],
  controllers: ['util', 'api', 'scaling', 'rollout', 'render', 'prewarm', 'runtime', 'planner', 'effects'],
  '.': ['util', 'api', 'scaling', 'rollout', 'render', 'prewarm', 'runtime', 'planner', 'effects', 'controllers'],
  // The kubectl plugin, an entry point of its own beside main.ts: it reads the API and uses the runtime's client; no layer imports it.
  // `plan` runs what the operator runs: its configuration (config.ts, operator.ts's detection), its checks, planner and write rules.
  cli: ['util', 'api', 'scaling', 'rollout', 'render', 'prewarm', 'runtime', 'planner', 'controllers', '.'],
};

/** The pure layers: nothing they reach, however indirectly, may do I/O. */
const PURE = ['util', 'api', 'render', 'rollout', 'scaling', 'planner', 'prewarm'];
/** What I/O means here: the network, processes, threads, and the API client. */
const IO = ['node:http', 'node:https', 'node:net', 'node:tls', 'node:dns', 'node:child_process', 'node:worker_threads', 'runtime/client.ts', 'runtime/outbound.ts'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return /\.c?ts$/.test(e.name) && !e.name.endsWith('.test.ts') ? [path] : [];
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
  // Built-in modules loaded for their values: what a module can do to the world.
  for (const m of text.matchAll(/^import\s+(?!type\s)[^;]*?\s+from\s+'(node:[^']+)'/gms)) out.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*'(node:[^']+)'\s*\)/g)) out.push(m[1]!);
  // And through require, plain or lazy (`require('node:http')`, `lazyRequire<...>('node:http')`; not `typeof import(...)`).
  for (const m of text.matchAll(/(?:\brequire|>)\(\s*'(node:[^']+)'\s*\)/g)) out.push(m[1]!);
  return out;
}

/** A call of one of the API client's writing methods (runtime/client.ts), on whatever holds the client. */
const WRITE = /\bclient(\.(apply|create|delete|mergePatch|patch|update)|\[\w+\])(<[^>]*>)?\(/;

const layerOf = (path: string) => (path.includes('/') ? path.split('/')[0]! : '.');

/**
 * Where a test sleeps instead of waiting for what it means: a timer promise
 * (node:timers/promises, or `new Promise((r) => setTimeout(r, ms))`). A test
 * waits for a condition (test/support/wait.ts), steps a manual clock
 * (test/support/manual-clock.ts) or watches a quiet window with a control
 * (test/support/quiet-window.ts). Only the files of MAY_SLEEP hold a timer promise.
 */
function bareSleeps(text: string): string[] {
  const forms = [
    /\bfrom\s+'node:timers\/promises'/,
    /\bimport\(\s*'node:timers\/promises'\s*\)/,
    /new Promise\s*(<[^>]*>)?\s*\(\s*\(?\s*(\w+)\s*\)?\s*=>\s*\{?\s*setTimeout\s*\(\s*\2\b/,
    /new Promise\s*(<[^>]*>)?\s*\(\s*\(?\s*(\w+)\s*\)?\s*=>\s*\{?\s*setTimeout\s*\(\s*\(\s*\)\s*=>\s*\2\(\s*\)/,
    /\bpromisify\(\s*setTimeout\s*\)/,
  ];
  return text.split('\n').flatMap((line, i) => (forms.some((f) => f.test(line)) ? [`${i + 1}: ${line.trim()}`] : []));
}

/**
 * The only files, outside src/'s own code, that may hold a timer promise, each
 * for its reason. A helper whose timers are a pause with no condition (`timers`)
 * may be imported for them only by the files `importers` matches: elsewhere the
 * same pause would be a sleep standing in for a condition.
 */
const MAY_SLEEP: Record<string, { why: string; timers?: string[]; importers?: RegExp }> = {
  'test/support/wait.ts': { why: 'the one polling helper: the pause between two looks at a condition' },
  'test/support/quiet-window.ts': { why: 'watches a window in which nothing may happen, then proves with a positive control that it could have' },
  'test/support/schedule.ts': { why: "a fault test's seeded timeline: its instants are the test's input", timers: ['atInstant', 'pause'], importers: /^test\/faults\// },
  'test/envtest/supervise.ts': { why: "the rig's process supervisor: SIGTERM, a grace period, then SIGKILL; a starting process's health, watched while it may exit" },
  'test/envtest/upstream-crds.ts': { why: "the rig's install: backs off a busy API server's 504 on a huge CRD schema" },
  'test/envtest/list-watch.ts': { why: "the rig's status writers list again a second after a failed list, as a controller backs off" },
  'test/standin/informer.ts': { why: "the stand-in's informer backs off its relists: an implementation's retry, not a test's wait" },
  'bench/stats.ts': { why: "the benchmark's pacing (measurement windows, sampling cadences, retry backoff) is its input", timers: ['sleep'], importers: /^bench\/(?!.*\.test\.ts$)/ },
  'demo/observe.ts': { why: "the demo's wait, which prints what it last saw (the demo loads no test code)" },
};

/** The timers of MAY_SLEEP's restricted helpers that `text` (the file `file`, relative to `root`) imports. */
function timerImports(root: string, file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^import\s+(?!type\s)([^;]*?)\s+from\s+'(\.[^']+)'/gms)) {
    const helper = relative(root, resolve(root, dirname(file), m[2]!));
    const timers = MAY_SLEEP[helper]?.timers;
    if (!timers) continue;
    const names = m[1]!.startsWith('*') ? timers : [...m[1]!.matchAll(/(?:^|[{,])\s*(?!type\s)(\w+)/g)].map((n) => n[1]!);
    out.push(...names.filter((n) => timers.includes(n)).map((n) => `${n} from ${helper}`));
  }
  return out;
}

/** The .ts files under `dir` that `keep` selects (node_modules and fixtures aside). */
function tsFiles(dir: string, keep: (name: string) => boolean = (n) => n.endsWith('.ts')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : tsFiles(path, keep);
    return keep(e.name) ? [path] : [];
  });
}

/** Allowances that point at a layer at or above the one allowed (ORDER from the bottom up). */
function upwardAllowances(allowed: Record<string, string[]>): string[] {
  return Object.entries(allowed).flatMap(([layer, below]) => below.filter((to) => ORDER.indexOf(to) >= ORDER.indexOf(layer)).map((to) => `${layer} -> ${to}`));
}

describe('architecture', () => {
  const files = sources(src).map((f) => relative(src, f));
  const graph = new Map(files.map((f) => [f, valueImports(join(src, f))]));

  it('each folder imports only from the layers below it', () => {
    const violations: string[] = [];
    for (const [file, imports] of graph) {
      const from = layerOf(file);
      for (const target of imports) {
        const to = layerOf(target);
        if (target.startsWith('node:') || to === from || ALLOWED[from]?.includes(to)) continue;
        violations.push(`${file} -> ${target}`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it('imports never run up the layers: each folder is allowed only folders below it', () => {
    assert.deepEqual(upwardAllowances(ALLOWED), []);
    assert.deepEqual(Object.keys(ALLOWED).filter((l) => !ORDER.includes(l)), [], 'every folder has a place in ORDER');
  });

  it('the layer order could fail: an API that may import the rollout is refused', () => {
    assert.deepEqual(upwardAllowances({ ...ALLOWED, api: ['util', 'scaling', 'rollout'] }), ['api -> scaling', 'api -> rollout']);
  });

  it('nothing a pure layer reaches, however indirectly, does I/O (no exceptions)', () => {
    const reach = new Map<string, Set<string>>();
    const reachable = (file: string): Set<string> => {
      const known = reach.get(file);
      if (known) return known;
      const out = new Set<string>();
      reach.set(file, out); // a cycle stops here (the cycle test reports it)
      for (const next of graph.get(file) ?? []) {
        out.add(next);
        for (const n of reachable(next)) out.add(n);
      }
      return out;
    };
    const violations = files.filter((f) => PURE.includes(layerOf(f)))
      .flatMap((f) => [...reachable(f)].filter((t) => IO.includes(t)).map((t) => `${f} reaches ${t}`));
    assert.deepEqual(violations, []);
  });

  it('the I/O rule could fail: the runtime\'s client is found reaching node:http', () => {
    const seen = new Set<string>();
    const walk = (f: string) => { for (const n of graph.get(f) ?? []) if (!seen.has(n)) { seen.add(n); walk(n); } };
    walk('runtime/client.ts');
    assert.ok([...seen].some((t) => t === 'node:http' || t === 'node:https'), `runtime/client.ts reaches ${[...seen].join(', ')}`);
  });

  it('the I/O rule sees built-ins loaded through require, in CommonJS sources too: the probe worker loads node:http', () => {
    assert.ok(graph.get('runtime/probe-worker.cts')?.includes('node:http'), JSON.stringify(graph.get('runtime/probe-worker.cts')));
    assert.ok(graph.get('runtime/node-http.ts')?.includes('node:https'), JSON.stringify(graph.get('runtime/node-http.ts')));
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

  it('no test sleeps: a test waits for a condition, steps a clock or watches a quiet window (test/support)', () => {
    const root = resolve(src, '..');
    // Every file of test/, bench/ and demo/ (helpers and rigs included, not only tests), and src/'s tests.
    const files = [...tsFiles(src, (n) => n.endsWith('.test.ts')), ...['test', 'bench', 'demo'].flatMap((d) => tsFiles(join(root, d)))]
      .filter((f) => f !== fileURLToPath(import.meta.url)) // this file quotes the forms
      .map((f) => relative(root, f));
    const found = files.filter((f) => !MAY_SLEEP[f])
      .flatMap((f) => bareSleeps(readFileSync(join(root, f), 'utf8')).map((l) => `${f}:${l}`));
    const misplaced = files.flatMap((f) => timerImports(root, f, readFileSync(join(root, f), 'utf8'))
      .filter(() => !Object.values(MAY_SLEEP).some((h) => h.importers?.test(f))).map((t) => `${f}: ${t}`));
    assert.deepEqual([...found, ...misplaced], []);
    // Each allowance is still needed: a helper that no longer sleeps leaves the list.
    assert.deepEqual(Object.keys(MAY_SLEEP).filter((f) => bareSleeps(readFileSync(join(root, f), 'utf8')).length === 0), [], 'allowed to sleep but does not');
  });

  it('the sleep rule could fail: it finds each form of a timer promise, and a seeded pause imported outside test/faults', () => {
    const sample = [
      "import { setTimeout as sleep } from 'node:timers/promises';",
      'await new Promise((r) => setTimeout(r, 500));',
      'await new Promise<void>(resolve => { setTimeout(resolve, 20); });',
      "const { setTimeout: delay } = await import('node:timers/promises');",
      'setTimeout(() => child.kill(), 60_000); // a guard, not a sleep',
      'await new Promise<void>((done) => setTimeout(() => done(), 100));',
      'const delay = promisify(setTimeout);',
    ].join('\n');
    assert.deepEqual(bareSleeps(sample).map((l) => l.split(':')[0]), ['1', '2', '3', '4', '6', '7']);
    const root = resolve(src, '..');
    assert.deepEqual(timerImports(root, 'test/integration/x.test.ts', "import { atInstant, pause as wait } from '../support/schedule.ts';\nimport { waitFor } from '../support/wait.ts';"),
      ['atInstant from test/support/schedule.ts', 'pause from test/support/schedule.ts']);
    assert.deepEqual(timerImports(root, 'bench/x.test.ts', "import { round, sleep } from './stats.ts';"), ['sleep from bench/stats.ts']);
    assert.equal(MAY_SLEEP['test/support/schedule.ts']!.importers!.test('test/integration/x.test.ts'), false);
    assert.equal(MAY_SLEEP['bench/stats.ts']!.importers!.test('bench/x.test.ts'), false);
  });

  it('has one write path: in all of src/, only these files write to the API server, each for its own kind of write', () => {
    const writers = files.filter((f) => WRITE.test(readFileSync(join(src, f), 'utf8'))).sort();
    assert.deepEqual(writers, [
      'cli/plan-dry-run.ts', // kubectl sapp plan: the children's dry runs only (dryRun=All), nothing is stored (checked below)
      'cli/plan-read.ts', // kubectl sapp plan: the edit's dry run only (checked below)
      'cli/plugin.ts', // the user's own edit (kubectl sapp retry/promote), as kubectl would make it
      'controllers/children.ts', // every rendered child, and the app's finalizer
      'runtime/events.ts', // Events
      'runtime/leader-election.ts', // the Lease
      'runtime/status.ts', // every status, through one writer that skips no-op writes
    ]);
    // The plan's writes are all dry runs: each write call in its files carries dryRun: true.
    for (const file of ['cli/plan-read.ts', 'cli/plan-dry-run.ts']) {
      const calls = readFileSync(join(src, file), 'utf8').match(/client\.(create|update|apply|delete|mergePatch|patch)\b[^;]*;/gs) ?? [];
      assert.ok(calls.length > 0, `${file} makes its dry runs through the client`);
      for (const call of calls) assert.match(call, /dryRun: true/, `a write in ${file} that is not a dry run: ${call}`);
    }
  });

  it('the write path rule could fail: it finds a write through any client', () => {
    const lines = ['await this.client.apply(obj)', 'mgr.client.delete(kind, ns, name)', 'await this.#client.create(kind, lease)', 'this.#client[verb](Kinds.Lease, lease)', 'client.update<Lease>(Kinds.Lease, lease)'];
    assert.deepEqual(lines.filter((line) => !WRITE.test(line)), []);
    assert.equal(WRITE.test('await this.client.get(kind, ns, name)'), false);
  });
});
