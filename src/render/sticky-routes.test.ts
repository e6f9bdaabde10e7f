// Sticky sessions as both routers render them (rollout.stickiness), phase by
// phase: which session rules exist and where they lead, and how the default
// route splits and which cookie each of its targets sets. What Envoy makes of
// them is checked on the rig, over the configuration istiod generates
// (test/integration/sticky-sessions.test.ts).

import assert from 'node:assert/strict';
import { VirtualService } from '@kubernetes-models/istio/networking.istio.io/v1/VirtualService';
import { assertGolden } from '../../test/support/golden.ts';
import type { ServerlessApp, TrafficStatus } from '../api/v1alpha1/serverlessapp.ts';
import { containerApp } from '../testing/apps.ts';
import { renderHttpRoute } from './http-route.ts';
import { sessionCookie } from './session-cookie.ts';
import { splitReachesCandidate, trafficSplit, type TrafficPlan } from './traffic.ts';
import { renderVirtualService } from './virtual-service.ts';

const golden = (name: string) => new URL(`./testdata/${name}.golden.yaml`, import.meta.url).pathname;
const S = { revision: 'shop-00001-aaaa', version: '1111111111' };
const C = { revision: 'shop-00002-bbbb', version: '2222222222' };
const HOSTS = { defaultHost: 'shop.team-a.svc.cluster.local', stableHost: 'stable-shop.team-a.svc.cluster.local', candidateHost: 'candidate-shop.team-a.svc.cluster.local' };
const app = (extra: Partial<ServerlessApp['spec']['rollout']> = {}) => containerApp({
  ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] },
  rollout: { stickiness: { cookieName: 'shop-v', maxAge: '30m' }, match: [{ header: 'x-canary', exact: '1' }], ...extra },
});
const cookie = sessionCookie({ cookieName: 'shop-v', maxAge: '30m' })!;
/** The version a Cookie-header regex asks for, read back from it. */
const versionIn = (regex: string | undefined) => (regex === undefined ? undefined : regex === cookie.cookieHeaderRegex(undefined) ? 'any' : [S.version, C.version].find((v) => regex === cookie.cookieHeaderRegex(v)));
const versionSet = (setCookie: string | undefined) => [S.version, C.version].find((v) => setCookie === cookie.setCookie(v));
const KNATIVE_TAGS = { stableTag: 'stable', candidateTag: 'candidate' };
/** The split as the data plane reports it when it has caught up with the plan: Knative's tags on the plan's revisions. */
const caughtUp = (plan: TrafficPlan, reachable: boolean): TrafficStatus[] => trafficSplit(plan, reachable).map((s) => ({ revision: s.revision, percent: s.percent, tag: s.tag }));

type Rule = [name: string, cookieVersion: string | undefined, target: string | undefined, setsCookie: string | undefined];
type Split = Array<[target: string | undefined, weight: number | undefined, setsCookie: string | undefined]>;

/** Where each rule of the VirtualService leads: [name, cookie version it matches, authority, cookie it sets], and the default's split. */
function vsShape(plan: TrafficPlan, reachable: boolean, inForce = caughtUp(plan, reachable), tags = KNATIVE_TAGS, hosts = HOSTS, routesReady = true, live?: { spec?: { http?: unknown[] } }) {
  // As the planner tells it (planner/reconcile.ts): reachable when the split lists the candidate.
  const candidateReady = splitReachesCandidate(plan, reachable);
  const vs = renderVirtualService(app(), { localGateway: 'knative-local-gateway.istio-system.svc.cluster.local', candidateReady, ...hosts, ...tags, traffic: plan, inForce, routesReady, ...(live ? { live } : {}) });
  new VirtualService(vs).validate();
  const http = vs.spec!.http!;
  const def = http.find((h) => h.name === 'default')!;
  const setsOf = (d: { headers?: { response?: { add?: Record<string, string> } } } | undefined) => versionSet(d?.headers?.response?.add?.['set-cookie']);
  return {
    rules: http.filter((h) => h.name !== 'default').map((h): Rule => [h.name!, versionIn((h.match?.[0]?.headers?.['cookie'] as { regex?: string } | undefined)?.regex), h.rewrite?.authority, setsOf(h.route?.[0])]),
    split: def.route!.map((d): Split[number] => [d.headers?.request?.set?.[':authority'] ?? def.rewrite?.authority, d.weight, setsOf(d)]),
  };
}

/** The same of the HTTPRoute: [name, cookie version, revision, cookie it sets], and the default's split. */
function routeShape(plan: TrafficPlan, reachable: boolean) {
  const r = renderHttpRoute(app(), { traffic: plan, candidateReachable: reachable });
  const def = r.spec.rules.find((x) => x.name === 'default')!;
  const setsOf = (b: (typeof def.backendRefs)[number]) => versionSet(b.filters.flatMap((f) => (f.type === 'ResponseHeaderModifier' ? f.responseHeaderModifier.add : [])).find((h) => h.name === 'Set-Cookie')?.value);
  return {
    rules: r.spec.rules.filter((x) => x.name !== 'default').map((x): Rule => [x.name, versionIn(x.matches[0]!.headers?.find((h) => h.name === 'cookie')?.value), x.backendRefs[0]!.name, setsOf(x.backendRefs[0]!)]),
    split: def.backendRefs.map((b): Split[number] => [b.name, b.weight, setsOf(b)]),
  };
}

describe('sticky sessions, as both routers render them', () => {
  const canary20: TrafficPlan = { stable: S, candidate: { ...C, percent: 20, ready: true } };
  const phases: Array<{ it: string; plan: TrafficPlan; reachable?: boolean; inForce?: TrafficStatus[]; vs: ReturnType<typeof vsShape>; route: ReturnType<typeof routeShape> }> = [
    {
      it: 'one version: its sessions go to its tag, and a response sets the cookie only for a request without it (so sessions stay on it once a canary begins)',
      plan: { stable: S },
      vs: { rules: [['session-stable', S.version, HOSTS.stableHost, undefined]], split: [[HOSTS.stableHost, 100, S.version]] },
      route: { rules: [['session-stable', S.version, S.revision, undefined]], split: [[S.revision, 100, S.version]] },
    },
    {
      it: 'a canary at 20%: header rule first, then a session rule per version, our cookie naming any other version to stable (replaced), then the split, each target setting its own version',
      plan: canary20,
      vs: {
        rules: [['candidate-by-header', undefined, HOSTS.candidateHost, undefined], ['session-stable', S.version, HOSTS.stableHost, undefined], ['session-candidate', C.version, HOSTS.candidateHost, undefined], ['session-other', 'any', HOSTS.stableHost, S.version]],
        split: [[HOSTS.stableHost, 80, S.version], [HOSTS.candidateHost, 20, C.version]],
      },
      route: {
        rules: [['candidate-by-header', undefined, C.revision, undefined], ['session-stable', S.version, S.revision, undefined], ['session-candidate', C.version, C.revision, undefined], ['session-other', 'any', S.revision, S.version]],
        split: [[S.revision, 80, S.version], [C.revision, 20, C.version]],
      },
    },
    {
      it: 'a candidate at 0% (header testing): its sessions go to stable (no rule for it), new ones start on stable',
      plan: { stable: S, candidate: { ...C, percent: 0, ready: true } },
      vs: { rules: [['candidate-by-header', undefined, HOSTS.candidateHost, undefined], ['session-stable', S.version, HOSTS.stableHost, undefined]], split: [[HOSTS.stableHost, 100, S.version]] },
      route: { rules: [['candidate-by-header', undefined, C.revision, undefined], ['session-stable', S.version, S.revision, undefined]], split: [[S.revision, 100, S.version]] },
    },
    {
      it: 'a candidate that is not ready (or failed, rolled back): nothing reaches it, its sessions included, at once (its tag host, not the default host\'s split)',
      plan: { stable: S, candidate: { ...C, percent: 20, ready: false } },
      vs: { rules: [['session-stable', S.version, HOSTS.stableHost, undefined]], split: [[HOSTS.stableHost, 100, S.version]] },
      route: { rules: [['session-stable', S.version, S.revision, undefined]], split: [[S.revision, 100, S.version]] },
    },
    {
      it: 'a candidate the route may not reach (not warm, parked): the same',
      plan: canary20, reachable: false,
      vs: { rules: [['session-stable', S.version, HOSTS.stableHost, undefined]], split: [[HOSTS.stableHost, 100, S.version]] },
      route: { rules: [['session-stable', S.version, S.revision, undefined]], split: [[S.revision, 100, S.version]] },
    },
    {
      it: 'promoted: everyone on the new stable, whose cookie stays valid; the old version\'s cookie is a request without a valid one',
      plan: { stable: C, candidate: { ...C, percent: 100, ready: true } },
      vs: { rules: [['session-stable', C.version, HOSTS.stableHost, undefined]], split: [[HOSTS.stableHost, 100, C.version]] },
      route: { rules: [['session-stable', C.version, C.revision, undefined]], split: [[C.revision, 100, C.version]] },
    },
    {
      it: 'the first version before anything is stable starts sessions on it',
      plan: { initial: S },
      vs: { rules: [['session-stable', S.version, HOSTS.stableHost, undefined]], split: [[HOSTS.stableHost, 100, S.version]] },
      route: { rules: [['session-stable', S.version, S.revision, undefined]], split: [[S.revision, 100, S.version]] },
    },
  ];
  for (const p of phases) {
    it(`VirtualService: ${p.it}`, () => assert.deepEqual(vsShape(p.plan, p.reachable ?? true), p.vs));
    it(`HTTPRoute: ${p.it}`, () => assert.deepEqual(routeShape(p.plan, p.reachable ?? true), p.route));
  }

  it('VirtualService: while the data plane does not yet report the candidate\'s tag, its weight goes through the default host (the data plane\'s split) and no response names a version', () => {
    const lagging: TrafficStatus[] = [{ revision: S.revision, percent: 100, tag: 'stable' }];
    assert.deepEqual(vsShape(canary20, true, lagging), {
      rules: [['candidate-by-header', undefined, HOSTS.candidateHost, undefined], ['session-stable', S.version, HOSTS.stableHost, undefined]],
      split: [[HOSTS.defaultHost, 100, undefined]],
    });
  });

  it('VirtualService: a tag on another revision than the version\'s (KServe moves its own) is not the version\'s host', () => {
    const moved: TrafficStatus[] = [{ revision: S.revision, percent: 80, tag: 'stable' }, { revision: 'shop-00003-cccc', percent: 20, tag: 'candidate' }];
    assert.deepEqual(vsShape(canary20, true, moved).split, [[HOSTS.defaultHost, 100, undefined]]);
  });

  describe('VirtualService: a tag Knative reports before its routes carry it is trusted only where the live route already sent that version (make before break)', () => {
    const at20 = renderVirtualService(app(), { localGateway: 'gw', candidateReady: true, ...HOSTS, ...KNATIVE_TAGS, traffic: canary20, inForce: caughtUp(canary20, true), routesReady: true });
    const shape = (plan: TrafficPlan, inForce: TrafficStatus[], routesReady: boolean) => vsShape(plan, true, inForce, KNATIVE_TAGS, HOSTS, routesReady, at20 as never);

    it('a weight step (the tags do not move): sessions stay on their tag hosts while Knative programs the new split', () => {
      const at50: TrafficPlan = { stable: S, candidate: { ...C, percent: 50, ready: true } };
      assert.deepEqual(shape(at50, caughtUp(at50, true), false).split, [[HOSTS.stableHost, 50, S.version], [HOSTS.candidateHost, 50, C.version]]);
    });

    it('a promotion (the stable tag moves to the candidate): the default host, naming no version, until Knative\'s routes carry it', () => {
      const promoted: TrafficPlan = { stable: C, candidate: { ...C, percent: 100, ready: true } };
      const reported: TrafficStatus[] = [{ revision: C.revision, percent: 100, tag: 'stable' }];
      assert.deepEqual(shape(promoted, reported, false), { rules: [], split: [[HOSTS.defaultHost, 100, undefined]] });
      assert.deepEqual(shape(promoted, reported, true), { rules: [['session-stable', C.version, HOSTS.stableHost, undefined]], split: [[HOSTS.stableHost, 100, C.version]] });
    });

    it('the promotion\'s first step (candidate at 100 under its own tag, which the live route already uses): its tag host at once', () => {
      const toCandidate: TrafficPlan = { stable: S, candidate: { ...C, percent: 100, ready: true } };
      const reported: TrafficStatus[] = [{ revision: S.revision, percent: 0, tag: 'stable' }, { revision: C.revision, percent: 100, tag: 'candidate' }];
      assert.deepEqual(shape(toCandidate, reported, false).split, [[HOSTS.candidateHost, 100, C.version]]);
    });

    it('a new candidate replacing one mid-canary (the candidate tag moves): stable\'s sessions keep their host; the candidate\'s wait for Knative\'s routes', () => {
      const C2 = { revision: 'shop-00003-cccc', version: '3333333333' };
      const replaced: TrafficPlan = { stable: S, candidate: { ...C2, percent: 20, ready: true } };
      const reported: TrafficStatus[] = [{ revision: S.revision, percent: 80, tag: 'stable' }, { revision: C2.revision, percent: 20, tag: 'candidate' }];
      const vs = shape(replaced, reported, false);
      assert.deepEqual(vs.rules.map((r) => r[0]), ['candidate-by-header', 'session-stable']);
      assert.deepEqual(vs.split, [[HOSTS.defaultHost, 100, undefined]]);
    });
  });

  it('VirtualService on KServe: one version is reached at the default host while KServe reports it there at 100% (no "prev" tag without a canary)', () => {
    const kserve = { defaultHost: 'shop-predictor.team-a.svc.cluster.local', stableHost: 'prev-shop-predictor.team-a.svc.cluster.local', candidateHost: 'latest-shop-predictor.team-a.svc.cluster.local' };
    const tags = { stableTag: 'prev', candidateTag: 'latest' };
    assert.deepEqual(vsShape({ stable: S }, true, [{ revision: S.revision, percent: 100, tag: 'latest' }], tags, kserve), {
      rules: [['session-stable', S.version, kserve.defaultHost, undefined]], split: [[kserve.defaultHost, 100, S.version]],
    });
    const inCanary: TrafficStatus[] = [{ revision: C.revision, percent: 20, tag: 'latest' }, { revision: S.revision, percent: 80, tag: 'prev' }];
    assert.deepEqual(vsShape(canary20, true, inCanary, tags, kserve).split, [[kserve.stableHost, 80, S.version], [kserve.candidateHost, 20, C.version]]);
  });

  it('renders the canary at 20% on both routers (golden)', () => {
    const plan: TrafficPlan = { stable: S, candidate: { ...C, percent: 20, ready: true } };
    assertGolden(golden('virtual-service-sticky'), renderVirtualService(app({ mirrorPercent: 10 }), { localGateway: 'knative-local-gateway.istio-system.svc.cluster.local', candidateReady: true, ...HOSTS, ...KNATIVE_TAGS, traffic: plan, inForce: caughtUp(plan, true), routesReady: true, candidateRevision: C.revision }));
    assertGolden(golden('http-route-sticky'), renderHttpRoute(app({ mirrorPercent: 10 }), { traffic: plan, candidateReachable: true }));
  });

  it('mirrors stable traffic wherever it is routed: its session rule and the split, never the candidate\'s sessions', () => {
    const plan: TrafficPlan = { stable: S, candidate: { ...C, percent: 20, ready: true } };
    const vs = renderVirtualService(app({ mirrorPercent: 10 }), { localGateway: 'gw', candidateReady: true, ...HOSTS, ...KNATIVE_TAGS, traffic: plan, inForce: caughtUp(plan, true), routesReady: true, candidateRevision: C.revision });
    assert.deepEqual(vs.spec!.http!.map((h) => [h.name, h.mirrorPercentage?.value]), [['candidate-by-header', undefined], ['session-stable', 10], ['session-candidate', undefined], ['session-other', 10], ['default', 10]]);
    const route = renderHttpRoute(app({ mirrorPercent: 10 }), { traffic: plan, candidateReachable: true });
    assert.deepEqual(route.spec.rules.map((r) => [r.name, r.filters?.[0]?.requestMirror.percent]), [['candidate-by-header', undefined], ['session-stable', 10], ['session-candidate', undefined], ['session-other', 10], ['default', 10]]);
  });

  it('is off by default: no cookie is set and the VirtualService leaves the split to Knative', () => {
    const plain = containerApp({ ingress: { hosts: ['shop.example.com'] } });
    const plan: TrafficPlan = { stable: S, candidate: { ...C, percent: 20, ready: true } };
    const vs = renderVirtualService(plain, { localGateway: 'gw', candidateReady: true, ...HOSTS, ...KNATIVE_TAGS, traffic: plan, inForce: caughtUp(plan, true), routesReady: true });
    assert.deepEqual(vs.spec!.http!.map((h) => [h.name, h.rewrite?.authority, h.route?.length, h.route?.[0]?.headers]), [['default', HOSTS.defaultHost, 1, undefined]]);
  });
});
