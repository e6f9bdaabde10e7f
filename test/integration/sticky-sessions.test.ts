// Sticky sessions (rollout.stickiness, issue 35) as a user meets them: which
// version does my next request reach? Sessions are synthetic browsers
// (test/support/sessions.ts) that keep the cookies responses set, replayed
// over an evaluation of the routes the rig's istiod sends the app's Gateway
// proxy (route-eval.ts: Envoy's matching and weighted-cluster choice over the
// real configuration; no Envoy runs, no request is proxied). Under each of
// the operator's routers, on the real Knative Serving 1.21.
//
// Where a request ends is read as a revision the way the rig can tell it:
// the Gateway API router's weighted clusters are the revisions' Services; the
// Istio router's routes end on Knative's local gateway with the authority of
// a tag host, which Knative's own status maps to a revision (its traffic
// targets' URLs), or, with ENVTEST_NETGW=on, on the revision's Service through
// the routes net-gateway-api writes on that local gateway.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import type { RouterName } from '../../src/planner/route.ts';
import { app, applyApp, getKsvc, readyTrue, reportedSplit, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import {
  gatewayWithProxy, KNATIVE_GATEWAY, KNATIVE_LOCAL_ROUTES, proxyConfig, serviceCluster, untilProxy, virtualHostsFor,
  type ProxyConfig, type ProxyIdentity,
} from '../support/envoy-config.ts';
import { seededDraws, traceRequest, type NextHop } from '../support/route-eval.ts';
import { cookiesSet, flippedShare, newSessions, step, type Route, type Session } from '../support/sessions.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';

const ROUTERS: RouterName[] = ['istio', 'gateway-api'];
const COOKIE = 'shop-version';
const STICKINESS = { cookieName: COOKIE, maxAge: '1h' };
const MATCH = [{ header: 'x-canary', exact: 'yes' }];
const image = (tag: string) => `ghcr.io/acme/shop:${tag}`;
/** New sessions per phase: a 20% share is read within 3 points (about 3.7 standard deviations at 2,000). */
const NEW_SESSIONS = 2_000;

/** The session cookie versions a Set-Cookie of the app's routes names, sorted: what the proxy has been told so far. */
function cookieVersions(config: ProxyConfig, host: string): string[] | undefined {
  const vh = virtualHostsFor(config, host)[0];
  if (!vh) return undefined;
  const headers = vh.routes.flatMap((r) => [...(r.response_headers_to_add ?? []), ...(r.route?.weighted_clusters?.clusters.flatMap((c) => c.response_headers_to_add ?? []) ?? [])]);
  const versions = headers.filter((h) => h.header.key.toLowerCase() === 'set-cookie').map((h) => cookiesSet([['set-cookie', h.header.value ?? '']])[COOKIE]).filter((v): v is string => !!v);
  return [...new Set(versions)].sort();
}

for (const router of ROUTERS) describe(`sticky sessions on the real Knative, routed by the ${router} router, over the routes istiod sends the gateway (integration)`, function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let ns: string;
  let gateway: string;
  let proxy: ProxyIdentity;

  before(async function () {
    if (!testEnv().dataPlane?.istio) this.skip();
    const gwNs = await freshNamespace('sticky-gw');
    ({ gateway, proxy } = await gatewayWithProxy(router, gwNs));
    op = await startOperator({ router, allowedGateways: [`${gwNs}/*`] });
  });
  after(async () => { await op?.stop(); });
  beforeEach(async () => { ns = await freshNamespace('sticky'); });

  const host = () => `shop.${ns}.example.com`;
  const spec = (img: string, rollout: AppSpec['rollout'] = {}): AppSpec => ({
    container: { image: img, port: 8080 }, scaling: { minScale: 0 },
    rollout: { stickiness: STICKINESS, ...rollout }, ingress: { hosts: [host()], gateways: [gateway] },
  });
  /** A model app on KServe under the same host: its versions are the predictor's revisions, its tags KServe's (prev, latest). */
  const modelSpec = (storageUri: string, rollout: AppSpec['rollout'] = {}): AppSpec => ({
    model: { format: { name: 'sklearn' }, storageUri, resources: { limits: { cpu: '1', memory: '2Gi' } } }, scaling: { minScale: 0 },
    rollout: { stickiness: STICKINESS, ...rollout }, ingress: { hosts: [host()], gateways: [gateway] },
  });

  /**
   * Waits until Knative reports `split` (tag -> percent) and the gateway's proxy sets cookies for exactly
   * `versions`, then returns a Route over what the proxy has now: each request's end as the revision it
   * reaches, and the cookies its response sets.
   */
  async function routesAt(what: string, split: Record<string, number>, versions: string[], knativeService = 'shop'): Promise<Route> {
    let last: Record<string, number> = {};
    await waitFor(`${what}: Knative reports ${JSON.stringify(split)}`, async () => {
      last = await reportedSplit(ns, knativeService);
      return Object.keys(split).length === Object.keys(last).length && Object.entries(split).every(([t, p]) => last[t] === p);
    }, { timeoutMs: SETTLE_MS }).catch((err: Error) => { throw new Error(`${err.message}; it reports ${JSON.stringify(last)}`); });
    const { config } = await untilProxy(`${what}: the gateway's proxy sets session cookies for ${versions.join(', ')}`, proxy,
      (c) => (JSON.stringify(cookieVersions(c, host())) === JSON.stringify([...versions].sort()) ? true : undefined));
    const traffic = (await getKsvc(ns, knativeService))?.status?.traffic ?? [];
    const revisions = [...new Set(traffic.map((t) => t.revisionName!))];
    const byTagHost = new Map(traffic.filter((t) => t.url).map((t) => [new URL(t.url!).host, t.revisionName!]));
    const serving = traffic.filter((t) => t.percent > 0);
    // The default host reaches whatever Knative splits there: one revision when one serves, else no one revision.
    if (serving.length === 1) byTagHost.set(`${knativeService}.${ns}.svc.cluster.local`, serving[0]!.revisionName!);
    const first = virtualHostsFor(config, host())[0]!.routeConfig;
    const localGateway = serviceCluster('istio-system', 'knative-local-gateway');
    const knative = testEnv().dataPlane?.netGatewayApi ? await proxyConfig(KNATIVE_GATEWAY) : undefined;
    const next: NextHop = (cluster) => (cluster === localGateway && knative ? { config: knative, routeConfig: KNATIVE_LOCAL_ROUTES } : undefined);
    const random = seededDraws(NEW_SESSIONS);
    return (req) => {
      const t = traceRequest(config, first, req, next, random);
      if ('noRoute' in t) return t;
      const authority = t.hops.at(-1)!.authority;
      const revision = revisions.find((r) => serviceCluster(ns, r) === t.cluster) ?? (t.cluster === localGateway ? byTagHost.get(authority) : undefined);
      if (!revision) return { noRoute: `ended on ${t.cluster} as ${authority}, which is no revision Knative reports (${JSON.stringify(traffic)})` };
      return { cluster: revision, setCookies: cookiesSet(t.responseHeaders) };
    };
  }

  /** `count` requests from each session; every one routed. */
  function requests(sessions: Session[], route: Route, count: number, headers: Record<string, string> = {}): void {
    for (let i = 0; i < count; i++) assert.deepEqual(step(sessions, route, host(), headers).unrouted, []);
  }
  /** The sessions whose every request from `from` on reached `revision`, and whose cookie names `version`. */
  const allOn = (sessions: Session[], revision: string, version: string, from: number) =>
    sessions.every((s) => s.reached.slice(from).every((r) => r === revision) && s.cookies[COOKIE] === version);

  async function stableV1(): Promise<ServerlessApp> {
    await applyApp(app(ns, 'shop', spec(image('1'))));
    return waitForApp(ns, 'shop', readyTrue, 'v1 Ready on Knative', READY_MS);
  }

  it('keeps every session on its version through each weight change; new sessions split by weight; the header comes first; promotion ends all on the new stable', async () => {
    const v1 = (await stableV1()).status!.versions!.stable!;
    let route = await routesAt('v1 serves', { stable: 100 }, [v1.version!]);
    // Sessions that start before the canary: on v1, with its cookie.
    const early = newSessions(300);
    requests(early, route, 1);
    assert.ok(allOn(early, v1.revision!, v1.version!, 0), 'before a canary every session starts on v1 with its cookie');

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 20, match: MATCH })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 20, 'Knative serves 20% on the candidate', READY_MS);
    const v2 = a.status!.versions!.candidate!;
    route = await routesAt('at 20%', { stable: 80, candidate: 20 }, [v1.version!, v2.version!]);
    requests(early, route, 5);
    assert.ok(allOn(early, v1.revision!, v1.version!, 0), 'sessions that started on v1 stay on it when the canary begins');

    const fresh = newSessions(NEW_SESSIONS);
    requests(fresh, route, 1);
    const onV2 = fresh.filter((s) => s.reached[0] === v2.revision).length / NEW_SESSIONS;
    assert.ok(Math.abs(onV2 - 0.2) <= 0.03, `new sessions split by weight: ${(onV2 * 100).toFixed(1)}% started on v2, planned 20% (within 3 points)`);
    for (const s of fresh) assert.equal(s.cookies[COOKIE], s.reached[0] === v2.revision ? v2.version : v1.version, 'each response names the version it reached');
    requests(fresh, route, 5);
    assert.equal(flippedShare(fresh), 0, 'no new session changed version at 20%');

    const tester = newSessions(50);
    tester.forEach((s) => { s.cookies[COOKIE] = v1.version!; });
    requests(tester, route, 3, { 'x-canary': 'yes' });
    assert.ok(tester.every((s) => s.reached.every((r) => r === v2.revision)), 'the header rule comes before a stable session');

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 50, match: MATCH })));
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 50, 'Knative serves 50%', SETTLE_MS);
    route = await routesAt('at 50%', { stable: 50, candidate: 50 }, [v1.version!, v2.version!]);
    requests(early, route, 3);
    requests(fresh, route, 3);
    assert.ok(allOn(early, v1.revision!, v1.version!, 0), 'early sessions still on v1 at 50%');
    assert.equal(flippedShare(fresh), 0, 'no session changed version from 20% to 50%');

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 100 })));
    await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status?.versions?.stable?.image === image('2'), 'promoted', SETTLE_MS);
    route = await routesAt('promoted', { stable: 100 }, [v2.version!]);
    const before = fresh[0]!.reached.length;
    requests(early, route, 2);
    requests(fresh, route, 2);
    assert.ok(allOn(fresh, v2.revision!, v2.version!, before), 'after promotion every session reaches the new stable, with its cookie');
    assert.ok(allOn(early, v2.revision!, v2.version!, early[0]!.reached.length - 2), 'v1\'s cookie is ignored: those sessions move to the new stable and take its cookie');
  });

  it('rollback returns the candidate\'s sessions to stable at once; a cookie naming any other version never reaches anything but stable', async () => {
    const v1 = (await stableV1()).status!.versions!.stable!;
    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 30 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 30, 'Knative serves 30% on the candidate', READY_MS);
    const v2 = a.status!.versions!.candidate!;
    let route = await routesAt('at 30%', { stable: 70, candidate: 30 }, [v1.version!, v2.version!]);
    const sessions = newSessions(600);
    requests(sessions, route, 2);
    const onCandidate = sessions.filter((s) => s.reached[0] === v2.revision);
    assert.ok(onCandidate.length > 0, 'some sessions started on the candidate');

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 0 })));
    await waitForApp(ns, 'shop', (x) => x.status?.phase === 'RolledBack' && x.status?.canary?.trafficPercent === 0, 'rolled back', SETTLE_MS);
    route = await routesAt('rolled back', { stable: 100, candidate: 0 }, [v1.version!]);
    const from = sessions[0]!.reached.length;
    requests(onCandidate, route, 1);
    assert.ok(allOn(onCandidate, v1.revision!, v1.version!, from), 'the candidate\'s sessions are back on stable at their next request, with its cookie');
    // The rolled-back version's cookie, a version that never existed, and one whose hash merely starts alike.
    const stray = newSessions(300);
    stray.forEach((s, i) => { s.cookies[COOKIE] = [v2.version!, 'ffffffffff', `${v1.version}0`][i % 3]!; });
    requests(stray, route, 1);
    assert.ok(allOn(stray, v1.revision!, v1.version!, 0), 'a cookie naming any version without weight reaches stable, and is replaced by stable\'s');
  });

  it('does the same for a model app on KServe, whose router reaches the versions by KServe\'s tags: sessions stay through the canary and return to stable on rollback', async () => {
    await applyApp(app(ns, 'shop', modelSpec('gs://models/fraud/v1')));
    const v1 = (await waitForApp(ns, 'shop', readyTrue, 'model v1 Ready on KServe', READY_MS)).status!.versions!.stable!;
    let route = await routesAt('model v1 serves', { latest: 100 }, [v1.version!], 'shop-predictor');
    const early = newSessions(300);
    requests(early, route, 1);
    assert.ok(allOn(early, v1.revision!, v1.version!, 0), 'before a canary every session starts on v1 with its cookie');

    await applyApp(app(ns, 'shop', modelSpec('gs://models/fraud/v2', { canaryPercent: 20 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 20, 'KServe serves 20% on the candidate', READY_MS);
    const v2 = a.status!.versions!.candidate!;
    route = await routesAt('model at 20%', { latest: 20, prev: 80 }, [v1.version!, v2.version!], 'shop-predictor');
    requests(early, route, 3);
    assert.ok(allOn(early, v1.revision!, v1.version!, 0), 'sessions that started on v1 stay on it (KServe\'s prev tag)');
    const fresh = newSessions(NEW_SESSIONS);
    requests(fresh, route, 4);
    const onV2 = fresh.filter((s) => s.reached[0] === v2.revision);
    assert.ok(Math.abs(onV2.length / NEW_SESSIONS - 0.2) <= 0.03, `new sessions split by weight: ${(onV2.length / NEW_SESSIONS * 100).toFixed(1)}% started on v2, planned 20%`);
    assert.equal(flippedShare(fresh), 0, 'no session changed version');

    await applyApp(app(ns, 'shop', modelSpec('gs://models/fraud/v2', { canaryPercent: 0 })));
    await waitForApp(ns, 'shop', (x) => x.status?.phase === 'RolledBack', 'model rolled back', SETTLE_MS);
    route = await routesAt('model rolled back', { latest: 0, prev: 100 }, [v1.version!], 'shop-predictor');
    const from = onV2[0]!.reached.length;
    requests(onV2, route, 1);
    assert.ok(allOn(onV2, v1.revision!, v1.version!, from), 'the candidate\'s sessions are back on stable at their next request');
  });
});
