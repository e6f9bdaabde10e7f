import assert from 'node:assert/strict';
import { APPLIED_HASH_ANNOTATION, isSemanticSubset, needsApply, stampAppliedHash } from './apply.ts';

function desiredService(image = 'ghcr.io/acme/web:1') {
  return {
    apiVersion: 'serving.knative.dev/v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'demo', labels: { app: 'web' } },
    spec: { template: { spec: { containers: [{ image, env: [{ name: 'A', value: '1' }] }] } } },
  };
}

/** What the API server hands back: our fields plus defaults and server metadata, without apiVersion/kind (list items). */
function liveFrom(desired: ReturnType<typeof desiredService>) {
  const { apiVersion: _a, kind: _k, ...rest } = structuredClone(desired);
  return {
    ...rest,
    metadata: { ...rest.metadata, uid: 'u-1', resourceVersion: '42', generation: 1, managedFields: [{ manager: 'serverlessapp-operator' }] },
    spec: { template: { spec: { ...rest.spec.template.spec, containerConcurrency: 0, timeoutSeconds: 300 } }, traffic: [{ latestRevision: true, percent: 100 }] },
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

describe('stampAppliedHash', () => {
  it('annotates a copy with a short hash and leaves the input alone', () => {
    const desired = desiredService();
    const stamped = stampAppliedHash(desired);
    assert.match(stamped.metadata.annotations![APPLIED_HASH_ANNOTATION]!, /^[0-9a-f]{16}$/);
    assert.equal((desired.metadata as { annotations?: unknown }).annotations, undefined);
  });

  it('gives the same hash whatever the key order and however often it is stamped', () => {
    const a = stampAppliedHash(desiredService());
    const d = desiredService();
    const reordered = { spec: d.spec, metadata: { labels: d.metadata.labels, namespace: 'demo', name: 'web' }, kind: d.kind, apiVersion: d.apiVersion };
    assert.equal(stampAppliedHash(reordered).metadata.annotations[APPLIED_HASH_ANNOTATION], a.metadata.annotations[APPLIED_HASH_ANNOTATION]);
    assert.deepEqual(stampAppliedHash(a), a);
  });

  it('changes the hash when any desired field changes', () => {
    const a = stampAppliedHash(desiredService('img:1')).metadata.annotations[APPLIED_HASH_ANNOTATION];
    const b = stampAppliedHash(desiredService('img:2')).metadata.annotations[APPLIED_HASH_ANNOTATION];
    assert.notEqual(a, b);
  });

  it('keeps other annotations next to the hash', () => {
    const d = { ...desiredService(), metadata: { name: 'web', annotations: { team: 'ml' } } };
    assert.deepEqual(Object.keys(stampAppliedHash(d).metadata.annotations), ['team', APPLIED_HASH_ANNOTATION]);
  });
});

describe('isSemanticSubset', () => {
  it('ignores fields only the live object has (server defaults, other managers)', () => {
    const d = desiredService();
    assert.equal(isSemanticSubset(d.spec, liveFrom(d).spec), true);
  });

  it('detects a changed scalar deep inside', () => {
    const d = desiredService();
    const live = liveFrom(d);
    live.spec.template.spec.containers[0]!.env[0]!.value = '2';
    assert.equal(isSemanticSubset(d.spec, live.spec), false);
  });

  it('treats arrays as ordered and of fixed length', () => {
    assert.equal(isSemanticSubset([1, 2], [1, 2, 3]), false);
    assert.equal(isSemanticSubset([1, 2], [2, 1]), false);
    assert.equal(isSemanticSubset([{ a: 1 }], [{ a: 1, defaulted: true }]), true);
  });

  it('compares scalars exactly, without coercing quantities', () => {
    assert.equal(isSemanticSubset({ cpu: '1' }, { cpu: 1 }), false);
    assert.equal(isSemanticSubset({ cpu: '1' }, { cpu: '1' }), true);
  });

  it('treats undefined desired fields as unset and a missing live object as different', () => {
    assert.equal(isSemanticSubset({ a: undefined, b: 1 }, { b: 1 }), true);
    assert.equal(isSemanticSubset({ a: {} }, { }), false);
    assert.equal(isSemanticSubset({ a: null }, {}), true);
  });
});

describe('needsApply', () => {
  it('is true when nothing is live yet', () => {
    assert.equal(needsApply(stampAppliedHash(desiredService()), undefined), true);
  });

  it('is false when the live object holds everything we applied, plus defaults', () => {
    const d = stampAppliedHash(desiredService());
    assert.equal(needsApply(d, liveFrom(d)), false);
  });

  it('is true when someone edited a field we own (drift)', () => {
    const d = stampAppliedHash(desiredService());
    const live = liveFrom(d);
    live.metadata.labels.app = 'hijacked';
    assert.equal(needsApply(d, live), true);
  });

  it('is true when the applied hash differs, e.g. a field we no longer set is still live', () => {
    const withEnv = stampAppliedHash(desiredService());
    const live = liveFrom(withEnv);
    const withoutEnv = desiredService();
    delete (withoutEnv.spec.template.spec.containers[0] as { env?: unknown }).env;
    const d = stampAppliedHash(withoutEnv);
    // The subset test alone cannot see a dropped field ...
    assert.equal(isSemanticSubset(d.spec, live.spec), true);
    // ... the hash of what was applied can.
    assert.equal(needsApply(d, live), true);
  });

  it('is true when a container was added to the desired list', () => {
    const d = desiredService();
    const live = liveFrom(stampAppliedHash(d));
    d.spec.template.spec.containers.push({ image: 'sidecar', env: [] });
    // Same hash on purpose: only the subset test can see the change.
    const stamped = { ...d, metadata: { ...d.metadata, annotations: live.metadata.annotations } };
    assert.equal(needsApply(stamped, live), true);
  });
});
