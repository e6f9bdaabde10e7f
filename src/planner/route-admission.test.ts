import assert from 'node:assert/strict';
import { httpRouteAdmission } from './route-admission.ts';
import type { WorkloadObject } from './workloads.ts';

type Cond = { type: string; status: string; reason?: string; message?: string; observedGeneration?: number };
const route = (parents: Array<{ gw: string; conditions: Cond[] }>, generation = 2): WorkloadObject => ({
  apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name: 'shop-routes', namespace: 'team-a', generation },
  status: { parents: parents.map((p) => ({ parentRef: { name: p.gw.split('/')[1]!, namespace: p.gw.split('/')[0]! }, controllerName: 'istio.io/gateway-controller', conditions: p.conditions })) } as WorkloadObject['status'],
});
const ok = (g = 2): Cond[] => [{ type: 'Accepted', status: 'True', observedGeneration: g }, { type: 'ResolvedRefs', status: 'True', observedGeneration: g }];

describe('HTTPRoute admission, from its own status', () => {
  const cases: Array<[string, WorkloadObject | undefined, string[], { accepted: boolean; admitted: boolean; reason: string }, RegExp]> = [
    ['not written yet', undefined, ['gw/public'], { accepted: false, admitted: false, reason: 'RouteNotAccepted' }, /not written yet/],
    ['no parent status yet', route([]), ['gw/public'], { accepted: false, admitted: false, reason: 'RouteNotAccepted' }, /no controller of Gateway gw\/public has accepted it yet/],
    ['accepted and resolved at the live generation', route([{ gw: 'gw/public', conditions: ok() }]), ['gw/public'], { accepted: true, admitted: true, reason: 'RouteAdmitted' }, /accepted by gw\/public/],
    ['refused by its parent (a listener that does not allow the namespace)', route([{ gw: 'gw/public', conditions: [{ type: 'Accepted', status: 'False', reason: 'NotAllowedByListeners', message: 'no listener allows team-a' }] }]), ['gw/public'],
      { accepted: false, admitted: false, reason: 'RouteNotAccepted' }, /did not accept it \(NotAllowedByListeners: no listener allows team-a\)/],
    ['accepted with a backend missing', route([{ gw: 'gw/public', conditions: [{ type: 'Accepted', status: 'True' }, { type: 'ResolvedRefs', status: 'False', reason: 'BackendNotFound', message: 'shop-00002 not found' }] }]), ['gw/public'],
      { accepted: true, admitted: false, reason: 'RouteRefsNotResolved' }, /BackendNotFound/],
    ['accepted, but about an older generation: the split as written is not known to be in force', route([{ gw: 'gw/public', conditions: ok(1) }]), ['gw/public'],
      { accepted: true, admitted: false, reason: 'RouteNotAccepted' }, /generation 2/],
    ['accepted by one parent of two', route([{ gw: 'gw/public', conditions: ok() }]), ['gw/public', 'gw/internal'], { accepted: false, admitted: false, reason: 'RouteNotAccepted' }, /gw\/internal/],
    ['another Gateway\'s acceptance does not count', route([{ gw: 'other/public', conditions: ok() }]), ['gw/public'], { accepted: false, admitted: false, reason: 'RouteNotAccepted' }, /gw\/public/],
  ];
  for (const [name, live, gateways, want, message] of cases) {
    it(name, () => {
      const a = httpRouteAdmission(live, gateways);
      assert.deepEqual({ accepted: a.accepted, admitted: a.admitted, reason: a.reason }, want);
      assert.match(a.message, message);
    });
  }
});
