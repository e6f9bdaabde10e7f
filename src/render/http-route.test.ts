import assert from 'node:assert/strict';
import { assertGolden } from '../../test/support/golden.ts';
import { containerApp } from '../testing/apps.ts';
import { renderHttpRoute, type HttpRoute } from './http-route.ts';
import type { TrafficPlan } from './traffic.ts';

const golden = (name: string) => new URL(`./testdata/${name}.golden.yaml`, import.meta.url).pathname;

const canary: TrafficPlan = {
  stable: { revision: 'shop-00001-aaaa', version: 'v1' },
  candidate: { revision: 'shop-00002-bbbb', version: 'v2', percent: 20, ready: true },
};
const weights = (r: HttpRoute, rule = 'default') => r.spec.rules.find((x) => x.name === rule)?.backendRefs.map((b) => [b.name, b.weight]);

describe('render HTTPRoute', () => {
  it('renders parentRefs, hostnames, header routes to the candidate, the weighted split and the timeout (golden)', () => {
    const app = containerApp({
      ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'], timeout: '1m30s' },
      rollout: { canaryPercent: 20, match: [{ header: 'X-Canary', exact: 'always' }, { header: 'x-user', prefix: 'qa.' }] },
    });
    const route = renderHttpRoute(app, { traffic: canary, candidateReachable: true });
    assertGolden(golden('http-route'), route);
    assert.deepEqual(weights(route), [['shop-00001-aaaa', 80], ['shop-00002-bbbb', 20]]);
    assert.deepEqual(route.spec.rules[0]!.matches.map((m) => m.headers), [
      [{ type: 'Exact', name: 'x-canary', value: 'always' }],
      [{ type: 'RegularExpression', name: 'x-user', value: 'qa\\..*' }],
    ], 'each header entry is its own match (ORed); a prefix is an escaped RE2 full match');
  });

  it('mirrors a percentage of the default rule to the candidate revision\'s private Service (golden)', () => {
    const app = containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] }, rollout: { canaryPercent: 0, mirrorPercent: 25 } });
    const route = renderHttpRoute(app, { traffic: { ...canary, candidate: { ...canary.candidate!, percent: 0 } }, candidateReachable: true });
    assertGolden(golden('http-route-mirror'), route);
    assert.deepEqual(weights(route), [['shop-00001-aaaa', 100]], 'a candidate at 0% gets no weighted backend, only the copies');
    assert.deepEqual(route.spec.rules.at(-1)!.filters, [{ type: 'RequestMirror', requestMirror: { backendRef: { group: '', kind: 'Service', name: 'shop-00002-bbbb-private', port: 80 }, percent: 25 } }]);
  });

  const unreachable: Array<{ what: string; traffic: TrafficPlan; candidateReachable: boolean }> = [
    { what: 'while the candidate may not be reached (not warm, parked, or its route not admitted)', traffic: canary, candidateReachable: false },
    { what: 'while the candidate is not ready', traffic: { ...canary, candidate: { ...canary.candidate!, ready: false } }, candidateReachable: true },
  ];
  for (const c of unreachable) {
    it(`sends everything to stable, with no header rule and no mirror, ${c.what}`, () => {
      const app = containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] }, rollout: { canaryPercent: 20, mirrorPercent: 10, match: [{ header: 'x-canary', exact: '1' }] } });
      const route = renderHttpRoute(app, { traffic: c.traffic, candidateReachable: c.candidateReachable });
      assert.deepEqual(route.spec.rules.map((r) => r.name), ['default']);
      assert.deepEqual(weights(route), [['shop-00001-aaaa', 100]]);
      assert.equal(route.spec.rules[0]!.filters, undefined);
    });
  }

  it('routes the first version\'s revision alone before anything is stable, and nothing before it has a revision', () => {
    const app = containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] } });
    assert.deepEqual(weights(renderHttpRoute(app, { traffic: { initial: { revision: 'shop-00001-aaaa', version: 'v1' } }, candidateReachable: false })), [['shop-00001-aaaa', 100]]);
    assert.deepEqual(weights(renderHttpRoute(app, { traffic: { initial: { version: 'v1' } }, candidateReachable: false })), []);
  });

  it('promotes: the promoted candidate is the stable revision and takes all the traffic', () => {
    const app = containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] } });
    const promoted: TrafficPlan = { stable: { revision: 'shop-00002-bbbb', version: 'v2' }, candidate: { revision: 'shop-00002-bbbb', version: 'v2', percent: 100, ready: true } };
    assert.deepEqual(weights(renderHttpRoute(app, { traffic: promoted, candidateReachable: true })), [['shop-00002-bbbb', 100]]);
  });

  it('writes every field the CRD would default, so the live route equals ours', () => {
    const app = containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['gw-ns/public', 'gw-ns/internal'] } });
    const route = renderHttpRoute(app, { traffic: canary, candidateReachable: true });
    assert.deepEqual(route.spec.parentRefs, [
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'gw-ns', name: 'public' },
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'gw-ns', name: 'internal' },
    ]);
    for (const b of route.spec.rules.flatMap((r) => r.backendRefs)) assert.deepEqual([b.group, b.kind, b.port], ['', 'Service', 80]);
    assert.deepEqual(route.spec.rules[0]!.matches, [{ path: { type: 'PathPrefix', value: '/' } }]);
  });
});
