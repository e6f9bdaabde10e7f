import assert from 'node:assert/strict';
import { FairSlots } from './fair-slots.ts';

/** Acquires for each namespace in order and records, in order, who got a slot. */
function contenders(slots: FairSlots, namespaces: string[]): { got: string[] } {
  const got: string[] = [];
  namespaces.forEach((ns, i) => void slots.acquire(ns).then(() => got.push(`${ns}#${i}`)));
  return { got };
}

const settle = () => new Promise<void>((r) => setImmediate(r));

describe('FairSlots', () => {
  it('gives a namespace at most its share, however many it asks for', async () => {
    const slots = new FairSlots({ perNamespace: 2, total: 10 });
    const { got } = contenders(slots, ['a', 'a', 'a', 'b']);
    await settle();
    assert.deepEqual(got, ['a#0', 'a#1', 'b#3']);
    assert.equal(slots.check('a'), 'namespace');
    assert.equal(slots.waiting('a'), 1);
    slots.release('a');
    await settle();
    assert.deepEqual(got, ['a#0', 'a#1', 'b#3', 'a#2']);
  });

  it('hands freed slots round-robin across namespaces when the total is the limit', async () => {
    const slots = new FairSlots({ perNamespace: 100, total: 2 });
    const { got } = contenders(slots, ['noisy', 'noisy', 'noisy', 'noisy', 'noisy', 'victim']);
    await settle();
    assert.deepEqual(got, ['noisy#0', 'noisy#1']);
    assert.equal(slots.check('victim'), 'total');
    slots.release('noisy');
    await settle();
    slots.release('noisy');
    await settle();
    assert.deepEqual(got, ['noisy#0', 'noisy#1', 'noisy#2', 'victim#5'], 'the victim waits one turn, not behind all of noisy\'s');
  });

  it('does not let a newcomer jump the queue of its own namespace', async () => {
    const slots = new FairSlots({ perNamespace: 1, total: 5 });
    const { got } = contenders(slots, ['a', 'a']);
    await settle();
    slots.release('a');
    assert.equal(slots.check('a'), 'namespace', 'the freed slot went to the waiter');
    await settle();
    assert.deepEqual(got, ['a#0', 'a#1']);
    assert.equal(slots.held('a'), 1);
    assert.equal(slots.held(), 1);
  });

  it('ignores a release without a slot held', () => {
    const slots = new FairSlots({ perNamespace: 1, total: 1 });
    slots.release('a');
    assert.equal(slots.held(), 0);
    assert.equal(slots.check('a'), 'free');
  });
});
