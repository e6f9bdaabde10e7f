// The per-revision split of an app on the default (Istio) router, read where
// the proxy sees it. The operator's VirtualService sends every request to
// Knative's local gateway with the authority rewritten to the app's
// cluster-local host (istio-proxy-routes.test.ts); the split per revision is
// Knative's, in its KIngress. With ENVTEST_NETGW=on (skipped otherwise) the rig
// runs Knative's real network ingress, net-gateway-api (test/envtest/net-gateway-api.ts), which turns the KIngress
// into HTTPRoutes on the knative-local-gateway Gateway, and istiod turns those
// into the ingress gateway's Envoy routes, read here with Istio's own ADS
// client (test/support/envoy-config.ts). No Envoy runs and no request is
// proxied: the gateway's data plane is SIMULATED only to answer Knative's
// readiness probes from this same configuration (test/envtest/gateway-probe.ts),
// so an app is Ready only once istiod has programmed its routes.
import assert from 'node:assert/strict';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { app, applyApp, condition, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { KNATIVE_GATEWAY, KNATIVE_LOCAL_ROUTES, knativeTrafficRoute, serviceCluster, untilProxy, virtualHostsFor, weightsOf, type EnvoyRoute } from '../support/envoy-config.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';
import { HASH_HEADER } from '../envtest/gateway-probe.ts';

/** A revision's start on the real Knative, generous for a loaded machine (as canary.test.ts). */
/** A pod asking for more CPU than any rig node has stays Pending, so Knative never makes its revision Ready. */
const UNSCHEDULABLE_CPU = '1000';
const image = (tag: string) => `ghcr.io/acme/shop:${tag}`;
/** Knative's readiness-probe routes match its hash header; the others carry the traffic. */
const isProbeRoute = (r: EnvoyRoute) => (r.match.headers ?? []).some((h) => h.name.toLowerCase() === HASH_HEADER);

/** The value a route sets for request header `name` (Envoy's request_headers_to_add). */
function headerSet(r: EnvoyRoute, name: string): string | undefined {
  const add = (r as { request_headers_to_add?: Array<{ header: { key: string; value: string } }> }).request_headers_to_add;
  return add?.find((h) => h.header.key.toLowerCase() === name)?.header.value;
}

interface Versioned { metadata: { generation?: number }; status?: { observedGeneration?: number } }
interface HTTPRoute { spec: { rules?: Array<{ filters?: Array<{ requestHeaderModifier?: { set?: Array<{ name: string; value: string }> } }> }> } }
const objects = () => testEnv().kubeConfig().makeApiClient(CustomObjectsApi);
const knativeRoute = (namespace: string, name: string) =>
  objects().getNamespacedCustomObject({ group: 'serving.knative.dev', version: 'v1', namespace, plural: 'routes', name }) as Promise<Versioned>;
/** net-gateway-api names a rule's HTTPRoute after its longest host (pkg/reconciler/ingress/resources/httproute.go). */
const httpRoute = (namespace: string, name: string) =>
  objects().getNamespacedCustomObject({ group: 'gateway.networking.k8s.io', version: 'v1', namespace, plural: 'httproutes', name }) as Promise<HTTPRoute>;
/** The KIngress hash its probe rule sets (knative.dev/networking pkg/ingress InsertProbe). */
const probeHashOf = (r: HTTPRoute) => r.spec.rules?.flatMap((rule) => rule.filters ?? []).flatMap((f) => f.requestHeaderModifier?.set ?? [])
  .find((h) => h.name.toLowerCase() === HASH_HEADER)?.value;

describe('the per-revision weights of Knative\'s own routes, on the local gateway\'s proxy, with the operator\'s default Istio router (integration)', function () {
  this.timeout(900_000);
  let op: RunningOperator;

  before(async function () {
    if (!testEnv().dataPlane?.netGatewayApi) this.skip();
    op = await startOperator();
  });
  after(async () => { await op?.stop(); });

  const spec = (tag: string, rollout?: AppSpec['rollout'], cpu?: string): AppSpec => ({
    container: { image: image(tag), port: 8080, ...(cpu ? { resources: { requests: { cpu } } } : {}) },
    scaling: { minScale: 0 }, ...(rollout ? { rollout } : {}),
  });

  it('a canary at 20%: the app\'s cluster-local host splits 80/20 between the two revisions, the candidate\'s tag host goes to the candidate only; 100 to it once promoted', async () => {
    const ns = await freshNamespace('kingress');
    const host = `shop.${ns}.svc.cluster.local`;
    await applyApp(app(ns, 'shop', spec('1')));
    const v1 = await waitForApp(ns, 'shop', (a) => a.status?.phase === 'Stable' && !!a.status.versions?.stable?.ready, 'v1 ready on Knative', READY_MS);
    const stable = v1.status!.versions!.stable!.revision!;
    // Ready means Knative's KIngress is Ready: net-gateway-api's prober saw the gateway answer with its hash.
    const { found: first } = await untilProxy('the local gateway\'s route for v1', KNATIVE_GATEWAY, (c) => knativeTrafficRoute(c, host));
    assert.deepEqual(weightsOf(first), { [serviceCluster(ns, stable)]: 100 });

    await applyApp(app(ns, 'shop', spec('2', { canaryPercent: 20 })));
    const a = await waitForApp(ns, 'shop', (x) => !!x.status?.versions?.candidate?.ready && x.status.canary?.trafficPercent === 20, 'the candidate ready at 20%', READY_MS);
    const candidate = a.status!.versions!.candidate!.revision!;

    const { config, found: split } = await untilProxy('the local gateway\'s 80/20 split for the app', KNATIVE_GATEWAY, (c) => {
      const r = knativeTrafficRoute(c, host);
      return weightsOf(r)[serviceCluster(ns, candidate)] === 20 ? r : undefined;
    });
    assert.deepEqual(weightsOf(split), { [serviceCluster(ns, stable)]: 80, [serviceCluster(ns, candidate)]: 20 }, 'one cluster per revision, weighted as the canary');
    assert.deepEqual(virtualHostsFor(config, host).map((v) => v.routeConfig), [KNATIVE_LOCAL_ROUTES], 'on the local gateway\'s listener only (the app is cluster-local)');
    // The tag the operator gives the candidate (its header and mirror routes rewrite to this host).
    assert.deepEqual(weightsOf(knativeTrafficRoute(config, `candidate-shop.${ns}.svc.cluster.local`)), { [serviceCluster(ns, candidate)]: 100 }, 'the candidate\'s tag host');
    const missing = [serviceCluster(ns, stable), serviceCluster(ns, candidate)].filter((c) => !config.clusters.includes(c));
    assert.deepEqual(missing, [], 'the gateway proxy has a cluster for each revision');

    await applyApp(app(ns, 'shop', spec('2', { canaryPercent: 100 })));
    await waitForApp(ns, 'shop', (x) => condition(x, 'Promoted')?.status === 'True' && x.status?.phase === 'Stable', 'promoted', 120_000);
    const { found: promoted } = await untilProxy('the local gateway\'s route all to the promoted revision', KNATIVE_GATEWAY, (c) => {
      const r = knativeTrafficRoute(c, host);
      return Object.keys(weightsOf(r)).length === 1 ? r : undefined;
    });
    assert.deepEqual(weightsOf(promoted), { [serviceCluster(ns, candidate)]: 100 });
  });

  it('a candidate Knative never makes ready is in none of the local gateway\'s routes: the stable revision keeps 100', async () => {
    const ns = await freshNamespace('kingress');
    const host = `api.${ns}.svc.cluster.local`;
    await applyApp(app(ns, 'api', spec('1')));
    const v1 = await waitForApp(ns, 'api', (a) => a.status?.phase === 'Stable' && !!a.status.versions?.stable?.ready, 'v1 ready on Knative', READY_MS);
    const stable = v1.status!.versions!.stable!.revision!;
    await applyApp(app(ns, 'api', spec('2', { canaryPercent: 50 }, UNSCHEDULABLE_CPU)));
    const a = await waitForApp(ns, 'api', (x) => x.status?.versions?.candidate?.revision !== undefined, 'candidate tracked', SETTLE_MS);
    const candidate = a.status!.versions!.candidate!.revision!;
    assert.ok(!a.status?.versions?.candidate?.ready, 'the candidate is not ready');

    // Knative has routed the operator's latest traffic (the candidate in it or not), and net-gateway-api has written
    // that KIngress version's HTTPRoute; the proxy is read once its probe route carries that version's hash.
    await waitFor('Knative\'s Route reconciled the latest traffic', async () => {
      const r = await knativeRoute(ns, 'api');
      return r.status?.observedGeneration === r.metadata.generation || undefined;
    }, { timeoutMs: SETTLE_MS });
    const hash = await waitFor('net-gateway-api\'s HTTPRoute for the host', async () => probeHashOf(await httpRoute(ns, host)), { timeoutMs: SETTLE_MS });
    const { config, found } = await untilProxy(`the local gateway's routes for the app at its KIngress hash ${hash}`, KNATIVE_GATEWAY, (c) => {
      const vh = virtualHostsFor(c, host).find((v) => v.routeConfig === KNATIVE_LOCAL_ROUTES);
      return vh?.routes.some((r) => isProbeRoute(r) && headerSet(r, HASH_HEADER) === hash) ? knativeTrafficRoute(c, host) : undefined;
    });
    assert.deepEqual(weightsOf(found), { [serviceCluster(ns, stable)]: 100 });
    const appRoutes = JSON.stringify(config.routes.flatMap((rc) => rc.virtual_hosts ?? []).filter((vh) => vh.domains.some((d) => d.includes(`.${ns}.`))));
    assert.ok(!appRoutes.includes(candidate), `the candidate revision is in no route of the app's hosts: ${appRoutes}`);
  });
});
