// KServe 0.20's real local model cache in the rig: its controller and webhook,
// and its node agent on each KWOK node (the download itself is SIMULATED, see
// test/envtest/model-download.ts). A cache the operator renders must pass the
// webhook and be driven by KServe to the status a cluster would show; the
// stand-in's cache half stays off beside it.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { CoreV1Api } from '@kubernetes/client-node';
import { join } from 'node:path';
import { Kinds, type ResourceKind } from '../../src/util/kinds.ts';
import { LOCALMODEL_JOB_NAMESPACE, nodeModelsDir, NODE_GROUPS } from '../envtest/kserve-localmodel.ts';
import { startStandins, type Standins } from '../standin/standin.ts';
import { app, applyApp, condition, getApp, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv, writesSince } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

interface Cache {
  metadata: { name: string; namespace?: string; finalizers?: string[]; labels?: Record<string, string> };
  spec: { sourceModelUri: string; nodeGroups: string[] };
  status?: { copies?: { total: number; available: number; failed?: number }; nodeStatus?: Record<string, string>; inferenceServices?: unknown[] };
}
interface LocalModelNode { spec: { localModels: Array<{ modelName: string; namespace?: string; sourceModelUri: string }> }; status?: { modelStatus?: Record<string, string> } }
const LocalModelNodeKind: ResourceKind = { group: 'serving.kserve.io', version: 'v1alpha1', kind: 'LocalModelNode', plural: 'localmodelnodes', namespaced: false };
const JobKind: ResourceKind = { group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs', namespaced: true };

/** kserve pkg/controller/v1alpha1/localmodel/reconcilers/utils.go FinalizerName. */
const KSERVE_CACHE_FINALIZER = 'localmodel.kserve.io/finalizer';
const PLAIN_NODE = 'rig-node-1';

/** Turns KServe's localModel setting on or off in the rig's inferenceservice-config (shipped off); the manager reads it at each admission. */
async function setLocalModelEnabled(enabled: boolean): Promise<void> {
  const core = testEnv().kubeConfig().makeApiClient(CoreV1Api);
  const cm = await core.readNamespacedConfigMap({ namespace: 'kserve', name: 'inferenceservice-config' });
  cm.data = { ...cm.data, localModel: JSON.stringify({ ...JSON.parse(cm.data?.localModel ?? '{}'), enabled }) };
  await core.replaceNamespacedConfigMap({ namespace: 'kserve', name: 'inferenceservice-config', body: cm });
}

/** Runs `body` with KServe's localModel setting on, and turns it off again whatever happens. */
async function withLocalModelEnabled(body: () => Promise<void>): Promise<void> {
  await setLocalModelEnabled(true);
  try {
    await body();
  } finally {
    await setLocalModelEnabled(false);
  }
}

const cachedModel = (storageUri: string): AppSpec => ({
  model: { format: { name: 'sklearn' }, storageUri, size: '1Gi', resources: { limits: { cpu: '1', memory: '2Gi' } } },
  scaling: { minScale: 0, maxScale: 1 },
  prewarm: { cacheModel: true },
});

describe('KServe 0.20 local model cache in the rig (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let standins: Standins;
  let ns: string;

  before(async function () {
    if (!testEnv().dataPlane?.kserve) this.skip();
    // As the other model tests start them: the stand-in must see the real controller and keep its cache half off.
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), readyDelayMs: 100 });
    // A cluster-scoped cache is written only of a model under the namespace's own path (ModelCacheNotIsolated otherwise).
    op = await startOperator({ modelCacheScope: 'cluster', modelCacheNodeGroup: NODE_GROUPS.default, allowedStorageUriPrefixes: ['gs://models/{namespace}/', 'gs://public/'] });
  });
  after(async () => {
    await op?.stop();
    await standins?.stop();
  });
  beforeEach(async () => { ns = await freshNamespace('localmodel'); });

  const cacheOf = async (name: string) => (await userClient().list<Cache>(Kinds.LocalModelCache)).items
    .find((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === ns && c.metadata.labels['serverlessapp.io/app'] === name);
  /** The app's cache once KServe lists the app's InferenceService as using it (localModel on). */
  const cacheInUse = (name: string, what: string) => waitFor(what, async () => {
    const c = await cacheOf(name);
    return c?.status?.inferenceServices?.length === 1 && c;
  }, { timeoutMs: 120_000 });

  it('drives the operator\'s LocalModelCache to downloaded on the node group\'s node, through the node agent', async () => {
    const since = new Date();
    await applyApp(app(ns, 'iris', cachedModel(`gs://models/${ns}/iris/v1`)));
    const cache = await waitFor('KServe reports one copy of the model available', async () => {
      const c = await cacheOf('iris');
      return c?.status?.copies?.available === 1 && c;
    }, { timeoutMs: 120_000 });

    // What KServe's controller writes: one copy per ready node of the group, by node name, and its finalizer.
    assert.deepEqual(cache.spec.nodeGroups, [NODE_GROUPS.default]);
    // `failed` is omitted at 0 (ModelCopies' omitempty), which the stand-in used to write.
    assert.deepEqual(cache.status?.copies, { total: 1, available: 1 });
    assert.deepEqual(cache.status?.nodeStatus, { [PLAIN_NODE]: 'NodeDownloaded' });
    assert.ok(cache.metadata.finalizers?.includes(KSERVE_CACHE_FINALIZER), 'the real controller holds the cache until the nodes drop it');
    // ... from what the node's agent reports on its LocalModelNode, after its download Job.
    const node = await userClient().get<LocalModelNode>(LocalModelNodeKind, undefined, PLAIN_NODE);
    assert.deepEqual(node?.spec.localModels.filter((m) => m.modelName === cache.metadata.name).map((m) => m.sourceModelUri), [`gs://models/${ns}/iris/v1`]);
    assert.equal(node?.status?.modelStatus?.[cache.metadata.name], 'ModelDownloaded');
    assert.ok(existsSync(join(nodeModelsDir(testEnv().dir, PLAIN_NODE), 'models')), 'the simulated download wrote the node\'s model folder');
    // One download Job: the agent found the folder after it, so it did not download again (controller.go downloadModels).
    const jobs = await userClient().list(JobKind, LOCALMODEL_JOB_NAMESPACE, { labelSelector: `model=${cache.metadata.name},node=${PLAIN_NODE}` });
    assert.equal(jobs.items.length, 1);
    // In its first status, written when its first start ends (KServe reports the InferenceService Ready).
    await waitFor('the app naming its cache', async () => (await getApp(ns, 'iris')).status?.modelCache === cache.metadata.name, { timeoutMs: SETTLE_MS });

    const writers = new Set(writesSince(since, '').filter((w) => w.resource === 'localmodelcaches' && w.subresource === 'status').map((w) => w.userAgent.split('/')[0]));
    assert.deepEqual([...writers], ['kserve-localmodel'], 'only KServe\'s controller writes cache status');

    // Deleting the app: the operator deletes the cache, KServe takes the model off the node and lets the cache go.
    await userClient().delete(Kinds.ServerlessApp, ns, 'iris');
    await waitFor('the cache gone', async () => (await cacheOf('iris')) === undefined, { timeoutMs: SETTLE_MS });
    await waitFor('the model off the node\'s list', async () => {
      const n = await userClient().get<LocalModelNode>(LocalModelNodeKind, undefined, PLAIN_NODE);
      return !n?.spec.localModels.some((m) => m.modelName === cache.metadata.name);
    }, { timeoutMs: SETTLE_MS });
  });

  it('with KServe\'s localModel on, deletes an app whose InferenceService uses its cache: the InferenceService first, which KServe requires', async () => {
    await withLocalModelEnabled(async () => {
      await applyApp(app(ns, 'served', cachedModel(`gs://models/${ns}/served/v1`)));
      // KServe labels the InferenceService with the cache at admission once the cache exists, and lists it in the cache's status.
      const cache = await cacheInUse('served', 'KServe using the cache for the app\'s InferenceService');
      const isvc = await userClient().get<{ metadata: { labels?: Record<string, string> } }>(Kinds.InferenceService, ns, 'served');
      assert.equal(isvc?.metadata.labels?.['internal.serving.kserve.io/localmodel'], cache.metadata.name);
      await userClient().delete(Kinds.ServerlessApp, ns, 'served');
      await waitFor('the app gone', async () => (await userClient().get(Kinds.ServerlessApp, ns, 'served')) === undefined, { timeoutMs: 90_000 });
      await waitFor('its cache gone', async () => (await userClient().get(Kinds.LocalModelCache, undefined, cache.metadata.name)) === undefined, { timeoutMs: SETTLE_MS });
    });
  });

  it('with KServe\'s localModel on, a new model gets its cache before the old one goes, and KServe moves the InferenceService to it', async () => {
    await withLocalModelEnabled(async () => {
      await applyApp(app(ns, 'swap', cachedModel(`gs://models/${ns}/swap/v1`)));
      const old = await cacheInUse('swap', 'KServe using the first cache');
      const since = new Date();
      await applyApp(app(ns, 'swap', cachedModel(`gs://models/${ns}/swap/v2`)));
      const fresh = await waitFor('only the new model\'s cache left', async () => {
        const caches = (await userClient().list<Cache>(Kinds.LocalModelCache)).items.filter((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === ns);
        return caches.length === 1 && caches[0]!.spec.sourceModelUri === `gs://models/${ns}/swap/v2` && caches[0]!;
      }, { timeoutMs: 120_000 });
      // Make before break: the operator wrote the new cache before it deleted the old one.
      const writes = writesSince(since, 'serverlessapp-operator').filter((w) => w.resource === 'localmodelcaches' && !w.subresource);
      const created = writes.findIndex((w) => w.name === fresh.metadata.name && w.verb === 'patch');
      const deleted = writes.findIndex((w) => w.name === old.metadata.name && w.verb === 'delete');
      assert.ok(created >= 0 && deleted > created, `wrote ${writes.map((w) => `${w.verb} ${w.name}`).join(', ')}`);
      await waitFor('the InferenceService on the new cache', async () => {
        const isvc = await userClient().get<{ metadata: { labels?: Record<string, string> } }>(Kinds.InferenceService, ns, 'swap');
        return isvc?.metadata.labels?.['internal.serving.kserve.io/localmodel'] === fresh.metadata.name;
      }, { timeoutMs: 120_000 });
      await userClient().delete(Kinds.ServerlessApp, ns, 'swap');
      await waitFor('its cache gone', async () => (await cacheOf('swap')) === undefined, { timeoutMs: 90_000 });
    });
  });

  it('writes no cluster-scoped cache of a model every namespace may name: a ModelCacheNotIsolated Warning and ModelCached=False, the app serving uncached', async () => {
    // gs://public/ is allowed to every namespace: KServe would bind any namespace's InferenceService of it, or under it, to the cache.
    const since = new Date();
    await applyApp(app(ns, 'open', cachedModel('gs://public/iris/v1')));
    const refused = await waitForApp(ns, 'open', (x) => condition(x, 'ModelCached')?.reason === 'ModelCacheNotIsolated', 'ModelCached=False ModelCacheNotIsolated', 120_000);
    assert.equal(condition(refused, 'ModelCached')?.status, 'False');
    assert.match(condition(refused, 'ModelCached')!.message, /gs:\/\/public\/iris\/v1 lies under no allowed prefix with \{namespace\} as a whole path segment, so other namespaces' apps can name it/);
    assert.match(condition(refused, 'ModelCached')!.message, /--allowed-storage-uri-prefixes.*or use modelCache\.scope: namespace/);
    await waitFor('a ModelCacheNotIsolated Warning on the app', async () => {
      const events = await userClient().list<{ type?: string; reason?: string; regarding?: { name?: string }; involvedObject?: { name?: string } }>(Kinds.Event, ns);
      return events.items.some((e) => e.type === 'Warning' && e.reason === 'ModelCacheNotIsolated' && (e.regarding?.name ?? e.involvedObject?.name) === 'open');
    }, { timeoutMs: 30_000 });
    // The app itself is served (only the cache is refused), with no finalizer and no cache named in its status.
    const served = await waitForApp(ns, 'open', (x) => condition(x, 'Ready')?.status === 'True', 'the app Ready without its cache', 120_000);
    assert.equal(served.status?.modelCache, undefined);
    assert.ok(!served.metadata.finalizers?.includes('serverlessapp.io/model-cache'), 'no cache finalizer');
    assert.equal(await cacheOf('open'), undefined);
    const cacheWrites = writesSince(since, 'serverlessapp-operator').filter((w) => w.resource === 'localmodelcaches' && w.name?.startsWith(`${ns}-`));
    assert.deepEqual(cacheWrites.map((w) => `${w.verb} ${w.name}`), [], 'no LocalModelCache written for the app');
  });

  it('admits one cache per model: a second app caching the same model is told by a ModelCacheRejected event naming KServe\'s webhook', async () => {
    await applyApp(app(ns, 'first', cachedModel(`gs://models/${ns}/shared/v1`)));
    await waitFor('the first app\'s cache', async () => cacheOf('first'), { timeoutMs: SETTLE_MS });
    await applyApp(app(ns, 'second', cachedModel(`gs://models/${ns}/shared/v1`)));
    const note = await waitFor('the conflict reported on the second app', async () => {
      const events = await userClient().list<{ reason?: string; note?: string; message?: string; regarding?: { name?: string }; involvedObject?: { name?: string } }>(Kinds.Event, ns);
      const e = events.items.find((x) => x.reason === 'ModelCacheRejected' && (x.regarding?.name ?? x.involvedObject?.name) === 'second');
      return e && (e.note ?? e.message);
    }, { timeoutMs: SETTLE_MS });
    assert.match(note, new RegExp(`localmodelcache\\.kserve-webhook-server\\.validator.*has the same StorageURI gs://models/${ns}/shared/v1`));
    assert.equal(await cacheOf('second'), undefined);
    // On the app's status too, not only as an Event (once the app controller has first reported on it).
    const refused = await waitForApp(ns, 'second', (x) => condition(x, 'ModelCached')?.reason === 'ModelCacheRejected', 'ModelCached=False ModelCacheRejected on the second app', 120_000);
    assert.equal(condition(refused, 'ModelCached')?.status, 'False');
    assert.match(condition(refused, 'ModelCached')!.message, new RegExp(`has the same StorageURI gs://models/${ns}/shared/v1`));
    assert.ok(condition(refused, 'Ready'), 'the app controller\'s conditions stay beside it');
    // Once the first app's cache is gone, the second app's is written without waiting out its backoff.
    await userClient().delete(Kinds.ServerlessApp, ns, 'first');
    await waitFor('the first cache gone', async () => (await cacheOf('first')) === undefined, { timeoutMs: SETTLE_MS });
    // (Its backoff by then is about a minute; the cache's deletion restarts it from the base delay.)
    await waitFor('the second app\'s cache, once the model is free', async () => cacheOf('second'), { timeoutMs: 45_000 });
    await waitForApp(ns, 'second', (x) => condition(x, 'ModelCached')?.status === 'True', 'ModelCached=True once its cache is written', SETTLE_MS);
    await userClient().delete(Kinds.ServerlessApp, ns, 'second');
    await waitFor('the second cache gone', async () => (await cacheOf('second')) === undefined, { timeoutMs: SETTLE_MS });
  });
});
