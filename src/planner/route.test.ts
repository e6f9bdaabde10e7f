import assert from 'node:assert/strict';
import { containerApp } from '../testing/apps.ts';
import { Kinds, type ResourceKind } from '../util/kinds.ts';
import { appRoutes, everyRouteRef, gatewayApiRoute, istioRoute, routeRefs, type Route } from './route.ts';
import type { WorkloadObject } from './workloads.ts';

const app = containerApp(); // shop in team-a
const object = (kind: ResourceKind, name: string): WorkloadObject => ({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name, namespace: 'team-a' } });
const vs = object(Kinds.VirtualService, 'shop-routes'), legacyVs = object(Kinds.VirtualService, 'shop'), httpRoute = object(Kinds.HTTPRoute, 'shop-routes');
// Objects no route of the app is: another app's, and the app's own name under the other kind.
const strangers = [object(Kinds.VirtualService, 'cart-routes'), object(Kinds.HTTPRoute, 'shop')];

describe("which of an app's routes is live, legacy or retired", () => {
  const cases: { it: string; route: Route; present: WorkloadObject[]; expect: { live?: WorkloadObject; legacy?: WorkloadObject; retired?: WorkloadObject } }[] = [
    { it: 'under istio: the VirtualService <app>-routes is live, the one of the app\'s own name legacy; an HTTPRoute is not the operator\'s to remove there (left to garbage collection)',
      route: istioRoute('knative-local-gateway'), present: [vs, legacyVs, httpRoute, ...strangers], expect: { live: vs, legacy: legacyVs } },
    { it: 'under gateway-api: the HTTPRoute is live and the VirtualService <app>-routes retired; a VirtualService of the app\'s own name is not looked at',
      route: gatewayApiRoute(), present: [vs, legacyVs, httpRoute, ...strangers], expect: { live: httpRoute, retired: vs } },
    { it: 'leaves out what is not there', route: istioRoute('knative-local-gateway'), present: [legacyVs, ...strangers], expect: { legacy: legacyVs } },
    { it: 'finds nothing when the app has no routes', route: gatewayApiRoute(), present: strangers, expect: {} },
  ];
  for (const c of cases) {
    it(c.it, () => {
      const find = (kind: ResourceKind, name: string) => c.present.find((o) => o.kind === kind.kind && o.metadata.name === name);
      assert.deepEqual(appRoutes(c.route, app, find), c.expect);
    });
  }
});

describe('where a reader that does not know the router looks for the app\'s routes', () => {
  const refs = everyRouteRef(app).map(([kind, name]) => `${kind.kind} ${name}`);

  it('reads <app>-routes of both kinds and the VirtualService of the app\'s own name, each once', () => {
    assert.deepEqual(refs.sort(), ['HTTPRoute shop-routes', 'VirtualService shop', 'VirtualService shop-routes']);
  });

  for (const route of [istioRoute('knative-local-gateway'), gatewayApiRoute()]) {
    it(`covers every place the ${route.kind.kind} router finds a route`, () => {
      for (const [kind, name] of Object.values(routeRefs(route, app))) assert.ok(refs.includes(`${kind.kind} ${name}`), `${kind.kind} ${name}`);
    });
  }
});
