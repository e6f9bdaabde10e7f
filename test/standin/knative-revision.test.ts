import assert from 'node:assert/strict';
import type { KubeObject } from './kube.ts';
import { LABEL, TEMPLATE_HASH, buildRevision, planRevision, routingStateChanges, templateHash } from './knative-revision.ts';

function ksvc(template: any, extra: Partial<KubeObject> = {}): KubeObject {
  return { metadata: { name: 'shop', namespace: 'ns', uid: 'svc-uid', generation: 1 }, spec: { template }, ...extra };
}

function revisionOf(svc: KubeObject, name: string, generation: number, state = 'active'): KubeObject {
  const rev = buildRevision(svc, name, generation, true, '2026-01-01T00:00:00Z');
  rev.metadata.labels![LABEL.routingState] = state;
  return rev;
}

const v1 = { metadata: { name: 'shop-v1' }, spec: { containers: [{ image: 'shop:1' }] } };

describe('Knative revision planning (stand-in)', () => {
  it('creates a BYO-named revision that does not exist yet, at the next configuration generation', () => {
    const svc = ksvc(v1);
    assert.deepEqual(planRevision(svc, [], () => undefined), { kind: 'create', name: 'shop-v1', generation: 1 });
  });

  it('names generated revisions <service>-0000N after the highest configuration generation', () => {
    const svc = ksvc({ spec: { containers: [{ image: 'shop:2' }] } });
    const old = revisionOf(ksvc(v1), 'shop-v1', 4);
    assert.deepEqual(planRevision(svc, [old], () => old), { kind: 'create', name: 'shop-00005', generation: 5 });
  });

  it('keeps the latest generated revision while the template is unchanged, even if its annotations were edited in place', () => {
    const template = { spec: { containers: [{ image: 'shop:2' }] } };
    const svc = ksvc(template);
    const rev = revisionOf(svc, 'shop-00001', 1);
    rev.metadata.annotations!['autoscaling.knative.dev/min-scale'] = '3';
    assert.deepEqual(planRevision(svc, [rev], () => rev), { kind: 'existing', name: 'shop-00001' });
  });

  it('rejects a BYO name without the service prefix with the webhook message', () => {
    const plan = planRevision(ksvc({ metadata: { name: 'v1' }, spec: {} }), [], () => undefined);
    assert.equal(plan.kind, 'invalid');
    assert.match(plan.kind === 'invalid' ? plan.failure.message : '', /invalid value: "v1" must have prefix "shop-": spec\.template\.metadata\.name/);
  });

  it('refuses a template change that keeps the BYO name (VerifyNameChange) and keeps the old revision', () => {
    const created = ksvc(v1);
    const rev = revisionOf(created, 'shop-v1', 1);
    const changed = ksvc({ ...v1, spec: { containers: [{ image: 'shop:1b' }] } }, { status: { latestCreatedRevisionName: 'shop-v1' } });
    const plan = planRevision(changed, [rev], () => rev);
    assert.equal(plan.kind, 'invalid');
    if (plan.kind !== 'invalid') return;
    assert.equal(plan.keep, 'shop-v1');
    assert.match(plan.failure.message, /Saw the following changes without a name change/);
  });

  it('reuses an older BYO revision when the template names it again with the same spec (rollback)', () => {
    const rev1 = revisionOf(ksvc(v1), 'shop-v1', 1);
    const back = ksvc({ ...v1, metadata: { name: 'shop-v1', annotations: { note: 'rolled back' } } }, { status: { latestCreatedRevisionName: 'shop-v2' } });
    assert.deepEqual(planRevision(back, [rev1], () => rev1), { kind: 'existing', name: 'shop-v1' });
  });

  it('reports a BYO name taken by a revision another service controls', () => {
    const foreign = revisionOf(ksvc(v1, { metadata: { name: 'shop', namespace: 'ns', uid: 'other-uid' } }), 'shop-v1', 1);
    const plan = planRevision(ksvc(v1), [], () => foreign);
    assert.equal(plan.kind === 'invalid' && plan.failure.reason, 'RevisionFailed');
  });
});

describe('Knative revision objects (stand-in)', () => {
  it('copies template labels and annotations and adds the serving labels, owner and template hash', () => {
    const svc = ksvc({ metadata: { name: 'shop-v1', labels: { app: 'shop' }, annotations: { 'autoscaling.knative.dev/min-scale': '2' } }, spec: { containers: [{ image: 'shop:1' }] } });
    const rev = buildRevision(svc, 'shop-v1', 1, false, '2026-01-01T00:00:00Z');
    assert.equal(rev.metadata.labels!.app, 'shop');
    assert.equal(rev.metadata.labels![LABEL.service], 'shop');
    assert.equal(rev.metadata.labels![LABEL.configuration], 'shop');
    assert.equal(rev.metadata.labels![LABEL.configurationGeneration], '1');
    assert.equal(rev.metadata.labels![LABEL.revision], 'shop-v1');
    assert.equal(rev.metadata.labels![LABEL.routingState], 'pending');
    assert.equal(rev.metadata.annotations!['autoscaling.knative.dev/min-scale'], '2');
    assert.equal(rev.metadata.annotations![TEMPLATE_HASH], templateHash(svc.spec.template));
    assert.deepEqual(rev.metadata.ownerReferences, [{ apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'shop', uid: 'svc-uid', controller: true, blockOwnerDeletion: true }]);
    assert.deepEqual(rev.spec, { containers: [{ image: 'shop:1' }] });
  });

  it('creates a revision active when its service already routes traffic', () => {
    assert.equal(buildRevision(ksvc(v1), 'shop-v1', 1, true, 'now').metadata.labels![LABEL.routingState], 'active');
  });
});

describe('Knative routing state labels (stand-in)', () => {
  const svc = ksvc(v1);
  const v1rev = revisionOf(svc, 'shop-v1', 1, 'active');
  const v2rev = revisionOf(svc, 'shop-v2', 2, 'active');

  it('moves an active revision the route no longer names to reserve once the route has settled', () => {
    const changes = routingStateChanges([v1rev, v2rev], [{ revisionName: 'shop-v1', percent: 100 }], [{ revisionName: 'shop-v1', percent: 100 }], 'shop-v2', true);
    assert.deepEqual([...changes], [['shop-v2', 'reserve']]);
  });

  it('leaves states alone while the route is still resolving', () => {
    const changes = routingStateChanges([v1rev, v2rev], [{ revisionName: 'shop-v1', percent: 100 }], [], 'shop-v2', false);
    assert.deepEqual([...changes], []);
  });

  it('marks the latest created revision active when a target follows the latest revision', () => {
    const pending = revisionOf(svc, 'shop-v2', 2, 'pending');
    const changes = routingStateChanges([v1rev, pending], [{ latestRevision: true, percent: 100 }], [{ revisionName: 'shop-v1', latestRevision: true, percent: 100 }], 'shop-v2', true);
    assert.deepEqual([...changes], [['shop-v2', 'active']]);
  });
});
