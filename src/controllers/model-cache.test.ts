import assert from 'node:assert/strict';
import { ApiError } from '../runtime/client.ts';
import { modelApp } from '../testing/apps.ts';
import { WriteRejected } from './children.ts';
import { cacheNameFor, cacheRefusal, inferenceServiceToRemoveFirst, wantsCache, type ModelPolicy } from './model-cache.ts';

describe('model cache: which apps get one', () => {
  const cases: Array<{ what: string; app: ReturnType<typeof modelApp>; policy?: ModelPolicy; want: boolean }> = [
    { what: 'a model app with cacheModel within the default limits', app: modelApp(), want: true },
    { what: 'a model over the platform\'s size limit', app: modelApp(), policy: { maxModelSizeBytes: 2 ** 30 }, want: false },
    { what: 'a model over the default 100Gi limit', app: modelApp({ model: { format: { name: 'sklearn' }, storageUri: 'gs://models/fraud/v7', size: '200Gi' } }), want: false },
    { what: 'a model from a storage URI the platform does not allow', app: modelApp(), policy: { allowedStorageUriPrefixes: ['s3://models/{namespace}/'] }, want: false },
    { what: 'a model from an allowed prefix of its own namespace', app: modelApp({ model: { format: { name: 'sklearn' }, storageUri: 's3://models/ml/fraud', size: '2Gi' } }), policy: { allowedStorageUriPrefixes: ['s3://models/{namespace}/'] }, want: true },
    { what: 'an app without cacheModel', app: modelApp({ prewarm: { replicas: 1 } }), want: false },
  ];
  for (const c of cases) {
    it(`${c.want ? 'caches' : 'does not cache'} ${c.what}`, () => {
      assert.equal(wantsCache(c.app, c.policy), c.want);
      assert.equal(cacheNameFor(c.app, 'namespace', c.policy) !== undefined, c.want);
    });
  }
});

describe('model cache: a refused write', () => {
  it('reports KServe\'s webhook refusing a second cache of the same model as ModelCacheRejected, and retries it', () => {
    const denied = new ApiError(403, 'admission webhook "localmodelcache.kserve-webhook-server.validator" denied the request: LocalModelCache a has the same StorageURI gs://m');
    assert.deepEqual(cacheRefusal(new WriteRejected('LocalModelCache', 'b', denied)), { reason: 'ModelCacheRejected', retry: true });
  });

  it('reports a cache of that name owned by another app as ModelCacheConflict, and leaves it', () => {
    assert.deepEqual(cacheRefusal(new WriteRejected('LocalModelCache', 'b', { owner: 'ServerlessApp other/b' })), { reason: 'ModelCacheConflict', retry: false });
  });
});

describe('model cache: deleting an app whose InferenceService uses its cache', () => {
  const deleting = () => {
    const app = modelApp();
    app.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    return app;
  };
  const isvcOf = (appName: string) => ({
    apiVersion: 'serving.kserve.io/v1beta1', kind: 'InferenceService',
    metadata: { name: appName, namespace: 'ml', uid: 'i1', ownerReferences: [{ uid: 'a1', kind: 'ServerlessApp', name: appName, controller: true }] },
  });

  it('removes the app\'s InferenceService before its cluster-scoped cache, which KServe refuses to delete while in use', () => {
    const app = deleting();
    const isvc = isvcOf(app.metadata.name);
    assert.equal(inferenceServiceToRemoveFirst(app, 'cluster', 1, isvc), isvc);
  });

  it('removes the cache at once when the InferenceService is gone, the app stays, the cache is namespaced, or there is none', () => {
    const app = deleting();
    assert.equal(inferenceServiceToRemoveFirst(app, 'cluster', 1, undefined), undefined);
    assert.equal(inferenceServiceToRemoveFirst(modelApp(), 'cluster', 1, isvcOf(app.metadata.name)), undefined);
    assert.equal(inferenceServiceToRemoveFirst(app, 'namespace', 1, isvcOf(app.metadata.name)), undefined);
    assert.equal(inferenceServiceToRemoveFirst(app, 'cluster', 0, isvcOf(app.metadata.name)), undefined);
  });

  it('leaves an InferenceService of that name that another app controls', () => {
    assert.equal(inferenceServiceToRemoveFirst(deleting(), 'cluster', 1, isvcOf('someone-else')), undefined);
  });
});
