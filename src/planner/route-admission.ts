// What an HTTPRoute's own status says: each parent Gateway's controller writes
// Accepted (it attached the route) and ResolvedRefs (every backend exists) per
// parentRef (Gateway API v1 RouteParentStatus). Read as KServe reads its
// HTTPRoutes (kserve v0.20.0 pkg/controller/v1beta1/inferenceservice/
// reconcilers/ingress/httproute_reconciler.go isHTTPRouteReady: no parent
// status is not ready; any False condition is not ready), and per parent we
// asked for, never only "something answered".
//  - `accepted`: every parent accepted the route, at any generation. Weights and
//    header routes to the candidate wait for it; not bound to the generation, as
//    the candidate's own weight is what makes the next one.
//  - `admitted`: accepted and resolved, both at the live generation: the split as
//    written is in force. Promotion waits for it.

import { gatewayRef } from '../api/v1alpha1/serverlessapp.ts';
import { findCondition } from '../util/conditions.ts';
import type { KnativeCondition } from './revisions.ts';
import type { WorkloadObject } from './workloads.ts';

export interface RouteAdmission {
  accepted: boolean;
  admitted: boolean;
  /** Why not, for CanaryProgressing: RouteNotAccepted or RouteRefsNotResolved. */
  reason: string;
  message: string;
}

interface ParentStatus {
  parentRef: { name: string; namespace?: string; group?: string; kind?: string };
  controllerName?: string;
  conditions?: Array<KnativeCondition & { observedGeneration?: number }>;
}

export function httpRouteAdmission(live: WorkloadObject | undefined, gateways: string[]): RouteAdmission {
  const kind = 'HTTPRoute';
  if (!live) return { accepted: false, admitted: false, reason: 'RouteNotAccepted', message: `the ${kind} is not written yet` };
  const name = `${kind} ${live.metadata.namespace}/${live.metadata.name}`;
  const parents = ((live.status as { parents?: ParentStatus[] } | undefined)?.parents ?? []);
  const generation = live.metadata.generation;
  let accepted = true, admitted = true;
  const why: string[] = [];
  let reason = 'RouteAdmitted';
  for (const gw of gateways) {
    const ref = gatewayRef(gw);
    const p = parents.find((x) => x.parentRef.name === ref.name && (x.parentRef.namespace ?? live.metadata.namespace) === ref.namespace);
    const cond = (type: string) => findCondition(p?.conditions, type);
    const acc = cond('Accepted'), refs = cond('ResolvedRefs');
    const current = (c: typeof acc) => c?.observedGeneration === undefined || generation === undefined || c.observedGeneration >= generation;
    if (acc?.status !== 'True') {
      accepted = admitted = false;
      reason = 'RouteNotAccepted';
      why.push(acc ? `Gateway ${gw} did not accept it (${acc.reason ?? 'no reason'}: ${acc.message ?? ''})` : `no controller of Gateway ${gw} has accepted it yet (no Accepted condition for this parent)`);
    } else if (refs?.status !== 'True') {
      admitted = false;
      if (reason === 'RouteAdmitted') reason = 'RouteRefsNotResolved';
      why.push(refs ? `Gateway ${gw} cannot resolve its backends (${refs.reason ?? 'no reason'}: ${refs.message ?? ''})` : `Gateway ${gw} has not reported ResolvedRefs yet`);
    } else if (!current(acc) || !current(refs)) {
      admitted = false;
      if (reason === 'RouteAdmitted') reason = 'RouteNotAccepted';
      why.push(`Gateway ${gw} has not yet reported on generation ${generation}`);
    }
  }
  return admitted
    ? { accepted, admitted, reason, message: `${name} is accepted by ${gateways.join(', ')} with every backend resolved` }
    : { accepted, admitted, reason, message: `${name}: ${why.join('; ')}` };
}
