import assert from 'node:assert/strict';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { renderLocalModelCache } from '../render/local-model-cache.ts';
import { modelApp } from '../testing/apps.ts';
import { CACHE_FINALIZER, type CacheObject } from './model-cache-plan.ts';
import { appChangeMatters, appDeletedWith, appOfCache, appsWaitingForCache, appToReconcile, inferenceServiceChangeMatters } from './model-cache-triggers.ts';

const named = (name: string, storageUri = 'gs://models/fraud/v7', more: Partial<ServerlessApp['spec']> = {}): ServerlessApp => {
  const app = modelApp(more);
  return { ...app, metadata: { ...app.metadata, name }, spec: { ...app.spec, model: { ...app.spec.model!, storageUri } } };
};
const cacheOf = (app: ServerlessApp): CacheObject => renderLocalModelCache(app, 'cluster', 'gpu');
const key = (name: string) => ({ namespace: 'ml', name });

describe('model cache: when a deleted cache lets other apps try again', () => {
  const gone = cacheOf(named('first'));

  it('retries at once the apps that want a cache of the same model and have none (KServe admits one cache per model)', () => {
    assert.deepEqual(appsWaitingForCache(gone, [named('first'), named('second')], []), [key('first'), key('second')]);
  });

  it('leaves apps with a cache of their own, of another model, without cacheModel, or over the platform\'s limits', () => {
    const second = named('second');
    const apps = [second, named('other-model', 'gs://models/other'), named('no-cache', 'gs://models/fraud/v7', { prewarm: { replicas: 1 } })];
    assert.deepEqual(appsWaitingForCache(gone, apps, [cacheOf(second)]), []);
    assert.deepEqual(appsWaitingForCache(gone, [named('big')], [], { maxModelSizeBytes: 1024 }), []);
  });
});

describe('model cache: which app events bring an app back', () => {
  const ready = { type: 'Ready', status: 'True' as const, reason: 'Ready', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' };

  it('an app that asks for its model cached, or carries what an earlier pass left; not any other app', () => {
    const container: ServerlessApp = { ...named('web'), spec: { container: { image: 'web:1' } } };
    assert.deepEqual(appToReconcile(named('fraud')), [key('fraud')], 'prewarm.cacheModel');
    const plain = (name: string): ServerlessApp => {
      const app = named(name);
      return { ...app, spec: { ...app.spec, prewarm: { ...app.spec.prewarm, cacheModel: false } } };
    };
    assert.deepEqual(appToReconcile(plain('plain')), [], 'a model app that caches nothing');
    assert.deepEqual(appToReconcile(container), []);
    assert.deepEqual(appToReconcile({ ...container, metadata: { ...container.metadata, finalizers: [CACHE_FINALIZER] } }), [key('web')], 'the finalizer of its cluster-scoped caches');
    const condition = { type: 'ModelCached', status: 'True' as const, reason: 'ModelCacheApplied', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' };
    assert.deepEqual(appToReconcile({ ...plain('was'), status: { conditions: [condition] } }), [key('was')], 'a ModelCached condition to drop');
    const refusal = { storageUri: 'gs://models/fraud/v7', size: '1Mi', measuredBytes: 2 ** 30, node: 'n1' };
    assert.deepEqual(appToReconcile({ ...plain('big'), status: { refusedModelCache: refusal } }), [key('big')], 'a size refusal to forget');
  });

  it('on a spec, finalizer or deletion change, and on the app controller\'s first report; not on its other status writes', () => {
    const app = named('fraud');
    const reported = { ...app, status: { conditions: [ready] } };
    assert.equal(appChangeMatters({ ...app, metadata: { ...app.metadata, generation: 2 } }, app), true);
    assert.equal(appChangeMatters({ ...app, metadata: { ...app.metadata, finalizers: [CACHE_FINALIZER] } }, app), true);
    assert.equal(appChangeMatters({ ...app, metadata: { ...app.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, app), true);
    assert.equal(appChangeMatters(reported, app), true, 'ModelCached waits for the first report');
    assert.equal(appChangeMatters({ ...reported, status: { ...reported.status, phase: 'Stable' } }, reported), false);
  });

  it('when the app controller\'s verdict as Ready shows it changes: the generation judged or the reason (the verdict may change with no edit)', () => {
    const app = named('fraud');
    const judged = (generation: number, reason: string) => ({ ...app, status: { conditions: [{ ...ready, status: 'False' as const, reason, observedGeneration: generation }] } });
    assert.equal(appChangeMatters(judged(1, 'Deploying'), judged(1, 'HostConflict')), true, 'admitted once the host is free');
    assert.equal(appChangeMatters(judged(1, 'GatewayNotAllowed'), judged(1, 'Serving')), true, 'refused by a policy change');
    assert.equal(appChangeMatters(judged(1, 'Deploying'), judged(1, 'Claiming')), true, 'a new app admitted once its claims show: the same generation');
    assert.equal(appChangeMatters(judged(2, 'Serving'), judged(1, 'Serving')), true, 'a new generation judged');
    const reported = judged(1, 'Serving');
    assert.equal(appChangeMatters({ ...reported, status: { ...reported.status, phase: 'Stable' } }, reported), false, 'not every status write');
  });

  it('a cache brings back the app its labels name; an InferenceService, its app only while that is being deleted', () => {
    assert.deepEqual(appOfCache(cacheOf(named('fraud'))), [key('fraud')]);
    assert.deepEqual(appOfCache({ ...cacheOf(named('fraud')), metadata: { name: 'x', labels: {} } }), []);
    const isvc = { apiVersion: 'serving.kserve.io/v1beta1', kind: 'InferenceService', metadata: { name: 'fraud', namespace: 'ml', ownerReferences: [{ kind: 'ServerlessApp', name: 'fraud', uid: 'a1', controller: true }] } };
    const app = named('fraud');
    assert.deepEqual(appDeletedWith(isvc, () => app), []);
    assert.deepEqual(appDeletedWith(isvc, () => ({ ...app, metadata: { ...app.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } })), [key('fraud')]);
  });

  it('not an InferenceService\'s update, whatever KServe changed: only its add and delete', () => {
    assert.equal(inferenceServiceChangeMatters(), false);
  });
});
