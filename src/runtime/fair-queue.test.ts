import assert from 'node:assert/strict';
import { FairQueue } from './fair-queue.ts';

function drain(q: FairQueue): string[] {
  const out: string[] = [];
  while (q.length > 0) out.push(q.shift());
  return out;
}

describe('FairQueue', () => {
  const cases: Array<{ name: string; pushed: string[]; handedOut: string[] }> = [
    { name: 'keeps FIFO order within one namespace', pushed: ['a/1', 'a/2', 'a/3'], handedOut: ['a/1', 'a/2', 'a/3'] },
    { name: 'takes one key per namespace per round', pushed: ['a/1', 'a/2', 'a/3', 'b/1', 'b/2', 'c/1'], handedOut: ['a/1', 'b/1', 'c/1', 'a/2', 'b/2', 'a/3'] },
    { name: 'gives cluster-scoped keys one flow of their own', pushed: ['x', 'y', 'a/1'], handedOut: ['x', 'a/1', 'y'] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const q = new FairQueue();
      for (const k of c.pushed) q.push(k);
      assert.equal(q.length, c.pushed.length);
      assert.deepEqual(drain(q), c.handedOut);
    });
  }

  it('holds a namespace back as one: its keys and those pushed meanwhile wait, in order, while others take turns', () => {
    const q = new FairQueue();
    for (const k of ['a/1', 'a/2', 'b/1', 'a/3', 'b/2']) q.push(k);
    const first = q.shift();
    assert.equal(first, 'a/1');
    assert.equal(q.hold(first), 'a');
    q.push('a/4');
    assert.deepEqual([q.length, q.heldLength], [2, 4], 'only b\'s keys are ready');
    assert.deepEqual(drain(q), ['b/1', 'b/2'], 'a\'s turn is skipped');
    q.push('b/3');
    q.release('a');
    assert.deepEqual([q.length, q.heldLength], [5, 0]);
    assert.deepEqual(drain(q), ['b/3', 'a/1', 'a/2', 'a/3', 'a/4'], 'a comes back at the end of the round, its keys in their order');
  });

  it('holds and releases a namespace whose only key was just taken, and one held again at once', () => {
    const q = new FairQueue();
    q.push('a/1');
    q.push('b/1');
    q.hold(q.shift());
    q.release('a');
    q.hold(q.shift());
    assert.deepEqual([q.length, q.heldLength], [1, 1], 'b/1 was the next in line, and is held now; a/1 is ready');
    assert.deepEqual(drain(q), ['a/1']);
    q.release('b');
    q.release('b');
    assert.deepEqual(drain(q), ['b/1'], 'a second release changes nothing');
  });

  it('serves a key of another namespace within one round of a 1,000-key burst', () => {
    const q = new FairQueue();
    for (let i = 0; i < 1000; i++) q.push(`noisy/app-${i}`);
    q.push('victim/web');
    const order = drain(q);
    assert.equal(order.indexOf('victim/web'), 1, 'one noisy key, then the victim');
    assert.deepEqual(order.filter((k) => k.startsWith('noisy/')), Array.from({ length: 1000 }, (_, i) => `noisy/app-${i}`), 'the burst keeps its own order');
  });

  it('puts a namespace that comes back after emptying at the end of the round', () => {
    const q = new FairQueue();
    q.push('a/1');
    q.push('b/1');
    q.push('b/2');
    assert.equal(q.shift(), 'a/1');
    q.push('a/2');
    assert.deepEqual(drain(q), ['b/1', 'a/2', 'b/2']);
  });

  it('forgets everything on clear', () => {
    const q = new FairQueue();
    q.push('a/1');
    q.push('b/1');
    q.clear();
    assert.equal(q.length, 0);
    q.push('c/1');
    assert.deepEqual(drain(q), ['c/1']);
  });
});
