import assert from 'node:assert/strict';
import { Kinds } from '../../src/runtime/kinds.ts';
import { startStandins } from '../standin/standin.ts';
import { app, applyApp, condition, eventually, getApp, getKsvc, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { LoopbackServer, promVector } from '../support/http-server.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';

interface VS { spec: { hosts: string[]; gateways?: string[]; http: Array<{ name: string; match?: Array<{ headers: Record<string, Record<string, string>> }>; rewrite?: { authority: string }; timeout?: string }> } }
interface Isvc { spec: { predictor: { canaryTrafficPercent?: number } } }

const spec = (image: string, rollout?: AppSpec['rollout'], extra: Partial<AppSpec> = {}): AppSpec => ({
  container: { image }, scaling: { minScale: 0 }, ...(rollout ? { rollout } : {}), ...extra,
});
const ingress = { hosts: ['shop.example.com'], gateways: ['istio-system/public'], timeout: '10s', retries: { attempts: 2 } };

/** Candidate percent in the rendered Knative Service (0 when absent). */
async function ksvcSplit(ns: string): Promise<Record<string, number>> {
  const k = await getKsvc(ns, 'shop');
  return Object.fromEntries((k?.spec.traffic ?? []).map((t) => [t.tag ?? t.revisionName ?? 'latest', t.percent]));
}

describe('canary rollouts by editing the spec (integration)', function () {
  this.timeout(120_000);
  let op: RunningOperator;
  let standins: Awaited<ReturnType<typeof startStandins>>;
  let prom: LoopbackServer;
  let ns: string;

  before(async () => {
    prom = await new LoopbackServer().start();
    standins = await startStandins({ kubeConfig: testKubeConfig(), readyDelayMs: 100 });
    op = await startOperator();
  });
  after(async () => {
    await op?.stop();
    await standins?.stop();
    await prom?.stop();
  });
  beforeEach(async () => { ns = await freshNamespace('canary'); });

  async function stableV1(extra: Partial<AppSpec> = {}) {
    await applyApp(app(ns, 'shop', spec('shop:1', undefined, extra)));
    return waitForApp(ns, 'shop', readyTrue, 'v1 ready');
  }

  it('v1 -> v2 at 20% -> 50% -> header route -> 100% promoted', async () => {
    const v1 = await stableV1({ ingress });
    await applyApp(app(ns, 'shop', spec('shop:2', { canaryPercent: 20, match: [{ header: 'x-canary', exact: 'yes' }] }, { ingress })));
    let a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.weight === 20 && x.status?.phase === 'Canary', 'at 20%');
    assert.deepEqual(await ksvcSplit(ns), { stable: 80, candidate: 20 });
    assert.equal(a.status?.versions?.stable?.revision, v1.status?.versions?.stable?.revision);
    assert.equal(condition(a, 'CanaryProgressing')?.status, 'True');
    assert.equal(condition(a, 'Promoted')?.status, 'False');

    const vs = await eventually(async () => {
      const v = await userClient().get<VS>(Kinds.VirtualService, ns, 'shop-routes');
      return v?.spec.http.some((h) => h.name === 'candidate-by-header') ? v : undefined;
    }, 'header route present');
    assert.deepEqual(vs.spec.hosts, ['shop.example.com']);
    assert.deepEqual(vs.spec.gateways, ['istio-system/public']);
    assert.deepEqual(vs.spec.http[0]!.match, [{ headers: { 'x-canary': { exact: 'yes' } } }]);
    assert.equal(vs.spec.http[0]!.rewrite?.authority, `candidate-shop.${ns}.svc.cluster.local`);
    assert.equal(vs.spec.http[1]!.rewrite?.authority, `shop.${ns}.svc.cluster.local`);
    assert.equal(vs.spec.http[1]!.timeout, '10s');

    await applyApp(app(ns, 'shop', spec('shop:2', { canaryPercent: 50, match: [{ header: 'x-canary', exact: 'yes' }] }, { ingress })));
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.weight === 50, 'at 50%');
    assert.deepEqual(await ksvcSplit(ns), { stable: 50, candidate: 50 });
    // The status reports the split in force as the data plane reports it.
    a = await eventually(async () => {
      const x = await getApp(ns, 'shop');
      return x.status?.traffic?.map((t) => t.percent).sort().join() === '50,50' ? x : undefined;
    }, 'status.traffic 50/50');
    assert.ok(a.status?.traffic?.every((t) => t.url), 'each target has its own URL');

    await applyApp(app(ns, 'shop', spec('shop:2', { canaryPercent: 100 }, { ingress })));
    a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status?.versions?.stable?.image === 'shop:2', 'promoted');
    assert.equal(condition(a, 'Promoted')?.status, 'True');
    assert.deepEqual(await ksvcSplit(ns), { stable: 100 });
    const afterVs = await userClient().get<VS>(Kinds.VirtualService, ns, 'shop-routes');
    assert.deepEqual(afterVs?.spec.http.map((h) => h.name), ['default'], 'no header route without a candidate');
  });

  it('rolls back with canaryPercent 0: all traffic on stable, the candidate kept at 0% and scaled to zero', async () => {
    await stableV1();
    await applyApp(app(ns, 'shop', spec('shop:2', { canaryPercent: 30 })));
    const canary = await waitForApp(ns, 'shop', (x) => x.status?.canary?.weight === 30, 'at 30%');
    await applyApp(app(ns, 'shop', spec('shop:2', { canaryPercent: 0 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'RolledBack', 'rolled back');
    assert.deepEqual(await ksvcSplit(ns), { stable: 100, candidate: 0 });
    assert.equal(a.status?.versions?.candidate?.revision, canary.status?.versions?.candidate?.revision, 'candidate kept for inspection');
    const rev = await userClient().get<{ metadata: { annotations?: Record<string, string> } }>(Kinds.KnativeRevision, ns, a.status!.versions!.candidate!.revision!);
    assert.equal(rev?.metadata.annotations?.['autoscaling.knative.dev/min-scale'], '0');
  });

  it('rolls back instantly when the workload spec is reverted to the stable version', async () => {
    const v1 = await stableV1();
    await applyApp(app(ns, 'shop', spec('shop:2', { canaryPercent: 40 })));
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.weight === 40, 'at 40%');
    await applyApp(app(ns, 'shop', spec('shop:1', { canaryPercent: 40 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && !x.status?.versions?.candidate, 'reverted');
    assert.equal(a.status?.versions?.stable?.revision, v1.status?.versions?.stable?.revision, 'same revision: no new version');
    assert.deepEqual(await ksvcSplit(ns), { stable: 100 });
  });

  it('replaces the candidate when a third version arrives during a canary; stable stays', async () => {
    const v1 = await stableV1();
    await applyApp(app(ns, 'shop', spec('shop:2', { canaryPercent: 25 })));
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.weight === 25, 'v2 at 25%');
    await applyApp(app(ns, 'shop', spec('shop:3', { canaryPercent: 25 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.versions?.candidate?.image === 'shop:3' && x.status?.canary?.weight === 25, 'v3 at 25%');
    assert.equal(a.status?.versions?.stable?.revision, v1.status?.versions?.stable?.revision);
    const k = await getKsvc(ns, 'shop');
    assert.equal(k?.spec.traffic.find((t) => t.tag === 'candidate')?.revisionName, a.status?.versions?.candidate?.revision);
  });

  it('never gives traffic to a candidate that never gets ready', async () => {
    await stableV1();
    await applyApp(app(ns, 'shop', spec('shop:unready', { canaryPercent: 50 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.versions?.candidate !== undefined, 'candidate tracked');
    for (let i = 0; i < 10; i++) {
      assert.deepEqual(await ksvcSplit(ns), { stable: 100 }, 'no candidate in traffic');
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(condition(a, 'CanaryProgressing')?.reason, 'WaitingForCandidate');
    await applyApp(app(ns, 'shop', spec('shop:unready', { canaryPercent: 100 })));
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(await ksvcSplit(ns), { stable: 100 }, 'promotion waits for readiness');
    assert.equal((await getApp(ns, 'shop')).status?.phase, 'Promoting');
  });

  it('resumes with the same split after the operator is stopped and restarted mid-canary', async () => {
    await stableV1();
    await applyApp(app(ns, 'shop', spec('shop:2', { canaryPercent: 35 })));
    const before = await waitForApp(ns, 'shop', (x) => x.status?.canary?.weight === 35, 'at 35%');
    const ksvcBefore = await getKsvc(ns, 'shop');
    await op.stop();
    op = await startOperator();
    await op.manager.waitIdle();
    await new Promise((r) => setTimeout(r, 500));
    const after = await getApp(ns, 'shop');
    const identity = (x: typeof before) => ({ stable: x.status?.versions?.stable?.revision, candidate: x.status?.versions?.candidate?.revision, weight: x.status?.canary?.weight, phase: x.status?.phase });
    assert.deepEqual(identity(after), identity(before));
    assert.equal((await getKsvc(ns, 'shop'))?.metadata.resourceVersion, ksvcBefore?.metadata.resourceVersion, 'traffic untouched by the restart');
  });

  describe('automated steps with Prometheus checks', () => {
    const auto = (prometheus: string) => ({
      steps: [10, 40], interval: '1s',
      analysis: { prometheus: { address: prometheus }, checks: [{ name: 'success-rate', query: 'sum(rate(ok{revision="{{revision}}"}[1m]))', min: 0.99 }], failureThreshold: 2 },
    });

    it('advances through the steps and promotes when every check passes', async () => {
      prom.handler = (_r, res) => res.end(promVector(0.999));
      await stableV1();
      await applyApp(app(ns, 'shop', spec('shop:2', auto(prom.url))));
      await waitForApp(ns, 'shop', (x) => x.status?.canary?.weight === 10, 'step 1 at 10%');
      await waitForApp(ns, 'shop', (x) => x.status?.canary?.weight === 40, 'step 2 at 40%', 20_000);
      const a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status?.versions?.stable?.image === 'shop:2', 'promoted', 20_000);
      assert.equal(condition(a, 'Promoted')?.status, 'True');
      assert.ok(prom.requests.some((r) => decodeURIComponent(r.url).includes(`revision="${a.status?.versions?.stable?.revision}"`)));
    });

    it('rolls back automatically when checks keep failing', async () => {
      prom.handler = (_r, res) => res.end(promVector(0.5));
      await stableV1();
      await applyApp(app(ns, 'shop', spec('shop:2', auto(prom.url))));
      const a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'RolledBack', 'automatic rollback', 20_000);
      assert.equal(condition(a, 'Promoted')?.reason, 'RollbackAutomatic');
      assert.deepEqual(await ksvcSplit(ns), { stable: 100, candidate: 0 });
    });

    it('halts on no data and says so', async () => {
      prom.handler = (_r, res) => res.end(promVector());
      await stableV1();
      await applyApp(app(ns, 'shop', spec('shop:2', auto(prom.url))));
      const a = await waitForApp(ns, 'shop', (x) => condition(x, 'CanaryProgressing')?.reason === 'AnalysisNoData', 'halted', 20_000);
      assert.equal(a.status?.canary?.weight, 10, 'stays at its step');
      assert.match(condition(a, 'CanaryProgressing')!.message, /no data/);
    });
  });

  it('model apps: canaryTrafficPercent follows the edits, 0 rolls back, removing it promotes', async () => {
    const m = (uri: string, rollout?: AppSpec['rollout']): AppSpec => ({ model: { format: { name: 'sklearn' }, storageUri: uri }, scaling: { minScale: 0 }, ...(rollout ? { rollout } : {}) });
    await applyApp(app(ns, 'fraud', m('gs://m/v1')));
    const v1 = await waitForApp(ns, 'fraud', readyTrue, 'v1');
    const isvc = () => userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud');
    await applyApp(app(ns, 'fraud', m('gs://m/v2', { canaryPercent: 20 })));
    await waitForApp(ns, 'fraud', (x) => x.status?.canary?.weight === 20, 'model at 20%');
    assert.equal((await isvc())?.spec.predictor.canaryTrafficPercent, 20);
    await applyApp(app(ns, 'fraud', m('gs://m/v2', { canaryPercent: 0 })));
    await waitForApp(ns, 'fraud', (x) => x.status?.phase === 'RolledBack', 'model rolled back');
    assert.equal((await isvc())?.spec.predictor.canaryTrafficPercent, 0);
    await applyApp(app(ns, 'fraud', m('gs://m/v2')));
    const a = await waitForApp(ns, 'fraud', (x) => x.status?.phase === 'Stable' && x.status?.versions?.stable?.storageUri === 'gs://m/v2', 'model promoted');
    assert.equal((await isvc())?.spec.predictor.canaryTrafficPercent, undefined);
    assert.notEqual(a.status?.versions?.stable?.revision, v1.status?.versions?.stable?.revision);
  });
});
