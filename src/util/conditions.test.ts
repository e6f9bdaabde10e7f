import assert from 'node:assert/strict';
import { findCondition, isConditionTrue, setCondition, type Condition } from './conditions.ts';

const t0 = new Date('2026-03-01T10:00:00.123Z');
const t1 = new Date('2026-03-01T10:05:00.456Z');

describe('conditions', () => {
  it('adds a missing condition stamped with the current time at second precision', () => {
    const list = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Pending', message: 'waiting' }, t0);
    assert.deepEqual(list, [{ type: 'Ready', status: 'False', reason: 'Pending', message: 'waiting', lastTransitionTime: '2026-03-01T10:00:00Z' }]);
  });

  it('keeps lastTransitionTime when the status stays the same, even if reason and message change', () => {
    const before = setCondition([], { type: 'Ready', status: 'False', reason: 'Pending', message: 'waiting' }, t0);
    const after = setCondition(before, { type: 'Ready', status: 'False', reason: 'ImagePullFailed', message: 'no such image', observedGeneration: 3 }, t1);
    assert.equal(after[0]!.lastTransitionTime, '2026-03-01T10:00:00Z');
    assert.equal(after[0]!.reason, 'ImagePullFailed');
    assert.equal(after[0]!.message, 'no such image');
    assert.equal(after[0]!.observedGeneration, 3);
  });

  it('moves lastTransitionTime when the status flips', () => {
    const before = setCondition([], { type: 'Ready', status: 'False', reason: 'Pending', message: '' }, t0);
    const after = setCondition(before, { type: 'Ready', status: 'True', reason: 'Serving', message: '' }, t1);
    assert.equal(after[0]!.lastTransitionTime, '2026-03-01T10:05:00Z');
  });

  it('keeps insertion order when an earlier condition is replaced', () => {
    let list: Condition[] = [];
    for (const type of ['Ready', 'Prewarmed', 'RolloutProgressing']) list = setCondition(list, { type, status: 'Unknown', reason: 'Init', message: '' }, t0);
    list = setCondition(list, { type: 'Ready', status: 'True', reason: 'Serving', message: '' }, t1);
    assert.deepEqual(list.map((c) => c.type), ['Ready', 'Prewarmed', 'RolloutProgressing']);
  });

  it('returns a new array and leaves the input untouched', () => {
    const before = setCondition([], { type: 'Ready', status: 'False', reason: 'Pending', message: '' }, t0);
    const snapshot = structuredClone(before);
    const after = setCondition(before, { type: 'Ready', status: 'True', reason: 'Serving', message: '' }, t1);
    assert.notEqual(after, before);
    assert.deepEqual(before, snapshot);
  });

  it('finds conditions by type and reads True only from status True', () => {
    let list = setCondition([], { type: 'Ready', status: 'True', reason: 'Serving', message: '' }, t0);
    list = setCondition(list, { type: 'Prewarmed', status: 'Unknown', reason: 'Warming', message: '' }, t0);
    assert.equal(findCondition(list, 'Prewarmed')?.reason, 'Warming');
    assert.equal(findCondition(list, 'Missing'), undefined);
    assert.equal(isConditionTrue(list, 'Ready'), true);
    assert.equal(isConditionTrue(list, 'Prewarmed'), false);
    assert.equal(isConditionTrue(undefined, 'Ready'), false);
  });
});
