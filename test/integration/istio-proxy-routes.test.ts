// What a proxy would receive for the VirtualServices the operator writes: the
// rig's istiod turns them into Envoy route configurations, read here as a
// gateway proxy and as sidecars with Istio's own ADS client
// (test/support/envoy-config.ts). No Envoy runs and no request is proxied:
// this is the configuration, on the real Knative revisions.
//
// The operator's routes all go to Knative's local gateway with the authority
// rewritten to the target's cluster-local host; the split per revision
// (canaryPercent) is Knative's, in its own KIngress, which Knative's network
// ingress programs into the local gateway. The tests below assert that no
// weighted split appears in the operator's routes; the per-revision weights
// are read on the local gateway's proxy, where the real net-gateway-api and
// istiod put them (knative-ingress-proxy.test.ts, with ENVTEST_NETGW=on).
import assert from 'node:assert/strict';
import { KubernetesObjectApi } from '@kubernetes/client-node';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { parseConfig } from '../../src/config.ts';
import { knativeWorkload } from '../../src/planner/workloads.ts';
import { renderVirtualService } from '../../src/render/virtual-service.ts';
import { app, applyApp, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { ensureKnativeLocalGateway } from '../support/knative-local-gateway.ts';
import { proxyConfig, untilProxy, routedClusters, virtualHostsFor, type EnvoyRoute, type EnvoyVirtualHost } from '../support/envoy-config.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS } from '../support/wait.ts';

/** A revision's start on the real Knative, generous for a loaded machine (as canary.test.ts). */
/** The operator's default local gateway (config.ts), as the cluster Envoy routes to. */
const LOCAL_GATEWAY = 'knative-local-gateway.istio-system.svc.cluster.local';
const LOCAL_GATEWAY_CLUSTER = `outbound|80||${LOCAL_GATEWAY}`;
/** A pod asking for more CPU than any rig node has stays Pending, so Knative never makes its revision Ready. */
const UNSCHEDULABLE_CPU = '1000';
const image = (tag: string) => `ghcr.io/acme/shop:${tag}`;


/** The VirtualService the operator renders for `a` in `namespace`, no candidate (as istio-validation.test.ts). */
function rendered(a: ServerlessApp, namespace: string) {
  const placed: ServerlessApp = { ...a, metadata: { ...a.metadata, namespace, uid: '00000000-0000-4000-8000-000000000001' } };
  return renderVirtualService(placed, { localGateway: parseConfig([], {}).localGateway, candidateReady: false, ...knativeWorkload(true).hosts(placed), traffic: {}, inForce: [], routesReady: true });
}

const headerNames = (r: EnvoyRoute) => (r.match.headers ?? []).map((h) => h.name);
const noWeights = (vh: EnvoyVirtualHost) => vh.routes.every((r) => !r.route?.weighted_clusters);

describe('the Envoy routes istiod generates from the operator\'s VirtualServices (integration)', function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let api: KubernetesObjectApi;

  before(async function () {
    if (!testEnv().dataPlane?.istio) this.skip();
    api = KubernetesObjectApi.makeApiClient(testEnv().kubeConfig());
    await ensureKnativeLocalGateway();
    op = await startOperator();
  });
  after(async () => {
    await op?.stop();
  });

  it('a gateway-bound canary: the header route before the default, the authority rewrites, the mirror at its percentage, timeout and retries, on the allowed gateway only', async () => {
    const ns = await freshNamespace('proxyroutes');
    const host = `shop.${ns}.example.com`;
    // A Gateway of the app's own namespace (allowed as "{namespace}/*"), selecting a gateway proxy of this test only.
    const gatewayLabels = { 'serverlessapp.io/test-gateway': ns };
    await api.create({
      apiVersion: 'networking.istio.io/v1', kind: 'Gateway', metadata: { name: 'edge', namespace: ns },
      spec: { selector: gatewayLabels, servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] },
    } as never);
    const ingress = { hosts: [host], gateways: [`${ns}/edge`], timeout: '10s', retries: { attempts: 2, perTryTimeout: '3s', retryOn: 'connect-failure,503' } };
    const spec = (tag: string, rollout?: AppSpec['rollout']): AppSpec => ({ container: { image: image(tag), port: 8080 }, scaling: { minScale: 0 }, ingress, ...(rollout ? { rollout } : {}) });

    await applyApp(app(ns, 'shop', spec('1')));
    await waitForApp(ns, 'shop', (a) => a.status?.phase === 'Stable' && !!a.status.versions?.stable?.ready, 'v1 ready on Knative', READY_MS);
    await applyApp(app(ns, 'shop', spec('2', { canaryPercent: 20, mirrorPercent: 25, match: [{ header: 'X-Canary', exact: 'yes' }] })));
    const a = await waitForApp(ns, 'shop', (x) => !!x.status?.versions?.candidate?.ready && x.status.canary?.trafficPercent === 20, 'the candidate ready at 20%', READY_MS);
    const candidate = a.status!.versions!.candidate!.revision!;

    const gateway = { type: 'router', namespace: ns, labels: gatewayLabels } as const;
    const { config, found: vh } = await untilProxy('the gateway\'s routes for the app with the header route and the mirror', gateway, (c) => {
      const [v] = virtualHostsFor(c, host);
      return v?.routes.length === 2 && v.routes[1]!.route?.request_mirror_policies ? v : undefined;
    });
    assert.deepEqual(virtualHostsFor(config, host).map((v) => v.routeConfig), ['http.80'], 'one virtual host, on the Gateway\'s port 80 server');
    const [byHeader, byDefault] = vh.routes as [EnvoyRoute, EnvoyRoute];

    assert.deepEqual(byHeader.match.headers, [{ name: 'x-canary', string_match: { exact: 'yes' } }], 'the header route comes first, on the header lower-cased');
    assert.equal(byHeader.route?.cluster, LOCAL_GATEWAY_CLUSTER);
    assert.equal(byHeader.route?.host_rewrite_literal, `candidate-shop.${ns}.svc.cluster.local`, 'to the candidate\'s tag host');

    assert.equal(byDefault.match.prefix, '/');
    assert.deepEqual(headerNames(byDefault), []);
    assert.equal(byDefault.route?.cluster, LOCAL_GATEWAY_CLUSTER);
    assert.equal(byDefault.route?.host_rewrite_literal, `shop.${ns}.svc.cluster.local`);
    // Istio also turns Envoy's "-shadow" Host suffix off (DISABLE_SHADOW_HOST_SUFFIX, true by default in pilot/pkg/features/pilot.go): the copy keeps its Host.
    assert.deepEqual(byDefault.route?.request_mirror_policies, [{
      cluster: `outbound|80||${candidate}-private.${ns}.svc.cluster.local`,
      runtime_fraction: { default_value: { numerator: 250_000, denominator: 'MILLION' } },
      trace_sampled: false, disable_shadow_host_suffix_append: true,
    }], '25% of the default route copied to the candidate revision\'s private Service');

    for (const r of [byHeader, byDefault]) {
      assert.equal(r.route?.timeout, '10s');
      assert.equal(r.route?.retry_policy?.num_retries, 2);
      assert.equal(r.route?.retry_policy?.per_try_timeout, '3s');
      // Istio moves status codes out of retryOn into retriable_status_codes (retry.go parseRetryOn).
      assert.equal(r.route?.retry_policy?.retry_on, 'connect-failure,retriable-status-codes');
      assert.deepEqual(r.route?.retry_policy?.retriable_status_codes, [503]);
    }
    assert.ok(noWeights(vh), 'no per-revision split in the operator\'s routes: Knative splits behind its local gateway');
    const missing = routedClusters({ ...config, routes: [{ name: 'http.80', virtual_hosts: [vh] }] }).filter((c) => !config.clusters.includes(c));
    assert.deepEqual(missing, [], 'every cluster the app\'s routes send or mirror to is one the gateway proxy has');

    // Bound to the Gateway only: a sidecar, even in the app's namespace, has no route for the host.
    const sidecar = await proxyConfig({ type: 'sidecar', namespace: ns });
    assert.deepEqual(virtualHostsFor(sidecar, host), []);
  });

  it('a mesh route reaches the sidecars of its own namespace only, and a candidate that is not ready is in none of its routes', async () => {
    const ns = await freshNamespace('proxyroutes');
    const host = `api.${ns}.example.com`;
    const spec = (tag: string, timeout: string, rollout?: AppSpec['rollout'], cpu?: string): AppSpec => ({
      container: { image: image(tag), port: 8080, ...(cpu ? { resources: { requests: { cpu } } } : {}) },
      scaling: { minScale: 0 }, ingress: { hosts: [host], timeout }, ...(rollout ? { rollout } : {}),
    });
    await applyApp(app(ns, 'api', spec('1', '10s')));
    await waitForApp(ns, 'api', (a) => a.status?.phase === 'Stable' && !!a.status.versions?.stable?.ready, 'v1 ready on Knative', READY_MS);
    // The candidate never turns ready; the timeout changes with it, so the routes that carry 7s are those istiod made after the candidate appeared.
    await applyApp(app(ns, 'api', spec('2', '7s', { canaryPercent: 50, mirrorPercent: 50, match: [{ header: 'x-canary', exact: 'yes' }] }, UNSCHEDULABLE_CPU)));
    const a = await waitForApp(ns, 'api', (x) => x.status?.versions?.candidate?.revision !== undefined, 'candidate tracked', SETTLE_MS);
    const candidate = a.status!.versions!.candidate!.revision!;
    assert.ok(!a.status?.versions?.candidate?.ready, 'the candidate is not ready');

    const sidecar = { type: 'sidecar', namespace: ns } as const;
    const { config, found: vhs } = await untilProxy('the sidecar\'s route for the app at the new timeout', sidecar, (c) => {
      const v = virtualHostsFor(c, host);
      return v.length > 0 && v.every((x) => x.routes.every((r) => r.route?.timeout === '7s')) ? v : undefined;
    });
    for (const vh of vhs) {
      assert.deepEqual(vh.routes.map((r) => ({ prefix: r.match.prefix, headers: headerNames(r), cluster: r.route?.cluster, authority: r.route?.host_rewrite_literal })),
        [{ prefix: '/', headers: [], cluster: LOCAL_GATEWAY_CLUSTER, authority: `api.${ns}.svc.cluster.local` }],
        `${vh.routeConfig}: the default route only, no header route to the candidate`);
      assert.equal(vh.routes[0]!.route?.request_mirror_policies, undefined, 'no mirror to a candidate that is not ready');
      assert.ok(noWeights(vh));
    }
    // Anywhere in what the sidecar receives: no route rewrites to the candidate's tag host or mirrors to its revision.
    const routes = JSON.stringify(config.routes);
    assert.ok(!routes.includes(`"candidate-api.${ns}.svc.cluster.local"`), 'no route to the candidate\'s tag host');
    assert.ok(!routes.includes(`${candidate}-private.${ns}`), 'no mirror to the candidate revision');

    // exportTo ".": sidecars of other namespaces and gateways get no route for the host.
    assert.deepEqual(virtualHostsFor(await proxyConfig({ type: 'sidecar', namespace: 'default' }), host), []);
    assert.deepEqual(virtualHostsFor(await proxyConfig({ type: 'router', namespace: ns, labels: { istio: 'ingressgateway' } }), host), []);
  });

  it('two namespaces\' routes for one host on one Gateway, were they written (the operator refuses the second, HostConflict): one virtual host, the first catch-all hiding the other namespace\'s route', async () => {
    const [edge, a, b] = [await freshNamespace('proxyroutes'), await freshNamespace('proxyroutes'), await freshNamespace('proxyroutes')];
    const gatewayLabels = { 'serverlessapp.io/test-gateway': edge };
    await api.create({
      apiVersion: 'networking.istio.io/v1', kind: 'Gateway', metadata: { name: 'edge', namespace: edge },
      spec: { selector: gatewayLabels, servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] },
    } as never);
    const host = `shared.${edge}.example.com`;
    const shop = app('', 'shop', { container: { image: image('1'), port: 8080 }, ingress: { hosts: [host], gateways: [`${edge}/edge`] } });
    // Written as the operator renders them, but by the user: no owner (the garbage collector would remove them) and no operator labels.
    for (const ns of [a, b]) await api.create({ ...rendered(shop, ns), metadata: { name: 'shop-routes', namespace: ns } } as never);

    const { found: vh } = await untilProxy('one virtual host for the host, with both namespaces\' routes', { type: 'router', namespace: edge, labels: gatewayLabels }, (c) => {
      const v = virtualHostsFor(c, host);
      return v.length === 1 && v[0]!.routes.length === 2 ? v[0] : undefined;
    });
    assert.deepEqual(vh.routes.map((r) => r.route?.host_rewrite_literal).sort(), [`shop.${a}.svc.cluster.local`, `shop.${b}.svc.cluster.local`].sort());
    assert.equal(vh.routes[0]!.match.prefix, '/', 'the first route matches every request: the second namespace\'s is never reached');
    assert.deepEqual(headerNames(vh.routes[0]!), []);
  });
});
