import assert from 'node:assert/strict';
import { callbacksRun, ManualClock } from '../../test/support/manual-clock.ts';
import { RetryLimiter, WorkQueue, type QueueMetricsHooks } from './workqueue.ts';

/** A get() whose answer shows once promise callbacks have run: 'waiting' until the queue hands something out. */
function parkedGet(q: WorkQueue): { key: string | undefined | 'waiting' } {
  const probe: { key: string | undefined | 'waiting' } = { key: 'waiting' };
  void q.get().then((k) => (probe.key = k));
  return probe;
}

describe('WorkQueue', () => {
  it('coalesces the adds of a key the gate deferred: asked once when it is due, handed out once, not queued and deferred again per add', async () => {
    const clock = new ManualClock();
    const asked: string[] = [];
    let waitMs = 1_000;
    const q = new WorkQueue('t', { clock, gate: (key) => (asked.push(key), waitMs) });
    q.add('noisy/a');
    const got = parkedGet(q);
    await callbacksRun();
    assert.deepEqual([got.key, asked], ['waiting', ['noisy/a']], 'deferred at its first turn');
    for (let i = 0; i < 100; i++) q.add('noisy/a');
    assert.equal(q.length, 0, 'the adds while it waits queue nothing');
    assert.deepEqual(asked, ['noisy/a'], 'and ask the gate nothing');
    waitMs = 0;
    clock.advance(1_000);
    await callbacksRun();
    assert.deepEqual([got.key, asked.length], ['noisy/a', 2], 'due: asked once more and handed out');
    q.done('noisy/a');
    assert.equal(q.length, 0, 'the coalesced adds were that one pass');
  });

  it('holds a namespace past its share back as one: the gate asked once per wait however many keys it has, others served meanwhile', async () => {
    const clock = new ManualClock();
    const asked: string[] = [];
    const held = new Set(['noisy']);
    const q = new WorkQueue('t', { clock, gate: (key) => (asked.push(key), held.has(key.split('/')[0]!) ? 1_000 : 0) });
    for (let i = 0; i < 1_000; i++) q.add(`noisy/app-${i}`);
    q.add('victim/web');
    assert.equal(await q.get(), 'victim/web', 'the victim is served past the held namespace');
    assert.deepEqual(asked, ['noisy/app-0', 'victim/web'], 'the held namespace cost the gate one question, not one per key');
    assert.equal(q.length, 0, 'held keys are not ready');
    const got = parkedGet(q);
    clock.advance(999);
    await callbacksRun();
    assert.equal(got.key, 'waiting', 'still held before its time');
    held.delete('noisy');
    clock.advance(1);
    await callbacksRun();
    assert.equal(got.key, 'noisy/app-0', 'released in its order');
    assert.equal(q.length, 999);
    q.done('noisy/app-0');
    held.add('noisy');
    const next = parkedGet(q);
    await callbacksRun();
    assert.equal(next.key, 'waiting');
    assert.equal(asked.length, 4, 'held again after one: one more question');
  });

  it('runs a namespace the gate held back one key at a time until its keys run out, so a release does not overshoot its share on every idle worker', async () => {
    const clock = new ManualClock();
    let noisyWait = 1_000;
    const q = new WorkQueue('t', { clock, gate: (key) => (key.startsWith('noisy/') ? noisyWait : 0) });
    for (const k of ['noisy/a', 'noisy/b', 'noisy/c', 'victim/x', 'victim/y']) q.add(k);
    assert.deepEqual([await q.get(), await q.get()], ['victim/x', 'victim/y'], 'another namespace runs two at once');
    noisyWait = 0;
    clock.advance(1_000);
    await callbacksRun();
    const workers = [parkedGet(q), parkedGet(q), parkedGet(q)];
    await callbacksRun();
    assert.deepEqual(workers.map((w) => w.key), ['noisy/a', 'waiting', 'waiting'], 'released: one key, the others behind it');
    q.done('noisy/a');
    await callbacksRun();
    assert.deepEqual(workers.map((w) => w.key), ['noisy/a', 'noisy/b', 'waiting'], 'the next once it is done');
    q.done('noisy/b');
    await callbacksRun();
    assert.equal(workers[2]!.key, 'noisy/c');
    q.done('noisy/c');
    q.add('noisy/d');
    q.add('noisy/e');
    const [d, e] = [parkedGet(q), parkedGet(q)];
    await callbacksRun();
    assert.deepEqual([d.key, e.key], ['noisy/d', 'noisy/e'], 'its keys ran out: it owes nothing more, and runs as the others');
  });

  it('stops running a namespace one key at a time once the gate says it owes nothing, its keys not yet run out', async () => {
    const clock = new ManualClock();
    let noisyWait = 1_000;
    const q = new WorkQueue('t', { clock, gate: (key) => (key.startsWith('noisy/') ? noisyWait : -1) });
    for (const k of ['noisy/a', 'noisy/b', 'noisy/c']) q.add(k);
    const first = parkedGet(q);
    await callbacksRun();
    noisyWait = 0;
    clock.advance(1_000);
    await callbacksRun();
    const second = parkedGet(q);
    await callbacksRun();
    assert.deepEqual([first.key, second.key], ['noisy/a', 'waiting'], 'one at a time while it owes');
    noisyWait = -1;
    q.done('noisy/a');
    const third = parkedGet(q);
    await callbacksRun();
    assert.deepEqual([second.key, third.key], ['noisy/b', 'noisy/c'], 'owing nothing, its keys run at once again');
  });

  it('queues a key once however often it is added', async () => {
    const q = new WorkQueue('t');
    q.add('a');
    q.add('b');
    q.add('a');
    assert.equal(q.length, 2);
    assert.equal(await q.get(), 'a');
    assert.equal(await q.get(), 'b');
    assert.equal(q.length, 0);
  });

  it('never hands a key being processed to a second worker, and re-queues it after done when it was added meanwhile', async () => {
    const q = new WorkQueue('t');
    q.add('a');
    const first = await q.get();
    q.add('a');
    assert.equal(q.length, 0, 'a dirty key in flight is not queued');
    const second = parkedGet(q);
    await callbacksRun();
    assert.equal(second.key, 'waiting');
    q.done(first!);
    await callbacksRun();
    assert.equal(second.key, 'a');
  });

  it('does not re-queue a processed key that was not added again', async () => {
    const q = new WorkQueue('t');
    q.add('a');
    q.done((await q.get())!);
    assert.equal(q.length, 0);
    const next = parkedGet(q);
    await callbacksRun();
    assert.equal(next.key, 'waiting');
  });

  it('hands keys to waiting workers in the order they were added', async () => {
    const q = new WorkQueue('t');
    const w1 = q.get();
    const w2 = q.get();
    q.add('x');
    q.add('y');
    assert.deepEqual(await Promise.all([w1, w2]), ['x', 'y']);
  });

  it('adds delayed keys when their delay has passed, earliest first', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue('t', { clock });
    q.addAfter('late', 60);
    q.addAfter('early', 20);
    clock.advance(19);
    assert.equal(q.length, 0);
    clock.advance(21);
    assert.equal(q.length, 1);
    assert.equal(await q.get(), 'early');
    clock.advance(19);
    assert.equal(q.length, 0);
    clock.advance(1);
    assert.equal(await q.get(), 'late');
  });

  it('keeps the earliest of several pending delays for one key', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue('t', { clock });
    q.addAfter('a', 500);
    q.addAfter('a', 20);
    q.addAfter('a', 300);
    clock.advance(20);
    assert.equal(await q.get(), 'a');
    q.done('a');
    clock.advance(1_000);
    assert.equal(q.length, 0, 'the later delays were merged into the earliest');
    assert.equal(clock.pending, 0, 'no timer left for them');
  });

  it('adds at once when the delay is zero or negative', () => {
    const q = new WorkQueue('t');
    q.addAfter('a', 0);
    q.addAfter('b', -5);
    assert.equal(q.length, 2);
  });

  it('retries a failing key with exponential backoff and counts requeues until forgotten', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue('t', { baseDelayMs: 10, clock });
    q.addRateLimited('a');
    assert.equal(q.numRequeues('a'), 1);
    clock.advance(9);
    assert.equal(q.length, 0);
    clock.advance(1);
    assert.equal(await q.get(), 'a');
    q.done('a');
    q.addRateLimited('a');
    assert.equal(clock.nextTimerInMs(), 20, 'the second failure waits twice the base delay');
    q.addRateLimited('a');
    assert.equal(q.numRequeues('a'), 3);
    q.forget('a');
    assert.equal(q.numRequeues('a'), 0);
  });

  it('stops handing out work on shutdown: waiting workers get undefined and delayed keys are dropped', async () => {
    const q = new WorkQueue('t');
    const waiting = q.get();
    q.shutDown();
    assert.equal(await waiting, undefined);
    q.add('a');
    q.addAfter('b', 10);
    assert.equal(q.length, 0);
    assert.equal(await q.get(), undefined);
  });

  it('drops queued and delayed keys on shutdown', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue('t', { clock });
    q.add('a');
    q.addAfter('b', 10);
    q.shutDown();
    assert.equal(q.length, 0);
    assert.equal(clock.pending, 0, 'the delay timer is cancelled');
    clock.advance(30);
    assert.equal(await q.get(), undefined);
  });

  it('drains: resolves once every key in flight is done, and not re-queued after shutdown', async () => {
    const q = new WorkQueue('t');
    q.add('a');
    q.add('b');
    const a = (await q.get())!;
    const b = (await q.get())!;
    q.add('a');
    q.shutDown();
    let drained = false;
    const drain = q.drain().then(() => (drained = true));
    q.done(a);
    await callbacksRun();
    assert.equal(drained, false, 'b is still in flight');
    q.done(b);
    await drain;
    assert.equal(q.length, 0, 'a was dirty but the queue is shut down');
  });

  it('drains at once when nothing is in flight', async () => {
    await new WorkQueue('t').drain();
  });

  it('hands out keys round-robin over namespaces: a burst in one waits behind its own keys only', async () => {
    const clock = new ManualClock();
    const queued: number[] = [];
    const q = new WorkQueue('t', { clock, hooks: { onQueued: (s) => queued.push(s) } });
    for (let i = 0; i < 1000; i++) q.add(`noisy/app-${i}`);
    q.add('noisy/app-0');
    q.add('victim/web');
    assert.equal(q.length, 1001, 'a re-added key is still queued once');
    const first = (await q.get())!;
    clock.advance(1_000);
    const second = (await q.get())!;
    assert.deepEqual([first, second], ['noisy/app-0', 'victim/web']);
    assert.equal(queued[1], 1, 'the victim waited one key, not a thousand');
    q.done(first);
    q.done(second);
    q.add('victim/web');
    const rest: string[] = [];
    while (q.length > 0) rest.push((await q.get())!);
    assert.equal(rest.indexOf('victim/web'), 1, 'a key added again later takes the next turn of its namespace');
    q.shutDown();
  });

  it('reports adds, depth, retries and durations to its hooks', async () => {
    const seen = { adds: 0, depth: [] as number[], retries: 0, queued: [] as number[], work: [] as number[] };
    const hooks: QueueMetricsHooks = {
      onAdd: () => seen.adds++,
      onDepth: (n) => seen.depth.push(n),
      onRetry: () => seen.retries++,
      onQueued: (s) => seen.queued.push(s),
      onWork: (s) => seen.work.push(s),
    };
    const clock = new ManualClock();
    const q = new WorkQueue('t', { hooks, clock });
    q.add('a');
    q.add('a');
    q.add('b');
    clock.advance(2_000);
    const key = (await q.get())!;
    clock.advance(500);
    assert.equal(q.unfinishedWorkSeconds(), 0.5);
    assert.equal(q.longestRunningProcessorSeconds(), 0.5);
    q.done(key);
    q.addRateLimited('c');
    assert.equal(seen.adds, 2, 'a duplicate add is not an add');
    assert.deepEqual(seen.depth, [1, 2, 1]);
    assert.equal(seen.retries, 1);
    assert.deepEqual(seen.queued, [2]);
    assert.deepEqual(seen.work, [0.5]);
    q.shutDown();
  });
});

describe('RetryLimiter', () => {
  it('doubles the per-key delay from the base delay and caps it at the maximum', () => {
    const l = new RetryLimiter({ baseDelayMs: 5, maxDelayMs: 100, qps: 1_000_000, burst: 1_000_000 }, 0);
    const delays = Array.from({ length: 7 }, () => l.when('a', 0));
    assert.deepEqual(delays, [5, 10, 20, 40, 80, 100, 100]);
  });

  it('uses client-go defaults: 5 ms doubling up to 1000 s', () => {
    const l = new RetryLimiter({ qps: 1e9, burst: 1e9 }, 0);
    assert.equal(l.when('a', 0), 5);
    assert.equal(l.when('a', 0), 10);
    for (let i = 0; i < 40; i++) l.when('a', 0);
    assert.equal(l.when('a', 0), 1_000_000);
  });

  it('starts a failure from the base delay it is given (a refused write\'s second), doubling from the failures so far', () => {
    const l = new RetryLimiter({ baseDelayMs: 5, qps: 1e9, burst: 1e9 }, 0);
    assert.deepEqual([l.when('a', 0, undefined, 1_000), l.when('a', 0, undefined, 1_000), l.when('a', 0, undefined, 1_000)], [1_000, 2_000, 4_000]);
    assert.equal(l.when('b', 0), 5, 'other keys keep the queue\'s base');
  });

  it('backs off each key on its own and restarts a forgotten key from the base delay', () => {
    const l = new RetryLimiter({ baseDelayMs: 5, qps: 1e9, burst: 1e9 }, 0);
    l.when('a', 0);
    l.when('a', 0);
    assert.equal(l.when('b', 0), 5);
    assert.equal(l.numRequeues('a'), 2);
    l.forget('a');
    assert.equal(l.numRequeues('a'), 0);
    assert.equal(l.when('a', 0), 5);
  });

  it('lets a burst through at once, then spaces retries at the bucket rate', () => {
    const l = new RetryLimiter({ baseDelayMs: 0, qps: 10, burst: 3 }, 0);
    const delays = ['a', 'b', 'c', 'd', 'e'].map((k) => l.when(k, 0));
    assert.deepEqual(delays, [0, 0, 0, 100, 200]);
  });

  it('refills the bucket over time, up to the burst', () => {
    const l = new RetryLimiter({ baseDelayMs: 0, qps: 10, burst: 2 }, 0);
    l.when('a', 0);
    l.when('b', 0);
    assert.equal(l.when('c', 0), 100);
    assert.equal(l.when('d', 10_000), 0, 'refilled after 10 s');
    assert.equal(l.when('e', 10_000), 0);
    assert.equal(l.when('f', 10_000), 100, 'but never beyond the burst');
  });

  it('runs a planned look sooner than the backoff instead, and takes no token for it', () => {
    const l = new RetryLimiter({ baseDelayMs: 0, qps: 10, burst: 1 }, 0);
    assert.equal(l.when('a', 0), 0, 'the one token');
    const planned = Array.from({ length: 100 }, (_, i) => l.when(`p${i}`, 0, 50));
    assert.deepEqual(new Set(planned), new Set([50]), 'each planned look (50 ms) is sooner than the bucket (100 ms)');
    assert.equal(l.when('x', 0), 100, 'the bucket owes one token, not 101');
    assert.equal(l.when('y', 0, 10_000), 200, 'a planned look later than the bucket waits for a token as any retry does');
    assert.equal(l.numRequeues('p0'), 1, 'a planned retry still counts as a failure');
  });

  it('lets the per-key backoff pass a planned look once it is sooner', () => {
    const l = new RetryLimiter({ baseDelayMs: 5, qps: 1e9, burst: 1e9 }, 0);
    const delays = Array.from({ length: 6 }, () => l.when('a', 0, 60));
    assert.deepEqual(delays, [5, 10, 20, 40, 60, 60]);
  });

  it('takes the slower of the per-key backoff and the bucket', () => {
    const l = new RetryLimiter({ baseDelayMs: 50, qps: 10, burst: 1 }, 0);
    assert.equal(l.when('a', 0), 50, 'per-key backoff dominates');
    assert.equal(l.when('b', 0), 100, 'the bucket dominates');
  });
});
