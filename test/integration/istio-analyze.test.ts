// What `istioctl analyze` (its analyzers, from the istio.io/istio module the
// rig's istiod is built from; test/support/istio-analyze.ts) says of the
// operator's VirtualServices: over the whole rig, nothing on the tenants'
// routes; and of the case the operator refuses, two namespaces claiming one
// host, written anyway as files: Istio reports a conflict (IST0109) only for
// mesh routes exported to every namespace. The operator's routes are exported
// to their own namespace only (render/virtual-service.ts), which Istio scopes
// apart, and no analyzer looks at gateway-bound hosts across namespaces: the
// operator's host claims (HostConflict) are the only guard there.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { parseConfig } from '../../src/config.ts';
import { knativeWorkload } from '../../src/planner/workloads.ts';
import { renderVirtualService } from '../../src/render/virtual-service.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, userClient } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { istioAnalyze, type AnalysisMessage } from '../support/istio-analyze.ts';
import { ensureKnativeLocalGateway } from '../support/knative-local-gateway.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const container = { image: 'ghcr.io/acme/shop:1', port: 8080 };
const about = (messages: AnalysisMessage[], ...namespaces: string[]) =>
  messages.filter((m) => namespaces.some((ns) => m.origin?.includes(` ${ns}/`)));

/** The VirtualService the operator renders for `app` in `namespace` (as istio-validation.test.ts). */
function rendered(a: ServerlessApp, namespace: string) {
  const placed: ServerlessApp = { ...a, metadata: { ...a.metadata, namespace, uid: '00000000-0000-4000-8000-000000000001' } };
  const { localGateway } = parseConfig([], {});
  return renderVirtualService(placed, { localGateway, candidateReady: false, ...knativeWorkload(true).hosts(placed), traffic: {}, inForce: [], routesReady: true });
}

describe('istioctl analyze over the operator\'s VirtualServices (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;

  before(async function () {
    if (!testEnv().dataPlane?.istio) this.skip();
    await ensureKnativeLocalGateway();
    op = await startOperator();
  });
  after(async () => {
    await op?.stop();
  });

  it('reports nothing on two tenants\' routes, one bound to its namespace\'s Gateway and one to the mesh', async () => {
    const [a, b] = [await freshNamespace('analyze'), await freshNamespace('analyze')];
    await userClient().apply({
      apiVersion: 'networking.istio.io/v1', kind: 'Gateway', metadata: { name: 'edge', namespace: a },
      spec: { selector: { 'serverlessapp.io/test-gateway': a }, servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] },
    }, { kind: { group: 'networking.istio.io', version: 'v1', kind: 'Gateway', plural: 'gateways', namespaced: true } });
    await applyApp(app(a, 'shop', { container, ingress: { hosts: [`shop.${a}.example.com`], gateways: [`${a}/edge`], timeout: '10s' } }));
    await applyApp(app(b, 'shop', { container, ingress: { hosts: [`shop.${b}.example.com`], retries: { attempts: 2 } } }));
    await Promise.all([a, b].map((ns) => waitFor(`the VirtualService in ${ns}`, () => userClient().get(Kinds.VirtualService, ns, 'shop-routes'), { timeoutMs: SETTLE_MS })));

    const messages = await istioAnalyze();
    assert.deepEqual(about(messages, a, b).filter((m) => m.origin?.startsWith('VirtualService ')), []);
  });

  it('reports IST0109 for one host in two namespaces only when the routes are exported everywhere, which the operator never writes', async () => {
    const [a, b] = [await freshNamespace('analyze'), await freshNamespace('analyze')];
    const host = `shared.${a}.example.com`;
    const meshApp = app('', 'shop', { container, ingress: { hosts: [host] } });
    const asWritten = [rendered(meshApp, a), rendered(meshApp, b)];
    assert.deepEqual(asWritten.map((vs) => vs.spec?.exportTo), [['.'], ['.']]);
    assert.deepEqual(about(await istioAnalyze(asWritten), a, b).filter((m) => m.code === 'IST0109'), [],
      'each namespace\'s sidecars see their own namespace\'s route only: no conflict to Istio');

    const exportedEverywhere = asWritten.map((vs) => ({ ...vs, spec: { ...vs.spec, exportTo: undefined } }));
    const conflicts = about(await istioAnalyze(exportedEverywhere), a, b).filter((m) => m.code === 'IST0109');
    assert.deepEqual(conflicts.map((m) => m.origin).sort(), [`VirtualService ${a}/shop-routes`, `VirtualService ${b}/shop-routes`].sort());

    const gatewayApp = app('', 'shop', { container, ingress: { hosts: [host], gateways: ['istio-system/public'] } });
    const gatewayBound = [rendered(gatewayApp, a), rendered(gatewayApp, b)];
    assert.deepEqual(about(await istioAnalyze(gatewayBound), a, b).filter((m) => m.code === 'IST0109'), [],
      'no analyzer reports one gateway host claimed from two namespaces (IST0109 is for mesh routes)');
  });
});
