import assert from 'node:assert/strict';
import type { Candidate, CandidateState, RolloutPlan } from '../rollout/canary.ts';
import { latestBounds, revisionBounds } from './revision-bounds.ts';

const plan = (state: CandidateState, warm = true): RolloutPlan => ({
  stable: { version: 'v1', revision: 'shop-v1' },
  candidate: { version: 'v2', revision: 'shop-v2', percent: 0, ready: true, warm, state } satisfies Candidate,
  phase: 'Canary', events: [],
  promoted: { status: 'False', reason: 'x', message: 'x' }, progressing: { status: 'True', reason: 'x', message: 'x' },
});

describe('revision bounds', () => {
  const effective = { minScale: 0, maxScale: 5 };
  const cases: Array<[CandidateState, boolean, number, { minScale: number; maxScale?: number }]> = [
    // state, warm, prewarm replicas, the candidate's bounds
    ['canary', true, 2, { minScale: 0, maxScale: 5 }],
    ['starting', false, 2, { minScale: 2, maxScale: 5 }],
    ['testing', true, 0, { minScale: 1, maxScale: 5 }],
    ['testing', true, 3, { minScale: 3, maxScale: 5 }],
    ['rolledBack', true, 2, { minScale: 0, maxScale: 5 }],
    ['aborted', false, 2, { minScale: 0, maxScale: 5 }],
    ['failed', false, 2, { minScale: 0, maxScale: 5 }],
  ];
  for (const [state, warm, prewarm, want] of cases) {
    it(`gives a ${warm ? 'warm' : 'cold'} ${state} candidate with a buffer of ${prewarm} min ${want.minScale}`, () => {
      const p = plan(state, warm);
      assert.deepEqual(revisionBounds(p, effective, prewarm).get('shop-v2'), want);
      assert.deepEqual(revisionBounds(p, effective, prewarm).get('shop-v1'), effective, 'the stable version keeps the effective bounds');
      assert.deepEqual(latestBounds(p, effective, prewarm), want, 'KServe: the latest revision is the candidate');
    });
  }
});
