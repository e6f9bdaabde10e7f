// LLM apps (issue 36) on the rig with the real KServe llmisvc manager (v0.20.0)
// and istiod: a ServerlessApp with model.serving llm becomes one
// LLMInferenceService per live version in one routing group; the weights KServe
// writes into its HTTPRoutes (and istiod accepts) follow the rollout's plan at
// every step; a candidate gets weight only once KServe calls it ready and its
// warmup (sent to its own workload Service, here a loopback server standing in
// for vLLM) was answered; a failing check rolls the weights back; a promotion
// stops the old version, and going back to it within the retention restarts
// the same LLMInferenceService. KWOK pods stand in for vLLM (SIMULATED: no
// model is loaded); the Gateway is istiod's, with no Envoy behind it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { istioGateway } from '../envtest/kserve-llmisvc.ts';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { memberName } from '../../src/render/llm-inference-service.ts';
import { versionOf } from '../../src/rollout/version.ts';
import { findCondition } from '../../src/util/conditions.ts';
import { app, applyApp, condition, readyTrue, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { LoopbackServer, promVector } from '../support/http-server.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';

interface Condition { type: string; status: string; reason?: string; message?: string; observedGeneration?: number }
interface HttpRoute extends KubernetesObject {
  spec: { hostnames?: string[]; rules: Array<{ name?: string; backendRefs?: Array<{ name: string; weight?: number }> }> };
  status?: { parents?: Array<{ parentRef: { name: string }; conditions?: Condition[] }> };
}
interface Member extends KubernetesObject { spec: { router: { route: { weight: number } } } }

const LLM = { apiVersion: 'serving.kserve.io/v1alpha2', kind: 'LLMInferenceService' };
const ROUTE = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute' };
/** The rule on the app's host every member's route carries, one weighted backend per routable member (render/llm-inference-service.ts, rewritten by KServe's router_group_routing.go). */
const SHARED_RULE = 'default';

describe('LLM apps on KServe\'s LLMInferenceService (integration)', function () {
  this.timeout(1_200_000);
  const id = randomBytes(3).toString('hex');
  let op: RunningOperator;
  let api: KubernetesObjectApi;
  let vllm: LoopbackServer;
  let prometheus: LoopbackServer;
  let closedGatewayNs: string;
  /** The check's answer: healthy (0) or failing. */
  let errorRatio = 0;

  before(async function () {
    const plane = testEnv().dataPlane;
    if (!plane?.kserve || !plane.istio) this.skip();
    await plane.llmisvc();
    api = KubernetesObjectApi.makeApiClient(testEnv().kubeConfig());
    // Stands in for each version's vLLM (SIMULATED): answers the warmup completion, recording when.
    vllm = await new LoopbackServer((_r, res) => { res.setHeader('content-type', 'application/json'); res.end('{"choices":[{"text":"."}]}'); }).start();
    prometheus = await new LoopbackServer((_r, res) => res.end(promVector(errorRatio))).start();
    // A Gateway of another namespace whose listener admits only its own: istiod refuses routes from elsewhere.
    closedGatewayNs = await freshNamespace('llm-gw');
    await gateway(closedGatewayNs);
    op = await startOperator({
      allowedGateways: ['{namespace}/*', `${closedGatewayNs}/public`],
      llmWarmupUrlTemplate: `${vllm.url}/{namespace}/{revision}{path}`,
      analysisProviders: [{ name: 'main', url: prometheus.url, scoped: true }],
    }, { warmupBackoffMs: 50 });
  });
  after(async () => {
    await op?.stop();
    await Promise.all([vllm?.stop(), prometheus?.stop()]);
  });

  const read = async <T extends KubernetesObject>(kind: { apiVersion: string; kind: string }, namespace: string, name: string): Promise<T | undefined> => {
    try {
      return await api.read({ ...kind, metadata: { namespace, name } }) as T;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };
  const weightsIn = (r: HttpRoute | undefined) => Object.fromEntries((r?.spec.rules.find((x) => x.name === SHARED_RULE)?.backendRefs ?? [])
    .map((b) => [b.name.replace(/-kserve-workload-svc$/, ''), b.weight ?? 1]));
  const acceptedByIstiod = (r: HttpRoute | undefined) => !!r && ['Accepted', 'ResolvedRefs'].every((t) => findCondition(r.status?.parents?.find((p) => p.parentRef.name === 'public')?.conditions, t)?.status === 'True');
  const warmedAt = (ns: string, member: string) => vllm.requests.findIndex((r) => r.url.startsWith(`/${ns}/${member}/`));

  const spec = (uri: string, rollout?: AppSpec['rollout'], ns = ''): AppSpec => ({
    model: {
      serving: 'llm', storageUri: uri, servedModelName: 'acme/chat',
      resources: { limits: { 'nvidia.com/gpu': 1 } },
      nodeSelector: { 'nvidia.com/gpu.present': 'true' }, tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    },
    scaling: { minScale: 1 },
    prewarm: { warmup: { path: '/v1/completions', method: 'POST', body: '{"model":"acme/chat","prompt":"Hi","max_tokens":1}' } },
    ingress: { hosts: [`chat-${id}-${ns.slice(-4)}.example.com`], gateways: [`${ns}/public`] },
    ...(rollout ? { rollout } : {}),
  });
  /** A Gateway istiod programs (kserve-llmisvc.ts istioGateway: its endpoint SIMULATED), admitting routes of its own namespace only. */
  const gateway = async (ns: string) => { for (const o of istioGateway(ns, 'public', 'Same')) await api.patch(o, undefined, undefined, 'llm-test', true, PatchStrategy.ServerSideApply); };

  it('serves an LLM, moves an edit through 5 -> 25 -> 50 -> 100 by group weights, stops the old version and restarts it on a rollback', async () => {
    const ns = await freshNamespace('llm');
    await gateway(ns);
    const v1 = spec('hf://acme/chat-v1', undefined, ns);
    await applyApp(app(ns, 'chat', v1));
    // While its pods start KServe reports Ready=False (MinimumReplicasUnavailable, ...): the app is Reconciling meanwhile.
    const ready = await waitForApp(ns, 'chat', readyTrue, 'the LLM app Ready', READY_MS);
    const m1 = memberName('chat', versionOf(v1));
    assert.equal(ready.status?.versions?.stable?.revision, m1);
    const first = await read<Member>(LLM, ns, m1);
    assert.ok(first, 'the first version\'s LLMInferenceService');
    let route = await waitFor('istiod accepts the first version\'s HTTPRoute, all weight on it', async () => {
      const r = await read<HttpRoute>(ROUTE, ns, `${m1}-kserve-route`);
      return acceptedByIstiod(r) && JSON.stringify(weightsIn(r)) === JSON.stringify({ [m1]: 100 }) ? r : undefined;
    }, { timeoutMs: SETTLE_MS, intervalMs: 500 });
    assert.deepEqual(route.spec.hostnames, v1.ingress!.hosts, 'the app\'s host on KServe\'s route');

    // The edit: a new model, steps 5/25/50, each held until the test has seen it.
    const steps = [5, 25, 50];
    const v2 = spec('hf://acme/chat-v2', { steps, interval: '10s' }, ns);
    const m2 = memberName('chat', versionOf(v2));
    await applyApp(app(ns, 'chat', v2));
    const seen: number[] = [];
    let firstWeightSeenAt = -1;
    for (const step of steps) {
      route = await waitFor(`the HTTPRoute at ${100 - step}/${step}`, async () => {
        const r = await read<HttpRoute>(ROUTE, ns, `${m1}-kserve-route`);
        const w = weightsIn(r);
        if ((w[m2] ?? 0) > 0 && firstWeightSeenAt < 0) firstWeightSeenAt = vllm.requests.length;
        if ((w[m2] ?? 0) > 0) assert.ok(warmedAt(ns, m2) >= 0, `the candidate got weight ${w[m2]} before its warmup was answered`);
        return w[m2] === step && w[m1] === 100 - step ? r : undefined;
      }, { timeoutMs: READY_MS, intervalMs: 250 });
      seen.push(step);
      const a = await waitForApp(ns, 'chat', (x) => x.status?.canary?.trafficPercent === step, `status at ${step}%`, SETTLE_MS);
      assert.equal(a.status?.versions?.candidate?.revision, m2);
    }
    assert.deepEqual(seen, steps);
    assert.ok(warmedAt(ns, m2) >= 0 && warmedAt(ns, m2) < firstWeightSeenAt, 'warmed before any weight');

    const promoted = await waitForApp(ns, 'chat', (a) => condition(a, 'Promoted')?.status === 'True', 'promoted', READY_MS);
    assert.equal(promoted.status?.versions?.stable?.revision, m2);
    const stopped = await waitFor('the old version stopped, kept in the group at weight 0', async () => {
      const o = await read<Member>(LLM, ns, m1);
      return o?.metadata?.annotations?.['serving.kserve.io/stop'] === 'true' ? o : undefined;
    }, { timeoutMs: SETTLE_MS, intervalMs: 500 });
    assert.equal(stopped.metadata?.uid, first.metadata?.uid);
    await waitFor('the new version\'s route carries everything', async () => {
      const w = weightsIn(await read<HttpRoute>(ROUTE, ns, `${m2}-kserve-route`));
      return (w[m2] ?? 0) > 0 && !(w[m1] ?? 0) ? w : undefined;
    }, { timeoutMs: SETTLE_MS, intervalMs: 500 });

    // Back to v1 within the retention: the same LLMInferenceService, started again, rolled out again.
    await applyApp(app(ns, 'chat', { ...v1, rollout: { canaryPercent: 100 } }));
    const back = await waitForApp(ns, 'chat', (a) => a.status?.versions?.stable?.revision === m1 && condition(a, 'Promoted')?.status === 'True', 'v1 promoted again', READY_MS);
    assert.equal(back.status?.versions?.stable?.revision, m1);
    const restarted = await read<Member>(LLM, ns, m1);
    assert.equal(restarted?.metadata?.uid, first.metadata?.uid, 'no new LLMInferenceService for a version within its retention');
    assert.equal(restarted?.metadata?.annotations?.['serving.kserve.io/stop'], undefined);
  });

  it('shows what istiod refuses on the app: KServe\'s route on a Gateway whose listener does not admit the namespace', async () => {
    const ns = await freshNamespace('llm-refused');
    await applyApp(app(ns, 'chat', { ...spec('hf://acme/chat-v1', undefined, ns), ingress: { hosts: [`refused-${id}.example.com`], gateways: [`${closedGatewayNs}/public`] } }));
    const a = await waitForApp(ns, 'chat', (x) => /NotAllowedByListeners/.test(condition(x, 'WorkloadReady')?.message ?? ''), 'istiod\'s refusal on the app', READY_MS)
      .catch(async (err: Error) => { throw new Error(`${err.message}; WorkloadReady: ${JSON.stringify(condition(await waitForApp(ns, 'chat', () => true, 'read', SETTLE_MS), 'WorkloadReady'))}`); });
    const workload = condition(a, 'WorkloadReady')!;
    assert.equal(workload.status, 'False');
    assert.notEqual(condition(a, 'Ready')?.status, 'True');
    assert.match(workload.message, /HTTPRoutes are not ready/, `KServe's words: ${workload.message}`);
  });

  it('rolls the weights back to the stable version when a check fails, and stops the candidate', async () => {
    const ns = await freshNamespace('llm-fail');
    await gateway(ns);
    const v1 = spec('hf://acme/chat-v1', undefined, ns);
    await applyApp(app(ns, 'chat', v1));
    await waitForApp(ns, 'chat', readyTrue, 'v1 Ready', READY_MS);
    const m1 = memberName('chat', versionOf(v1));
    errorRatio = 0.5;
    const v2 = spec('hf://acme/chat-v2', {
      steps: [20, 50], interval: '10s',
      analysis: { prometheus: { provider: 'main' }, cadence: '10s', failureThreshold: 1, checks: [{ name: 'error-rate', query: 'sum(rate(vllm:request_failure_total{namespace="{{namespace}}",version="{{version}}"}[1m]))', max: 0.01 }] },
    }, ns);
    const m2 = memberName('chat', versionOf(v2));
    await applyApp(app(ns, 'chat', v2));
    const failed: ServerlessApp = await waitForApp(ns, 'chat', (a) => a.status?.phase === 'Failed', 'the candidate failed its check', READY_MS);
    assert.equal(failed.status?.canary?.failure?.reason, 'AnalysisFailed');
    await waitFor('all weight back on the stable version, the candidate stopped', async () => {
      const [route, candidate] = await Promise.all([read<HttpRoute>(ROUTE, ns, `${m1}-kserve-route`), read<Member>(LLM, ns, m2)]);
      const w = weightsIn(route);
      return !(w[m2] ?? 0) && (w[m1] ?? 0) > 0 && candidate?.metadata?.annotations?.['serving.kserve.io/stop'] === 'true';
    }, { timeoutMs: SETTLE_MS, intervalMs: 500 });
    errorRatio = 0;
  });
});
