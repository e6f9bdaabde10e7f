import assert from 'node:assert/strict';
import { findCondition } from './conditions.ts';
import type { KubeObject } from './kube.ts';
import { buildRevision } from './knative-revision.ts';
import type { RevisionPlan } from './knative-revision.ts';
import { latestReadyRevision, serviceStatus, validateTraffic } from './knative-service-status.ts';

const T = Date.parse('2026-01-01T00:00:00Z');

function ksvc(traffic: any[] | undefined, status?: any, templateName = 'shop-v2'): KubeObject {
  return {
    metadata: { name: 'shop', namespace: 'ns', uid: 'svc-uid', generation: 3 },
    spec: { template: { metadata: { name: templateName }, spec: { containers: [{ image: 'shop' }] } }, ...(traffic ? { traffic } : {}) },
    ...(status ? { status } : {}),
  };
}

function revision(name: string, gen: number, ready: 'True' | 'False' | 'Unknown'): KubeObject {
  const r = buildRevision(ksvc(undefined), name, gen, true, 'now');
  r.status = { conditions: [{ type: 'Ready', status: ready, ...(ready === 'False' ? { message: 'boom' } : {}) }] };
  return r;
}

function compute(svc: KubeObject, revs: KubeObject[], plan: RevisionPlan = { kind: 'existing', name: 'shop-v2' }) {
  const byName = (n: string) => revs.find((r) => r.metadata.name === n);
  return serviceStatus({ ksvc: svc, plan, owned: revs, byName, domain: 'example.com', nowMs: T });
}

describe('Knative Service status (stand-in)', () => {
  it('resolves a pinned canary split with tag URLs and becomes Ready', () => {
    const s = compute(ksvc([{ revisionName: 'shop-v1', percent: 80, tag: 'stable' }, { revisionName: 'shop-v2', percent: 20, tag: 'candidate' }]),
      [revision('shop-v1', 1, 'True'), revision('shop-v2', 2, 'True')]);
    assert.deepEqual(s.traffic, [
      { tag: 'stable', revisionName: 'shop-v1', latestRevision: false, percent: 80, url: 'http://stable-shop.ns.example.com' },
      { tag: 'candidate', revisionName: 'shop-v2', latestRevision: false, percent: 20, url: 'http://candidate-shop.ns.example.com' },
    ]);
    assert.equal(s.url, 'http://shop.ns.example.com');
    assert.deepEqual(s.address, { url: 'http://shop.ns.svc.cluster.local' });
    assert.equal(findCondition(s.conditions, 'Ready')?.status, 'True');
    assert.equal(s.latestReadyRevisionName, 'shop-v2');
    assert.equal(s.observedGeneration, 3);
  });

  it('routes an empty traffic block 100% to the latest ready revision, keeping latestRevision: true', () => {
    const s = compute(ksvc(undefined), [revision('shop-v1', 1, 'True'), revision('shop-v2', 2, 'Unknown')]);
    assert.deepEqual(s.traffic, [{ revisionName: 'shop-v1', latestRevision: true, percent: 100 }]);
    assert.equal(s.latestCreatedRevisionName, 'shop-v2');
    assert.equal(s.latestReadyRevisionName, 'shop-v1');
    assert.equal(findCondition(s.conditions, 'ConfigurationsReady')?.status, 'Unknown');
    assert.equal(findCondition(s.conditions, 'RoutesReady')?.status, 'True');
  });

  it('reports a missing revision like Knative and keeps serving the previous traffic', () => {
    const previous = { traffic: [{ revisionName: 'shop-v1', latestRevision: false, percent: 100 }], address: { url: 'http://shop.ns.svc.cluster.local' } };
    const s = compute(ksvc([{ revisionName: 'shop-v9', percent: 100 }], previous), [revision('shop-v1', 1, 'True'), revision('shop-v2', 2, 'True')]);
    const routes = findCondition(s.conditions, 'RoutesReady');
    assert.equal(routes?.status, 'False');
    assert.equal(routes?.reason, 'RevisionMissing');
    assert.equal(routes?.message, 'Revision "shop-v9" referenced in traffic not found.');
    assert.equal(findCondition(s.conditions, 'Ready')?.status, 'False');
    assert.deepEqual(s.traffic, previous.traffic);
  });

  it('waits with RoutesReady Unknown while a named revision is not ready, keeping the old route', () => {
    const previous = { traffic: [{ revisionName: 'shop-v1', latestRevision: false, percent: 100 }] };
    const s = compute(ksvc([{ revisionName: 'shop-v1', percent: 90 }, { revisionName: 'shop-v2', percent: 10 }], previous),
      [revision('shop-v1', 1, 'True'), revision('shop-v2', 2, 'Unknown')]);
    const routes = findCondition(s.conditions, 'RoutesReady');
    assert.equal(routes?.status, 'Unknown');
    assert.equal(routes?.message, 'Revision "shop-v2" is not yet ready.');
    assert.deepEqual(s.traffic, previous.traffic);
  });

  it('says the configuration is waiting when the latest is followed and nothing is ready yet', () => {
    const s = compute(ksvc(undefined), [revision('shop-v2', 1, 'Unknown')]);
    assert.equal(findCondition(s.conditions, 'RoutesReady')?.message, 'Configuration "shop" is waiting for a Revision to become ready.');
    assert.equal(s.traffic, undefined);
  });

  it('fails ConfigurationsReady when the latest created revision failed', () => {
    const s = compute(ksvc(undefined), [revision('shop-v1', 1, 'True'), revision('shop-v2', 2, 'False')]);
    const cfg = findCondition(s.conditions, 'ConfigurationsReady');
    assert.equal(cfg?.reason, 'RevisionFailed');
    assert.equal(cfg?.message, 'Revision "shop-v2" failed with message: boom.');
    assert.deepEqual(s.traffic, [{ revisionName: 'shop-v1', latestRevision: true, percent: 100 }]);
  });

  it('carries a configuration failure (a rejected template) into ConfigurationsReady', () => {
    const s = compute(ksvc(undefined), [revision('shop-v1', 1, 'True')], { kind: 'invalid', failure: { reason: 'ValidationFailed', message: 'nope' }, keep: 'shop-v1' });
    assert.equal(findCondition(s.conditions, 'ConfigurationsReady')?.status, 'False');
    assert.equal(s.latestCreatedRevisionName, 'shop-v1');
  });

  it('refuses a revision that belongs to another service', () => {
    const foreign = revision('other-v1', 1, 'True');
    foreign.metadata.labels!['serving.knative.dev/service'] = 'other';
    const s = compute(ksvc([{ revisionName: 'other-v1', percent: 100 }]), [revision('shop-v2', 2, 'True'), foreign]);
    assert.equal(findCondition(s.conditions, 'RoutesReady')?.reason, 'RevisionNotOwned');
  });
});

describe('Knative latest ready revision (stand-in)', () => {
  it('never moves back to a revision older than the current latest ready one, except to the BYO-named one', () => {
    const revs = [revision('shop-v1', 1, 'True'), revision('shop-v2', 2, 'Unknown'), revision('shop-v3', 3, 'True')];
    assert.equal(latestReadyRevision(ksvc(undefined, { latestReadyRevisionName: 'shop-v3' }, 'shop-v2'), revs, 'shop-v2'), 'shop-v3');
    assert.equal(latestReadyRevision(ksvc(undefined, { latestReadyRevisionName: 'shop-v3' }, 'shop-v1'), revs, 'shop-v1'), 'shop-v1');
  });
});

describe('Knative traffic validation (stand-in)', () => {
  it('reports targets that do not sum to 100 and duplicate tags as the webhook would', () => {
    assert.equal(validateTraffic([{ revisionName: 'a', percent: 100 }]), undefined);
    assert.match(validateTraffic([{ revisionName: 'a', percent: 60 }, { revisionName: 'b', percent: 30 }])!, /Traffic targets sum to 90, want 100/);
    assert.match(validateTraffic([{ revisionName: 'a', percent: 50, tag: 't' }, { revisionName: 'b', percent: 50, tag: 't' }])!, /Multiple definitions for "t"/);
    assert.match(validateTraffic([{ revisionName: 'a', latestRevision: true, percent: 100 }])!, /may not set revisionName "a" when latestRevision is true/);
  });
});
