// The gateway-api router (issue 24, item 3) on the rig: the operator started
// with --router gateway-api writes a Gateway API HTTPRoute (v1) for
// spec.ingress, admitted by the real API server against the real Gateway API
// v1.6.3 standard CRD, and judged by the rig's real istiod, which implements
// Gateway API and writes the route's status per parent (Accepted,
// ResolvedRefs). The parent is a Gateway of istiod's own class `istio` with one
// Hostname address: istiod treats it as manually deployed and starts no
// gateway Deployment (istio pilot/pkg/config/kube/gatewaycommon/gateway_utils.go
// IsManaged). What is not here: no Envoy, so no request is proxied; the split
// is asserted in the objects and the status istiod writes.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, readyTrue, reportedSplit, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { applyYaml, freshNamespace } from '../support/cluster.ts';
import { findCondition } from '../../src/util/conditions.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';

interface ParentStatus { parentRef: { name: string; namespace?: string }; controllerName: string; conditions: Array<{ type: string; status: string; reason: string; message: string; observedGeneration?: number }> }
interface HttpRoute {
  metadata: { generation: number; namespace?: string; name?: string };
  spec: { parentRefs: Array<{ namespace: string; name: string }>; hostnames: string[]; rules: Array<{ name: string; backendRefs: Array<{ name: string; weight: number }> }> };
  status?: { parents?: ParentStatus[] };
}

const noRejection = (a: ServerlessApp) => condition(a, 'Ready')?.reason !== 'ApplyRejected';

describe('the gateway-api router: HTTPRoutes judged by the real API server and istiod (integration)', function () {
  this.timeout(600_000);
  const id = randomBytes(3).toString('hex');
  let op: RunningOperator;
  let gwNs: string;

  const gateway = (name: string, from: 'All' | 'Same') => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name} }
spec:
  gatewayClassName: istio
  addresses: [{ type: Hostname, value: ${name}.${gwNs}.svc.cluster.local }]
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: ${from} } } }]
`;

  before(async () => {
    gwNs = await freshNamespace('gw');
    await applyYaml(gateway('public', 'All') + '---' + gateway('private', 'Same'), { namespace: gwNs });
    op = await startOperator({ router: 'gateway-api', allowedGateways: [`${gwNs}/*`] });
  });
  after(async () => { await op?.stop(); });

  const routeOf = (ns: string, name: string) => userClient().get<HttpRoute>(Kinds.HTTPRoute, ns, `${name}-routes`);
  const spec = (image: string, host: string, gw: string, rollout?: AppSpec['rollout']): AppSpec => ({
    container: { image, port: 8080 }, scaling: { minScale: 0 }, ingress: { hosts: [host], gateways: [`${gwNs}/${gw}`], timeout: '30s' }, ...(rollout ? { rollout } : {}),
  });
  const weights = (r: HttpRoute | undefined) => Object.fromEntries(r?.spec.rules.find((x) => x.name === 'default')?.backendRefs.map((b) => [b.name, b.weight]) ?? []);
  const parentCondition = (r: HttpRoute | undefined, type: string) => findCondition(r?.status?.parents?.find((p) => p.parentRef.name === 'public')?.conditions, type);
  /** istiod has written Accepted and ResolvedRefs True about the route's live generation. */
  const admittedByIstiod = (r: HttpRoute | undefined) => !!r && ['Accepted', 'ResolvedRefs'].every((t) => {
    const c = parentCondition(r, t);
    return c?.status === 'True' && (c.observedGeneration ?? 0) >= r.metadata.generation;
  });

  // istiod's validating webhook covers Istio's groups only (its base chart's rules): an HTTPRoute is
  // judged by the Gateway API CRD's schema and CEL rules, which this dry run meets.
  for (const name of ['http-route', 'http-route-mirror']) {
    it(`admits the golden ${name} with the real Gateway API v1.6.3 CRD`, async () => {
      const ns = await freshNamespace('gw-golden');
      const obj = parse(readFileSync(new URL(`../../src/render/testdata/${name}.golden.yaml`, import.meta.url), 'utf8')) as { metadata: Record<string, unknown> };
      const { ownerReferences: _owner, ...metadata } = obj.metadata;
      const stored = await userClient().create<HttpRoute>(Kinds.HTTPRoute, { ...obj, metadata: { ...metadata, namespace: ns } } as unknown as HttpRoute, { dryRun: true });
      assert.deepEqual(stored.spec, (obj as unknown as HttpRoute).spec, 'stored as rendered: nothing the CRD defaults was left out');
    });
  }

  it('splits, promotes and is accepted by istiod: the HTTPRoute carries the split Knative reports', async () => {
    const ns = await freshNamespace('gwapi');
    const host = `shop-${id}.example.com`;
    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:1', host, 'public')));
    const v1 = await waitForApp(ns, 'shop', readyTrue, 'v1 Ready behind the HTTPRoute', READY_MS);
    const stableRev = v1.status!.versions!.stable!.revision!;
    let route = await waitFor('istiod accepts the HTTPRoute and resolves its backends', async () => {
      const r = await routeOf(ns, 'shop');
      return admittedByIstiod(r) ? r : undefined;
    }, { timeoutMs: SETTLE_MS });
    assert.deepEqual([route.spec.hostnames, route.spec.parentRefs.map((p) => `${p.namespace}/${p.name}`), weights(route)], [[host], [`${gwNs}/public`], { [stableRev]: 100 }]);
    assert.equal(parentCondition(route, 'Accepted')?.status, 'True');
    assert.equal(await userClient().get(Kinds.VirtualService, ns, 'shop-routes'), undefined, 'no VirtualService under the gateway-api router');

    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:2', host, 'public', { canaryPercent: 20, mirrorPercent: 10, match: [{ header: 'x-canary', exact: 'always' }] })));
    let a = await waitForApp(ns, 'shop', (x) => !noRejection(x) || x.status?.canary?.trafficPercent === 20, 'the candidate at 20%', READY_MS);
    assert.ok(noRejection(a), `the canary edit was refused: ${condition(a, 'Ready')?.message}`);
    const candidateRev = a.status!.versions!.candidate!.revision!;
    route = await waitFor('the HTTPRoute splits 80/20 with a header rule, admitted by istiod', async () => {
      const r = await routeOf(ns, 'shop');
      return r && weights(r)[candidateRev] === 20 && admittedByIstiod(r) ? r : undefined;
    }, { timeoutMs: SETTLE_MS });
    assert.deepEqual(weights(route), { [stableRev]: 80, [candidateRev]: 20 });
    assert.deepEqual(route.spec.rules.map((r) => r.name), ['candidate-by-header', 'default']);
    assert.deepEqual((route.spec.rules[1] as unknown as { filters?: unknown[] }).filters, [{ type: 'RequestMirror', requestMirror: { backendRef: { group: '', kind: 'Service', name: `${candidateRev}-private`, port: 80 }, percent: 10 } }],
      'the mirror, with its percentage, accepted and resolved by istiod');
    assert.deepEqual(await reportedSplit(ns, 'shop'), { stable: 80, candidate: 20 }, 'Knative reports the same split');

    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:2', host, 'public', { canaryPercent: 100 })));
    a = await waitForApp(ns, 'shop', (x) => !noRejection(x) || condition(x, 'Promoted')?.status === 'True', 'promoted', 120_000);
    assert.ok(noRejection(a), condition(a, 'Ready')?.message);
    assert.equal(a.status?.versions?.stable?.revision, candidateRev);
    route = await waitFor('the HTTPRoute sends everything to the promoted revision', async () => {
      const r = await routeOf(ns, 'shop');
      return r && JSON.stringify(weights(r)) === JSON.stringify({ [candidateRev]: 100 }) ? r : undefined;
    }, { timeoutMs: SETTLE_MS });
    assert.deepEqual(route.spec.rules.map((r) => r.name), ['default']);
  });

  it('refuses a host another namespace holds: no HTTPRoute in the second namespace', async () => {
    const [owner, intruder] = [await freshNamespace('gw-own'), await freshNamespace('gw-int')];
    const host = `held-${id}.example.com`;
    await applyApp(app(owner, 'shop', spec('ghcr.io/acme/shop:1', host, 'public')));
    await waitForApp(owner, 'shop', readyTrue, 'the owner Ready', READY_MS);
    await applyApp(app(intruder, 'shop', spec('ghcr.io/acme/shop:1', host, 'public')));
    const refused = await waitForApp(intruder, 'shop', (x) => condition(x, 'Ready')?.reason === 'HostConflict', 'the intruder refused with HostConflict', SETTLE_MS);
    assert.match(condition(refused, 'Ready')!.message, new RegExp(`host ${host.replaceAll('.', '\\.')} is claimed by another namespace`));
    assert.equal(await routeOf(intruder, 'shop'), undefined);
    assert.deepEqual((await routeOf(owner, 'shop'))?.spec.hostnames, [host]);
  });

  it('says RouteNotAccepted, with istiod\'s reason, while the parent Gateway does not accept the route', async () => {
    const ns = await freshNamespace('gw-refused');
    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:1', `refused-${id}.example.com`, 'private')));
    // The first status comes at the first reconcile, before the HTTPRoute is written: wait for istiod's verdict on it.
    const a = await waitForApp(ns, 'shop', (x) => condition(x, 'CanaryProgressing')?.reason === 'RouteNotAccepted' && /did not accept it/.test(condition(x, 'CanaryProgressing')!.message), 'CanaryProgressing RouteNotAccepted naming the Gateway that did not accept the route', READY_MS);
    const route = await routeOf(ns, 'shop');
    const accepted = findCondition(route?.status?.parents?.find((p) => p.parentRef.name === 'private')?.conditions, 'Accepted');
    assert.equal(accepted?.status, 'False', 'istiod refused it: the listener allows routes of its own namespace only');
    assert.match(condition(a, 'CanaryProgressing')!.message, new RegExp(`Gateway ${gwNs}/private did not accept it \\(${accepted!.reason}`));
    assert.deepEqual([a.status?.phase, condition(a, 'Promoted')?.status], ['Pending', 'False'], 'the first version is not promoted while no route to it is accepted');
  });

  it('switches routers make before break: the VirtualService goes only once the HTTPRoute is admitted', async () => {
    const ns = await freshNamespace('gw-switch');
    const host = `switch-${id}.example.com`;
    await op.stop();
    op = await startOperator({ router: 'istio', allowedGateways: [`${gwNs}/*`] });
    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:1', host, 'public')));
    await waitForApp(ns, 'shop', readyTrue, 'Ready behind the VirtualService', READY_MS);
    assert.ok(await userClient().get(Kinds.VirtualService, ns, 'shop-routes'), 'the istio router wrote a VirtualService');
    assert.equal(await routeOf(ns, 'shop'), undefined);

    await op.stop();
    op = await startOperator({ router: 'gateway-api', allowedGateways: [`${gwNs}/*`] });
    let gap = false;
    const route = await waitFor('the VirtualService removed after the switch', async () => {
      const [vs, r] = [await userClient().get(Kinds.VirtualService, ns, 'shop-routes'), await routeOf(ns, 'shop')];
      if (!vs && !r) gap = true;
      return !vs && r;
    }, { timeoutMs: SETTLE_MS });
    assert.equal(gap, false, 'the app was never without a route');
    assert.ok(admittedByIstiod(route), `the HTTPRoute was admitted when the VirtualService went: ${JSON.stringify(route.status)}`);
    assert.ok(readyTrue(await waitForApp(ns, 'shop', readyTrue, 'still Ready', 10_000)));
  });
});
