import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkQueue } from './queue.ts';

describe('stand-in work queue', () => {
  it('handles a key added many times while waiting only once', async () => {
    const seen: string[] = [];
    const q = new WorkQueue({ concurrency: 2, handle: async (k) => { seen.push(k); }, onError: () => {} });
    for (let i = 0; i < 5; i++) q.add('a');
    q.add('b');
    q.start();
    await q.idle();
    assert.deepEqual(seen.sort(), ['a', 'b']);
  });

  it('never runs one key twice at once, and reruns a key added while it ran', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const q = new WorkQueue({
      concurrency: 4,
      handle: async () => {
        running++; runs++;
        maxRunning = Math.max(maxRunning, running);
        if (runs === 1) q.add('k');
        await sleep(5);
        running--;
      },
      onError: () => {},
    });
    q.start();
    q.add('k');
    await sleep(30);
    await q.idle();
    assert.equal(maxRunning, 1);
    assert.equal(runs, 2);
  });

  it('runs at most `concurrency` keys together', async () => {
    let running = 0;
    let maxRunning = 0;
    const q = new WorkQueue({
      concurrency: 3,
      handle: async () => { running++; maxRunning = Math.max(maxRunning, running); await sleep(2); running--; },
      onError: () => {},
    });
    q.start();
    for (let i = 0; i < 20; i++) q.add(`k${i}`);
    await q.idle();
    assert.equal(maxRunning, 3);
  });

  it('retries a failing key with backoff until it succeeds', async () => {
    let attempts = 0;
    const errors: string[] = [];
    const q = new WorkQueue({
      concurrency: 1, baseBackoffMs: 1,
      handle: async () => { if (++attempts < 3) throw new Error(`fail ${attempts}`); },
      onError: (_k, e) => errors.push((e as Error).message),
    });
    q.start();
    q.add('k');
    await sleep(50);
    assert.equal(attempts, 3);
    assert.deepEqual(errors, ['fail 1', 'fail 2']);
  });

  it('requeues a key after the delay its handler asks for, keeping the earliest delay', async () => {
    const times: number[] = [];
    const start = Date.now();
    const q = new WorkQueue({
      concurrency: 1,
      handle: async () => { times.push(Date.now() - start); return times.length === 1 ? { requeueAfterMs: 20 } : undefined; },
      onError: () => {},
    });
    q.start();
    q.add('k');
    q.addAfter('other', 1_000);
    q.addAfter('other', 10);
    await sleep(60);
    assert.equal(times.length, 3, 'k twice, other once');
    assert.ok(times[times.length - 1]! >= 19);
    await q.stop();
  });
});
