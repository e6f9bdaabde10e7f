// Sticky sessions as both routers render them (rollout.stickiness), phase by
// phase: which session rules exist and where they lead, and how the default
// route splits and which cookie each of its targets sets. What Envoy makes of
// them is checked on the rig, over the configuration istiod generates
// (test/integration/sticky-sessions.test.ts).

import assert from 'node:assert/strict';
import { VirtualService } from '@kubernetes-models/istio/networking.istio.io/v1/VirtualService';
import { assertGolden } from '../../test/support/golden.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { containerApp } from '../testing/apps.ts';
import { renderHttpRoute } from './http-route.ts';
import { sessionCookie } from './session-cookie.ts';
import { splitReachesCandidate, type TrafficPlan } from './traffic.ts';
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
const versionIn = (regex: string) => [S.version, C.version].find((v) => regex === cookie.cookieHeaderRegex(v));
const versionSet = (setCookie: string | undefined) => [S.version, C.version].find((v) => setCookie === cookie.setCookie(v));

/** Where each rule of the VirtualService leads: [name, cookie version it matches, authority] and the default's [authority, weight, cookie set]. */
function vsShape(plan: TrafficPlan, reachable: boolean) {
  // As the planner tells it (planner/reconcile.ts): reachable when the split lists the candidate.
  const candidateReady = splitReachesCandidate(plan, reachable);
  const vs = renderVirtualService(app(), { localGateway: 'knative-local-gateway.istio-system.svc.cluster.local', candidateReady, ...HOSTS, traffic: plan });
  new VirtualService(vs).validate();
  const http = vs.spec!.http!;
  const def = http.find((h) => h.name === 'default')!;
  return {
    rules: http.filter((h) => h.name !== 'default').map((h) => [h.name, versionIn((h.match?.[0]?.headers?.['cookie'] as { regex?: string } | undefined)?.regex ?? ''), h.rewrite?.authority]),
    split: def.route!.map((d) => [
      (d.headers?.request?.set?.[':authority']) ?? def.rewrite?.authority, d.weight, versionSet(d.headers?.response?.add?.['set-cookie']),
    ]),
  };
}

/** The same of the HTTPRoute: [name, cookie version, revision] and the default's [revision, weight, cookie set]. */
function routeShape(plan: TrafficPlan, candidateReachable: boolean) {
  const r = renderHttpRoute(app(), { traffic: plan, candidateReachable });
  const def = r.spec.rules.find((x) => x.name === 'default')!;
  const setCookieOf = (b: (typeof def.backendRefs)[number]) => b.filters.flatMap((f) => (f.type === 'ResponseHeaderModifier' ? f.responseHeaderModifier.add : [])).find((h) => h.name === 'Set-Cookie')?.value;
  return {
    rules: r.spec.rules.filter((x) => x.name !== 'default').map((x) => [x.name, versionIn(x.matches[0]!.headers?.find((h) => h.name === 'cookie')?.value ?? ''), x.backendRefs[0]!.name]),
    split: def.backendRefs.map((b) => [b.name, b.weight, versionSet(setCookieOf(b))]),
  };
}

describe('sticky sessions, as both routers render them', () => {
  const phases: Array<{ it: string; plan: TrafficPlan; reachable?: boolean; vs: ReturnType<typeof vsShape>; route: ReturnType<typeof routeShape> }> = [
    {
      it: 'one version: no session rule, and its responses start sessions on it (so they stay on it once a canary begins)',
      plan: { stable: S },
      vs: { rules: [], split: [[HOSTS.defaultHost, 100, S.version]] },
      route: { rules: [], split: [[S.revision, 100, S.version]] },
    },
    {
      it: 'a canary at 20%: header rule first, then a session rule per version, then the split, each target setting its own version',
      plan: { stable: S, candidate: { ...C, percent: 20, ready: true } },
      vs: {
        rules: [['candidate-by-header', undefined, HOSTS.candidateHost], ['session-stable', S.version, HOSTS.stableHost], ['session-candidate', C.version, HOSTS.candidateHost]],
        split: [[HOSTS.stableHost, 80, S.version], [HOSTS.candidateHost, 20, C.version]],
      },
      route: {
        rules: [['candidate-by-header', undefined, C.revision], ['session-stable', S.version, S.revision], ['session-candidate', C.version, C.revision]],
        split: [[S.revision, 80, S.version], [C.revision, 20, C.version]],
      },
    },
    {
      it: 'a candidate at 0% (header testing): its sessions go to stable (no rule for it), new ones start on stable',
      plan: { stable: S, candidate: { ...C, percent: 0, ready: true } },
      vs: { rules: [['candidate-by-header', undefined, HOSTS.candidateHost]], split: [[HOSTS.defaultHost, 100, S.version]] },
      route: { rules: [['candidate-by-header', undefined, C.revision]], split: [[S.revision, 100, S.version]] },
    },
    {
      it: 'a candidate that is not ready (or failed, rolled back): nothing reaches it, its sessions included',
      plan: { stable: S, candidate: { ...C, percent: 20, ready: false } },
      vs: { rules: [], split: [[HOSTS.defaultHost, 100, S.version]] },
      route: { rules: [], split: [[S.revision, 100, S.version]] },
    },
    {
      it: 'a candidate the route may not reach (not warm, parked): the same',
      plan: { stable: S, candidate: { ...C, percent: 20, ready: true } }, reachable: false,
      vs: { rules: [], split: [[HOSTS.defaultHost, 100, S.version]] },
      route: { rules: [], split: [[S.revision, 100, S.version]] },
    },
    {
      it: 'promoted: everyone on the new stable, whose cookie stays valid; the old version\'s cookie matches nothing',
      plan: { stable: C, candidate: { ...C, percent: 100, ready: true } },
      vs: { rules: [], split: [[HOSTS.defaultHost, 100, C.version]] },
      route: { rules: [], split: [[C.revision, 100, C.version]] },
    },
    {
      it: 'the first version before anything is stable starts sessions on it',
      plan: { initial: S },
      vs: { rules: [], split: [[HOSTS.defaultHost, 100, S.version]] },
      route: { rules: [], split: [[S.revision, 100, S.version]] },
    },
  ];
  for (const p of phases) {
    it(`VirtualService: ${p.it}`, () => assert.deepEqual(vsShape(p.plan, p.reachable ?? true), p.vs));
    it(`HTTPRoute: ${p.it}`, () => assert.deepEqual(routeShape(p.plan, p.reachable ?? true), p.route));
  }

  it('renders the canary at 20% on both routers (golden)', () => {
    const plan: TrafficPlan = { stable: S, candidate: { ...C, percent: 20, ready: true } };
    assertGolden(golden('virtual-service-sticky'), renderVirtualService(app({ mirrorPercent: 10 }), { localGateway: 'knative-local-gateway.istio-system.svc.cluster.local', candidateReady: true, ...HOSTS, traffic: plan, candidateRevision: C.revision }));
    assertGolden(golden('http-route-sticky'), renderHttpRoute(app({ mirrorPercent: 10 }), { traffic: plan, candidateReachable: true }));
  });

  it('mirrors stable traffic wherever it is routed: its session rule and the split, never the candidate\'s sessions', () => {
    const plan: TrafficPlan = { stable: S, candidate: { ...C, percent: 20, ready: true } };
    const vs = renderVirtualService(app({ mirrorPercent: 10 }), { localGateway: 'gw', candidateReady: true, ...HOSTS, traffic: plan, candidateRevision: C.revision });
    assert.deepEqual(vs.spec!.http!.map((h) => [h.name, h.mirrorPercentage?.value]), [['candidate-by-header', undefined], ['session-stable', 10], ['session-candidate', undefined], ['default', 10]]);
    const route = renderHttpRoute(app({ mirrorPercent: 10 }), { traffic: plan, candidateReachable: true });
    assert.deepEqual(route.spec.rules.map((r) => [r.name, r.filters?.[0]?.requestMirror.percent]), [['candidate-by-header', undefined], ['session-stable', 10], ['session-candidate', undefined], ['default', 10]]);
  });

  it('is off by default: no cookie is set and the VirtualService leaves the split to Knative', () => {
    const plain = containerApp({ ingress: { hosts: ['shop.example.com'] } });
    const plan: TrafficPlan = { stable: S, candidate: { ...C, percent: 20, ready: true } };
    const vs = renderVirtualService(plain, { localGateway: 'gw', candidateReady: true, ...HOSTS, traffic: plan });
    assert.deepEqual(vs.spec!.http!.map((h) => [h.name, h.rewrite?.authority, h.route?.length, h.route?.[0]?.headers]), [['default', HOSTS.defaultHost, 1, undefined]]);
  });
});
