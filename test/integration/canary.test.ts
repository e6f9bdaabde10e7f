// Canary rollouts by editing the spec, on the rig's real Knative Serving 1.21
// (controller, webhooks, autoscaler) with KWOK pods, under each of the
// operator's routers (--router istio: a VirtualService; --router gateway-api:
// an HTTPRoute), each app's route bound to a Gateway of the suite's own.
// Traffic is read where it is in force, never only from what the operator
// asked for in spec.traffic: the split where Knative reports it (the Knative
// Service's status, the app's status.traffic and status.canary.trafficPercent),
// and the routes where the rig's istiod puts them, in the Envoy configuration
// it sends the Gateway's proxy (test/support/envoy-config.ts; no Envoy runs,
// no request is proxied). What the proxy shows differs by router, and
// expectedAppRoutes says how: with gateway-api the per-revision weights are in
// Envoy's weighted clusters; with istio the operator's routes all go to
// Knative's local gateway with the Host rewritten (the header route to the
// candidate's tag host, the mirror, timeout and retries are in Envoy) and the
// per-revision weights are in Knative's own KIngress. With ENVTEST_NETGW=on the
// rig's net-gateway-api turns that into routes on the local gateway and
// knativeReports reads them there too, under either router; by default the
// SIMULATED KIngress status stand-in runs instead and the split is read from
// Knative's status only.
// Automated steps run on a controlled clock
// against a loopback Prometheus the operator knows as the platform provider "test".
import assert from 'node:assert/strict';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import type { RouterName } from '../../src/planner/route.ts';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getApp, getKsvc, getRevision, knativeReady, readyTrue, reportedSplit, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { assertNoWrites, freshNamespace, testEnv, writesSince } from '../support/cluster.ts';
import { expectedAppRoutes, gatewayWithProxy, routedPopulation, serviceCluster, untilAppRoutes, untilKnativeSplit, type AppTraffic, type ProxyIdentity } from '../support/envoy-config.ts';
import { LoopbackServer, promVector } from '../support/http-server.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';
import { waitIdle } from '../support/idle.ts';

/** A revision's start on the real Knative, generous for a loaded machine (load ~10 on 2 cores took over 120 s). */
const baseSpec = (image: string, rollout?: AppSpec['rollout'], extra: Partial<AppSpec> = {}): AppSpec => ({
  container: { image, port: 8080 }, scaling: { minScale: 0 }, ...(rollout ? { rollout } : {}), ...extra,
});
const image = (tag: string) => `ghcr.io/acme/shop:${tag}`;
/** A pod asking for more CPU than any rig node has stays Pending, so Knative never makes its revision Ready. */
const UNSCHEDULABLE_CPU = '1000';
const ROUTERS: RouterName[] = ['istio', 'gateway-api'];
/** Retries unlike istiod's default (2 attempts, no per-try timeout), so the proxy shows they are the app's. */
const RETRIES = { attempts: 3, perTryTimeout: '2s' };
/** The header that sends a request to the candidate, in spec.rollout.match and as Envoy matches it. */
const MATCH = [{ header: 'x-canary', exact: 'yes' }];
const MATCHED = ['x-canary=yes'];

/**
 * Waits until Knative reports exactly `want` (tag -> percent) for the app's Knative Service, and, with
 * net-gateway-api in the rig (ENVTEST_NETGW=on), until Knative's own routes on its local gateway split the revisions so: net-gateway-api turns
 * Knative's KIngress into HTTPRoutes there, whichever router the operator uses for its own ingress.
 */
async function knativeReports(ns: string, want: Record<string, number>, message: string): Promise<void> {
  let last: Record<string, number> = {};
  await waitFor(`${message}: Knative reports ${JSON.stringify(want)}`, async () => {
    last = await reportedSplit(ns, 'shop');
    return JSON.stringify(sorted(last)) === JSON.stringify(sorted(want));
  }, { timeoutMs: SETTLE_MS }).catch((err: Error) => {
    throw new Error(`${err.message}; it reports ${JSON.stringify(last)}`);
  });
  if (!testEnv().dataPlane?.netGatewayApi) return;
  const byRevision: Record<string, number> = {};
  for (const t of (await getKsvc(ns, 'shop'))?.status?.traffic ?? []) byRevision[t.revisionName!] = (byRevision[t.revisionName!] ?? 0) + t.percent;
  await untilKnativeSplit(message, ns, 'shop', byRevision);
}
const sorted = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));

/** The revision Knative reports under `tag`. */
async function reportedRevision(ns: string, tag: string): Promise<string | undefined> {
  return (await getKsvc(ns, 'shop'))?.status?.traffic?.find((t) => t.tag === tag)?.revisionName;
}

for (const router of ROUTERS) describe(`canary rollouts by editing the spec, on the real Knative, routed by the ${router} router (integration)`, function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let clock: OffsetClock;
  let prom: LoopbackServer;
  let ns: string;
  let gateway: string;
  let proxy: ProxyIdentity;
  let operatorConfig: Parameters<typeof startOperator>[0];

  before(async function () {
    if (!testEnv().dataPlane?.istio) this.skip();
    prom = await new LoopbackServer().start();
    clock = new OffsetClock();
    const gwNs = await freshNamespace('canary-gw');
    ({ gateway, proxy } = await gatewayWithProxy(router, gwNs));
    operatorConfig = { router, allowedGateways: [`${gwNs}/*`], analysisProviders: [{ name: 'test', url: prom.url }] };
    op = await startOperator(operatorConfig, { clock });
  });
  after(async () => {
    await op?.stop();
    await prom?.stop();
  });
  beforeEach(async () => {
    ns = await freshNamespace('canary');
    prom.requests.length = 0;
  });

  /**
   * A host per namespace (a host belongs to the first app that claims it, in any namespace: HostConflict, and apps stay
   * behind in the shared rig) on the suite's Gateway. Retries only with istio: the gateway-api router refuses them
   * (HTTPRoute retry is experimental-channel only in Gateway API v1.6.3; the refusal has its own test below).
   */
  const ingress = () => ({ hosts: [`shop.${ns}.example.com`], gateways: [gateway], timeout: '10s', ...(router === 'istio' ? { retries: RETRIES } : {}) });
  const spec = (img: string, rollout?: AppSpec['rollout'], extra: Partial<AppSpec> = {}): AppSpec => baseSpec(img, rollout, { ingress: ingress(), ...extra });

  /** Waits until the Gateway's proxy routes the app as this router renders the traffic (expectedAppRoutes: what each router shows). */
  const proxyRoutes = (what: string, stable: string, candidate?: AppTraffic['candidate']) =>
    untilAppRoutes(`${what}: the Gateway's proxy routes the app`, proxy, `shop.${ns}.example.com`,
      expectedAppRoutes(router, { namespace: ns, app: 'shop', stable, ...(candidate ? { candidate } : {}), ingress: ingress() }));

  /**
   * Which revision a request reaches, the question a user asks, over the routes the Gateway's proxy receives
   * (routedPopulation: an evaluation of istiod's configuration, route-eval.ts): 2,000 requests without the
   * header split within 3 points of the plan, each on a revision the step serves (one Knative reports Ready),
   * and 200 with the header all reach the candidate. With the Istio router the split is Knative's, on its
   * local gateway, whose routes the rig has only with ENVTEST_NETGW=on: without them this checks nothing.
   */
  async function requestsReach(what: string, stableRev: string, candidate?: { revision: string; percent: number; header?: boolean }): Promise<void> {
    if (router === 'istio' && !testEnv().dataPlane?.netGatewayApi) return;
    const host = `shop.${ns}.example.com`;
    const plan: Record<string, number> = candidate ? { [stableRev]: 100 - candidate.percent, [candidate.revision]: candidate.percent } : { [stableRev]: 100 };
    const revisionOf = (cluster: string) => Object.keys(plan).find((rev) => serviceCluster(ns, rev) === cluster);
    const plain = await routedPopulation(proxy, host, 2_000);
    assert.deepEqual(plain.unrouted, [], `${what}: every request finds a route`);
    for (const [cluster, n] of Object.entries(plain.byCluster)) {
      const rev = revisionOf(cluster);
      assert.ok(rev, `${what}: ${n} requests reached ${cluster}, not a revision the step serves (${Object.keys(plan).join(', ')})`);
      assert.ok(Math.abs((n / 20) - plan[rev]!) <= 3, `${what}: ${rev} got ${n / 20}% of new requests, planned ${plan[rev]}% (within 3 points): ${JSON.stringify(plain.byCluster)}`);
    }
    if (!candidate?.header) return;
    const matched = await routedPopulation(proxy, host, 200, { 'x-canary': 'yes' });
    assert.deepEqual(matched.byCluster, { [serviceCluster(ns, candidate.revision)]: 200 }, `${what}: the header reaches the candidate, always`);
  }

  /** v1 Ready on Knative, serving everything as Knative reports and as the proxy routes it; returns its revision. */
  async function stableV1(extra: Partial<AppSpec> = {}): Promise<{ v1: ServerlessApp; stableRev: string }> {
    await applyApp(app(ns, 'shop', spec(image('1'), undefined, extra)));
    const v1 = await waitForApp(ns, 'shop', readyTrue, 'v1 Ready on Knative', READY_MS);
    await knativeReports(ns, { stable: 100 }, 'v1 serves');
    const stableRev = v1.status!.versions!.stable!.revision!;
    await proxyRoutes('v1 serves', stableRev);
    return { v1, stableRev };
  }

  it('v1 -> v2 at 20% -> 50% with a header route -> 100% promoted, each split as Knative reports it and as the proxy routes it', async () => {
    const { v1, stableRev } = await stableV1();
    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 20, match: MATCH })));
    // With gateway-api, CanaryProgressing is False (RouteNotAccepted) until istiod has reported on the HTTPRoute as written.
    let a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 20 && x.status?.phase === 'Canary' && condition(x, 'CanaryProgressing')?.status === 'True',
      'Knative serves 20% on the candidate, CanaryProgressing True', READY_MS);
    await knativeReports(ns, { stable: 80, candidate: 20 }, 'at 20%');
    assert.equal(a.status?.versions?.stable?.revision, v1.status?.versions?.stable?.revision);
    const candidateRev = a.status!.versions!.candidate!.revision!;
    assert.equal(await reportedRevision(ns, 'candidate'), candidateRev);
    assert.equal(condition(a, 'Promoted')?.status, 'False');
    // One virtual host for the app's host on the Gateway's proxy: the header route first (Envoy takes the first match), then the split.
    await proxyRoutes('at 20%', stableRev, { revision: candidateRev, percent: 20, headers: MATCHED });
    await requestsReach('at 20%', stableRev, { revision: candidateRev, percent: 20, header: true });

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 50, match: MATCH })));
    a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 50, 'Knative serves 50%', SETTLE_MS);
    await knativeReports(ns, { stable: 50, candidate: 50 }, 'at 50%');
    assert.deepEqual(a.status?.traffic?.map((t) => t.percent).sort(), [50, 50], 'status.traffic is the split Knative reports');
    assert.ok(a.status?.traffic?.every((t) => t.url), 'each target has its own URL');
    await proxyRoutes('at 50%', stableRev, { revision: candidateRev, percent: 50, headers: MATCHED });
    await requestsReach('at 50%', stableRev, { revision: candidateRev, percent: 50, header: true });

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 100 })));
    a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status?.versions?.stable?.image === image('2'), 'promoted', SETTLE_MS);
    assert.equal(condition(a, 'Promoted')?.status, 'True');
    assert.equal(a.status?.versions?.stable?.revision, candidateRev, 'the candidate revision is promoted, not a new one');
    await knativeReports(ns, { stable: 100 }, 'promoted');
    assert.equal(await reportedRevision(ns, 'stable'), candidateRev, 'Knative routes everything to the promoted revision');
    await proxyRoutes('promoted: no header route without a candidate', candidateRev);
    await requestsReach('promoted', candidateRev);
  });

  it('mirrors a share of the default route to the private Service Knative made for the candidate revision, once it is ready, and stops at mirrorPercent 0', async () => {
    const { stableRev } = await stableV1();
    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 0, mirrorPercent: 25, match: MATCH })));
    const a = await waitForApp(ns, 'shop', (x) => !!x.status?.versions?.candidate?.ready, 'candidate ready', READY_MS);
    const candidate = a.status!.versions!.candidate!.revision!;
    // Header-matched requests go to the candidate already: only the default route mirrors, 25% of it.
    await proxyRoutes('mirroring 25%', stableRev, { revision: candidate, percent: 0, headers: MATCHED, mirrorPercent: 25 });
    const service = await testEnv().kubeConfig().makeApiClient(CoreV1Api).readNamespacedService({ namespace: ns, name: `${candidate}-private` });
    assert.ok(service.spec?.ports?.some((p) => p.port === 80), 'Knative\'s private Service of the revision serves port 80 (the queue-proxy)');

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 0, mirrorPercent: 0, match: MATCH })));
    await proxyRoutes('no mirror at mirrorPercent 0', stableRev, { revision: candidate, percent: 0, headers: MATCHED });
  });

  it('rolls back with canaryPercent 0: Knative and the proxy route all traffic to stable, the candidate kept at 0% with min-scale 0', async () => {
    const { stableRev } = await stableV1();
    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 30 })));
    const canary = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 30, 'at 30%', READY_MS);
    const candidate = canary.status!.versions!.candidate!.revision!;
    await proxyRoutes('at 30%', stableRev, { revision: candidate, percent: 30 });
    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 0 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'RolledBack' && x.status?.canary?.trafficPercent === 0, 'rolled back', SETTLE_MS);
    await knativeReports(ns, { stable: 100, candidate: 0 }, 'rolled back');
    await proxyRoutes('rolled back: the candidate in no route', stableRev);
    assert.equal(a.status?.versions?.candidate?.revision, candidate, 'candidate kept for inspection');
    assert.equal(await reportedRevision(ns, 'candidate'), candidate);
    // In place on the live Revision (Knative 1.21), so Knative's autoscaler may take it to zero.
    await waitFor('candidate min-scale 0', async () => (await getRevision(ns, candidate))?.metadata.annotations?.['autoscaling.knative.dev/min-scale'] === '0', { timeoutMs: SETTLE_MS });
  });

  it('rolls back instantly when the workload spec is reverted to the stable version', async () => {
    const { stableRev } = await stableV1();
    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 40 })));
    const canary = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 40, 'at 40%', READY_MS);
    await proxyRoutes('at 40%', stableRev, { revision: canary.status!.versions!.candidate!.revision!, percent: 40 });
    await applyApp(app(ns, 'shop', spec(image('1'), { canaryPercent: 40 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && !x.status?.versions?.candidate, 'reverted', SETTLE_MS);
    assert.equal(a.status?.versions?.stable?.revision, stableRev, 'same revision: no new version');
    await knativeReports(ns, { stable: 100 }, 'reverted');
    assert.equal(await reportedRevision(ns, 'stable'), stableRev);
    await proxyRoutes('reverted', stableRev);
  });

  it('replaces the candidate when a third version arrives during a canary; stable stays', async () => {
    const { stableRev } = await stableV1();
    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 25 })));
    const v2 = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 25, 'v2 at 25%', READY_MS);
    await applyApp(app(ns, 'shop', spec(image('3'), { canaryPercent: 25 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.versions?.candidate?.image === image('3') && x.status?.canary?.trafficPercent === 25, 'v3 at 25%', READY_MS);
    assert.equal(a.status?.versions?.stable?.revision, stableRev);
    const v3 = a.status!.versions!.candidate!.revision!;
    assert.notEqual(v3, v2.status?.versions?.candidate?.revision);
    await knativeReports(ns, { stable: 75, candidate: 25 }, 'v3 at 25%');
    assert.equal(await reportedRevision(ns, 'candidate'), v3, 'Knative routes the candidate tag to v3');
    await proxyRoutes('v3 at 25%, v2 in no route', stableRev, { revision: v3, percent: 25 });
  });

  it('never gives traffic to a candidate Knative does not make ready, and promotes it only once Knative does', async () => {
    const { stableRev } = await stableV1();
    const unready = (percent: number): AppSpec => ({ ...spec(image('2'), { canaryPercent: percent, match: MATCH }), container: { image: image('2'), port: 8080, resources: { requests: { cpu: UNSCHEDULABLE_CPU } } } });
    await applyApp(app(ns, 'shop', unready(50)));
    let a = await waitForApp(ns, 'shop', (x) => x.status?.versions?.candidate?.revision !== undefined, 'candidate tracked', SETTLE_MS);
    const candidate = a.status!.versions!.candidate!.revision!;
    // Knative created the candidate's Revision and its pod, which no node can take.
    const rev = await waitFor('the candidate Revision with a Pending pod', async () => {
      const r = await getRevision(ns, candidate);
      const pods = await testEnv().dataPlane!.pods(ns);
      const pending = pods.some((p) => p.metadata?.labels?.['serving.knative.dev/revision'] === candidate && p.status?.phase === 'Pending');
      return r && pending ? r : undefined;
    }, { timeoutMs: SETTLE_MS });
    assert.ok(!knativeReady(rev), 'Knative does not report the candidate Ready');
    assert.equal(condition(a, 'CanaryProgressing')?.reason, 'WaitingForCandidate');
    assert.equal(a.status?.canary?.trafficPercent, 0);
    await knativeReports(ns, { stable: 100 }, 'no candidate in traffic');
    await proxyRoutes('the candidate in no route: no weight, no header route', stableRev);

    await applyApp(app(ns, 'shop', unready(100)));
    // The edit is processed (observedGeneration) and the operator says why it waits.
    a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Promoting' && condition(x, 'Promoted')?.reason === 'WaitingForCandidate', 'promotion waits', SETTLE_MS);
    assert.equal(condition(a, 'Promoted')?.status, 'False');
    const ksvc = await getKsvc(ns, 'shop');
    assert.deepEqual(ksvc?.spec.traffic.map(({ revisionName, percent, tag }) => ({ revisionName, percent, tag })), [{ revisionName: stableRev, percent: 100, tag: 'stable' }], 'nothing asked for the candidate');
    await knativeReports(ns, { stable: 100 }, 'promotion waits for readiness');
    assert.equal(await reportedRevision(ns, 'stable'), stableRev);
    await proxyRoutes('promotion waits for readiness', stableRev);

    // A node big enough for the pod: Knative makes the candidate Ready, and only now does the promotion go through.
    const node = await addNode({ cpu: '2000' });
    try {
      a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status?.versions?.stable?.revision === candidate, 'promoted once ready', 180_000);
      assert.equal(condition(a, 'Promoted')?.status, 'True');
      assert.ok(knativeReady(await getRevision(ns, candidate)));
      await knativeReports(ns, { stable: 100 }, 'promoted');
      assert.equal(await reportedRevision(ns, 'stable'), candidate);
      await proxyRoutes('promoted once ready', candidate);
    } finally {
      await node.remove();
    }
  });

  it('resumes with the same split after the operator is stopped and restarted mid-canary, writing nothing', async () => {
    // minScale 1: no revision scales to zero meanwhile, so the data plane gives the operator nothing new to report.
    const steady = { scaling: { minScale: 1 } };
    const { stableRev } = await stableV1(steady);
    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 35 }, steady)));
    const canary = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 35 && condition(x, 'WorkloadReady')?.status === 'True'
      && x.status.versions?.stable?.replicas === 1 && x.status.versions.candidate?.replicas === 1, 'at 35%, both revisions up', READY_MS);
    await knativeReports(ns, { stable: 65, candidate: 35 }, 'at 35%');
    const at35 = { revision: canary.status!.versions!.candidate!.revision!, percent: 35 };
    await proxyRoutes('at 35%', stableRev, at35);
    await waitIdle(op.manager);
    const before = await getApp(ns, 'shop');
    await op.stop();
    const since = new Date();
    op = await startOperator(operatorConfig, { clock });
    await waitIdle(op.manager);
    // "Nothing written" cannot be waited for: an idle queue says the restart's first pass over
    // every app is done; the window after it catches a requeue or an event that pass caused.
    // The control's marker is written through the operator's own client, so its user agent is the one looked for.
    await assertNoWrites({ what: 'operator writes after the restart', namespace: ns, userAgentPrefix: 'serverlessapp-operator', since, windowMs: 3_000, control: (marker) => op.manager.client.create(Kinds.ConfigMap, marker) });
    const after = await getApp(ns, 'shop');
    assert.deepEqual(after.status, before.status, 'the same status: stable, candidate, weight and phase as before');
    await knativeReports(ns, { stable: 65, candidate: 35 }, 'the same split after the restart');
    await proxyRoutes('the same routes after the restart', stableRev, at35);
  });

  if (router === 'gateway-api') {
    it('refuses spec.ingress.retries, which HTTPRoute v1 has not: Ready False with RouterUnsupported naming the field; the running version keeps its routes', async () => {
      const { stableRev } = await stableV1();
      await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 20 }, { ingress: { ...ingress(), retries: { attempts: 3 } } })));
      const a = await waitForApp(ns, 'shop', (x) => condition(x, 'Ready')?.reason === 'RouterUnsupported', 'the edit refused', SETTLE_MS);
      assert.equal(condition(a, 'Ready')?.status, 'False');
      assert.match(condition(a, 'Ready')!.message, /spec\.ingress\.retries: .*experimental-channel only/);
      await knativeReports(ns, { stable: 100 }, 'the running version left as it was');
      await proxyRoutes('the running version left as it was', stableRev);
    });
  }

  describe('a rollout always ends, and the spec controls it (controlled clock)', () => {
    it('header testing: phase Testing, the candidate kept at one replica for the testers and reached by the header route only, no rollback', async () => {
      const { stableRev } = await stableV1();
      await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 0, match: MATCH })));
      // With gateway-api, CanaryProgressing says RouteNotAccepted until istiod has reported on the HTTPRoute with the header rule.
      const a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Testing' && !!x.status.versions?.candidate?.warm && condition(x, 'CanaryProgressing')?.reason === 'Testing',
        'phase Testing, candidate warm, CanaryProgressing Testing', READY_MS);
      await knativeReports(ns, { stable: 100, candidate: 0 }, 'testers only');
      const candidate = a.status!.versions!.candidate!.revision!;
      await waitFor('the candidate held at min-scale 1 on its live Revision', async () => (await getRevision(ns, candidate))?.metadata.annotations?.['autoscaling.knative.dev/min-scale'] === '1', { timeoutMs: SETTLE_MS });
      await proxyRoutes('testers only', stableRev, { revision: candidate, percent: 0, headers: MATCHED });
      const reasons = (await userClient().list<{ reason?: string }>(Kinds.Event, ns)).items.map((e) => e.reason);
      assert.ok(reasons.includes('Testing') && !reasons.includes('RolledBack'), `a Testing event and no rollback: ${reasons.join(',')}`);
    });

    it('fails a candidate that cannot start within rollout.progressDeadline; stable keeps all traffic; a new image starts afresh', async () => {
      const { stableRev } = await stableV1();
      const unready: AppSpec = { ...spec(image('2'), { progressDeadline: '1m' }), container: { image: image('2'), port: 8080, resources: { requests: { cpu: UNSCHEDULABLE_CPU } } } };
      await applyApp(app(ns, 'shop', unready));
      await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Promoting' && !!x.status.canary?.startedAt, 'waiting for the candidate', SETTLE_MS);
      clock.advance(61_000);
      op.apps.controller.enqueueAll();
      const failed = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Failed', 'phase Failed past the deadline', SETTLE_MS);
      assert.deepEqual([condition(failed, 'CanaryProgressing')?.status, condition(failed, 'CanaryProgressing')?.reason], ['False', 'ProgressDeadlineExceeded']);
      // The stable version still serves, but the spec's desired state cannot be reached without an edit: Stalled, Ready False.
      const stalled = (type: string) => { const c = condition(failed, type); return c && [c.status, c.reason, c.observedGeneration]; };
      assert.deepEqual([stalled('Stalled'), stalled('Ready'), stalled('Reconciling')], [['True', 'ProgressDeadlineExceeded', failed.metadata.generation], ['False', 'ProgressDeadlineExceeded', failed.metadata.generation], undefined]);
      assert.match(condition(failed, 'Stalled')!.message, /rollout\.retry/);
      await knativeReports(ns, { stable: 100 }, 'stable keeps everything');
      await proxyRoutes('stable keeps everything', stableRev);
      const warnings = (await userClient().list<{ reason?: string; type?: string }>(Kinds.Event, ns)).items.filter((e) => e.reason === 'ProgressDeadlineExceeded');
      assert.equal(warnings.length, 1, 'one Warning event');
      await applyApp(app(ns, 'shop', spec(image('3'))));
      const fixed = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status.versions?.stable?.image === image('3'), 'a fixed image is promoted', READY_MS);
      await proxyRoutes('the fixed image serves', fixed.status!.versions!.stable!.revision!);
    });

    it('pause holds the step, abort takes all traffic back, lifting abort restarts from the first step, promote finishes it', async () => {
      const { stableRev } = await stableV1();
      const steps = { steps: [10, 40], interval: '10s' };
      await applyApp(app(ns, 'shop', spec(image('2'), steps)));
      const first = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 10, 'step 1 at 10%', READY_MS);
      const at10 = { revision: first.status!.versions!.candidate!.revision!, percent: 10 };
      await applyApp(app(ns, 'shop', spec(image('2'), { ...steps, paused: true })));
      // (That a paused step never advances, however long, is the state machine's unit test.)
      // (With gateway-api, CanaryProgressing may say RouteNotAccepted a moment while istiod reports on the route's last write.)
      let a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Paused' && condition(x, 'CanaryProgressing')?.reason === 'Paused', 'phase Paused, CanaryProgressing Paused', SETTLE_MS);
      assert.equal(a.status?.canary?.step, 0);
      await knativeReports(ns, { stable: 90, candidate: 10 }, 'held at 10% while paused');
      await proxyRoutes('held at 10% while paused', stableRev, at10);

      await applyApp(app(ns, 'shop', spec(image('2'), { ...steps, paused: true, abort: true })));
      a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Aborted', 'phase Aborted', SETTLE_MS);
      assert.equal(condition(a, 'CanaryProgressing')?.reason, 'Aborted');
      await knativeReports(ns, { stable: 100, candidate: 0 }, 'aborted');
      await proxyRoutes('aborted', stableRev);

      await applyApp(app(ns, 'shop', spec(image('2'), steps)));
      a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Canary' && x.status.canary?.trafficPercent === 10, 'started again at step 1', READY_MS);
      await proxyRoutes('started again at step 1', stableRev, at10);
      await applyApp(app(ns, 'shop', spec(image('2'), { ...steps, promote: a.status!.versions!.candidate!.version })));
      await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status.versions?.stable?.image === image('2'), 'promoted by rollout.promote', SETTLE_MS);
      await knativeReports(ns, { stable: 100 }, 'promoted');
      await proxyRoutes('promoted', at10.revision);
    });
  });

  describe('automated steps with Prometheus checks (controlled clock)', () => {
    const INTERVAL_MS = 10_000;
    const auto = () => ({
      steps: [10, 40], interval: '10s',
      analysis: { prometheus: { provider: 'test' }, checks: [{ name: 'success-rate', query: 'sum(rate(ok{revision="{{revision}}"}[1m]))', min: 0.99 }], failureThreshold: 2 },
    });
    /** The step's interval has passed: move the clock past it and have the operator look again, instead of waiting. */
    function nextInterval(): void {
      clock.advance(INTERVAL_MS + 1);
      op.apps.controller.enqueueAll();
    }

    it('advances through the steps and promotes when every check passes', async () => {
      prom.handler = (_r, res) => res.end(promVector(0.999));
      const { stableRev } = await stableV1();
      await applyApp(app(ns, 'shop', spec(image('2'), auto())));
      const first = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 10, 'step 1: Knative serves 10%', READY_MS);
      await knativeReports(ns, { stable: 90, candidate: 10 }, 'step 1');
      const candidate = first.status!.versions!.candidate!.revision!;
      await proxyRoutes('step 1', stableRev, { revision: candidate, percent: 10 });
      assert.equal(prom.requests.length, 0, 'no check before the interval has passed');
      nextInterval();
      await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 40, 'step 2: Knative serves 40%', SETTLE_MS);
      await knativeReports(ns, { stable: 60, candidate: 40 }, 'step 2');
      await proxyRoutes('step 2', stableRev, { revision: candidate, percent: 40 });
      nextInterval();
      const a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status?.versions?.stable?.image === image('2'), 'promoted', SETTLE_MS);
      assert.equal(condition(a, 'Promoted')?.status, 'True');
      assert.equal(a.status?.versions?.stable?.revision, candidate);
      await knativeReports(ns, { stable: 100 }, 'promoted');
      assert.equal(await reportedRevision(ns, 'stable'), candidate);
      await proxyRoutes('promoted', candidate);
      const queried = prom.requests.filter((r) => decodeURIComponent(r.url).includes(`revision="${candidate}"`));
      assert.equal(queried.length, 2, 'one check round per step, each about the candidate');
    });

    it('fails the candidate when checks keep failing, all traffic back on stable; a retry starts the steps again', async () => {
      prom.handler = (_r, res) => res.end(promVector(0.5));
      const { stableRev } = await stableV1();
      await applyApp(app(ns, 'shop', spec(image('2'), auto())));
      await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 10, 'step 1 at 10%', READY_MS);
      nextInterval();
      const once = await waitForApp(ns, 'shop', (x) => x.status?.canary?.failedChecks === 1, 'one failed round', SETTLE_MS);
      assert.equal(once.status?.canary?.trafficPercent, 10, 'one failed round keeps the step');
      nextInterval();
      const a = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Failed', 'candidate failed', SETTLE_MS);
      assert.deepEqual([condition(a, 'CanaryProgressing')?.status, condition(a, 'CanaryProgressing')?.reason, a.status?.canary?.failure?.reason], ['False', 'AnalysisFailed', 'AnalysisFailed']);
      assert.match(condition(a, 'Promoted')!.message, /success-rate outside \[0\.99, \+inf\]/);
      await knativeReports(ns, { stable: 100, candidate: 0 }, 'back on stable');
      await proxyRoutes('back on stable', stableRev);
      // Retried with healthy checks: the steps start again from the first.
      prom.handler = (_r, res) => res.end(promVector(1));
      await applyApp(app(ns, 'shop', spec(image('2'), { ...auto(), retry: 1 })));
      const again = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Canary' && x.status?.canary?.trafficPercent === 10, 'retried at step 1', SETTLE_MS);
      assert.equal(again.status?.canary?.failure, undefined);
      await proxyRoutes('retried at step 1', stableRev, { revision: again.status!.versions!.candidate!.revision!, percent: 10 });
    });

    it('halts on no data and says so, keeping the step Knative serves', async () => {
      prom.handler = (_r, res) => res.end(promVector());
      const { stableRev } = await stableV1();
      await applyApp(app(ns, 'shop', spec(image('2'), auto())));
      const first = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 10, 'step 1 at 10%', READY_MS);
      nextInterval();
      const a = await waitForApp(ns, 'shop', (x) => condition(x, 'CanaryProgressing')?.reason === 'AnalysisNoData', 'halted', SETTLE_MS);
      assert.equal(a.status?.canary?.weight, 10, 'stays at its step');
      assert.equal(a.status?.canary?.trafficPercent, 10);
      assert.match(condition(a, 'CanaryProgressing')!.message, /no data/);
      await knativeReports(ns, { stable: 90, candidate: 10 }, 'halted at 10%');
      await proxyRoutes('halted at 10%', stableRev, { revision: first.status!.versions!.candidate!.revision!, percent: 10 });
    });
  });
});

// The same flow with bounds in the revision template (Knative before 1.21, or the flag forced): a candidate's
// prewarm buffer rides on its template's initial-scale, and nothing is set on a live Revision.
describe('canary rollouts with template bounds (knativeInPlaceScaling: false), on the real Knative (integration)', function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let ns: string;

  before(async () => {
    op = await startOperator({ knativeInPlaceScaling: 'false' });
    assert.equal(op.settings.inPlaceBounds, false);
  });
  after(async () => op?.stop());
  beforeEach(async () => {
    ns = await freshNamespace('canary-tpl');
  });

  it('v1 -> v2 at 20% (prewarmed through initial-scale) -> rolled back -> promoted, each split as Knative reports it, no live Revision touched', async () => {
    const since = new Date();
    const prewarm = { prewarm: { replicas: 2 } };
    await applyApp(app(ns, 'shop', baseSpec(image('1'), undefined, prewarm)));
    await waitForApp(ns, 'shop', readyTrue, 'v1 Ready', READY_MS);
    await knativeReports(ns, { stable: 100 }, 'v1 serves');
    await applyApp(app(ns, 'shop', baseSpec(image('2'), { canaryPercent: 20 }, prewarm)));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 20, 'Knative serves 20% on the candidate', READY_MS);
    await knativeReports(ns, { stable: 80, candidate: 20 }, 'at 20%');
    const candidate = a.status!.versions!.candidate!.revision!;
    assert.equal((await getRevision(ns, candidate))?.metadata.annotations?.['autoscaling.knative.dev/initial-scale'], '2', 'the buffer is in the candidate\'s template');
    await applyApp(app(ns, 'shop', baseSpec(image('2'), { canaryPercent: 0 }, prewarm)));
    await waitForApp(ns, 'shop', (x) => x.status?.phase === 'RolledBack', 'rolled back', SETTLE_MS);
    await knativeReports(ns, { stable: 100, candidate: 0 }, 'rolled back');
    await applyApp(app(ns, 'shop', baseSpec(image('2'), { canaryPercent: 100 }, prewarm)));
    const promoted = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status.versions?.stable?.image === image('2'), 'promoted', READY_MS);
    await knativeReports(ns, { stable: 100 }, 'promoted');
    assert.equal(await reportedRevision(ns, 'stable'), promoted.status!.versions!.stable!.revision);
    const revisionWrites = writesSince(since, 'serverlessapp-operator').filter((w) => w.resource === 'revisions');
    assert.deepEqual(revisionWrites.map((w) => `${w.verb} ${w.name}`), [], 'template bounds never touch a live Revision');
  });
});

/** Adds a KWOK node with `capacity` (KWOK makes it Ready and runs its pods); `remove` deletes it again. */
async function addNode(capacity: Record<string, string>): Promise<{ remove(): Promise<void> }> {
  const core = testEnv().kubeConfig().makeApiClient(CoreV1Api);
  const name = `canary-big-node-${Math.random().toString(36).slice(2, 7)}`;
  const full = { memory: '64Gi', pods: '110', 'ephemeral-storage': '100Gi', ...capacity };
  const node: V1Node = {
    apiVersion: 'v1', kind: 'Node',
    metadata: { name, annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' }, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', type: 'kwok' } },
    status: { capacity: full, allocatable: full },
  };
  await core.createNode({ body: node });
  return { remove: async () => { await core.deleteNode({ name }); } };
}
