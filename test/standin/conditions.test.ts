import assert from 'node:assert/strict';
import { applyConditions, findCondition, timestamp } from './conditions.ts';
import type { ConditionSet } from './conditions.ts';

const set: ConditionSet = { happy: 'Ready', dependents: ['ConfigurationsReady', 'RoutesReady'] };
const T0 = Date.parse('2026-01-01T00:00:00Z');

describe('Knative condition sets (stand-in)', () => {
  it('starts unset dependents as Unknown and makes Ready True only when all are True', () => {
    const half = applyConditions(set, undefined, [{ type: 'ConfigurationsReady', status: 'True' }], T0);
    assert.equal(findCondition(half, 'RoutesReady')?.status, 'Unknown');
    assert.equal(findCondition(half, 'Ready')?.status, 'Unknown');
    const all = applyConditions(set, half, [{ type: 'RoutesReady', status: 'True' }], T0);
    assert.equal(findCondition(all, 'Ready')?.status, 'True');
  });

  it('lets a False dependent win over an Unknown one and copies its reason and message to Ready', () => {
    const c = applyConditions(set, undefined, [
      { type: 'ConfigurationsReady', status: 'Unknown', reason: 'Deploying' },
      { type: 'RoutesReady', status: 'False', reason: 'RevisionMissing', message: 'Revision "x" referenced in traffic not found.' },
    ], T0);
    assert.deepEqual(findCondition(c, 'Ready'), {
      type: 'Ready', status: 'False', reason: 'RevisionMissing', message: 'Revision "x" referenced in traffic not found.', lastTransitionTime: '2026-01-01T00:00:00Z',
    });
  });

  it('prefers the most recently changed unhappy dependent', () => {
    const first = applyConditions(set, undefined, [{ type: 'ConfigurationsReady', status: 'Unknown', reason: 'Old' }], T0);
    const later = applyConditions(set, first, [{ type: 'RoutesReady', status: 'Unknown', reason: 'New' }], T0 + 5_000);
    assert.equal(findCondition(later, 'Ready')?.reason, 'New');
  });

  it('keeps lastTransitionTime while a condition is unchanged and moves it on any change', () => {
    const a = applyConditions(set, undefined, [{ type: 'RoutesReady', status: 'True' }], T0);
    const b = applyConditions(set, a, [{ type: 'RoutesReady', status: 'True' }], T0 + 60_000);
    assert.equal(findCondition(b, 'RoutesReady')?.lastTransitionTime, timestamp(T0));
    const c = applyConditions(set, b, [{ type: 'RoutesReady', status: 'Unknown', reason: 'X' }], T0 + 60_000);
    assert.equal(findCondition(c, 'RoutesReady')?.lastTransitionTime, timestamp(T0 + 60_000));
  });

  it('gives non-terminal conditions severity Info and sorts conditions by type', () => {
    const c = applyConditions({ happy: 'Ready', dependents: ['PredictorReady'] }, undefined, [
      { type: 'Stopped', status: 'False' }, { type: 'PredictorReady', status: 'True' },
    ], T0);
    assert.deepEqual(c.map((x) => [x.type, x.severity]), [['PredictorReady', undefined], ['Ready', undefined], ['Stopped', 'Info']]);
  });
});
