// What the Gateway's proxy would receive for the HTTPRoutes the gateway-api
// router writes (issue 24: route assertions read the Envoy configuration istiod
// generates). Unlike the Istio router, whose split stays in Knative, an
// HTTPRoute carries the per-revision weights itself, so they are read here in
// Envoy's weighted_clusters, beside the header route, the mirror, the timeout
// and the Knative-Serving-Revision header each revision's requests carry. No
// Envoy runs and no request is proxied (test/support/envoy-config.ts).
//
// Binding a proxy to a manually deployed Gateway (one Hostname address, no
// Deployment from istiod): the Istio Gateway istiod generates for each listener
// has no selector but the annotation internal.istio.io/gateway-service = the
// address's hostname (pilot/pkg/config/kube/gateway/gateway_collection.go, the
// Gateway collection; the hostname from conversion.go extractGatewayServices),
// and PushContext.mergeGateways (pilot/pkg/model/push_context.go) applies it
// only to a proxy with a ServiceTarget of that Service in the Gateway's
// namespace, translating the listener port through the Service's port to its
// targetPort (model/gateway.go resolvePorts: no port in the Service, no
// listener). The least that gives xds-dump's proxy such a target is a Service
// of that name whose selector its labels match: with no Pod and no
// WorkloadEntry at the proxy's IP, the kube registry falls back to the proxy's
// own labels and namespace (serviceregistry/kube/controller/controller.go
// GetProxyServiceTargets, then GetProxyServiceTargetsFromMetadata). No Pod,
// WorkloadEntry or endpoint is needed.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { app, applyApp, condition, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { gatewayWithProxy, serviceCluster, untilProxy, virtualHostsFor, type EnvoyRoute, type ProxyConfig, type ProxyIdentity } from '../support/envoy-config.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS } from '../support/wait.ts';

/** A revision's start on the real Knative, generous for a loaded machine (as canary.test.ts). */
/** A pod asking for more CPU than any rig node has stays Pending, so Knative never makes its revision Ready. */
const UNSCHEDULABLE_CPU = '1000';
const image = (tag: string) => `ghcr.io/acme/shop:${tag}`;
const noRejection = (a: ServerlessApp) => condition(a, 'Ready')?.reason !== 'ApplyRejected';

const weightedClusters = (r: EnvoyRoute | undefined) => Object.fromEntries(r?.route?.weighted_clusters?.clusters.map((c) => [c.name, c.weight]) ?? []);

/** Envoy's request_headers_to_add (proto field names), on a route or on one of its weighted clusters. */
type HeadersToAdd = { request_headers_to_add?: Array<{ header: { key: string; value: string } }> };
/**
 * The Knative-Serving-Revision header Envoy sets on requests to `cluster` by route `r`: the backendRef's
 * RequestHeaderModifier, on the weighted cluster, or on the route when it has one backend.
 */
function revisionHeader(r: EnvoyRoute, cluster: string): string | undefined {
  const weighted = r.route?.weighted_clusters?.clusters.find((c) => c.name === cluster) as HeadersToAdd | undefined;
  const holder = weighted ?? (r.route?.cluster === cluster ? r as HeadersToAdd : undefined);
  return holder?.request_headers_to_add?.find((h) => h.header.key.toLowerCase() === 'knative-serving-revision')?.header.value;
}


describe('the Envoy routes istiod generates from the operator\'s HTTPRoutes, on the Gateway\'s proxy (integration)', function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let gwNs: string;
  let gatewayProxy: ProxyIdentity;

  before(async function () {
    if (!testEnv().dataPlane?.istio) this.skip();
    gwNs = await freshNamespace('gwproxy');
    ({ proxy: gatewayProxy } = await gatewayWithProxy('gateway-api', gwNs));
    op = await startOperator({ router: 'gateway-api', allowedGateways: [`${gwNs}/*`] });
  });
  after(async () => { await op?.stop(); });

  const spec = (host: string, tag: string, timeout: string, rollout?: AppSpec['rollout'], cpu?: string): AppSpec => ({
    container: { image: image(tag), port: 8080, ...(cpu ? { resources: { requests: { cpu } } } : {}) },
    scaling: { minScale: 0 }, ingress: { hosts: [host], gateways: [`${gwNs}/edge`], timeout }, ...(rollout ? { rollout } : {}),
  });

  it('a canary on the Gateway\'s listener: the header route to the candidate first, the 80/20 split per revision, each revision\'s Knative headers, the mirror at its percentage, the timeout and istiod\'s default retries; 100 to the candidate once promoted', async () => {
    const ns = await freshNamespace('gwproxy-app');
    const host = `shop.${ns}.example.com`;
    await applyApp(app(ns, 'shop', spec(host, '1', '10s')));
    const v1 = await waitForApp(ns, 'shop', (a) => a.status?.phase === 'Stable' && !!a.status.versions?.stable?.ready, 'v1 ready on Knative', READY_MS);
    const stable = v1.status!.versions!.stable!.revision!;

    await applyApp(app(ns, 'shop', spec(host, '2', '10s', { canaryPercent: 20, mirrorPercent: 25, match: [{ header: 'X-Canary', exact: 'yes' }] })));
    const a = await waitForApp(ns, 'shop', (x) => !noRejection(x) || (!!x.status?.versions?.candidate?.ready && x.status.canary?.trafficPercent === 20), 'the candidate ready at 20%', READY_MS);
    assert.ok(noRejection(a), `the canary edit was refused: ${condition(a, 'Ready')?.message}`);
    const candidate = a.status!.versions!.candidate!.revision!;

    const { config, found: vh } = await untilProxy('the gateway\'s virtual host for the app with the header route and the split', gatewayProxy, (c) => {
      const [v] = virtualHostsFor(c, host);
      return v?.routes.length === 2 && weightedClusters(v.routes[1])[serviceCluster(ns, candidate)] === 20 ? v : undefined;
    });
    // The Service's port 80 is the Gateway listener's; Envoy listens on its targetPort (model/gateway.go resolvePorts).
    assert.deepEqual(config.listeners.filter((l) => l.port === 80 || l.port === 8080).map((l) => [l.port, l.routeConfigNames]), [[8080, ['http.8080']]], 'the listener on the Service\'s targetPort');
    assert.deepEqual(virtualHostsFor(config, host).map((v) => v.routeConfig), ['http.8080'], 'one virtual host for the app\'s hostname, on the Gateway\'s listener');
    const [byHeader, byDefault] = vh.routes as [EnvoyRoute, EnvoyRoute];

    assert.deepEqual(byHeader.match.headers, [{ name: 'x-canary', string_match: { exact: 'yes' } }], 'the header route comes first');
    assert.equal(byHeader.route?.cluster, serviceCluster(ns, candidate), 'to the candidate revision only');
    assert.equal(byHeader.route?.weighted_clusters, undefined);

    assert.equal(byDefault.match.prefix, '/');
    assert.deepEqual(byDefault.match.headers ?? [], []);
    assert.deepEqual(weightedClusters(byDefault), { [serviceCluster(ns, stable)]: 80, [serviceCluster(ns, candidate)]: 20 }, 'one cluster per revision, weighted as the split');
    assert.deepEqual(byDefault.route?.request_mirror_policies?.map((m) => [m.cluster, m.runtime_fraction?.default_value]), [
      [`outbound|80||${candidate}-private.${ns}.svc.cluster.local`, { numerator: 250_000, denominator: 'MILLION' }],
    ], '25% of the default route copied to the candidate revision\'s private Service');
    for (const r of [byHeader, byDefault]) {
      assert.equal(r.route?.timeout, '10s');
      // The router refuses spec.ingress.retries (rules[].retry is experimental in Gateway API v1.6.3), yet a route
      // without retry gets istiod's default policy: 2 retries (pilot/pkg/networking/core/route/retry/retry.go DefaultPolicy).
      assert.deepEqual([r.route?.retry_policy?.num_retries, r.route?.retry_policy?.retry_on], [2, 'connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes']);
    }
    // What lets Knative's activator find the revision while it is in the path (render/http-route.ts).
    assert.deepEqual([revisionHeader(byHeader, serviceCluster(ns, candidate)), revisionHeader(byDefault, serviceCluster(ns, stable)), revisionHeader(byDefault, serviceCluster(ns, candidate))],
      [candidate, stable, candidate], `each revision's requests carry its Knative-Serving-Revision header: ${JSON.stringify(vh.routes)}`);
    const missing = [serviceCluster(ns, stable), serviceCluster(ns, candidate)].filter((c) => !config.clusters.includes(c));
    assert.deepEqual(missing, [], 'the gateway proxy has a cluster for every revision it routes to');

    await applyApp(app(ns, 'shop', spec(host, '2', '10s', { canaryPercent: 100 })));
    const promoted = await waitForApp(ns, 'shop', (x) => !noRejection(x) || condition(x, 'Promoted')?.status === 'True', 'promoted', 120_000);
    assert.ok(noRejection(promoted), condition(promoted, 'Ready')?.message);
    const { found: after } = await untilProxy('the gateway\'s routes for the app all to the promoted revision', gatewayProxy, (c) => {
      const [v] = virtualHostsFor(c, host);
      return v?.routes.length === 1 && v.routes[0]!.route?.request_mirror_policies === undefined ? v : undefined;
    });
    // One backend at weight 100 is a plain cluster in Envoy: istiod writes weighted_clusters only for two or more.
    assert.equal(after.routes[0]!.route?.cluster ?? Object.keys(weightedClusters(after.routes[0])).join(), serviceCluster(ns, candidate));
    assert.ok(!JSON.stringify(after).includes(`${stable}.${ns}`), 'the old stable revision is in no route');
  });

  it('a rollback with canaryPercent 0 takes the candidate out of every route of the Gateway\'s proxy, and the next version rolls out after it', async () => {
    const ns = await freshNamespace('gwproxy-app');
    const host = `cart.${ns}.example.com`;
    /** The clusters the app's routes on the Gateway's proxy send to, with their weights (a plain cluster: 100). */
    const routed = (c: ProxyConfig) => {
      const [v] = virtualHostsFor(c, host);
      return v ? Object.assign({}, ...v.routes.map((r) => (r.route?.cluster ? { [r.route.cluster]: 100 } : weightedClusters(r)))) as Record<string, number> : undefined;
    };
    await applyApp(app(ns, 'cart', spec(host, '1', '10s')));
    const v1 = await waitForApp(ns, 'cart', (a) => a.status?.phase === 'Stable' && !!a.status.versions?.stable?.ready, 'v1 ready on Knative', READY_MS);
    const stable = v1.status!.versions!.stable!.revision!;

    await applyApp(app(ns, 'cart', spec(host, '2', '10s', { canaryPercent: 30 })));
    const a = await waitForApp(ns, 'cart', (x) => !noRejection(x) || (!!x.status?.versions?.candidate?.ready && x.status.canary?.trafficPercent === 30), 'the candidate ready at 30%', READY_MS);
    assert.ok(noRejection(a), condition(a, 'Ready')?.message);
    const candidate = a.status!.versions!.candidate!.revision!;
    await untilProxy('the gateway\'s split 70/30', gatewayProxy, (c) => {
      const r = routed(c);
      return r?.[serviceCluster(ns, candidate)] === 30 && r[serviceCluster(ns, stable)] === 70 ? r : undefined;
    });

    await applyApp(app(ns, 'cart', spec(host, '2', '10s', { canaryPercent: 0 })));
    const back = await waitForApp(ns, 'cart', (x) => !noRejection(x) || (x.status?.phase === 'RolledBack' && x.status.canary?.trafficPercent === 0), 'rolled back', 120_000);
    assert.ok(noRejection(back), condition(back, 'Ready')?.message);
    const { config } = await untilProxy('the gateway\'s routes all to the stable revision', gatewayProxy, (c) => {
      const r = routed(c);
      return r && Object.keys(r).length === 1 && r[serviceCluster(ns, stable)] === 100 ? r : undefined;
    });
    assert.ok(!JSON.stringify(virtualHostsFor(config, host)).includes(candidate), 'the rolled-back candidate is in no route');

    await applyApp(app(ns, 'cart', spec(host, '3', '10s')));
    const v3 = await waitForApp(ns, 'cart', (x) => !noRejection(x) || (x.status?.phase === 'Stable' && x.status.versions?.stable?.image === image('3')), 'v3 promoted', READY_MS);
    assert.ok(noRejection(v3), condition(v3, 'Ready')?.message);
    const next = v3.status!.versions!.stable!.revision!;
    await untilProxy('the gateway\'s routes all to v3\'s revision', gatewayProxy, (c) => {
      const r = routed(c);
      return r && Object.keys(r).length === 1 && r[serviceCluster(ns, next)] === 100 ? r : undefined;
    });
  });

  it('a candidate that is not ready is in no route of the Gateway\'s proxy: no header route, no weight, no mirror', async () => {
    const ns = await freshNamespace('gwproxy-app');
    const host = `api.${ns}.example.com`;
    await applyApp(app(ns, 'api', spec(host, '1', '10s')));
    const v1 = await waitForApp(ns, 'api', (a) => a.status?.phase === 'Stable' && !!a.status.versions?.stable?.ready, 'v1 ready on Knative', READY_MS);
    const stable = v1.status!.versions!.stable!.revision!;
    // The candidate never turns ready; the timeout changes with it, so routes carrying 7s are those istiod made after the candidate appeared.
    await applyApp(app(ns, 'api', spec(host, '2', '7s', { canaryPercent: 50, mirrorPercent: 50, match: [{ header: 'x-canary', exact: 'yes' }] }, UNSCHEDULABLE_CPU)));
    const a = await waitForApp(ns, 'api', (x) => x.status?.versions?.candidate?.revision !== undefined, 'candidate tracked', SETTLE_MS);
    const candidate = a.status!.versions!.candidate!.revision!;
    assert.ok(!a.status?.versions?.candidate?.ready, 'the candidate is not ready');

    const { config, found: vh } = await untilProxy('the gateway\'s route for the app at the new timeout', gatewayProxy, (c) => {
      const [v] = virtualHostsFor(c, host);
      return v?.routes.length && v.routes.every((r) => r.route?.timeout === '7s') ? v : undefined;
    });
    assert.deepEqual(vh.routes.map((r) => ({ prefix: r.match.prefix, headers: r.match.headers ?? [], cluster: r.route?.cluster ?? weightedClusters(r), mirror: r.route?.request_mirror_policies })),
      [{ prefix: '/', headers: [], cluster: serviceCluster(ns, stable), mirror: undefined }], 'the default route only, all to the stable revision');
    assert.ok(!JSON.stringify(config.routes).includes(`${candidate}`), 'the candidate revision (public or private Service) is in no route configuration');
  });
});
