// The child operations of one reconcile, in the shape of the executable plan
// (planner/plan.ts): ensure the workload, set the revisions' scale bounds,
// ensure or remove the VirtualService, remove the other kind's workload once
// this one serves. INTERIM: the controller still holds this order
// (controllers/serverlessapp.ts, applyChildren); the planner's own `plan()`
// (issue 22) replaces this file, and `kubectl sapp plan` then prints what the
// operator executes by construction. Until then this mirrors applyChildren
// rule for rule, and the audit-log test compares it with the operator's writes.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { MIN_SCALE, boundsAnnotations } from '../render/autoscaling.ts';
import { renderVirtualService } from '../render/virtual-service.ts';
import { isParked } from '../rollout/canary.ts';
import { RETIRED, revisionBounds } from '../scaling/revision-bounds.ts';
import { Kinds } from '../util/kinds.ts';
import { desiredWorkload, type Decision } from '../planner/decide.ts';
import type { ChildOperation } from '../planner/plan.ts';
import type { WorkloadObject } from '../planner/workloads.ts';

export interface RouteObservation {
  /** The app's VirtualService as it is (named by virtualServiceName). */
  live?: WorkloadObject;
  /** One named after the app itself (before 0.2), which KServe also uses. */
  legacy?: WorkloadObject;
  localGateway: string;
}

export function childOperations(app: ServerlessApp, d: Decision, route: RouteObservation): ChildOperation[] {
  const { workload, plan, scale, prewarmReplicas, previous, other } = d;
  const ops: ChildOperation[] = [];
  const ownedByApp = (o: WorkloadObject | undefined) => !!o?.metadata.ownerReferences?.some((r) => r.controller && r.uid === app.metadata.uid);

  ops.push({ id: 'workload', action: 'ensure', kind: workload.kind, desired: desiredWorkload(app, d), ...(d.live ? { live: d.live } : {}), why: `the ${workload.kind.kind} that serves version ${d.version}` });

  if (workload.boundsOnRevisions) {
    const bounds = revisionBounds(plan, scale, prewarmReplicas);
    for (const r of d.revisions) {
      let want = bounds.get(r.metadata.name);
      if (!want) {
        // Retired: only a minimum this operator raised is undone.
        if (!(Number(r.metadata.annotations?.[MIN_SCALE] ?? 0) > 0)) continue;
        want = RETIRED;
      }
      const live = { apiVersion: 'serving.knative.dev/v1', kind: 'Revision', ...r } as WorkloadObject;
      ops.push({
        id: `revision-bounds/${r.metadata.name}`, action: 'annotate', kind: Kinds.KnativeRevision, live,
        annotations: want === RETIRED ? { [MIN_SCALE]: '0' } : boundsAnnotations(want),
        why: want === RETIRED ? 'a retired revision: the minimum the operator raised goes back to 0' : `scale bounds of revision ${r.metadata.name} (windows, prewarm buffer)`,
      });
    }
  }

  if (route.legacy && ownedByApp(route.legacy)) ops.push({ id: 'route/legacy', action: 'remove', kind: Kinds.VirtualService, live: route.legacy, why: 'a VirtualService named after the app (before 0.2): KServe uses that name' });
  const servingWorkload = previous?.workload ?? workload;
  const reachable = !previous && !!(plan.candidate?.ready && plan.candidate.warm) && !isParked(plan.candidate?.state);
  if (!app.spec.ingress) {
    if (route.live && ownedByApp(route.live)) ops.push({ id: 'route', action: 'remove', kind: Kinds.VirtualService, live: route.live, why: 'spec.ingress is gone' });
  } else {
    const candidateRevision = plan.candidate?.revision;
    const desired = renderVirtualService(app, { localGateway: route.localGateway, candidateReady: reachable, ...servingWorkload.hosts(app), ...(candidateRevision ? { candidateRevision } : {}) });
    ops.push({ id: 'route', action: 'ensure', kind: Kinds.VirtualService, desired: desired as unknown as WorkloadObject, ...(route.live ? { live: route.live } : {}), why: `routes ${app.spec.ingress.hosts?.join(', ') ?? 'the app'} to the ${servingWorkload.kind.kind}` });
  }
  if (!previous && other && ownedByApp(other.live)) {
    ops.push({
      id: 'other-workload', action: 'remove', kind: other.workload.kind, live: other.live, why: `the app moved to a ${workload.kind.kind}: the ${other.workload.kind.kind} goes`,
      ...(app.spec.ingress ? { when: { op: 'route', outcome: ['unchanged'], why: 'after the VirtualService routes to the new workload' } } : {}),
    });
  }
  if (previous?.workload.kind === Kinds.InferenceService && plan.candidate?.ready && plan.candidate.warm && ownedByApp(previous.live)) {
    ops.push({ id: 'previous-workload', action: 'remove', kind: Kinds.InferenceService, live: previous.live, why: 'model -> container: the new revision is ready and warm, the InferenceService goes' });
  }
  return ops;
}
