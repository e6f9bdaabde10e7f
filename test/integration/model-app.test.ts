// Model apps on the rig's real KServe 0.20 (Knative mode) and Knative Serving
// 1.21, with KWOK pods: what KServe is told and what it reports back at each
// step of prewarming and a manual canary. No request is served; warmup
// requests go to a loopback server through the operator's warmupUrlTemplate.
// LocalModelCaches are driven by KServe's real local model controller (the
// stand-in, started as in the other tests, switches itself off beside it).
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import { CACHE_FINALIZER } from '../../src/controllers/model-cache.ts';
import { MIN_SCALE } from '../../src/render/autoscaling.ts';
import { Kinds, type ResourceKind } from '../../src/util/kinds.ts';
import { startStandins } from '../standin/standin.ts';
import { app, applyApp, condition, getApp, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, writesSince } from '../support/cluster.ts';
import { isConditionTrue } from '../../src/util/conditions.ts';
import { LoopbackServer } from '../support/http-server.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

interface TrafficTarget { revisionName?: string; percent?: number; tag?: string; latestRevision?: boolean }
interface Isvc {
  spec: { predictor: { minReplicas?: number; canaryTrafficPercent?: number; model: { storageUri: string; modelFormat: { name: string } } } };
  status?: { url?: string; components?: { predictor?: { traffic?: TrafficTarget[] } } };
}
interface Annotated { metadata: { annotations?: Record<string, string> } }
interface Pod { status?: { conditions?: Array<{ type: string; status: string }> } }
const PodKind: ResourceKind = { group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true };
const PodAutoscaler: ResourceKind = { group: 'autoscaling.internal.knative.dev', version: 'v1alpha1', kind: 'PodAutoscaler', plural: 'podautoscalers', namespaced: true };
interface EventList { items: Array<{ reason?: string; note?: string; message?: string; regarding?: { name?: string }; involvedObject?: { name?: string } }> }

const model = (storageUri: string, extra: Partial<AppSpec> = {}): AppSpec => ({
  model: { format: { name: 'sklearn' }, storageUri, size: '1Gi', resources: { limits: { cpu: '1', memory: '2Gi' } } },
  scaling: { minScale: 0, maxScale: 4 },
  ...extra,
});

const getIsvc = (ns: string) => userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud');
const revisionOf = (ns: string, name: string) => userClient().get<Annotated>(Kinds.KnativeRevision, ns, name);
/** Knative's PodAutoscaler of a revision (same name): where a revision's bounds take effect. */
const podAutoscalerOf = (ns: string, name: string) => userClient().get<Annotated>(PodAutoscaler, ns, name);

/** Ready pods (KWOK's) of a revision. */
async function readyPods(ns: string, revision: string): Promise<number> {
  const pods = await userClient().list<Pod>(PodKind, ns, { labelSelector: `serving.knative.dev/revision=${revision}` });
  return pods.items.filter((p) => isConditionTrue(p.status?.conditions, 'Ready')).length;
}

/** Revision -> percent, as KServe reports the predictor's traffic (0% targets included). */
function reportedTraffic(isvc: Isvc | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of isvc?.status?.components?.predictor?.traffic ?? []) if (t.revisionName) out[t.revisionName] = (out[t.revisionName] ?? 0) + (t.percent ?? 0);
  return out;
}

async function events(ns: string, reason: string): Promise<string[]> {
  const list = await userClient().list<EventList['items'][number]>(Kinds.Event, ns);
  return list.items.filter((e) => e.reason === reason).map((e) => e.note ?? e.message ?? '');
}

describe('model app on KServe, with prewarming (integration)', function () {
  this.timeout(600_000);
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
      // A cluster-scoped cache needs a model under the namespace's own path; the other tests' models come from the shared one.
      allowedStorageUriPrefixes: ['gs://models/fraud/', 'gs://models/{namespace}/'],
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
  // The real garbage collector takes the InferenceService and its pods with the app: the rig's nodes are shared.
  afterEach(async () => { await userClient().delete(Kinds.ServerlessApp, ns, 'fraud'); });

  it('renders an InferenceService in Knative mode and reports Ready with the URL', async () => {
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v1')));
    // KServe reports the URL once its own ingress is made, which can be a moment after the predictor serves.
    const a = await waitForApp(ns, 'fraud', (x) => readyTrue(x) && !!x.status?.url, 'model app Ready with a URL', SETTLE_MS);
    const isvc = await userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud');
    assert.equal(isvc?.spec.predictor.model.storageUri, 'gs://models/fraud/v1');
    assert.equal(isvc?.spec.predictor.minReplicas, 0, 'scale to zero made explicit');
    assert.equal(a.status?.url, `http://fraud.${ns}.svc.cluster.local`, 'cluster-local by default: no route on Knative\'s external domain');
    assert.match(a.status?.versions?.stable?.revision ?? '', /^fraud-predictor-\d{5}$/);
  });

  it('prewarms a new model version: held at 2 ready replicas while warmup runs, no traffic until warm, then the buffer is released', async () => {
    const prewarm = { replicas: 2, warmup: { path: '/v1/models/fraud:predict', method: 'POST' as const, body: '{"instances":[[1]]}', count: 3 } };
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v1', { prewarm })));
    const v1 = await waitForApp(ns, 'fraud', (a) => readyTrue(a) && condition(a, 'Prewarmed')?.status === 'True', 'v1 warm', SETTLE_MS);
    const stable = v1.status!.versions!.stable!.revision!;
    // Warmup answers wait until the test has looked: while they do, the version is warming and must hold its buffer.
    const held: ServerResponse[] = [];
    let holding = true;
    warm.handler = (_r, res) => holding ? held.push(res) : res.end('{"predictions":[0]}');
    warm.requests.length = 0;
    const started = Date.now();
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v2', { prewarm })));

    const first = await waitFor('the first warmup request to the new version', async () => warm.requests[0], { timeoutMs: SETTLE_MS });
    const rev = first.url.split('/')[2]!;
    assert.notEqual(rev, stable, 'warmup goes to the new revision');
    const warmingFrom = new Date();
    // The buffer is up before warmup starts, on the live revision (Knative's PodAutoscaler has it too), and the version gets no traffic.
    assert.ok((await readyPods(ns, rev)) >= 2, `>= 2 ready pods of ${rev} when warmup starts (${await readyPods(ns, rev)})`);
    assert.equal((await revisionOf(ns, rev))?.metadata.annotations?.[MIN_SCALE], '2', 'min-scale 2 on the candidate revision');
    await waitFor('min-scale 2 on its PodAutoscaler', async () => (await podAutoscalerOf(ns, rev))?.metadata.annotations?.[MIN_SCALE] === '2', { timeoutMs: SETTLE_MS });
    const warming = await getApp(ns, 'fraud');
    assert.equal(condition(warming, 'Prewarmed')?.reason, 'WarmingUp');
    assert.equal(warming.status?.versions?.stable?.revision, stable, 'v1 keeps serving');
    assert.equal((await getIsvc(ns))?.spec.predictor.canaryTrafficPercent, 0, 'KServe is told: no traffic for the latest revision');
    await waitFor('KServe reports all traffic on v1, the new revision at 0%', async () => isDeepStrictEqual(reportedTraffic(await getIsvc(ns)), { [stable]: 100, [rev]: 0 }), { timeoutMs: SETTLE_MS });

    holding = false;
    for (const res of held.splice(0)) res.end('{"predictions":[0]}');
    const v2 = await waitForApp(ns, 'fraud', (a) => a.status?.versions?.stable?.storageUri === 'gs://models/fraud/v2' && readyTrue(a), 'v2 promoted', SETTLE_MS);
    const tookMs = Date.now() - started;
    assert.equal(v2.status!.versions!.stable!.revision, rev);
    const toV2 = warm.requests.filter((r) => r.url === `/${ns}/${rev}/v1/models/fraud:predict`);
    assert.equal(toV2.length, 3, 'three warmup requests, straight to the new revision');
    assert.equal(toV2[0]!.method, 'POST');
    assert.equal(v2.status?.prewarm?.succeeded, 3);
    const warmedAt = new Date(v2.status!.prewarm!.warmedAt!);
    console.log(`      prewarm: version created -> warm and promoted in ${tookMs} ms, ${toV2.length} warmup requests sent`);

    // Held until warm: the operator did not touch the candidate's bounds between the first warmup request and warmedAt.
    const early = writesSince(warmingFrom, 'serverlessapp-operator/').filter((w) => w.resource === 'revisions' && w.name === rev && w.timestamp < warmedAt);
    assert.deepEqual(early.map((w) => `${w.verb} at ${w.timestamp.toISOString()}`), [], `no write to ${rev} before it was warm at ${warmedAt.toISOString()}`);
    // Then released on the live revision (not through minReplicas, which would make KServe cut a new, cold revision), and Knative took it.
    await waitFor('the buffer released on the live revision', async () => (await revisionOf(ns, rev))?.metadata.annotations?.[MIN_SCALE] === '0', { timeoutMs: SETTLE_MS });
    await waitFor('and on its PodAutoscaler', async () => (await podAutoscalerOf(ns, rev))?.metadata.annotations?.[MIN_SCALE] === '0', { timeoutMs: SETTLE_MS });
    const settled = await getApp(ns, 'fraud');
    assert.equal(settled.status?.versions?.stable?.revision, rev, 'the warmed revision keeps serving');
    await waitFor('KServe reports all traffic on the warmed revision', async () => isDeepStrictEqual(reportedTraffic(await getIsvc(ns)), { [rev]: 100 }), { timeoutMs: SETTLE_MS });
  });

  it('retries a warmup endpoint answering 503 (one aggregated Event), then fails the candidate; rollout.retry warms it again and it is promoted', async () => {
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v1')));
    const v1 = await waitForApp(ns, 'fraud', readyTrue, 'v1 ready');
    warm.handler = (_r, res) => { res.statusCode = 503; res.end('loading'); };
    const v2 = model('gs://models/fraud/v2', { prewarm: { warmup: { path: '/v1/models/fraud', deadline: '3s', timeout: '1s' } } });
    await applyApp(app(ns, 'fraud', v2));
    const failed = await waitForApp(ns, 'fraud', (a) => a.status?.phase === 'Failed', 'phase Failed', 30_000);
    assert.deepEqual([condition(failed, 'Prewarmed')?.reason, condition(failed, 'CanaryProgressing')?.status, condition(failed, 'CanaryProgressing')?.reason], ['WarmupFailed', 'False', 'WarmupFailed']);
    assert.equal(failed.status?.canary?.failure?.reason, 'WarmupFailed');
    assert.equal(failed.status?.versions?.stable?.revision, v1.status?.versions?.stable?.revision, 'stable kept');
    assert.ok(warm.requests.length >= 2, `retried (${warm.requests.length} requests)`);
    await waitFor('one WarmupFailed Warning event', async () => (await events(ns, 'WarmupFailed')).length === 1, { timeoutMs: SETTLE_MS });
    const retries = await events(ns, 'WarmupRetry');
    assert.equal(new Set(retries).size, 1, `the failing requests share one message, so they aggregate: ${retries.join(' | ')}`);
    assert.ok(retries.length < warm.requests.length, `${retries.length} WarmupRetry Events for ${warm.requests.length} failed requests`);
    const isvc = await userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud');
    assert.equal(isvc?.spec.predictor.canaryTrafficPercent, 0, 'the failed version gets no traffic');

    // The endpoint recovers; a retry warms the same version again and the rollout finishes.
    warm.handler = (_r, res) => res.end('ok');
    await applyApp(app(ns, 'fraud', { ...v2, rollout: { retry: 1 } }));
    const promoted = await waitForApp(ns, 'fraud', (a) => a.status?.phase === 'Stable' && a.status.versions?.stable?.storageUri === 'gs://models/fraud/v2', 'v2 promoted after the retry', 90_000);
    assert.equal(promoted.status?.canary, undefined, 'no failure left');
    assert.ok(Date.parse(promoted.status!.prewarm!.startedAt!) <= Date.parse(promoted.status!.prewarm!.warmedAt!), 'warmup started before it finished');
  });

  it('canaryTrafficPercent follows the edits, 0 rolls back, removing it promotes: each step as KServe reports it', async () => {
    await applyApp(app(ns, 'fraud', model('gs://models/fraud/v1')));
    const r1 = (await waitForApp(ns, 'fraud', readyTrue, 'v1 ready', SETTLE_MS)).status!.versions!.stable!.revision!;
    let r2 = '';
    /** Waits until KServe reports `want` (revision -> percent) and the app shows the same split in status.traffic. */
    const reports = async (want: () => Record<string, number>, what: string) => {
      await waitFor(`KServe reports ${what}`, async () => isDeepStrictEqual(reportedTraffic(await getIsvc(ns)), want()), { timeoutMs: SETTLE_MS });
      return waitForApp(ns, 'fraud', (a) => isDeepStrictEqual(Object.fromEntries((a.status?.traffic ?? []).map((t) => [t.revision, t.percent])), want()), `the app reports ${what}`);
    };
    const v2 = (rollout?: { canaryPercent: number }) => applyApp(app(ns, 'fraud', model('gs://models/fraud/v2', rollout ? { rollout } : {})));

    await v2({ canaryPercent: 20 });
    r2 = await waitFor('the v2 revision in KServe\'s traffic', async () => Object.keys(reportedTraffic(await getIsvc(ns))).find((r) => r !== r1), { timeoutMs: SETTLE_MS });
    assert.equal((await getIsvc(ns))?.spec.predictor.canaryTrafficPercent, 20);
    let a = await reports(() => ({ [r2]: 20, [r1]: 80 }), '20% on v2, 80% on v1');
    assert.equal(a.status?.phase, 'Canary');
    assert.equal(a.status?.canary?.trafficPercent, 20);
    assert.deepEqual(Object.fromEntries((await getIsvc(ns))!.status!.components!.predictor!.traffic!.map((t) => [t.tag, t.revisionName])), { latest: r2, prev: r1 }, 'tags latest (candidate) and prev (stable)');

    await v2({ canaryPercent: 50 });
    a = await reports(() => ({ [r2]: 50, [r1]: 50 }), '50/50');
    assert.equal(a.status?.canary?.trafficPercent, 50);

    await v2({ canaryPercent: 0 });
    a = await reports(() => ({ [r2]: 0, [r1]: 100 }), 'all traffic back on v1, v2 kept at 0%');
    assert.equal((await getIsvc(ns))?.spec.predictor.canaryTrafficPercent, 0);
    await waitForApp(ns, 'fraud', (x) => x.status?.phase === 'RolledBack' && x.status.versions?.stable?.revision === r1, 'phase RolledBack, v1 stable');
    assert.equal((await revisionOf(ns, r2))?.metadata.annotations?.[MIN_SCALE], '0', 'the rolled-back revision may scale to zero');

    await v2();
    await reports(() => ({ [r2]: 100 }), 'all traffic on v2');
    a = await waitForApp(ns, 'fraud', (x) => x.status?.phase === 'Stable' && condition(x, 'Promoted')?.status === 'True', 'v2 promoted');
    assert.equal(a.status?.versions?.stable?.revision, r2);
    assert.equal((await getIsvc(ns))?.spec.predictor.canaryTrafficPercent, undefined, 'canaryTrafficPercent removed once v2 is stable');
    assert.ok((await events(ns, 'Promoted')).length > 0, 'a Promoted event');
  });

  it('creates a LocalModelCache, replaces it when the model changes, and removes it (and the finalizer) on delete', async () => {
    const cached = (uri: string) => model(uri, { prewarm: { cacheModel: true } });
    await applyApp(app(ns, 'fraud', cached(`gs://models/${ns}/fraud/v1`)));
    const caches = async () => (await userClient().list<{ metadata: { name: string; labels?: Record<string, string> }; spec: { sourceModelUri: string; nodeGroups: string[] } }>(Kinds.LocalModelCache)).items
      .filter((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === ns);
    const first = await waitFor('cache for v1', async () => (await caches()).find((c) => c.spec.sourceModelUri === `gs://models/${ns}/fraud/v1`), { timeoutMs: SETTLE_MS });
    assert.deepEqual(first.spec.nodeGroups, ['gpu-nodes']);
    assert.ok((await getApp(ns, 'fraud')).metadata.finalizers?.includes(CACHE_FINALIZER));
    // The model-cache controller's condition, beside the app controller's: each writer keeps its own entries.
    const cachedV1 = await waitForApp(ns, 'fraud', (x) => condition(x, 'ModelCached')?.status === 'True' && !!condition(x, 'Ready'), 'ModelCached=True beside Ready', SETTLE_MS);
    assert.match(condition(cachedV1, 'ModelCached')!.message, new RegExp(`caches gs://models/${ns}/fraud/v1`));
    await applyApp(app(ns, 'fraud', cached(`gs://models/${ns}/fraud/v2`)));
    await waitFor('cache replaced', async () => {
      const list = await caches();
      return list.length === 1 && list[0]!.spec.sourceModelUri === `gs://models/${ns}/fraud/v2` ? true : undefined;
    }, { timeoutMs: SETTLE_MS });
    const cachedV2 = await waitForApp(ns, 'fraud', (x) => /fraud\/v2/.test(condition(x, 'ModelCached')?.message ?? '') && condition(x, 'Ready')?.observedGeneration === x.metadata.generation,
      'ModelCached for v2, and Ready for the new generation', SETTLE_MS);
    assert.equal(condition(cachedV2, 'ModelCached')?.observedGeneration, cachedV2.metadata.generation);
    // Deleting the cache by hand first must not make the app's deletion hang.
    const current = (await caches())[0]!;
    await userClient().delete(Kinds.LocalModelCache, undefined, current.metadata.name);
    await userClient().delete(Kinds.ServerlessApp, ns, 'fraud');
    await waitFor('app deleted (finalizer released)', async () => (await userClient().get(Kinds.ServerlessApp, ns, 'fraud')) === undefined ? true : undefined, { timeoutMs: SETTLE_MS });
    // Deleted by the operator, the caches go once KServe's controller has taken the model off the nodes (its own finalizer).
    await waitFor('the caches gone', async () => (await caches()).length === 0, { timeoutMs: SETTLE_MS });
  });
});
