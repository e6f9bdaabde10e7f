import assert from 'node:assert/strict';
import { answerProbe, HASH_HEADER, latestConfig, type GatewayConfig, type ProbeRequest } from './gateway-probe.ts';

// The shape istiod gives the ingress gateway for net-gateway-api's HTTPRoute of
// a cluster-local host: the probe route (the K-Network-Hash match, the hash set
// on the request) before the traffic route (the split per revision).
const HASH = '5d0f1c';
const config = (hash = HASH, clusters = ['outbound|80||shop-00001.ns.svc.cluster.local', 'outbound|80||shop-00002.ns.svc.cluster.local']): GatewayConfig => ({
  listeners: [{ name: '0.0.0.0_8081', port: 8081, routeConfigNames: ['http.8081'] }, { name: '0.0.0.0_80', port: 80, routeConfigNames: ['http.80'] }],
  clusters,
  routes: [{
    name: 'http.8081',
    virtual_hosts: [{
      name: 'shop.ns.svc.cluster.local:80',
      domains: ['shop.ns.svc.cluster.local', 'shop.ns.svc.cluster.local:*'],
      routes: [{
        match: { prefix: '/', headers: [{ name: 'k-network-hash', string_match: { exact: 'override' } }] },
        request_headers_to_add: [{ header: { key: 'K-Network-Hash', value: hash }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }],
        route: { weighted_clusters: { clusters: [
          { name: 'outbound|80||shop-00001.ns.svc.cluster.local', weight: 80, request_headers_to_add: [{ header: { key: 'Knative-Serving-Revision', value: 'shop-00001' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }] },
          { name: 'outbound|80||shop-00002.ns.svc.cluster.local', weight: 20 },
        ] } },
      }, {
        match: { prefix: '/' },
        route: { weighted_clusters: { clusters: [{ name: 'outbound|80||shop-00001.ns.svc.cluster.local', weight: 80 }, { name: 'outbound|80||shop-00002.ns.svc.cluster.local', weight: 20 }] } },
      }],
    }],
  }, { name: 'http.80', virtual_hosts: [] }],
});
const probe = (over: Partial<ProbeRequest> = {}): ProbeRequest => ({
  port: 8081, host: 'shop.ns.svc.cluster.local', path: '/',
  headers: { 'k-network-probe': 'probe', 'k-network-hash': 'override', 'user-agent': 'Knative-Ingress-Probe' }, ...over,
});

describe('the SIMULATED gateway data plane answering Knative\'s probes from the proxy\'s configuration', () => {
  it('answers a probe the programmed route matches with the hash the route sets, as the revision\'s probe handler echoes it', () => {
    const a = answerProbe(config(), probe());
    assert.equal(a.status, 200, a.why);
    assert.deepEqual(a.headers, { [HASH_HEADER]: HASH });
  });

  it('answers with whatever hash the proxy holds: an old configuration gives the old hash, which the prober rejects', () => {
    assert.deepEqual(answerProbe(config('old'), probe()).headers, { [HASH_HEADER]: 'old' });
  });

  it('404 for a host, port or path the proxy has no route for, as Envoy (the prober retries those)', () => {
    assert.equal(answerProbe(config(), probe({ host: 'other.ns.svc.cluster.local' })).status, 404);
    assert.equal(answerProbe(config(), probe({ port: 80 })).status, 404);
    assert.equal(answerProbe(config(), probe({ port: 9999 })).status, 404);
  });

  it('matches the host with a port, and case-insensitively', () => {
    assert.equal(answerProbe(config(), probe({ host: 'Shop.ns.svc.cluster.local:80' })).status, 200);
  });

  it('503 when the route\'s cluster is unknown to the proxy', () => {
    assert.equal(answerProbe(config(HASH, []), probe()).status, 503);
  });

  it('a request without Knative\'s probe header takes the traffic route, and nothing behind it answers (503, named SIMULATED)', () => {
    const a = answerProbe(config(), probe({ headers: {} }));
    assert.equal(a.status, 503);
    assert.match(a.why, /SIMULATED/);
  });

  it('a hash header the route appends (Envoy\'s default action) rather than sets ends as two values, which the prober rejects', () => {
    const c = config();
    c.routes[0]!.virtual_hosts![0]!.routes![0]!.request_headers_to_add = [{ header: { key: 'K-Network-Hash', value: HASH } }];
    assert.deepEqual(answerProbe(c, probe()).headers, { [HASH_HEADER]: `override,${HASH}` });
  });
});

describe('the gateway configuration the SIMULATED data plane answers from', () => {
  it('is the newest the stream gave; a probe before the first waits for it', async () => {
    const source = latestConfig();
    const early = source.current();
    source.update(config('first'));
    assert.deepEqual(answerProbe(await early, probe()).headers, { [HASH_HEADER]: 'first' });
    source.update(config('second'));
    assert.deepEqual(answerProbe(await source.current(), probe()).headers, { [HASH_HEADER]: 'second' });
  });
});
