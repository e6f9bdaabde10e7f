// Sticky sessions (rollout.stickiness, issue 35) as a user meets them: which
// version does my next request reach? Each story (steps, a pause, a header
// rule, a promotion; a failed check; a rollback) measures, per session, the
// share that ever changed version while both versions held weight (goal 0),
// the split of new sessions against the planned weight (within 3 points), and
// requests that reached a revision Knative does not report Ready (goal 0:
// such a request counts as unrouted and fails the step). The manual story runs
// again with stickiness off, where most sessions flip: the evaluation must
// tell the two apart. Sessions are synthetic browsers
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
import { isDeepStrictEqual } from 'node:util';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import type { RouterName } from '../../src/planner/route.ts';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { app, applyApp, getKsvc, getRevision, knativeReady, readyTrue, reportedSplit, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import {
  gatewayWithProxy, knativeNextHop, serviceCluster, untilKnativeSplit, untilProxy, virtualHostsFor, weightsOf,
  type ProxyConfig, type ProxyIdentity,
} from '../support/envoy-config.ts';
import { seededDraws } from '../support/route-eval.ts';
import { cookieVersions, flippedShare, newSessions, revisionRoute, step, type Route, type Session } from '../support/sessions.ts';
import { LoopbackServer, promVector } from '../support/http-server.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';

const ROUTERS: RouterName[] = ['istio', 'gateway-api'];
const COOKIE = 'shop-version';
const STICKINESS = { cookieName: COOKIE, maxAge: '1h' };
const MATCH = [{ header: 'x-canary', exact: 'yes' }];
const image = (tag: string) => `ghcr.io/acme/shop:${tag}`;
/** New sessions per phase: a 20% share is read within 3 points (about 3.7 standard deviations at 2,000). */
const NEW_SESSIONS = 2_000;

for (const router of ROUTERS) describe(`sticky sessions on the real Knative, routed by the ${router} router, over the routes istiod sends the gateway (integration)`, function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let clock: OffsetClock;
  let prom: LoopbackServer;
  let ns: string;
  let gateway: string;
  let proxy: ProxyIdentity;

  before(async function () {
    if (!testEnv().dataPlane?.istio) this.skip();
    prom = await new LoopbackServer().start();
    clock = new OffsetClock();
    const gwNs = await freshNamespace('sticky-gw');
    ({ gateway, proxy } = await gatewayWithProxy(router, gwNs));
    op = await startOperator({ router, allowedGateways: [`${gwNs}/*`], analysisProviders: [{ name: 'test', url: prom.url }] }, { clock });
  });
  after(async () => {
    await op?.stop();
    await prom?.stop();
  });
  beforeEach(async () => { ns = await freshNamespace('sticky'); });

  const host = () => `shop.${ns}.example.com`;
  const ingress = () => ({ hosts: [host()], gateways: [gateway] });
  const spec = (img: string, rollout: AppSpec['rollout'] = {}, sticky = true): AppSpec => ({
    container: { image: img, port: 8080 }, scaling: { minScale: 0 },
    rollout: { ...(sticky ? { stickiness: STICKINESS } : {}), ...rollout }, ingress: ingress(),
  });
  /** A model app on KServe under the same host: its versions are the predictor's revisions, its tags KServe's (prev, latest). */
  const modelSpec = (storageUri: string, rollout: AppSpec['rollout'] = {}): AppSpec => ({
    model: { format: { name: 'sklearn' }, storageUri, resources: { limits: { cpu: '1', memory: '2Gi' } } }, scaling: { minScale: 0 },
    rollout: { stickiness: STICKINESS, ...rollout }, ingress: ingress(),
  });

  /**
   * Waits until Knative reports `split` (tag -> percent) and the gateway's proxy sets cookies for exactly
   * `versions` (none: stickiness off), then returns a Route over what the proxy has now: each request's end
   * as the revision it reaches, and the cookies its response sets. A request that ends anywhere but on a
   * revision Knative reports Ready is unrouted.
   */
  async function routesAt(what: string, split: Record<string, number>, versions: string[], knativeService = 'shop'): Promise<Route> {
    let last: Record<string, number> = {};
    await waitFor(`${what}: Knative reports ${JSON.stringify(split)}`, async () => {
      last = await reportedSplit(ns, knativeService);
      return Object.keys(split).length === Object.keys(last).length && Object.entries(split).every(([t, p]) => last[t] === p);
    }, { timeoutMs: SETTLE_MS }).catch((err: Error) => { throw new Error(`${err.message}; it reports ${JSON.stringify(last)}`); });
    const traffic = (await getKsvc(ns, knativeService))?.status?.traffic ?? [];
    const byRevision = Object.fromEntries(traffic.filter((t) => t.percent > 0).map((t) => [t.revisionName!, t.percent]));
    let config: ProxyConfig;
    if (versions.length || router === 'istio') {
      // Sticky: the proxy has caught up once it sets the cookies of exactly these versions (none: stickiness off).
      ({ config } = await untilProxy(`${what}: the gateway's proxy sets session cookies for [${versions.join(', ')}]`, proxy,
        (c) => (JSON.stringify(cookieVersions(c, host(), COOKIE)) === JSON.stringify([...versions].sort()) ? true : undefined)));
      // Not sticky under the Istio router: the split is Knative's, on its local gateway (ENVTEST_NETGW=on).
      if (!versions.length) await untilKnativeSplit(what, ns, knativeService, byRevision);
    } else {
      const want = Object.fromEntries(Object.entries(byRevision).map(([r, p]) => [serviceCluster(ns, r), p]));
      ({ config } = await untilProxy(`${what}: the gateway's proxy splits ${JSON.stringify(want)}`, proxy, (c) => {
        const split = weightsOf(virtualHostsFor(c, host())[0]?.routes.find((r) => !(r.match.headers ?? []).length));
        return isDeepStrictEqual(Object.fromEntries(Object.entries(split).filter(([, w]) => w > 0)), want) ? true : undefined;
      }));
    }
    const ready = new Set<string>();
    for (const t of traffic) if (knativeReady(await getRevision(ns, t.revisionName!))) ready.add(t.revisionName!);
    return revisionRoute({ config, host: host(), namespace: ns, knativeService, traffic, ready, next: await knativeNextHop(), random: seededDraws(NEW_SESSIONS) });
  }

  /** `count` requests from each session; every one routed to a Ready revision. */
  function requests(sessions: Session[], route: Route, count: number, headers: Record<string, string> = {}): void {
    for (let i = 0; i < count; i++) {
      const { unrouted } = step(sessions, route, host(), headers);
      assert.deepEqual(unrouted.slice(0, 3), [], `${unrouted.length} requests found no Ready revision`);
    }
  }
  /** The sessions whose every request from `from` on reached `revision` (and, when sticky, whose cookie names `version`). */
  const allOn = (sessions: Session[], revision: string, version: string | undefined, from: number) =>
    sessions.every((s) => s.reached.slice(from).every((r) => r === revision) && (version === undefined || s.cookies[COOKIE] === version));
  /** The share of `sessions` whose first request from `from` reached `revision`. */
  const startedOn = (sessions: Session[], revision: string, from = 0) => sessions.filter((s) => s.reached[from] === revision).length / sessions.length;
  /** How many times a session changed version from request `from` on. */
  const moves = (s: Session, from: number) => s.reached.slice(from).filter((r, i, all) => i > 0 && r !== all[i - 1]).length;

  async function stableV1(sticky = true): Promise<{ revision: string; version: string }> {
    await applyApp(app(ns, 'shop', spec(image('1'), {}, sticky)));
    const v = (await waitForApp(ns, 'shop', readyTrue, 'v1 Ready on Knative', READY_MS)).status!.versions!.stable!;
    return { revision: v.revision!, version: v.version! };
  }

  /**
   * The manual story: sessions before the canary, a canary at 20% with a header rule, a pause, 50%, a promotion.
   * Returns the share of sessions that changed version while both versions held weight.
   */
  async function manualStory(sticky: boolean): Promise<number> {
    const cookies = (...versions: string[]) => (sticky ? versions : []);
    const v1 = await stableV1(sticky);
    let route = await routesAt('v1 serves', { stable: 100 }, cookies(v1.version));
    const early = newSessions(300);
    requests(early, route, 1);
    assert.ok(allOn(early, v1.revision, sticky ? v1.version : undefined, 0), 'before a canary every session starts on v1 (with its cookie when sticky)');

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 20, match: MATCH }, sticky)));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 20, 'Knative serves 20% on the candidate', READY_MS);
    const v2 = { revision: a.status!.versions!.candidate!.revision!, version: a.status!.versions!.candidate!.version! };
    route = await routesAt('at 20%', { stable: 80, candidate: 20 }, cookies(v1.version, v2.version));
    const canaryFrom = early[0]!.reached.length;
    requests(early, route, 5);
    const fresh = newSessions(NEW_SESSIONS);
    requests(fresh, route, 1);
    const onV2 = startedOn(fresh, v2.revision);
    assert.ok(Math.abs(onV2 - 0.2) <= 0.03, `new sessions split by weight: ${(onV2 * 100).toFixed(1)}% started on v2, planned 20% (within 3 points)`);
    if (sticky) for (const s of fresh) assert.equal(s.cookies[COOKIE], s.reached[0] === v2.revision ? v2.version : v1.version, 'each response names the version it reached');
    requests(fresh, route, 5);

    const tester = newSessions(50);
    if (sticky) tester.forEach((s) => { s.cookies[COOKIE] = v1.version; });
    requests(tester, route, 3, { 'x-canary': 'yes' });
    assert.ok(tester.every((s) => s.reached.every((r) => r === v2.revision)), 'the header rule comes before a session');

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 20, match: MATCH, paused: true }, sticky)));
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.paused === true, 'the rollout paused at 20%', SETTLE_MS);
    route = await routesAt('paused at 20%', { stable: 80, candidate: 20 }, cookies(v1.version, v2.version));
    requests(early, route, 2);
    requests(fresh, route, 2);

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 50, match: MATCH }, sticky)));
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 50, 'Knative serves 50%', SETTLE_MS);
    route = await routesAt('at 50%', { stable: 50, candidate: 50 }, cookies(v1.version, v2.version));
    requests(early, route, 3);
    requests(fresh, route, 3);
    const fresh50 = newSessions(NEW_SESSIONS);
    requests(fresh50, route, 3);
    const onV2at50 = startedOn(fresh50, v2.revision);
    assert.ok(Math.abs(onV2at50 - 0.5) <= 0.03, `new sessions at 50%: ${(onV2at50 * 100).toFixed(1)}% started on v2 (within 3 points)`);
    // Changes while both versions held weight: early sessions from their last request before the canary.
    const during = [...early.map((s) => moves(s, canaryFrom - 1)), ...[...fresh, ...fresh50].map((s) => moves(s, 0))];
    const flipped = during.filter((m) => m > 0).length / during.length;

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 100 }, sticky)));
    await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status?.versions?.stable?.image === image('2'), 'promoted', SETTLE_MS);
    route = await routesAt('promoted', { stable: 100 }, cookies(v2.version));
    const promotedFrom = fresh[0]!.reached.length;
    requests(fresh, route, 2);
    const earlyFrom = early[0]!.reached.length;
    requests(early, route, 2);
    assert.ok(allOn(fresh, v2.revision, sticky ? v2.version : undefined, promotedFrom), 'after promotion every session reaches the new stable (with its cookie)');
    assert.ok(allOn(early, v2.revision, sticky ? v2.version : undefined, earlyFrom), 'v1\'s sessions move to the new stable (v1\'s cookie ignored and replaced)');
    assert.ok(fresh.every((s) => moves(s, promotedFrom - 1) <= 1), 'promotion moves a session at most once');
    return flipped;
  }

  it('the manual story with stickiness on: no session changes version while both versions hold weight, through 20%, a header rule, a pause, 50% and the promotion', async () => {
    assert.equal(await manualStory(true), 0);
  });

  it('the same story with stickiness off: most sessions change version, so the evaluation tells the two apart', async function () {
    // Without stickiness the Istio router leaves the split to Knative, on its local gateway: only with ENVTEST_NETGW=on does the rig have those routes to follow.
    if (router === 'istio' && !testEnv().dataPlane?.netGatewayApi) this.skip();
    const flipped = await manualStory(false);
    assert.ok(flipped > 0.3, `${(flipped * 100).toFixed(1)}% of sessions changed version without stickiness (expected most of them: 8 requests at 20-50%)`);
  });

  it('a failed check returns the candidate\'s sessions to stable at once, each moving exactly once; stable\'s sessions never move', async () => {
    prom.handler = (_r, res) => res.end(promVector(0.5));
    const v1 = await stableV1();
    await applyApp(app(ns, 'shop', spec(image('2'), {
      steps: [20, 50], interval: '10s',
      analysis: { prometheus: { provider: 'test' }, checks: [{ name: 'success-rate', query: 'sum(rate(ok{revision="{{revision}}"}[1m]))', min: 0.99 }], failureThreshold: 1 },
    })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 20, 'step 1 at 20%', READY_MS);
    const v2 = a.status!.versions!.candidate!;
    let route = await routesAt('step 1 at 20%', { stable: 80, candidate: 20 }, [v1.version, v2.version!]);
    const sessions = newSessions(1_000);
    requests(sessions, route, 3);
    assert.equal(flippedShare(sessions), 0, 'no session changed version at 20%');
    const onCandidate = sessions.filter((s) => s.reached[0] === v2.revision);
    assert.ok(onCandidate.length > 100, `some sessions started on the candidate (${onCandidate.length})`);

    clock.advance(10_001);
    op.apps.controller.enqueueAll();
    await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Failed', 'the candidate failed its check', SETTLE_MS);
    route = await routesAt('failed', { stable: 100, candidate: 0 }, [v1.version]);
    const from = sessions[0]!.reached.length;
    requests(sessions, route, 2);
    assert.ok(allOn(sessions, v1.revision, v1.version, from), 'every session is on stable at its next request, with stable\'s cookie');
    assert.ok(onCandidate.every((s) => moves(s, 0) === 1), 'each candidate session moved exactly once');
    assert.ok(sessions.filter((s) => !onCandidate.includes(s)).every((s) => moves(s, 0) === 0), 'stable\'s sessions never moved');
  });

  it('rollback returns the candidate\'s sessions to stable at once; a cookie naming any other version never reaches anything but stable', async () => {
    const v1 = await stableV1();
    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 30 })));
    const a = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 30, 'Knative serves 30% on the candidate', READY_MS);
    const v2 = a.status!.versions!.candidate!;
    let route = await routesAt('at 30%', { stable: 70, candidate: 30 }, [v1.version, v2.version!]);
    const sessions = newSessions(600);
    requests(sessions, route, 2);
    const onCandidate = sessions.filter((s) => s.reached[0] === v2.revision);
    assert.ok(onCandidate.length > 0, 'some sessions started on the candidate');
    const strayDuring = newSessions(200);
    strayDuring.forEach((s, i) => { s.cookies[COOKIE] = i % 2 ? 'ffffffffff' : `${v2.version}0`; });
    requests(strayDuring, route, 2);
    assert.ok(allOn(strayDuring, v1.revision, v1.version, 0), 'during the canary our cookie naming any other version reaches stable, and is replaced by stable\'s');

    await applyApp(app(ns, 'shop', spec(image('2'), { canaryPercent: 0 })));
    await waitForApp(ns, 'shop', (x) => x.status?.phase === 'RolledBack' && x.status?.canary?.trafficPercent === 0, 'rolled back', SETTLE_MS);
    route = await routesAt('rolled back', { stable: 100, candidate: 0 }, [v1.version]);
    const from = sessions[0]!.reached.length;
    requests(onCandidate, route, 1);
    assert.ok(allOn(onCandidate, v1.revision, v1.version, from), 'the candidate\'s sessions are back on stable at their next request, with its cookie');
    // The rolled-back version's cookie, a version that never existed, and one whose hash merely starts alike.
    const stray = newSessions(300);
    stray.forEach((s, i) => { s.cookies[COOKIE] = [v2.version!, 'ffffffffff', `${v1.version}0`][i % 3]!; });
    requests(stray, route, 1);
    assert.ok(allOn(stray, v1.revision, v1.version, 0), 'a cookie naming any version without weight reaches stable, and is replaced by stable\'s');
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
