import assert from 'node:assert/strict';
import { WorkQueue } from './queue.ts';

/** Lets every other ready callback run first: a handler "working" while others start. */
const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A promise and the function that resolves it. */
function signal(): { done: Promise<void>; fire: () => void } {
  let fire = () => {};
  const done = new Promise<void>((resolve) => { fire = resolve; });
  return { done, fire };
}

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
        await yieldTurn();
        running--;
      },
      onError: () => {},
    });
    q.start();
    q.add('k');
    await q.idle();
    assert.equal(maxRunning, 1);
    assert.equal(runs, 2);
  });

  it('runs at most `concurrency` keys together', async () => {
    let running = 0;
    let maxRunning = 0;
    const q = new WorkQueue({
      concurrency: 3,
      handle: async () => { running++; maxRunning = Math.max(maxRunning, running); await yieldTurn(); running--; },
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
    const succeeded = signal();
    const q = new WorkQueue({
      concurrency: 1, baseBackoffMs: 1,
      handle: async () => {
        if (++attempts < 3) throw new Error(`fail ${attempts}`);
        succeeded.fire();
      },
      onError: (_k, e) => errors.push((e as Error).message),
    });
    q.start();
    q.add('k');
    await succeeded.done;
    assert.equal(attempts, 3);
    assert.deepEqual(errors, ['fail 1', 'fail 2']);
    await q.stop();
  });

  it('requeues a key after the delay its handler asks for, keeping the earliest delay', async () => {
    const handled: Array<{ key: string; atMs: number }> = [];
    const start = performance.now();
    const third = signal();
    const q = new WorkQueue({
      concurrency: 1,
      handle: async (key) => {
        handled.push({ key, atMs: performance.now() - start });
        if (handled.length === 3) third.fire();
        return key === 'k' && handled.filter((h) => h.key === 'k').length === 1 ? { requeueAfterMs: 20 } : undefined;
      },
      onError: () => {},
    });
    q.start();
    q.add('k');
    q.addAfter('other', 1_000);
    q.addAfter('other', 10);
    await third.done;
    await q.stop();
    assert.deepEqual(handled.map((h) => h.key).sort(), ['k', 'k', 'other'], 'k twice, other once (at the earlier of its two delays)');
    assert.ok(handled.find((h) => h.key === 'other')!.atMs < 1_000);
    assert.ok(handled.filter((h) => h.key === 'k')[1]!.atMs >= 19, 'k again only after the 20 ms it asked for');
  });
});
