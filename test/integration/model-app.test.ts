import assert from 'node:assert/strict';
import { CACHE_FINALIZER } from '../../src/controllers/model-cache.ts';
import { Kinds } from '../../src/runtime/kinds.ts';
import { startStandins } from '../standin/standin.ts';
import { app, applyApp, condition, eventually, getApp, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { LoopbackServer } from '../support/http-server.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';

interface Isvc { spec: { predictor: { minReplicas?: number; canaryTrafficPercent?: number; model: { storageUri: string; modelFormat: { name: string } } } }; status?: { url?: string } }
interface EventList { items: Array<{ reason?: string; note?: string; message?: string; regarding?: { name?: string }; involvedObject?: { name?: string } }> }

const model = (storageUri: string, extra: Partial<AppSpec> = {}): AppSpec => ({
  model: { format: { name: 'sklearn' }, storageUri, size: '1Gi', resources: { limits: { cpu: '1', memory: '2Gi' } } },
  scaling: { minScale: 0, maxScale: 4 },
  ...extra,
});

async function events(ns: string, reason: string): Promise<string[]> {
  const list = await userClient().list<EventList['items'][number]>(Kinds.Event, ns);
  return list.items.filter((e) => e.reason === reason).map((e) => e.note ?? e.message ?? '');
}

describe('model app on KServe, with prewarming (integration)', function () {
  this.timeout(120_000);
  let op: RunningOperator;
  let standins: Awaited<ReturnType<typeof startStandins>>;
  let warm: LoopbackServer;
  let ns: string;

  before(async () => {
    warm = await new LoopbackServer().start();
    standins = await startStandins({ kubeConfig: testKubeConfig(), readyDelayMs: 100 });
    op = await startOperator({
      warmupUrlTemplate: `${warm.url}/{namespace}/{revision}{path}`,
      modelCacheScope: 'cluster', modelCacheNodeGroup: 'gpu-nodes',
    }, { warmupBackoffMs: 50 });
  });
  after(async () => {
    await op?.stop();
    await standins?.stop();
    await warm?.stop();
  });
  beforeEach(async () => {
    ns = await freshNamespace('model');
    warm.requests.length = 0;
    warm.handler = (_r, res) => res.end('{"predictions":[0]}');
  });

  it('renders an InferenceService in Knative mode and reports Ready with the URL', async () => {
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v1')));
    const a = await waitForApp(ns, 'fraud', readyTrue, 'model app Ready');
    const isvc = await userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud');
    assert.equal(isvc?.spec.predictor.model.storageUri, 'gs://models/fraud/v1');
    assert.equal(isvc?.spec.predictor.minReplicas, 0, 'scale to zero made explicit');
    assert.equal(a.status?.url, `http://fraud.${ns}.example.com`);
    assert.match(a.status?.versions?.stable?.revision ?? '', /^fraud-predictor-\d{5}$/);
  });

  it('prewarms a new model version (replicas ready, warmup answered) before it gets any traffic', async () => {
    const prewarm = { replicas: 2, warmup: { path: '/v1/models/fraud:predict', method: 'POST' as const, body: '{"instances":[[1]]}', count: 3 } };
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v1', { prewarm })));
    const v1 = await waitForApp(ns, 'fraud', (a) => readyTrue(a) && condition(a, 'Prewarmed')?.status === 'True', 'v1 warm');
    warm.requests.length = 0;
    const started = Date.now();
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v2', { prewarm })));
    // While the candidate warms, stable keeps all traffic.
    const during = await waitForApp(ns, 'fraud', (a) => a.status?.versions?.candidate !== undefined, 'candidate appears');
    assert.equal(during.status?.versions?.stable?.revision, v1.status?.versions?.stable?.revision);
    const v2 = await waitForApp(ns, 'fraud', (a) => a.status?.versions?.stable?.storageUri === 'gs://models/fraud/v2' && readyTrue(a), 'v2 promoted', 60_000);
    const tookMs = Date.now() - started;
    const rev = v2.status!.versions!.stable!.revision!;
    const toV2 = warm.requests.filter((r) => r.url === `/${ns}/${rev}/v1/models/fraud:predict`);
    assert.equal(toV2.length, 3, 'three warmup requests, straight to the new revision');
    assert.equal(toV2[0]!.method, 'POST');
    assert.equal(v2.status?.prewarm?.succeeded, 3);
    assert.ok(v2.status?.prewarm?.warmedAt);
    const revision = await userClient().get<{ status?: { actualReplicas?: number } }>(Kinds.KnativeRevision, ns, rev);
    assert.ok((revision?.status?.actualReplicas ?? 0) >= 2 || v2.status?.prewarm?.warmedAt, 'the buffer of 2 was reported ready');
    console.log(`      prewarm: version created -> warm and promoted in ${tookMs} ms, ${toV2.length} warmup requests sent`);
    // Releasing the buffer must not replace the warm revision with a cold one (it is set in place, not via minReplicas).
    await new Promise((r) => setTimeout(r, 1500));
    const settled = await getApp(ns, 'fraud');
    assert.equal(settled.status?.versions?.stable?.revision, rev, 'the warmed revision keeps serving');
    const revMin = (await userClient().get<{ metadata: { annotations?: Record<string, string> } }>(Kinds.KnativeRevision, ns, rev))?.metadata.annotations?.['autoscaling.knative.dev/min-scale'];
    assert.equal(revMin, '0', 'the buffer is released on the live revision');
  });

  it('retries a warmup endpoint answering 503, records Events, then marks WarmupFailed and gives the version no traffic', async () => {
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v1')));
    const v1 = await waitForApp(ns, 'fraud', readyTrue, 'v1 ready');
    warm.handler = (_r, res) => { res.statusCode = 503; res.end('loading'); };
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v2', { prewarm: { warmup: { path: '/v1/models/fraud', deadline: '3s', timeout: '1s' } } })));
    const failed = await waitForApp(ns, 'fraud', (a) => condition(a, 'Prewarmed')?.reason === 'WarmupFailed', 'WarmupFailed', 30_000);
    assert.equal(condition(failed, 'Prewarmed')?.status, 'False');
    assert.equal(failed.status?.versions?.stable?.revision, v1.status?.versions?.stable?.revision, 'stable kept');
    assert.ok(warm.requests.length >= 2, `retried (${warm.requests.length} requests)`);
    assert.ok((await events(ns, 'WarmupRetry')).length > 0, 'a WarmupRetry event');
    const isvc = await userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud');
    assert.equal(isvc?.spec.predictor.canaryTrafficPercent, 0, 'the failed version gets no traffic');
  });

  it('creates a LocalModelCache, replaces it when the model changes, and removes it (and the finalizer) on delete', async () => {
    const cached = (uri: string) => model(uri, { prewarm: { cacheModel: true } });
    await applyApp(app(ns, 'fraud', cached('gs://models/fraud/v1')));
    const caches = async () => (await userClient().list<{ metadata: { name: string; labels?: Record<string, string> }; spec: { sourceModelUri: string; nodeGroups: string[] } }>(Kinds.LocalModelCache)).items
      .filter((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === ns);
    const first = await eventually(async () => (await caches()).find((c) => c.spec.sourceModelUri === 'gs://models/fraud/v1'), 'cache for v1');
    assert.deepEqual(first.spec.nodeGroups, ['gpu-nodes']);
    assert.ok((await getApp(ns, 'fraud')).metadata.finalizers?.includes(CACHE_FINALIZER));
    await applyApp(app(ns, 'fraud', cached('gs://models/fraud/v2')));
    await eventually(async () => {
      const list = await caches();
      return list.length === 1 && list[0]!.spec.sourceModelUri === 'gs://models/fraud/v2' ? true : undefined;
    }, 'cache replaced');
    // Deleting the cache by hand first must not make the app's deletion hang.
    const current = (await caches())[0]!;
    await userClient().delete(Kinds.LocalModelCache, undefined, current.metadata.name);
    await userClient().delete(Kinds.ServerlessApp, ns, 'fraud');
    await eventually(async () => (await userClient().get(Kinds.ServerlessApp, ns, 'fraud')) === undefined ? true : undefined, 'app deleted (finalizer released)');
    assert.deepEqual(await caches(), []);
  });
});
