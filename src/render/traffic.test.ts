import assert from 'node:assert/strict';
import { knativeRouter, splitReachesCandidate, trafficSplit, type TrafficPlan, type TrafficShare } from './traffic.ts';

const stable = { revision: 'shop-00001', version: 'v1' };
const candidate = (percent: number, ready = true) => ({ revision: 'shop-00002', version: 'v2', percent, ready });

describe('traffic split', () => {
  const cases: Array<{ it: string; plan: TrafficPlan; candidateReachable?: boolean; want: TrafficShare[] }> = [
    { it: 'gives the first version\'s revision all traffic before anything is stable', plan: { initial: { revision: 'shop-00001', version: 'v1' } }, want: [{ revision: 'shop-00001', version: 'v1', percent: 100, tag: 'stable' }] },
    { it: 'names nothing before the first version has a revision', plan: { initial: { version: 'v1' } }, want: [] },
    { it: 'gives stable all traffic when there is no candidate', plan: { stable }, want: [{ revision: 'shop-00001', version: 'v1', percent: 100, tag: 'stable' }] },
    { it: 'leaves out a candidate that is not ready, whatever its percent', plan: { stable, candidate: candidate(30, false) }, want: [{ revision: 'shop-00001', version: 'v1', percent: 100, tag: 'stable' }] },
    {
      it: 'lists a ready candidate at 0%, so it has its tag before it has weight', plan: { stable, candidate: candidate(0) },
      want: [{ revision: 'shop-00001', version: 'v1', percent: 100, tag: 'stable' }, { revision: 'shop-00002', version: 'v2', percent: 0, tag: 'candidate' }],
    },
    {
      it: 'gives a ready candidate at 30% its share and stable the rest', plan: { stable, candidate: candidate(30) },
      want: [{ revision: 'shop-00001', version: 'v1', percent: 70, tag: 'stable' }, { revision: 'shop-00002', version: 'v2', percent: 30, tag: 'candidate' }],
    },
    {
      it: 'gives stable all traffic when the candidate is the stable revision itself', plan: { stable, candidate: { ...candidate(100), revision: stable.revision } },
      want: [{ revision: 'shop-00001', version: 'v1', percent: 100, tag: 'stable' }],
    },
    { it: 'leaves out a ready candidate the route may not reach', plan: { stable, candidate: candidate(30) }, candidateReachable: false, want: [{ revision: 'shop-00001', version: 'v1', percent: 100, tag: 'stable' }] },
  ];
  for (const c of cases) {
    it(c.it, () => {
      const split = trafficSplit(c.plan, c.candidateReachable);
      assert.deepEqual(split, c.want);
      if (split.length) assert.equal(split.reduce((sum, s) => sum + s.percent, 0), 100, 'Knative refuses a split that does not sum to 100');
      // Header routes and mirroring (either router) reach the candidate exactly when it has a place here.
      assert.equal(splitReachesCandidate(c.plan, c.candidateReachable), c.want.some((s) => s.tag === 'candidate'));
    });
  }

  it('routes Knative to its latest revision while no revision can be pinned, as Knative defaults an empty traffic block', () => {
    assert.deepEqual(knativeRouter.routes({ initial: { version: 'v1' } }).traffic, [{ latestRevision: true, percent: 100 }]);
  });

  it('keeps Knative\'s traffic at 100% on stable when the candidate is the stable revision (it summed to 0 before)', () => {
    assert.deepEqual(knativeRouter.routes({ stable, candidate: { ...candidate(100), revision: stable.revision } }).traffic, [{ revisionName: 'shop-00001', percent: 100, tag: 'stable' }]);
  });
});
