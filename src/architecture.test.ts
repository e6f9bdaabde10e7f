// The folder layout is the architecture, and this test keeps it true: pure
// layers never reach into the I/O edges or the layers above them, and no module
// imports itself back through a cycle. What a file loads is read from its syntax
// tree (src/testing/module-loads.ts), whatever the spelling: an import, a
// re-export, a side-effect import, import(), require() or lazyRequire(). Only
// `import type` and `export type` are free (they vanish when Node strips types).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { globalUses, loadsOf, moduleId, parse, type Source } from './testing/module-loads.ts';
import { timerPromises } from './testing/timer-promises.ts';
import { apiWrites, programOf, writeMethods, type ApiWrite } from './testing/api-writes.ts';

const src = new URL('.', import.meta.url).pathname;

/**
 * The layers from the bottom up: a folder may import only from folders before
 * it, never up the list (api's validation judges a schedule with util/schedule.ts
 * and an analysis target with api's own rule, not with scaling's or rollout's).
 */
const ORDER = ['util', 'api', 'rollout', 'scaling', 'render', 'prewarm', 'planner', 'runtime', 'effects', 'controllers', '.', 'cli', 'cache-reporter'];

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
  // The node-side cache usage reporter, an entry point of its own: the report's format (render) sent over the runtime's client.
  'cache-reporter': ['util', 'render', 'runtime'],
};

/** The pure layers: nothing they reach, however indirectly, may do I/O. */
const PURE = ['util', 'api', 'render', 'rollout', 'scaling', 'planner', 'prewarm'];
/** What I/O means here, however it is reached: the network, processes, threads, and the API client. */
const IO = [
  // Node's built-ins (`'http'` is `node:http`: module-loads.ts names a built-in one way)
  'node:http', 'node:https', 'node:http2', 'node:net', 'node:tls', 'node:dns', 'node:dgram', 'node:child_process', 'node:worker_threads', 'node:cluster',
  // packages that talk to the network, and Node's global fetch
  'npm:@kubernetes/client-node', 'npm:undici', 'npm:axios', 'global fetch',
  // the operator's own clients
  'runtime/client.ts', 'runtime/outbound.ts',
];
/**
 * The packages loaded on first use through util/lazy-require.ts, a loader that
 * could load anything: pure computation that only some apps need (about 2 MiB of
 * RSS each), and nothing else.
 */
const LAZY = ['npm:cron-parser', 'npm:re2js'];
/**
 * Every built-in and package a pure layer loads: computation only. What is not
 * here is refused before anyone has to decide whether it does I/O (node:fs,
 * a websocket package, a new HTTP client).
 */
const PURE_EXTERNALS = ['node:crypto', 'node:module', 'npm:yaml', ...LAZY];

/** The sources under `dir` that `keep` selects (node_modules aside). */
function sourceFiles(dir: string, keep: (name: string) => boolean = (n) => /\.[cm]?[jt]s$/.test(n)): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(path, keep);
    return keep(e.name) ? [path] : [];
  });
}

/** What a file of src/ (`file`, relative to src/) loads at run time, by module-loads.ts's names, and `global fetch` if it uses it. */
function loadsFrom(file: string, source: Source): string[] {
  const named = loadsOf(source).flatMap((l) => (l.specifier === undefined ? [] : [moduleId(src, file, l.specifier)]));
  return globalUses(source, 'fetch').length > 0 ? [...named, 'global fetch'] : named;
}

/** Everything `start` loads, directly or through what it loads. */
function reachable(graph: Map<string, string[]>, start: string[]): Set<string> {
  const seen = new Set<string>();
  const visit = (m: string) => { if (!seen.has(m)) { seen.add(m); for (const next of graph.get(m) ?? []) visit(next); } };
  start.forEach(visit);
  return seen;
}

/** The import circles of `graph` (file -> what it loads), each as "a -> b -> a". */
function cyclesIn(graph: Map<string, string[]>): string[] {
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
  return cycles;
}

const layerOf = (path: string) => (path.includes('/') ? path.split('/')[0]! : '.');
const isModuleOfSrc = (id: string) => !/^(node|npm|global)[: ]/.test(id);

const root = resolve(src, '..');

/**
 * The only files, outside the operator's own code, that may sleep
 * (src/testing/timer-promises.ts says what a sleep is), each for its reason. A helper whose timers are a pause
 * with no condition (`timers`) may be imported for them only by the files
 * `importers` matches: elsewhere the same pause would be a sleep standing in for
 * a condition. A test waits for a condition (test/support/wait.ts), steps a
 * manual clock (test/support/manual-clock.ts) or watches a quiet window with a
 * control (test/support/quiet-window.ts).
 */
const MAY_SLEEP: Record<string, { why: string; timers?: string[]; importers?: RegExp }> = {
  'test/support/wait.ts': { why: 'the one polling helper: the pause between two looks at a condition' },
  'test/support/quiet-window.ts': { why: 'watches a window in which nothing may happen, then proves with a positive control that it could have' },
  'test/support/schedule.ts': { why: "a fault test's seeded timeline: its instants are the test's input", timers: ['atInstant', 'pause'], importers: /^test\/faults\// },
  'test/envtest/supervise.ts': { why: "the rig's process supervisor: SIGTERM, a grace period, then SIGKILL" },
  'test/envtest/upstream-crds.ts': { why: "the rig's install: backs off a busy API server's 504 on a huge CRD schema" },
  'test/envtest/list-watch.ts': { why: "the rig's status writers list again a second after a failed list, as a controller backs off" },
  'test/standin/informer.ts': { why: "the stand-in's informer backs off its relists: an implementation's retry, not a test's wait" },
  'bench/stats.ts': { why: "the benchmark's pacing (measurement windows, sampling cadences, retry backoff) is its input", timers: ['sleep'], importers: /^bench\/(?!.*\.test\.ts$)/ },
  'demo/observe.ts': { why: "the demo's wait, which prints what it last saw (the demo loads no test code)" },
};

/** Where a file (relative to the repository) sleeps, as `file:line: code`. */
const sleepsIn = (file: string, source: Source) => timerPromises(source).map((s) => `${file}:${s.line}: ${s.text}`);

/** The timers of MAY_SLEEP's restricted helpers that `file` (relative to the repository) loads. */
function timerImports(file: string, source: Source): string[] {
  return loadsOf(source).flatMap((l) => {
    if (l.specifier === undefined) return [];
    const helper = moduleId(root, file, l.specifier);
    const timers = MAY_SLEEP[helper]?.timers ?? [];
    return (l.names === '*' ? timers : l.names.filter((n) => timers.includes(n))).map((n) => `${n} from ${helper}`);
  });
}

/** Allowances that point at a layer at or above the one allowed (ORDER from the bottom up). */
function upwardAllowances(allowed: Record<string, string[]>): string[] {
  return Object.entries(allowed).flatMap(([layer, below]) => below.filter((to) => ORDER.indexOf(to) >= ORDER.indexOf(layer)).map((to) => `${layer} -> ${to}`));
}

describe('architecture', () => {
  const files = sourceFiles(src, (n) => /\.c?ts$/.test(n) && !n.endsWith('.test.ts')).map((f) => relative(src, f));
  const trees = new Map(files.map((f) => [f, parse(readFileSync(join(src, f), 'utf8'), f)]));
  const graph = new Map(files.map((f) => [f, loadsFrom(f, trees.get(f)!)]));

  it('each folder imports only from the layers below it', () => {
    const violations: string[] = [];
    for (const [file, imports] of graph) {
      const from = layerOf(file);
      for (const target of imports) {
        const to = layerOf(target);
        if (!isModuleOfSrc(target) || to === from || ALLOWED[from]?.includes(to)) continue;
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

  /** The I/O that a file of a pure layer, with these contents, would reach through the tree as it is. */
  const ioReachedBy = (file: string, source: Source) => [...reachable(graph, loadsFrom(file, source))].filter((m) => IO.includes(m));

  it('nothing a pure layer reaches, however indirectly, does I/O (no exceptions)', () => {
    const violations = files.filter((f) => PURE.includes(layerOf(f))).flatMap((f) => ioReachedBy(f, trees.get(f)!).map((m) => `${f} reaches ${m}`));
    assert.deepEqual(violations, []);
  });

  it('the I/O rule could fail: it sees I/O however a pure file reaches it', () => {
    const reaching: [string, string][] = [
      ["import { request } from 'http';", 'node:http'], // a built-in named without node:
      ['const { get } = require("https");', 'node:https'],
      ["export { request } from 'node:http';", 'node:http'],
      ["import '../../runtime/client.ts';", 'runtime/client.ts'], // for its side effects
      ['const { Client } = await import("../../runtime/client.ts");', 'runtime/client.ts'],
      ["import { typeOf } from '../../runtime/client.ts';", 'runtime/client.ts'], // a value whose name starts with "type"
      ["import { type Client } from '../../runtime/client.ts';", 'runtime/client.ts'], // Node still loads the module
      ["import { Informer } from '../../runtime/informer.ts';", 'node:http'], // through what it loads: the informer's client
      ["const http = lazyRequire<typeof import('node:http')>('node:http');", 'node:http'],
      ["const load = createRequire(import.meta.url);\nconst net = load('node:net');", 'node:net'],
      ["const { spawn } = process.getBuiltinModule('child_process');", 'node:child_process'],
      ["import * as k8s from '@kubernetes/client-node';", 'npm:@kubernetes/client-node'],
      ["import { request } from 'undici';", 'npm:undici'],
      ["import axios from 'axios';", 'npm:axios'],
      ['const res = await fetch(url);', 'global fetch'],
      ['const res = await globalThis.fetch(url);', 'global fetch'],
      ['const get = fetch;', 'global fetch'],
    ];
    for (const [text, io] of reaching) assert.ok(ioReachedBy('api/v1alpha1/sample.ts', text).includes(io), `not seen: ${text}`);
    const free = [
      "import type { Client } from '../../runtime/client.ts';",
      "export type { Client } from '../../runtime/client.ts';",
      "type Http = typeof import('node:http');",
      "const cron = lazyRequire<typeof import('cron-parser')>('cron-parser');",
      'const page = await this.fetch(url); // a method of that name, not the global',
      "const text = \"import { request } from 'node:http'\";",
    ];
    for (const text of free) assert.deepEqual(ioReachedBy('api/v1alpha1/sample.ts', text), [], text);
  });

  /** The built-ins and packages outside PURE_EXTERNALS that a file of a pure layer loads. */
  const impureExternals = (file: string, source: Source) => loadsFrom(file, source).filter((m) => !isModuleOfSrc(m) && !PURE_EXTERNALS.includes(m));

  it('a pure layer loads only the built-ins and packages that compute', () => {
    assert.deepEqual(files.filter((f) => PURE.includes(layerOf(f))).flatMap((f) => impureExternals(f, trees.get(f)!).map((m) => `${f} loads ${m}`)), []);
  });

  it('the pure externals rule could fail: a file system, a websocket or the global fetch is refused', () => {
    const sample = "import { readFileSync } from 'fs';\nimport WebSocket from 'ws';\nimport { createHash } from 'node:crypto';\nconst res = await fetch(url);";
    assert.deepEqual(impureExternals('render/sample.ts', sample), ['node:fs', 'npm:ws', 'global fetch']);
  });

  it('the I/O rule sees built-ins loaded through require, in CommonJS sources too: the probe worker loads node:http', () => {
    assert.ok(graph.get('runtime/probe-worker.cts')?.includes('node:http'), JSON.stringify(graph.get('runtime/probe-worker.cts')));
    assert.ok(graph.get('runtime/node-http.ts')?.includes('node:https'), JSON.stringify(graph.get('runtime/node-http.ts')));
    assert.ok(ioReachedBy('runtime/sample.ts', "import { Client } from './client.ts';").includes('node:http'));
  });

  /** The loads of a file that util/lazy-require.ts's loader must not make: anything but a LAZY package, by name. */
  const wrongLazyLoads = (file: string, source: Source) => loadsOf(source).filter((l) => l.how === 'lazyRequire')
    .filter((l) => l.specifier === undefined || !LAZY.includes(moduleId(src, file, l.specifier))).map((l) => `${file}:${l.line}: lazyRequire(${l.specifier ?? '…'})`);

  it('loads only pure packages lazily, and every module by its name but in the lazy loader itself', () => {
    assert.deepEqual(files.flatMap((f) => wrongLazyLoads(f, trees.get(f)!)), []);
    // lazy-require.ts requires what its callers name (checked just above); any other loader by a computed name could load anything.
    assert.deepEqual(files.filter((f) => loadsOf(trees.get(f)!).some((l) => l.specifier === undefined)), ['util/lazy-require.ts']);
  });

  it('the lazy load rule could fail: a lazy built-in or package of I/O, or a name computed at run time, is refused', () => {
    const sample = "const http = lazyRequire('node:http');\nconst undici = lazyRequire<typeof import('undici')>('undici');\nconst any = lazyRequire(name);\nconst re2 = lazyRequire('re2js');";
    assert.deepEqual(wrongLazyLoads('api/sample.ts', sample), ['api/sample.ts:1: lazyRequire(node:http)', 'api/sample.ts:2: lazyRequire(undici)', 'api/sample.ts:3: lazyRequire(…)']);
    assert.deepEqual(loadsOf('const m = await import(name);\nconst n = require(`./${name}`);').map((l) => l.specifier), [undefined, undefined]);
  });

  /** Dynamic imports of a package: in the plugin's esbuild bundle a CommonJS package loaded so keeps only its default export. */
  const packageImportsAtRunTime = (file: string, source: Source) => loadsOf(source)
    .filter((l) => l.how === 'import()' && l.specifier !== undefined && !l.specifier.startsWith('.') && !l.specifier.startsWith('node:'))
    .map((l) => `${file}:${l.line}: import(${l.specifier})`);

  it('loads packages lazily only through a module of its own (import() of ./x.ts, never of a package)', () => {
    assert.deepEqual(files.flatMap((f) => packageImportsAtRunTime(f, trees.get(f)!)), []);
  });

  it('the dynamic package import rule could fail: import() of a package is found, of a module of its own or a built-in not', () => {
    const sample = "const { parse } = await import('yaml');\nconst own = await import('./yaml-parse.ts');\nconst cp = await import('node:child_process');";
    assert.deepEqual(packageImportsAtRunTime('runtime/sample.ts', sample), ['runtime/sample.ts:1: import(yaml)']);
  });

  it('nothing outside the kubectl plugin imports it', () => {
    const into = [...graph].flatMap(([file, imports]) => imports.filter((t) => isModuleOfSrc(t) && layerOf(t) === 'cli' && layerOf(file) !== 'cli').map((t) => `${file} -> ${t}`));
    assert.deepEqual(into, []);
    assert.ok(Object.entries(ALLOWED).every(([layer, allowed]) => layer === 'cli' || !allowed.includes('cli')));
  });

  it('has no import cycles', () => {
    assert.deepEqual(cyclesIn(graph), []);
  });

  it('has no import cycles in its tests, rigs, benchmarks and demo either (a story and its chapters importing each other, say)', () => {
    const everywhere = [src, ...['test', 'bench', 'demo'].map((d) => join(root, d))].flatMap((d) => sourceFiles(d, (n) => /\.c?ts$/.test(n))).map((f) => relative(root, f));
    const repoGraph = new Map(everywhere.map((f) => [f, loadsOf(parse(readFileSync(join(root, f), 'utf8'), f)).flatMap((l) => (l.specifier === undefined ? [] : [moduleId(root, f, l.specifier)]))]));
    assert.ok(repoGraph.get('test/support/idle.ts')?.includes('test/support/wait.ts'), 'edges between the trees\' files resolve to their keys');
    assert.deepEqual(cyclesIn(repoGraph), []);
  });

  it('the cycle rule could fail: it finds a circle of two files and one of three', () => {
    const sample = new Map([['a', ['b']], ['b', ['a', 'c']], ['c', ['d']], ['d', ['e']], ['e', ['c']], ['f', ['a', 'node:http']]]);
    assert.deepEqual(cyclesIn(sample), ['a -> b -> a', 'c -> d -> e -> c']);
  });

  it('no test sleeps: a test waits for a condition, steps a clock or watches a quiet window (test/support)', () => {
    // Every source of test/, bench/ and demo/ (helpers and rigs included, not only tests), src/'s tests and their helpers (src/testing).
    const tests = [...sourceFiles(src, (n) => n.endsWith('.test.ts')), ...sourceFiles(join(src, 'testing')), ...['test', 'bench', 'demo'].flatMap((d) => sourceFiles(join(root, d)))]
      .map((f) => relative(root, f));
    const testTrees = new Map(tests.map((f) => [f, parse(readFileSync(join(root, f), 'utf8'), f)]));
    const found = tests.filter((f) => !MAY_SLEEP[f]).flatMap((f) => sleepsIn(f, testTrees.get(f)!));
    const misplaced = tests.flatMap((f) => timerImports(f, testTrees.get(f)!)
      .filter(() => !Object.values(MAY_SLEEP).some((h) => h.importers?.test(f))).map((t) => `${f}: ${t}`));
    assert.deepEqual([...found, ...misplaced], []);
    // Each allowance is still needed: a helper that no longer sleeps leaves the list.
    assert.deepEqual(Object.keys(MAY_SLEEP).filter((f) => sleepsIn(f, testTrees.get(f)!).length === 0), [], 'allowed to sleep but does not');
  });

  it('the sleep rule could fail: it finds each form of a timer promise, and a seeded pause imported outside test/faults', () => {
    const sleeps = [
      "import { setTimeout as sleep } from 'node:timers/promises';",
      'import { setTimeout as delay } from "timers/promises";',
      "const { setTimeout: delay } = await import('node:timers/promises');",
      "const timers = require('timers/promises');",
      "export { setTimeout as sleep } from 'node:timers/promises';",
      'await new Promise((r) => setTimeout(r, 500));',
      'await new Promise<void>(resolve => { setTimeout(resolve, 20); });',
      'await new Promise((r) => void setTimeout(r, 500));',
      'await new Promise((resolve) => { const t = setTimeout(resolve, 500); t.unref(); });',
      'await new Promise(function (r) { setTimeout(r, 500); });',
      'await new Promise((r, _j) => setTimeout(r, 500));',
      'await new Promise((r) => globalThis.setTimeout(r, 500));',
      'await new Promise<void>((done) => setTimeout(() => done(), 100));',
      'await new Promise((resolve) => { child.once("exit", () => setTimeout(resolve, 100)); });',
      'const { promise, resolve } = Promise.withResolvers<void>(); setTimeout(resolve, 500); await promise;',
      'const later = Promise.withResolvers(); setTimeout(() => later.resolve(), 500); await later.promise;',
      'let wake = () => {}; const woken = new Promise<void>((r) => { wake = r; }); setTimeout(wake, 500); await woken;',
      'const delay = promisify(setTimeout);',
      'const delay = util.promisify(globalThis.setTimeout);',
    ];
    const guards = [
      'setTimeout(() => child.kill(), 60_000);',
      "await new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), 1000));",
      "await new Promise((resolve) => { server.once('listening', () => resolve(true)); setTimeout(() => resolve(false), 1000); });",
      "const text = 'await new Promise((r) => setTimeout(r, 500))';",
    ];
    const lines = [...sleeps, ...guards];
    assert.deepEqual(timerPromises(lines.join('\n')).map((s) => lines[s.line - 1]), sleeps);
    assert.deepEqual(timerImports('test/integration/x.test.ts', "import { atInstant, pause as wait } from '../support/schedule.ts';\nimport { waitFor } from '../support/wait.ts';"),
      ['atInstant from test/support/schedule.ts', 'pause from test/support/schedule.ts']);
    assert.deepEqual(timerImports('test/integration/x.test.ts', "import * as schedule from \"../support/schedule.ts\";"), ['atInstant from test/support/schedule.ts', 'pause from test/support/schedule.ts']);
    assert.deepEqual(timerImports('bench/x.test.ts', "import { round, sleep } from './stats.ts';"), ['sleep from bench/stats.ts']);
    assert.equal(MAY_SLEEP['test/support/schedule.ts']!.importers!.test('test/integration/x.test.ts'), false);
    assert.equal(MAY_SLEEP['bench/stats.ts']!.importers!.test('bench/x.test.ts'), false);
  });

  describe('one write path (found by the type checker)', () => {
    const clientFile = join(src, 'runtime/client.ts');
    /** Beside the real sources, in memory only: writes through an alias, destructuring, element access and a client handed to another type, and reads. */
    const fixtureFile = join(src, 'testing/write-path-fixture.ts');
    const fixture = [
      "import type { KubeClient } from '../runtime/client.ts';",
      "import { Kinds } from '../util/kinds.ts';",
      'export async function writes(mgr: { client: KubeClient }, verb: "create" | "update", obj: object) {',
      '  const c = mgr.client;',
      '  await c.apply(obj);', // 5: an alias
      '  const { delete: remove, mergePatch } = c;', // 6: destructuring, renamed or not
      '  await remove(Kinds.ConfigMap, "a", "b");',
      '  await c[verb](Kinds.ConfigMap, obj);', // 8: element access, either verb
      '  await mgr.client?.create(Kinds.ConfigMap, obj, { dryRun: true });', // 9: a dry run
      '  const narrowed: { update: KubeClient["update"] } = c;', // 10: the client handed to another type
      '  await narrowed.update(Kinds.ConfigMap, obj);', // 11: the method through it
      '  let patch: KubeClient["mergePatch"] | undefined;',
      '  ({ mergePatch: patch } = c);', // 13: a destructuring assignment
      '  const taken = Reflect.get(c, "apply");', // 14: reflection (the client as an object)
      '  const writer: Writer = c;', // 15: an interface-typed alias
      '  await (c as unknown as Writer).apply(obj);', // 16: a cast through unknown
      '  return [patch, taken, writer];',
      '}',
      'interface Writer { apply(o: object): Promise<unknown> }',
      'export async function reads(client: KubeClient, fn: (...a: unknown[]) => void) {',
      '  await client.get(Kinds.ConfigMap, "a", "b");',
      '  fn.apply(null, []);', // a function's apply, not the client's
      '  const { list, config } = client;',
      '  return [list, config, [1, 2][0]];',
      '}',
    ].join('\n');
    let writes: ApiWrite[];
    let fixtureWrites: ApiWrite[];
    let verbs: string[];

    before(() => {
      // One program over src/ (tsconfig.json's options; tests, test/, bench/ and demo/ left out), the fixture beside it.
      const program = programOf(join(root, 'tsconfig.json'), files.map((f) => join(src, f)), { [fixtureFile]: fixture });
      const real = new Set(files.map((f) => join(src, f)));
      writes = apiWrites(program, clientFile, (f) => real.has(f));
      fixtureWrites = apiWrites(program, clientFile, (f) => f === fixtureFile);
      verbs = writeMethods(program, clientFile).map((m) => m.name.getText()).sort();
    });

    it('has one write path: in all of src/, only these files write to the API server, each for its own kind of write', () => {
      const writers = [...new Set(writes.map((w) => relative(src, w.fileName)))].sort();
      assert.deepEqual(writers, [
        'cache-reporter/publish.ts', // the node-side cache usage reporter: its node's report ConfigMap, under its own field manager (a program of its own)
        'cli/plan-dry-run.ts', // kubectl sapp plan: the children's dry runs only (dryRun=All), nothing is stored (checked below)
        'cli/plan-read.ts', // kubectl sapp plan: the edit's dry run only (checked below)
        'cli/plugin.ts', // the user's own edit (kubectl sapp retry/promote), as kubectl would make it
        'controllers/children.ts', // every rendered child, and the app's finalizer
        'runtime/events.ts', // Events
        'runtime/leader-election.ts', // the Lease
        'runtime/policy-publication.ts', // the policy this operator enforces, for kubectl sapp plan: one ConfigMap in its namespace
        'runtime/status.ts', // every status, through one writer that skips no-op writes
      ]);
      // The plan's writes are all dry runs: each write in its files is a call that passes dryRun: true.
      for (const file of ['cli/plan-read.ts', 'cli/plan-dry-run.ts']) {
        const found = writes.filter((w) => relative(src, w.fileName) === file);
        assert.ok(found.length > 0, `${file} makes its dry runs through the client`);
        assert.deepEqual(found.filter((w) => !w.dryRun).map((w) => `${file}:${w.line}: ${w.verbs.join('/')}`), [], 'writes that are not dry runs');
      }
    });

    it('the write path rule could fail: it finds each writing method of the client, however the client is held', () => {
      assert.deepEqual(verbs, ['apply', 'create', 'delete', 'mergePatch', 'update'], "the client's writing methods: its requests other than GET");
      assert.deepEqual(fixtureWrites.map((w) => [w.line, w.verbs, w.dryRun]), [
        [5, ['apply'], false],
        [6, ['delete'], false],
        [6, ['mergePatch'], false],
        [8, ['create', 'update'], false],
        [9, ['create'], true],
        [10, ['update'], false],
        [11, ['update'], false],
        [13, ['mergePatch'], false],
        [14, verbs, false],
        [15, ['apply'], false],
        [16, verbs, false],
      ]);
    });
  });
});
