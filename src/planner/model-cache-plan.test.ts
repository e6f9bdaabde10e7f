import assert from 'node:assert/strict';
import { modelApp as anyModelApp } from '../testing/apps.ts';
import { servedAs } from '../testing/admission.ts';
import { MODEL_CACHED, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { ValidationPolicy } from '../api/v1alpha1/validation.ts';
import { cacheKind, modelCacheName, renderLocalModelCache, type CacheScope } from '../render/local-model-cache.ts';
import { APP_LABEL } from '../render/metadata.ts';
import type { Condition } from '../util/conditions.ts';
import { Kinds } from '../util/kinds.ts';
import {
  appReported, CACHE_FINALIZER, cacheNameFor, cacheRefusal, cachesNamespace, cacheScopeProblem, getsCache, inferenceServiceToRemoveFirst, modelCachedUpdate, planModelCache, wantsCache,
  type CacheObject, type CacheObservation, type CachePlan, type CacheReport, type ExecutedCacheOperation, type ModelPolicy,
} from './model-cache-plan.ts';
import { guardHolds, type ChildOutcome, type Refusal } from './plan.ts';

/** Each namespace's models under its own path: a cluster-scoped cache needs it (cacheScopeProblem), and the stepped plans below use it. */
const ISOLATED: ModelPolicy = { allowedStorageUriPrefixes: ['gs://models/{namespace}/'] };
/** The test model app, loading its model from under its namespace's path unless the test names the model. */
const modelApp = (o: Parameters<typeof anyModelApp>[0] = {}): ServerlessApp => {
  const app = anyModelApp(o);
  return o.model ? app : { ...app, spec: { ...app.spec, model: { ...app.spec.model!, storageUri: 'gs://models/ml/fraud/v7' } } };
};

describe('model cache: which apps get one', () => {
  const cases: Array<{ what: string; app: ReturnType<typeof modelApp>; policy?: ModelPolicy; want: boolean }> = [
    { what: 'a model app with cacheModel within the default limits', app: modelApp(), want: true },
    { what: 'a model over the platform\'s size limit', app: modelApp(), policy: { maxModelSizeBytes: 2 ** 30 }, want: false },
    { what: 'a model over the default 100Gi limit', app: modelApp({ model: { format: { name: 'sklearn' }, storageUri: 'gs://models/ml/fraud/v7', size: '200Gi' } }), want: false },
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
    assert.deepEqual(cacheRefusal({ reason: 'ApplyRejected', retry: true }), { reason: 'ModelCacheRejected', retry: true });
  });

  it('reports a cache of that name owned by another app as ModelCacheConflict, and leaves it', () => {
    assert.deepEqual(cacheRefusal({ reason: 'NotOwned', retry: false }), { reason: 'ModelCacheConflict', retry: false });
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
    metadata: { name: appName, namespace: 'ml', uid: 'i1', ownerReferences: [{ uid: appName === 'fraud' ? modelApp().metadata.uid! : 'another-uid', kind: 'ServerlessApp', name: appName, controller: true }] },
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

  it('leaves an InferenceService that another app controls, even one of the same name (an earlier app\'s: another uid)', () => {
    assert.equal(inferenceServiceToRemoveFirst(deleting(), 'cluster', 1, isvcOf('someone-else')), undefined);
    const earlier = isvcOf('fraud');
    earlier.metadata.ownerReferences[0]!.uid = 'an-earlier-fraud';
    assert.equal(inferenceServiceToRemoveFirst(deleting(), 'cluster', 1, earlier), undefined);
  });
});

// ---------------------------------------------------------------- the plan, stepped

const cacheOf = (app: ServerlessApp, scope: CacheScope = 'cluster'): CacheObject => ({ ...renderLocalModelCache(app, scope, 'gpu'), metadata: { ...renderLocalModelCache(app, scope, 'gpu').metadata, uid: `c-${app.spec.model!.storageUri}` } });
const withModel = (app: ServerlessApp, storageUri: string): ServerlessApp => ({ ...app, spec: { ...app.spec, model: { ...app.spec.model!, storageUri } } });
const reported = (app: ServerlessApp, extra: Condition[] = []): ServerlessApp => ({
  ...app, status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }, ...extra] },
});

function observe(app: ServerlessApp | undefined, o: Partial<CacheObservation> = {}): CacheObservation {
  const caches = o.caches ?? [];
  return {
    request: { namespace: 'ml', name: 'fraud' }, app, now: new Date('2026-02-01T00:00:00Z'), scope: 'cluster', nodeGroup: 'gpu', policy: ISOLATED, served: true, caches,
    cacheNamed: (namespace, name) => caches.find((c) => c.metadata.name === name && c.metadata.namespace === namespace),
    inferenceService: undefined, quota: undefined, admission: app && servedAs(app, o.policy ?? ISOLATED), ...o,
  };
}

/** Steps the plan as the controller does: each operation runs when its guard holds, ending as `outcomes` says (default: it worked). */
function execute(plan: CachePlan, outcomes: Record<string, ChildOutcome | Refusal> = {}): ExecutedCacheOperation[] {
  const done: ExecutedCacheOperation[] = [];
  for (const op of plan.operations) {
    if (!guardHolds(op, done)) { done.push({ op, outcome: 'skipped' }); continue; }
    const o = outcomes[op.id] ?? (op.action === 'remove' ? 'removed' : 'written');
    done.push(typeof o === 'string' ? { op, outcome: o } : { op, outcome: 'rejected', refusal: o });
  }
  return done;
}

const webhookRefusal: Refusal = {
  kind: 'LocalModelCache', object: 'x', reason: 'ApplyRejected', retry: true,
  message: 'admission webhook "localmodelcache.kserve-webhook-server.validator" denied the request: LocalModelCache a has the same StorageURI gs://models/ml/fraud/v7',
  summary: 'the API server refused the LocalModelCache x: LocalModelCache a has the same StorageURI gs://models/ml/fraud/v7',
};

describe('model cache: the plan, in KServe\'s order', () => {
  it('puts the finalizer on the app before its cluster-scoped cache exists, and reports it cached', () => {
    const app = modelApp();
    const plan = planModelCache(observe(app));
    assert.deepEqual(plan.operations.map((op) => [op.id, op.action]), [['finalizer', 'finalizer'], ['cache', 'ensure']]);
    assert.deepEqual(plan.operations[1]!.when?.op, 'finalizer');
    const report = plan.report(execute(plan));
    assert.deepEqual(report.eventsFor(false).map((e) => e.reason), ['ModelCacheApplied']);
    assert.equal(report.condition?.status, 'True');
    assert.equal(report.retry, undefined);
  });

  it('records its Events whatever the condition\'s write: each reports a write of this pass, made or refused', () => {
    const written = planModelCache(observe(modelApp())), refused = planModelCache(observe(modelApp(), { scope: 'namespace' }));
    const reports: Array<[string, CacheReport, string[]]> = [
      ['a cache written', written.report(execute(written)), ['ModelCacheApplied']],
      ['a cache refused', refused.report(execute(refused, { cache: webhookRefusal })), ['ModelCacheRejected']],
    ];
    for (const [what, report, want] of reports) {
      for (const wrote of [true, false]) assert.deepEqual(report.eventsFor(wrote).map((e) => e.reason), want, `${what}, condition ${wrote ? '' : 'not '}written`);
    }
  });

  it('writes a namespaced cache without a finalizer (the app owns it)', () => {
    const plan = planModelCache(observe(modelApp(), { scope: 'namespace' }));
    assert.deepEqual(plan.operations.map((op) => op.id), ['cache']);
  });

  it('writes the new model\'s cache before it removes the old one, and removes the old one even when the new one is refused', () => {
    const old = modelApp();
    const app = { ...withModel(old, 'gs://models/ml/fraud/v8'), metadata: { ...old.metadata, finalizers: [CACHE_FINALIZER] } };
    const plan = planModelCache(observe(app, { caches: [cacheOf(old)] }));
    assert.deepEqual(plan.operations.map((op) => op.id), ['cache', `remove/${modelCacheName(old, 'cluster')}`]);
    const done = execute(plan, { cache: webhookRefusal });
    assert.deepEqual(done.map((d) => d.outcome), ['rejected', 'removed']);
    const report = plan.report(done);
    assert.deepEqual(report.eventsFor(false).map((e) => e.reason), ['ModelCacheRejected', 'ModelCacheRemoved']);
    assert.deepEqual(report.condition, { status: 'False', reason: 'ModelCacheRejected', message: webhookRefusal.summary });
    assert.equal(report.retry, webhookRefusal, 'KServe admits the cache once the other app\'s is gone: retried');
  });

  it('removes a deleted app\'s InferenceService first, and nothing else, while it uses the cluster-scoped cache', () => {
    const app = { ...modelApp(), metadata: { ...modelApp().metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [CACHE_FINALIZER] } };
    const isvc = { apiVersion: 'serving.kserve.io/v1beta1', kind: 'InferenceService', metadata: { name: 'fraud', namespace: 'ml', uid: 'i1', ownerReferences: [{ uid: app.metadata.uid!, kind: 'ServerlessApp', name: 'fraud', controller: true }] } };
    const plan = planModelCache(observe(app, { caches: [cacheOf(modelApp())], inferenceService: isvc }));
    assert.deepEqual(plan.operations.map((op) => [op.id, op.action]), [['inference-service', 'remove']]);
    assert.equal(plan.report(execute(plan)).condition, undefined, 'a deleted app\'s status is left alone');
  });

  it('removes a deleted app\'s caches one by one and drops the finalizer last; a refused removal holds the rest and the finalizer', () => {
    const app = { ...modelApp(), metadata: { ...modelApp().metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [CACHE_FINALIZER] } };
    const caches = [cacheOf(modelApp()), cacheOf(withModel(modelApp(), 'gs://models/ml/fraud/v8'))];
    const plan = planModelCache(observe(app, { caches }));
    assert.deepEqual(plan.operations.map((op) => op.action), ['remove', 'remove', 'finalizer']);
    assert.deepEqual(execute(plan).map((d) => d.outcome), ['removed', 'removed', 'written']);
    const refused = execute(plan, { [plan.operations[0]!.id]: { ...webhookRefusal, message: 'in use' } });
    assert.deepEqual(refused.map((d) => d.outcome), ['rejected', 'skipped', 'skipped']);
    assert.ok(plan.report(refused).retry, 'a refused removal is retried');
  });

  it('removes the caches of an app that is gone (its key only)', () => {
    const plan = planModelCache(observe(undefined, { caches: [cacheOf(modelApp())] }));
    assert.deepEqual(plan.operations.map((op) => op.action), ['remove']);
    const report = plan.report(execute(plan));
    assert.deepEqual(report.eventsFor(false), [], 'no app to record on');
    assert.equal(report.condition, undefined);
  });
});

describe('model cache: refusals reach the app\'s ModelCached condition, not only Events', () => {
  it('the namespace\'s budget: no cache, and the condition names the field', () => {
    const quota = { reason: 'ModelCacheQuotaExceeded' as const, field: 'spec.model.size', message: 'the model caches of namespace ml may reserve 3Gi on each node in all' };
    const plan = planModelCache(observe(modelApp(), { quota }));
    assert.deepEqual(plan.operations, []);
    assert.deepEqual(plan.report([]).condition, { status: 'False', reason: 'ModelCacheQuotaExceeded', message: `spec.model.size: ${quota.message}` });
  });

  it('a cache name another app holds: left alone, a Warning, and the condition says so', () => {
    const app = modelApp();
    const other = cacheOf(app);
    other.metadata.labels = { ...other.metadata.labels, [APP_LABEL]: 'someone-else' };
    const plan = planModelCache(observe(app, { cacheNamed: () => other }));
    assert.deepEqual(plan.operations.map((op) => op.id), ['finalizer']);
    const report = plan.report(execute(plan));
    assert.deepEqual(report.eventsFor(false).map((e) => [e.type, e.reason]), [['Warning', 'ModelCacheConflict']]);
    assert.equal(report.condition?.reason, 'ModelCacheConflict');
    assert.equal(report.retry, undefined);
  });

  it('a cache the app does not control (NotOwned): a conflict, not retried', () => {
    const plan = planModelCache(observe(modelApp(), { scope: 'namespace' }));
    const report = plan.report(execute(plan, { cache: { ...webhookRefusal, reason: 'NotOwned', retry: false, summary: 'not controlled by this app' } }));
    assert.deepEqual(report.condition, { status: 'False', reason: 'ModelCacheConflict', message: 'not controlled by this app' });
    assert.equal(report.retry, undefined);
  });

  it('KServe without its LocalModel feature: no finalizer, no write, ModelCacheNotInstalled', () => {
    const plan = planModelCache(observe(modelApp(), { served: false }));
    assert.deepEqual(plan.operations, []);
    const report = plan.report([]);
    assert.equal(report.condition?.reason, 'ModelCacheNotInstalled');
    assert.match(report.condition!.message, /install KServe's LocalModel feature/);
  });

  it('caching turned off: the old cache goes, the finalizer after it, and the condition is dropped', () => {
    const old = modelApp();
    const app = { ...modelApp({ prewarm: { replicas: 1 } }), metadata: { ...old.metadata, finalizers: [CACHE_FINALIZER] } };
    const plan = planModelCache(observe(app, { caches: [cacheOf(old)] }));
    assert.deepEqual(plan.operations.map((op) => op.action), ['remove', 'finalizer']);
    assert.equal(plan.report(execute(plan)).condition, null);
  });
});

describe('model cache: a cluster-scoped cache only of a storage path no other namespace can name', () => {
  // KServe binds ANY namespace's InferenceService whose storageUri equals or lies under a LocalModelCache's
  // sourceModelUri to it, admits one cache per URI and refuses to delete one in use.
  const tenantApp = (namespace: string, name: string, storageUri: string, size = '2Gi'): ServerlessApp => {
    const base = reported(anyModelApp());
    return { ...base, metadata: { ...base.metadata, namespace, name, uid: `${namespace}/${name}` }, spec: { ...base.spec, model: { ...base.spec.model!, storageUri, size } } };
  };
  const planFor = (app: ServerlessApp, o: Partial<CacheObservation> = {}) => planModelCache(observe(app, { request: { namespace: app.metadata.namespace, name: app.metadata.name }, ...o }));

  it('refuses a cache of a model under a shared prefix: no finalizer, no write, a Warning and ModelCached=False ModelCacheNotIsolated saying what to configure, not retried', () => {
    const app = tenantApp('team-a', 'chat', 'gs://shared/llama');
    const plan = planFor(app, { policy: { allowedStorageUriPrefixes: ['gs://models/{namespace}/', 'gs://shared/'] } });
    assert.deepEqual(plan.operations, []);
    const report = plan.report([]);
    assert.deepEqual([report.condition?.status, report.condition?.reason], ['False', 'ModelCacheNotIsolated']);
    assert.deepEqual(report.eventsFor(false).map((e) => [e.type, e.reason, e.message]), [['Warning', 'ModelCacheNotIsolated', report.condition!.message]]);
    assert.match(report.condition!.message, /gs:\/\/shared\/llama lies under no allowed prefix with \{namespace\} as a whole path segment/);
    assert.match(report.condition!.message, /--allowed-storage-uri-prefixes, chart modelCache.allowedStorageUriPrefixes/);
    assert.match(report.condition!.message, /or use modelCache.scope: namespace/);
    assert.equal(report.retry, undefined);
    assert.equal(report.write?.conditions?.[0]?.reason, 'ModelCacheNotIsolated');
  });

  it('writes the same model\'s namespaced cache: it serves its own namespace only', () => {
    const app = tenantApp('team-a', 'chat', 'gs://shared/llama');
    const policy = { allowedStorageUriPrefixes: ['gs://shared/'] };
    assert.deepEqual(planFor(app, { scope: 'namespace', policy }).operations.map((op) => op.id), ['cache']);
    assert.equal(cacheScopeProblem(app, 'namespace', policy), undefined);
    assert.ok(cacheNameFor(app, 'namespace', policy));
  });

  it('refuses every cluster-scoped cache when the platform allows any storage URI', () => {
    const report = planFor(tenantApp('team-a', 'chat', 'gs://models/team-a/llama'), { policy: {} }).report([]);
    assert.equal(report.condition?.reason, 'ModelCacheNotIsolated');
    assert.match(report.condition!.message, /allows any storage URI/);
  });

  it('removes a cluster-scoped cache the app has from before, then its finalizer', () => {
    const app = tenantApp('team-a', 'chat', 'gs://shared/llama');
    const held = { ...app, metadata: { ...app.metadata, finalizers: [CACHE_FINALIZER] } };
    const plan = planFor(held, { policy: { allowedStorageUriPrefixes: ['gs://shared/'] }, caches: [cacheOf(app)] });
    assert.deepEqual(plan.operations.map((op) => op.id), [`remove/${cacheOf(app).metadata.name}`, 'drop-finalizer']);
    assert.match(plan.operations[0]!.why, /ModelCacheNotIsolated/);
    assert.equal(plan.report(execute(plan)).condition?.reason, 'ModelCacheNotIsolated');
  });

  it('red team F1 (fixed): under a shared prefix a tenant no longer gets a cluster cache of a parent path of every tenant\'s models', () => {
    // team-a caching hf://meta-llama would bind team-b's hf://meta-llama/Llama-3.1-8B InferenceService to it.
    const policy = { allowedStorageUriPrefixes: ['hf://'] };
    const grab = tenantApp('team-a', 'grab', 'hf://meta-llama', '1');
    assert.equal(wantsCache(grab, policy), true, 'the app may load the model');
    assert.equal(getsCache(grab, 'cluster', policy), false, 'but gets no cluster-scoped cache of it');
    assert.equal(cacheNameFor(grab, 'cluster', policy), undefined);
    assert.deepEqual(planFor(grab, { policy }).operations, []);
  });

  it('red team F2 (fixed): no tenant squats a model URI, so KServe\'s one-cache-per-URI refusal never names another tenant\'s cache', () => {
    // Before: team-a's cluster cache of s3://shared/llama made team-b's cache of it rejected, naming team-a's cache.
    const shared = { allowedStorageUriPrefixes: ['s3://shared/'] };
    for (const app of [tenantApp('team-a', 'chat', 's3://shared/llama'), tenantApp('team-b', 'probe', 's3://shared/llama')]) {
      assert.equal(planFor(app, { policy: shared }).report([]).condition?.reason, 'ModelCacheNotIsolated');
    }
    // With each namespace's own path, the cached URI is team-a's alone: team-b cannot name it, or one under it.
    const own = { allowedStorageUriPrefixes: ['s3://models/{namespace}'] };
    const a = tenantApp('team-a', 'chat', 's3://models/team-a');
    assert.deepEqual(planFor(a, { policy: own }).operations.map((op) => op.id), ['finalizer', 'cache']);
    for (const uri of ['s3://models/team-a', 's3://models/team-a/llama', 's3://models/team-a-b/llama']) {
      assert.equal(wantsCache(tenantApp('team-a-b', 'probe', uri), own), uri === 's3://models/team-a-b/llama', uri);
      assert.equal(wantsCache(tenantApp('team', 'probe', uri), own), false, uri);
    }
  });
});

describe('model cache: a refusal of any operation reaches the condition and gives a Warning', () => {
  const removalRefused: Refusal = { ...webhookRefusal, message: 'in use', summary: 'the API server refused the LocalModelCache old: in use' };
  const notOwned: Refusal = { ...webhookRefusal, reason: 'NotOwned', retry: false, summary: 'LocalModelCache old is not controlled by this app: left untouched' };
  const changedModel = () => {
    const old = modelApp();
    const app = reported({ ...withModel(old, 'gs://models/ml/fraud/v8'), metadata: { ...old.metadata, finalizers: [CACHE_FINALIZER] } });
    return { app, plan: planModelCache(observe(app, { caches: [cacheOf(old)] })), removal: `remove/${modelCacheName(old, 'cluster')}` };
  };

  it('the old cache\'s removal refused after the new model\'s cache is written: ModelCacheRejected, not ModelCacheApplied=True, retried', () => {
    const { plan, removal } = changedModel();
    const report = plan.report(execute(plan, { [removal]: removalRefused }));
    assert.deepEqual(report.condition, { status: 'False', reason: 'ModelCacheRejected', message: removalRefused.summary });
    assert.deepEqual(report.eventsFor(false).map((e) => [e.type, e.reason, e.message]), [['Normal', 'ModelCacheApplied', report.eventsFor(false)[0]!.message], ['Warning', 'ModelCacheRejected', removalRefused.summary]]);
    assert.equal(report.retry, removalRefused);
  });

  it('the old cache\'s removal refused because the app does not own it: ModelCacheConflict, a Warning, not retried', () => {
    const { plan, removal } = changedModel();
    const report = plan.report(execute(plan, { [removal]: notOwned }));
    assert.deepEqual(report.condition, { status: 'False', reason: 'ModelCacheConflict', message: notOwned.summary });
    assert.deepEqual(report.eventsFor(false).filter((e) => e.type === 'Warning').map((e) => [e.reason, e.message]), [['ModelCacheConflict', notOwned.summary]]);
    assert.equal(report.retry, undefined);
  });

  it('the finalizer refused before a cluster-scoped cache: no cache written, and the condition says why', () => {
    const plan = planModelCache(observe(reported(modelApp())));
    const refusal: Refusal = { ...webhookRefusal, kind: 'ServerlessApp', object: 'ml/fraud', summary: 'the API server refused the ServerlessApp ml/fraud: denied' };
    const done = execute(plan, { finalizer: refusal });
    assert.deepEqual(done.map((d) => [d.op.id, d.outcome]), [['finalizer', 'rejected'], ['cache', 'skipped']]);
    const report = plan.report(done);
    assert.deepEqual(report.condition, { status: 'False', reason: 'ModelCacheRejected', message: refusal.summary });
    assert.deepEqual(report.eventsFor(false).map((e) => [e.type, e.reason]), [['Warning', 'ModelCacheRejected']]);
    assert.equal(report.retry, refusal);
  });

  it('caching turned off and the finalizer\'s removal refused: the condition shows it instead of being dropped', () => {
    const old = modelApp();
    const app = reported({ ...modelApp({ prewarm: { replicas: 1 } }), metadata: { ...old.metadata, finalizers: [CACHE_FINALIZER] } });
    const plan = planModelCache(observe(app, { caches: [cacheOf(old)] }));
    const refusal: Refusal = { ...webhookRefusal, kind: 'ServerlessApp', object: 'ml/fraud', summary: 'the API server refused the ServerlessApp ml/fraud: denied' };
    const report = plan.report(execute(plan, { 'drop-finalizer': refusal }));
    assert.deepEqual(report.condition, { status: 'False', reason: 'ModelCacheRejected', message: refusal.summary });
    assert.deepEqual(report.eventsFor(false).map((e) => e.reason), ['ModelCacheRemoved', 'ModelCacheRejected']);
    assert.deepEqual(report.write?.conditions?.map((c) => [c.type, c.status, c.reason]), [[MODEL_CACHED, 'False', 'ModelCacheRejected']]);
  });

  it('a deleted app\'s refused cache removal: a Warning on the app, its status left alone, retried', () => {
    const app = reported({ ...modelApp(), metadata: { ...modelApp().metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [CACHE_FINALIZER] } });
    const plan = planModelCache(observe(app, { caches: [cacheOf(modelApp())] }));
    const report = plan.report(execute(plan, { [plan.operations[0]!.id]: removalRefused }));
    assert.deepEqual([report.condition, report.write], [undefined, undefined]);
    assert.deepEqual(report.eventsFor(false).map((e) => [e.type, e.reason]), [['Warning', 'ModelCacheRejected']]);
    assert.equal(report.retry, removalRefused);
  });

  it('a deleted app\'s InferenceService removal refused: a Warning, retried', () => {
    const app = { ...modelApp(), metadata: { ...modelApp().metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [CACHE_FINALIZER] } };
    const isvc = { apiVersion: 'serving.kserve.io/v1beta1', kind: 'InferenceService', metadata: { name: 'fraud', namespace: 'ml', uid: 'i1', ownerReferences: [{ uid: app.metadata.uid!, kind: 'ServerlessApp', name: 'fraud', controller: true }] } };
    const plan = planModelCache(observe(app, { caches: [cacheOf(modelApp())], inferenceService: isvc }));
    const report = plan.report(execute(plan, { 'inference-service': removalRefused }));
    assert.deepEqual(report.eventsFor(false).map((e) => [e.type, e.reason]), [['Warning', 'ModelCacheRejected']]);
    assert.equal(report.retry, removalRefused);
  });

  it('a namespace being deleted: nothing reported, nothing retried', () => {
    const plan = planModelCache(observe(reported(modelApp()), { scope: 'namespace' }));
    const report = plan.report(execute(plan, { cache: { ...webhookRefusal, namespaceTerminating: true } }));
    const { eventsFor, ...rest } = report;
    assert.deepEqual([eventsFor(false), rest], [[], { condition: undefined }]);
  });
});

describe('model cache: whose caches, and how each is removed', () => {
  it('finds the app\'s caches by the labels naming it: another app\'s cache in the same list is not touched', () => {
    const other = cacheOf({ ...modelApp(), metadata: { ...modelApp().metadata, name: 'other' } });
    const plan = planModelCache(observe(modelApp({ prewarm: { replicas: 1 } }), { caches: [other] }));
    assert.deepEqual(plan.operations, []);
  });

  it('removes a cluster-scoped cache by the labels it was found by (it cannot carry the app\'s owner reference), a namespaced one by its owner reference', () => {
    const old = modelApp();
    const off = modelApp({ prewarm: { replicas: 1 } });
    const cluster = planModelCache(observe(off, { caches: [cacheOf(old)] })).operations[0]!;
    assert.deepEqual([cluster.action, cluster.action === 'remove' && cluster.labelledFor], ['remove', { namespace: 'ml', name: 'fraud' }]);
    const namespaced = planModelCache(observe(off, { scope: 'namespace', caches: [cacheOf(old, 'namespace')] })).operations[0]!;
    assert.deepEqual([namespaced.action, namespaced.action === 'remove' && namespaced.labelledFor, namespaced.action === 'remove' && namespaced.kind], ['remove', undefined, Kinds.LocalModelNamespaceCache]);
  });

  it('leaves a gone app\'s namespaced caches to garbage collection (their owner reference), and removes its cluster-scoped ones', () => {
    assert.deepEqual(planModelCache(observe(undefined, { scope: 'namespace', caches: [cacheOf(modelApp(), 'namespace')] })).operations, []);
    assert.deepEqual(planModelCache(observe(undefined, { caches: [cacheOf(modelApp())] })).operations.map((op) => op.action), ['remove']);
  });

  it('writes each scope\'s kind: cacheKind(scope), the kind the cache renders as', () => {
    for (const scope of ['cluster', 'namespace'] as const) {
      const op = planModelCache(observe(modelApp(), { scope })).operations.find((x) => x.id === 'cache')!;
      assert.ok(op.action === 'ensure');
      assert.equal(op.kind, cacheKind(scope));
      assert.equal(op.desired!.kind, cacheKind(scope).kind);
      assert.equal(op.desired!.apiVersion, `${cacheKind(scope).group}/${cacheKind(scope).version}`);
    }
  });
});

describe('model cache: the report says what to write', () => {
  it('the ModelCached entry, timed by the observation\'s clock, once the app controller has reported', () => {
    const plan = planModelCache(observe(reported(modelApp()), { scope: 'namespace' }));
    const report = plan.report(execute(plan));
    assert.deepEqual(report.write?.conditions?.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime]), [[MODEL_CACHED, 'True', 'ModelCacheApplied', '2026-02-01T00:00:00Z']]);
  });

  it('nothing before the app controller\'s first report (appReported), and an empty part to drop the entry', () => {
    const first = planModelCache(observe(modelApp(), { scope: 'namespace' }));
    assert.equal(appReported(modelApp()), false);
    assert.equal(first.report(execute(first)).write, undefined);
    const live: Condition = { type: MODEL_CACHED, status: 'True', reason: 'ModelCacheApplied', message: 'cached', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' };
    const off = planModelCache(observe(reported(modelApp({ prewarm: { replicas: 1 } }), [live]), { scope: 'namespace' }));
    assert.deepEqual(off.report(execute(off)).write, {});
  });
});

describe('model cache: the ModelCached entry this controller applies', () => {
  const now = new Date('2026-02-01T00:00:00Z');
  const cached = { status: 'True' as const, reason: 'ModelCacheApplied', message: 'cached' };

  it('waits for the app controller\'s first report, so a new app keeps reading as the CRD\'s default status', () => {
    assert.equal(modelCachedUpdate(modelApp(), cached, now), undefined);
    assert.deepEqual(modelCachedUpdate(reported(modelApp()), cached, now), [{ type: MODEL_CACHED, ...cached, observedGeneration: 1, lastTransitionTime: '2026-02-01T00:00:00Z' }]);
  });

  it('writes nothing when the live entry already says it, and keeps the transition time on a new message', () => {
    const live: Condition = { type: MODEL_CACHED, ...cached, observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' };
    assert.equal(modelCachedUpdate(reported(modelApp(), [live]), cached, now), undefined);
    assert.equal(modelCachedUpdate(reported(modelApp(), [live]), { ...cached, message: 'other' }, now)![0]!.lastTransitionTime, '2026-01-01T00:00:00Z');
  });

  it('drops its entry (an empty apply) only when there is one', () => {
    const live: Condition = { type: MODEL_CACHED, ...cached, observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' };
    assert.deepEqual(modelCachedUpdate(reported(modelApp(), [live]), null, now), []);
    assert.equal(modelCachedUpdate(reported(modelApp()), null, now), undefined);
    assert.equal(modelCachedUpdate(reported(modelApp(), [live]), undefined, now), undefined);
  });
});

describe('model cache: which caches an app\'s plan reads', () => {
  const cases: Array<[CacheScope, string | undefined]> = [
    ['namespace', 'team-a'], // its own namespace's only: another tenant's cost it nothing
    ['cluster', undefined], // cluster-scoped caches are in no namespace: all of them
  ];
  for (const [scope, want] of cases) it(`${scope}-scoped caches: ${want ?? 'every one'}`, () => assert.equal(cachesNamespace(scope, 'team-a'), want));
});

describe('model cache: only an app the operator serves gets one (planner/admission.ts)', () => {
  const app = reported(modelApp());
  const refusedBy = (a: ServerlessApp, policy: Partial<ValidationPolicy>) => observe(a, { request: { namespace: a.metadata.namespace, name: a.metadata.name }, admission: servedAs(a, { ...ISOLATED, ...policy }) });

  it('Refused apps still get node model caches: a refused app (ServiceAccountNotAllowed) gets no cache, and ModelCached says why', () => {
    const refusedApp = reported(withServiceAccount(modelApp(), 'node-admin'));
    const plan = planModelCache(refusedBy(refusedApp, {}));
    assert.deepEqual(plan.operations, []);
    assert.equal(plan.report([]).condition?.reason, 'ServiceAccountNotAllowed');
    assert.equal(plan.report([]).condition?.status, 'False');
    // The same app with the account allowed is cached.
    assert.deepEqual(planModelCache(refusedBy(refusedApp, { allowedServiceAccounts: ['node-admin'] })).operations.map((op) => op.id), ['finalizer', 'cache']);
  });

  it('a refused app loses the cache it had: a refused app holds no budget, so no node disk either', () => {
    const refusedApp = reported(withServiceAccount(modelApp(), 'node-admin'));
    const had = renderLocalModelCache(refusedApp, 'cluster', 'gpu');
    const plan = planModelCache({ ...refusedBy(refusedApp, {}), caches: [had] });
    assert.deepEqual(plan.operations.map((op) => `${op.action} ${op.id}`), [`remove remove/${had.metadata.name}`]);
    assert.match(plan.operations[0]!.why, /refused \(ServiceAccountNotAllowed\)/);
  });

  it('an app being deleted is not judged: its caches go whatever its verdict', () => {
    const deleting = { ...app, metadata: { ...app.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [CACHE_FINALIZER] } };
    const had = renderLocalModelCache(deleting, 'cluster', 'gpu');
    const claiming = servedAs(deleting, ISOLATED, { hosts: { problems: [], conflicts: [], missing: [{} as never] } });
    assert.deepEqual(planModelCache({ ...observe(deleting, { caches: [had] }), admission: claiming }).operations.map((op) => op.action), ['remove', 'finalizer']);
  });
});

function withServiceAccount(a: ServerlessApp, name: string): ServerlessApp {
  return { ...a, spec: { ...a.spec, model: { ...a.spec.model!, serviceAccountName: name } } };
}
