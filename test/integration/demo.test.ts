// `npm run demo` must keep working: its story runs here against the test run's
// rig (the real Knative Serving and KServe on KWOK nodes), with the operator on
// the demo clock and the demo's loopback model server and Prometheus, in a
// namespace of its own. The story fails itself when a step does not converge.
// With the gateway-api router (`npm run demo -- --router gateway-api`) it runs
// through the canary, header route and promotion, on a Gateway of class istio
// that the real istiod accepts the HTTPRoute on.
import assert from 'node:assert/strict';
import { hostClaimName } from '../../src/api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { ANALYSIS_PROVIDER, ModelServer, PrometheusStandIn } from '../../demo/simulated-servers.ts';
import { DEMO_CLOCK_START, runStory } from '../../demo/story.ts';
import { ensureParentGateway } from '../../demo/gateway.ts';
import { formatApps, formatHttpRoute, ROUTES_SIMULATED } from '../../demo/table.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { getApp, userClient } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { proxyConfig, type ProxyIdentity } from '../support/envoy-config.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';

/** KServe's llmisvc manager can run here (the rig's KServe and istiod): the story then tells its LLM step. */
const llm = () => !!(testEnv().dataPlane?.kserve && testEnv().dataPlane?.istio);

describe('the demo story (integration)', function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let warmup: ModelServer;
  let prometheus: PrometheusStandIn;
  let ns: string;
  let clock: OffsetClock;

  before(async () => {
    ns = await freshNamespace('demo');
    // The story's LLM step needs KServe's llmisvc manager (the rig starts it on demand).
    if (llm()) await testEnv().dataPlane!.llmisvc();
    warmup = await new ModelServer().start();
    prometheus = await new PrometheusStandIn().start();
    clock = new OffsetClock(new Date(DEMO_CLOCK_START));
    op = await startOperator({
      namespaces: [ns], allowedGateways: ['istio-system/public-gateway'],
      warmupUrlTemplate: `${warmup.url}/{namespace}/{revision}{path}`, llmWarmupUrlTemplate: `${warmup.url}/{namespace}/{revision}{path}`,
      analysisProviders: [{ name: ANALYSIS_PROVIDER, url: prometheus.url }],
    }, { clock, warmupBackoffMs: 50 });
  });
  after(async () => {
    await op?.stop();
    await warmup?.stop();
    await prometheus?.stop();
  });

  it('tells the whole story: ready and prewarmed, canary, header route, promotion, rollback, automated steps, failed warmup and retry, a window with lead time', async () => {
    const lines: string[] = [];
    await runStory({
      // Per wait: real Knative takes seconds per revision, and scales an idle revision to zero in about a minute.
      kubeConfig: testKubeConfig(), namespace: ns, clock, timeoutMs: 180_000,
      resync: () => op.apps.controller.enqueueAll(),
      warmupRequests: () => warmup.requests, llm: llm(),
      failWarmups: (failing) => { warmup.failing = failing; },
      analysisQueries: () => prometheus.queries(),
      print: (text) => lines.push(...text.split('\n')),
      ...(testEnv().dataPlane?.istio ? { proxyConfig: (proxy: ProxyIdentity) => proxyConfig(proxy) } : {}),
    });
    const out = lines.join('\n');

    const done = lines.filter((l) => /^\s+\[[a-z]: done\]$/.test(l)).map((l) => l.trim());
    assert.deepEqual(done, ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', ...(llm() ? ['j'] : [])].map((step) => `[${step}: done]`));
    if (llm()) {
      assert.match(out, /^\s+chat-\S+\s+90\s+1\s+\s+True/m, 'the LLM group at 90/10, as its LLMInferenceServices show it');
      assert.match(out, /is stopped \(KServe removed its pods and its own route\)/);
    }
    assert.match(out, /loopback server answered the 5 warmup requests/);
    assert.match(out, /^\s+shop-\S+\s+80%\s+stable\s/m, 'the 80/20 split is printed');
    assert.match(out, /^\s+shop-\S+\s+20%\s+candidate\s/m);
    assert.match(out, /candidate-by-header\s+x-canary exact "always"\s+-> candidate-shop\./);
    if (testEnv().dataPlane?.istio) {
      // The sticky story over the routes istiod sends the sidecars: the split of new sessions near the weight, no session moved.
      const started = /(\d+\.\d)% of new sessions started on the candidate \(the weight: 20%\), and 0\.0% ever changed version/.exec(out);
      assert.ok(started && Math.abs(Number(started[1]) - 20) <= 4, `the sticky story's sessions: ${started?.[0] ?? 'not printed'}`);
      assert.match(out, /50 of 50 testers sending "x-canary: always" reached the candidate on every request/);
    }
    assert.ok(lines.includes(`  (${ROUTES_SIMULATED})`), 'the routes shown are labelled: no Envoy, no request proxied');
    assert.match(out, /condition Promoted=True/);
    assert.match(out, /^shop\s+True\s+RolledBack\s+shop:1\.5\.0\s+shop:1\.6\.0\s+0\s/m, 'the rollback as kubectl shows it');
    assert.match(out, /check round at 20%: checks passed: success-rate within \[0\.99, \+inf\]/);
    // Stalled (kstatus: Failed) with Ready False, while its stable version keeps serving (the story waits for that).
    assert.match(out, /^fraud\s+False\s+WarmupFailed\s+Failed\s/m, 'the failed model candidate, as kubectl get shows it: Ready False, Stalled WarmupFailed, phase Failed');
    assert.match(out, /status\.scaling\.prewarmingWindows: \[business-hours\]/);
    for (const reason of ['CanaryWeightChanged', 'Promoted', 'RolledBack', 'WindowPrewarming', 'WindowOpened', 'WindowClosed']) assert.match(out, new RegExp(`Event Normal ${reason} on shop`));
    assert.match(out, /Event Warning WarmupFailed on fraud/);

    // shop's rounds (the LLM step's checks read vLLM's and Istio's metrics of chat's pods).
    const queried = prometheus.queries().filter((q) => !/vllm:|istio_requests_total/.test(q));
    assert.equal(queried.length, 2, 'one check round per automated step');
    if (llm()) assert.ok(prometheus.queries().some((q) => q.includes('vllm:time_to_first_token_seconds_bucket') && q.includes(`namespace="${ns}"`)), 'the LLM step\'s checks ran against its candidate');
    assert.ok(queried.every((q) => q.includes(`namespace_name="${ns}"`) && /revision_name="shop-\w+"/.test(q)), `queries about the candidate: ${queried.join(' | ')}`);

    const shop = await getApp(ns, 'shop');
    assert.equal(shop.status?.versions?.stable?.image, 'ghcr.io/acme/shop:1.6.1');
    assert.equal(shop.status?.scaling?.minScale, 0);
    assert.deepEqual([shop.status?.scaling?.nextTransition?.change, shop.status?.scaling?.nextTransition?.at], ['prewarm', '2026-11-24T06:59:00.000Z'], 'next: Tuesday 07:59 Berlin, a minute before the window');
    const fraud = await getApp(ns, 'fraud');
    assert.equal(fraud.status?.versions?.stable?.storageUri, 'gs://acme-models/fraud/v8');
    const predictions = (revision: string) => warmup.requests.filter((r) => r.method === 'POST' && r.url === `/${ns}/${revision}/v1/models/fraud:predict`).length;
    const first = warmup.requests[0]!.url.split('/')[2]!;
    assert.equal(predictions(first), 5, 'five warmup requests to the first version');
    assert.ok(predictions(fraud.status!.versions!.stable!.revision!) >= 5, 'v8 warmed after the retry');
    assert.ok(warmup.requests.filter((r) => !r.url.startsWith(`/${ns}/${first}/`)).length > 5, 'v8 was refused before the retry');
  });
});

describe('the demo story with the gateway-api router (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let warmup: ModelServer;
  let ns: string;
  let clock: OffsetClock;

  before(async () => {
    ns = await freshNamespace('demo-gw');
    // Hosts are claimed cluster-wide and the story's shop names shop.example.com, as the run above did:
    // as a platform would, the test hands the host to this namespace (as examples.test.ts does).
    const host = 'shop.example.com';
    await userClient().delete(Kinds.HostClaim, undefined, hostClaimName(host)!);
    await userClient().create(Kinds.HostClaim, { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'HostClaim', metadata: { name: hostClaimName(host)! }, spec: { host, namespace: ns } });
    await ensureParentGateway(testKubeConfig(), `${ns}/public-gateway`);
    warmup = await new ModelServer().start();
    clock = new OffsetClock(new Date(DEMO_CLOCK_START));
    op = await startOperator({
      namespaces: [ns], router: 'gateway-api', allowedGateways: [`${ns}/public-gateway`],
      warmupUrlTemplate: `${warmup.url}/{namespace}/{revision}{path}`,
    }, { clock, warmupBackoffMs: 50 });
  });
  after(async () => {
    await op?.stop();
    await warmup?.stop();
  });

  it('tells the story through the promotion, showing the HTTPRoute istiod accepted where it shows the VirtualService', async () => {
    const lines: string[] = [];
    await runStory({
      kubeConfig: testKubeConfig(), namespace: ns, clock, timeoutMs: 180_000,
      resync: () => op.apps.controller.enqueueAll(),
      warmupRequests: () => warmup.requests,
      failWarmups: (failing) => { warmup.failing = failing; },
      analysisQueries: () => [],
      print: (text) => lines.push(...text.split('\n')),
      router: 'gateway-api', gateway: `${ns}/public-gateway`, lastStep: 'd',
    });
    const out = lines.join('\n');

    const done = lines.filter((l) => /^\s+\[[a-z]: done\]$/.test(l)).map((l) => l.trim());
    assert.deepEqual(done, ['a', 'b', 'c', 'd'].map((step) => `[${step}: done]`));
    assert.match(out, new RegExp(`ingress.gateways set to \\[${ns}/public-gateway\\]`));
    assert.match(out, /^\s+shop-\S+\s+80%\s+stable\s/m, 'the 80/20 split Knative reports');
    assert.match(out, /HTTPRoute shop-routes default rule: shop-\S+ 80, shop-\S+ 20 \(/, 'the split the HTTPRoute carries');
    assert.match(out, /^\$ kubectl get httproute shop-routes /m);
    assert.match(out, /^\s+candidate-by-header\s+x-canary exact "always"\s+shop-\S+ 100$/m, 'the header rule to the candidate');
    assert.match(out, /^\s+default\s+\(all other requests\)\s+shop-\S+ 80, shop-\S+ 20$/m);
    assert.match(out, new RegExp(`parent Gateway ${ns}/public-gateway: Accepted=True \\(Accepted, generation \\d+\\), ResolvedRefs=True \\(ResolvedRefs, generation \\d+\\) \\(written by istio.io/gateway-controller\\)`));
    assert.ok(lines.includes(`  (${ROUTES_SIMULATED})`), 'the HTTPRoute shown is labelled: no Envoy, no request proxied');
    assert.doesNotMatch(out, /kubectl get virtualservice/);
    assert.match(out, /condition Promoted=True/);

    const shop = await getApp(ns, 'shop');
    assert.equal(shop.status?.versions?.stable?.image, 'ghcr.io/acme/shop:1.5.0');
    assert.match(out, new RegExp(`HTTPRoute shop-routes: ${shop.status!.versions!.stable!.revision} 100, one rule`), 'the route follows the promotion');
  });
});

describe('the demo table', () => {
  it('prints apps like kubectl get sapp -o wide (without the hashes), sorted by name, with empty cells for what is not set', () => {
    const app = (name: string, status: ServerlessApp['status']): ServerlessApp => ({
      apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name, namespace: 'demo' }, spec: {}, ...(status ? { status } : {}),
    });
    const ready = { type: 'Ready', status: 'Unknown' as const, reason: 'CanaryProgressing', message: '', lastTransitionTime: '2026-11-23T07:00:00Z' };
    const reconciling = { ...ready, type: 'Reconciling', status: 'True' as const };
    const table = formatApps([
      app('shop', {
        phase: 'Canary', url: 'http://shop.demo.example.com', conditions: [ready, reconciling],
        versions: { stable: { version: 'abc', summary: 'shop:1.4.0' }, candidate: { version: 'def', summary: 'shop:1.5.0' } },
        canary: { weight: 20, trafficPercent: 10 }, scaling: { minScale: 2, maxScale: 10 },
      }),
      app('api', undefined),
    ]);
    assert.equal(table, [
      'NAME   READY     RECONCILING         STALLED   PHASE    STABLE       CANDIDATE    WEIGHT   MIN   MAX   URL                            REASON',
      'api',
      'shop   Unknown   CanaryProgressing             Canary   shop:1.4.0   shop:1.5.0   10       2     10    http://shop.demo.example.com   CanaryProgressing',
    ].join('\n'));
  });

  it('prints an HTTPRoute\'s rules with their weighted backends and mirror, then each parent\'s Accepted and ResolvedRefs', () => {
    const text = formatHttpRoute('shop-routes', {
      metadata: { generation: 3 },
      spec: {
        parentRefs: [{ namespace: 'istio-system', name: 'public-gateway' }],
        rules: [
          { name: 'candidate-by-header', matches: [{ headers: [{ type: 'Exact', name: 'x-canary', value: 'always' }] }, { headers: [{ type: 'RegularExpression', name: 'x-user', value: 'qa\\..*' }] }], backendRefs: [{ name: 'shop-2', weight: 100 }] },
          { name: 'default', matches: [{}], filters: [{ type: 'RequestMirror', requestMirror: { backendRef: { name: 'shop-2-private' }, percent: 10 } }], backendRefs: [{ name: 'shop-1', weight: 80 }, { name: 'shop-2', weight: 20 }] },
        ],
      },
      status: { parents: [{ parentRef: { namespace: 'istio-system', name: 'public-gateway' }, controllerName: 'istio.io/gateway-controller', conditions: [
        { type: 'Accepted', status: 'True', reason: 'Accepted', observedGeneration: 3 },
        { type: 'ResolvedRefs', status: 'False', reason: 'BackendNotFound', observedGeneration: 3 },
        { type: 'Programmed', status: 'True', reason: 'Programmed' },
      ] }] },
    });
    assert.equal(text, [
      '  HTTPRoute shop-routes (generation 3): rules, the most specific match wins',
      '    RULE                  MATCH                                              BACKENDS (revision Service, weight)',
      '    candidate-by-header   x-canary exact "always" or x-user regex "qa\\..*"   shop-2 100',
      '    default               (all other requests)                               shop-1 80, shop-2 20; mirror 10% to shop-2-private',
      '  status.parents, as istiod wrote it:',
      '    parent Gateway istio-system/public-gateway: Accepted=True (Accepted, generation 3), ResolvedRefs=False (BackendNotFound, generation 3) (written by istio.io/gateway-controller)',
    ].join('\n'));
  });
});
