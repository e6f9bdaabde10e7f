import assert from 'node:assert/strict';
import { annotationApply, dropsOwnedField, hasAnnotations, isSemanticSubset, keepAppliedFields, needsApply, sameObject, type FieldSet } from './apply.ts';

interface Meta { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }


const M = 'serverlessapp-operator';
/** The field set the API server records for desiredService() applied by M. */
const APPLIED: FieldSet = {
  'f:metadata': { 'f:labels': { 'f:app': {} } },
  'f:spec': { 'f:template': { 'f:spec': { 'f:containers': {} } } },
};

function desiredService(image = 'ghcr.io/acme/web:1') {
  const metadata: Meta = { name: 'web', namespace: 'demo', labels: { app: 'web' } };
  return {
    apiVersion: 'serving.knative.dev/v1',
    kind: 'Service',
    metadata,
    spec: { template: { spec: { containers: [{ image, env: [{ name: 'A', value: '1' }] }] } } },
  };
}

/** What the API server hands back: our fields plus defaults and server metadata, without apiVersion/kind (list items). */
function liveFrom(desired: ReturnType<typeof desiredService>) {
  const { apiVersion: _a, kind: _k, ...rest } = structuredClone(desired);
  return {
    ...rest,
    metadata: { ...rest.metadata, uid: 'u-1', resourceVersion: '42', generation: 1, managedFields: [{ manager: 'serverlessapp-operator', operation: 'Apply', fieldsV1: APPLIED }, { manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': { 'f:traffic': {} } } }] },
    spec: { template: { spec: { ...rest.spec.template.spec, containerConcurrency: 0, timeoutSeconds: 300 } }, traffic: [{ latestRevision: true, percent: 100 }] },
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  };
}


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


describe('dropsOwnedField', () => {
  it('sees a map field we applied and no longer set', () => {
    assert.equal(dropsOwnedField({ 'f:spec': { 'f:predictor': { 'f:canaryTrafficPercent': {}, 'f:minReplicas': {} } } }, { spec: { predictor: { minReplicas: 0 } } }), true);
    assert.equal(dropsOwnedField({ 'f:spec': { 'f:predictor': { 'f:minReplicas': {} } } }, { spec: { predictor: { minReplicas: 0 } } }), false);
  });

  it('matches list-map items by key and set items by value', () => {
    const owned = { 'f:env': { 'k:{"name":"A"}': { '.': {}, 'f:value': {} } }, 'f:finalizers': { 'v:"x"': {} } };
    assert.equal(dropsOwnedField(owned, { env: [{ name: 'A', value: '1' }], finalizers: ['x'] }), false);
    assert.equal(dropsOwnedField(owned, { env: [{ name: 'B', value: '1' }], finalizers: ['x'] }), true);
    assert.equal(dropsOwnedField(owned, { env: [{ name: 'A' }], finalizers: ['x'] }), true, 'the item stays but its value field went');
    assert.equal(dropsOwnedField(owned, { env: [{ name: 'A', value: '1' }], finalizers: [] }), true);
  });
});

describe('needsApply', () => {
  it('is true when nothing is live yet', () => {
    assert.equal(needsApply(desiredService(), undefined, M), true);
  });

  it('is false when the live object holds everything we applied, plus defaults and other managers\' fields', () => {
    const d = desiredService();
    assert.equal(needsApply(d, liveFrom(d), M), false);
  });

  it('is true when someone edited a field we own (drift)', () => {
    const d = desiredService();
    const live = liveFrom(d);
    live.metadata.labels = { app: 'hijacked' };
    assert.equal(needsApply(d, live, M), true);
  });

  it('is true when we stopped setting a field we applied before, which a subset test cannot see', () => {
    const live = liveFrom(desiredService());
    const withoutLabels = desiredService();
    delete (withoutLabels.metadata as { labels?: unknown }).labels;
    assert.equal(isSemanticSubset(withoutLabels.metadata, live.metadata), true);
    assert.equal(needsApply(withoutLabels, live, M), true);
  });

  it('is true when a container was added to the desired list', () => {
    const d = desiredService();
    const live = liveFrom(d);
    d.spec.template.spec.containers.push({ image: 'sidecar', env: [] });
    assert.equal(needsApply(d, live, M), true);
  });

  it('keeps only the manager\'s own applied entry when caching', () => {
    const live = keepAppliedFields(M)(liveFrom(desiredService()));
    assert.deepEqual(live.metadata.managedFields.map((e) => e.manager), [M]);
  });
});

describe('the writes of a live object\'s annotations and of a delete', () => {
  const live = { apiVersion: 'serving.knative.dev/v1', kind: 'Revision', metadata: { name: 'shop-v1', namespace: 'team-a', uid: 'u1', labels: { a: 'b' }, annotations: { keep: 'x', 'autoscaling.knative.dev/min-scale': '1' } }, spec: { containers: [] } };
  it('an annotation apply states the object\'s identity and the annotations, nothing else', () => {
    assert.deepEqual(annotationApply(live, { 'autoscaling.knative.dev/min-scale': '2' }),
      { apiVersion: 'serving.knative.dev/v1', kind: 'Revision', metadata: { name: 'shop-v1', namespace: 'team-a', annotations: { 'autoscaling.knative.dev/min-scale': '2' } } });
  });
  it('setting annotations the object carries changes nothing; another value does', () => {
    assert.equal(hasAnnotations(live, { 'autoscaling.knative.dev/min-scale': '1' }), true);
    assert.equal(hasAnnotations(live, { 'autoscaling.knative.dev/min-scale': '2' }), false);
    assert.equal(hasAnnotations(live, { absent: '1' }), false);
  });
  it('a delete is guarded by the uid of the object meant (none known: no guard)', () => {
    assert.deepEqual(sameObject(live), { uid: 'u1' });
    assert.deepEqual(sameObject({ metadata: { name: 'x' } }), {});
  });
});
