import assert from 'node:assert/strict';
import { AnalysisRunner } from './analysis-runner.ts';
import type { AnalysisOutcome } from './canary.ts';

/** A check round the test finishes by hand. */
function deferred(): { run: () => Promise<AnalysisOutcome>; finish: (o: AnalysisOutcome) => void; started: () => boolean } {
  let resolve: ((o: AnalysisOutcome) => void) | undefined;
  let started = false;
  return {
    run: () => { started = true; return new Promise((r) => { resolve = r; }); },
    finish: (o) => resolve?.(o),
    started: () => started,
  };
}

const pass: AnalysisOutcome = { result: 'pass', message: 'ok' };
const tick = () => new Promise((r) => setImmediate(r));

describe('AnalysisRunner', () => {
  it('starts a round on the first ask, answers undefined while it runs, and re-queues the app when it ends', async () => {
    const done: string[] = [];
    const runner = new AnalysisRunner({ onDone: (k) => done.push(k) });
    const r = deferred();
    assert.equal(runner.outcome('ns/a', 'v2/0/t0', r.run), undefined);
    await tick();
    assert.ok(r.started());
    assert.equal(runner.outcome('ns/a', 'v2/0/t0', r.run), undefined, 'still running');
    r.finish(pass);
    await tick();
    assert.deepEqual(done, ['ns/a']);
    assert.deepEqual(runner.outcome('ns/a', 'v2/0/t0', r.run), pass);
  });

  it('a new round replaces the old: the old one ends without re-queueing', async () => {
    const done: string[] = [];
    const runner = new AnalysisRunner({ onDone: (k) => done.push(k) });
    const old = deferred();
    const next = deferred();
    runner.outcome('ns/a', 'round-1', old.run);
    await tick();
    runner.outcome('ns/a', 'round-2', next.run);
    old.finish(pass);
    await tick();
    assert.deepEqual(done, []);
    next.finish(pass);
    await tick();
    assert.deepEqual(done, ['ns/a']);
  });

  it('runs at most the total of rounds at once; a stalled endpoint never blocks the others beyond its slot', async () => {
    const runner = new AnalysisRunner({ onDone: () => {}, slots: { perNamespace: 10, total: 2 } });
    const rounds = [deferred(), deferred(), deferred()];
    rounds.forEach((r, i) => runner.outcome(`ns/app-${i}`, 'r', r.run));
    await tick();
    assert.deepEqual(rounds.map((r) => r.started()), [true, true, false]);
    rounds[1]!.finish(pass);
    await tick();
    await tick();
    assert.equal(rounds[2]!.started(), true, 'the waiting round takes the freed slot');
  });

  it('reports a round that throws as no data, which halts the rollout', async () => {
    const runner = new AnalysisRunner({ onDone: () => {} });
    runner.outcome('ns/a', 'r', async () => { throw new Error('boom'); });
    await tick();
    assert.deepEqual(runner.outcome('ns/a', 'r', async () => pass), { result: 'nodata', message: 'analysis failed: boom' });
  });

  it('gives each namespace its share of rounds and hands freed slots round-robin, saying which round waits', async () => {
    const waits: Array<[string, string]> = [];
    const runner = new AnalysisRunner({ onDone: () => {}, onWait: (k, _m, limit) => waits.push([k, limit]), slots: { perNamespace: 1, total: 2 } });
    const noisy = [deferred(), deferred(), deferred()];
    noisy.forEach((r, i) => runner.outcome(`noisy/app-${i}`, 'r', r.run));
    const victim = deferred();
    runner.outcome('victim/web', 'r', victim.run);
    await tick();
    assert.deepEqual([...noisy, victim].map((r) => r.started()), [true, false, false, true], 'one noisy round, and the victim\'s');
    assert.deepEqual(waits, [['noisy/app-1', 'namespace'], ['noisy/app-2', 'namespace']]);
    noisy[0]!.finish(pass);
    await tick();
    await tick();
    assert.deepEqual(noisy.map((r) => r.started()), [true, true, false]);
  });

  it('holds a namespace to its query rate: its rounds wait (saying so once each), another namespace\'s do not', async () => {
    let now = 0;
    const sleeps: Array<{ ms: number; wake: () => void }> = [];
    const waits: Array<[string, string, string]> = [];
    const runner = new AnalysisRunner({
      onDone: () => {}, onWait: (k, m, limit) => waits.push([k, limit, m]), slots: { perNamespace: 8, total: 16 },
      rates: { perSecond: 1, burst: 8 }, now: () => now, wait: (ms) => new Promise((wake) => sleeps.push({ ms, wake })),
    });
    const rounds = [deferred(), deferred(), deferred()];
    rounds.forEach((r, i) => runner.outcome(`noisy/app-${i}`, 'r', r.run, 4));
    const victim = deferred();
    runner.outcome('victim/web', 'r', victim.run, 4);
    await tick();
    assert.deepEqual([...rounds, victim].map((r) => r.started()), [true, true, false, true], 'two rounds of 4 queries fit the burst of 8; the victim has its own');
    assert.equal(waits.length, 1);
    assert.deepEqual(waits[0]!.slice(0, 2), ['noisy/app-2', 'rate']);
    assert.match(waits[0]![2], /waits 4s: namespace noisy has used its budget of 1 queries per second \(--analysis-queries-per-namespace\)/);
    assert.deepEqual(sleeps.map((s) => s.ms), [4_000]);
    now = 4_000;
    sleeps[0]!.wake();
    await tick();
    await tick();
    assert.ok(rounds[2]!.started(), 'it goes once the bucket holds its queries');
  });

  it('does not turn a throwing onDone into an unhandled rejection', async () => {
    const rejections: unknown[] = [];
    const onRejection = (e: unknown) => rejections.push(e);
    process.on('unhandledRejection', onRejection);
    try {
      const runner = new AnalysisRunner({ onDone: () => { throw new Error('owner bug'); } });
      runner.outcome('ns/a', 'r', async () => pass);
      await tick();
      await tick();
      assert.deepEqual(rejections, []);
      assert.deepEqual(runner.finished('ns/a'), { round: 'r', outcome: pass });
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});
