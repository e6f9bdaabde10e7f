// One reconcile as one executable plan. From what the controller observed (the
// app, its children, revisions and claims from the caches, what the platform
// serves and allows, the clock, earlier effects' results) the planner decides
// everything: whether the app is still served at all (a farewell when it is
// absent or being deleted), whether the spec can be (planner/admission.ts, the one
// rule every child kind asks, and what a refusal withdraws), the host claims to make, the
// ordered child writes with their guards (make before break in a kind switch),
// the effects, the requeue, and, given what the writes did, the status, its
// Events and how it is written. Pure: the controller only executes.

import type { HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import { MIN_SCALE, boundsAnnotations } from '../render/autoscaling.ts';
import type { CacheScope } from '../render/local-model-cache.ts';
import { isParked } from '../rollout/canary.ts';
import { splitReachesCandidate } from '../render/traffic.ts';
import { revisionBounds } from '../scaling/revision-bounds.ts';
import { apiVersionOf, Kinds } from '../util/kinds.ts';
import { admission, revokedBy, revokes, type AdmissionObservation } from './admission.ts';
import { decide, desiredWorkload, type Decision, type Observation } from './decide.ts';
import { withStatusWrite, type ChildOperation, type Farewell, type Plan, type PlannedEvent, type Report } from './plan.ts';
import { findCondition, setCondition } from '../util/conditions.ts';
import { claimsReport, reportReconcile } from './report.ts';
import { retiredRouteKind, type AppRoutes, type Route } from './route.ts';
import { invalidSpecStatus } from './status.ts';
import { trafficPlan, type WorkloadObject } from './workloads.ts';
import { MAX_RETAINED, memberPlan, type MemberPlan } from './llm-workload.ts';
import { liveWorkload, memberName, renderLlmMember, versionWorkload } from '../render/llm-inference-service.ts';
import { versionOf } from '../rollout/version.ts';
import { servesLlm } from '../api/v1alpha1/serving.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import { ROLLOUT_DEFAULTS } from '../api/v1alpha1/defaults.ts';


/** After creating host claims, when to look again should their events not come first. */
export const CLAIM_RECHECK_MS = 2_000;

export interface ReconcileObservation extends Observation, AdmissionObservation {
  /** The app's route (its renderer and write rule), and what the caches hold: ours, and one of the app's own name (ours before 0.2). */
  route: Route;
  /** `retired`: the route of the router not in use (the platform switched routers), removed once ours is admitted. */
  routes: AppRoutes;
  /** Where the platform makes node caches of models: the planner names the app's (status.modelCache). */
  cacheScope: CacheScope;
}

/** A key whose app is gone (the cache no longer holds it) or going (being deleted): its farewell needs nothing else. */
export interface LeavingObservation {
  leaving: true;
  app?: ServerlessApp;
}

/** What the controller observed of an app's key. */
export type AppObservation = ReconcileObservation | LeavingObservation;

/** An app the planner only says farewell to, so the controller observes nothing more of it: gone, or being deleted. */
export function leaving(app: ServerlessApp | undefined): boolean {
  return !app || !!app.metadata.deletionTimestamp;
}

/** The planner's answer for a key: the plan that serves its app, or a farewell. */
export type AppPlan = { app: ServerlessApp; plan: Plan } | { farewell: Farewell };

/**
 * An app the cache no longer holds, or one being deleted, gets a farewell: nothing is written (its
 * children go with it by garbage collection, and a deleting app's status is not reported); only
 * what the operator holds of it in memory goes. Any other app gets the plan that serves it.
 */
export function planApp(o: AppObservation): AppPlan {
  // Still listed while its finalizers run: what the status writer and the metrics hold goes with the object.
  if ('leaving' in o || leaving(o.app)) return { farewell: { forget: o.app ? ['work'] : ['work', 'records'] } };
  return { app: o.app, plan: planReconcile(o) };
}

/** The app's plan as its admission (planner/admission.ts) allows: refused, claiming its hosts, or served. */
export function planReconcile(o: ReconcileObservation): Plan {
  const { app } = o;
  const verdict = admission(o);
  if (verdict.verdict === 'refused') return refusedPlan(o, verdict.problems);
  if (verdict.verdict === 'claiming') return claimPlan(app, verdict.claims, o.now);
  // An LLM app's route is KServe's, whose acceptance its members' Ready reports: ours has nothing to say.
  const routeAdmission = app.spec.ingress && !servesLlm(app.spec) ? o.route.admission(app, o.routes.live) : undefined;
  const d = decide({ ...o, ...(routeAdmission ? { routeAdmission } : {}) });
  const members = servesLlm(app.spec) ? memberPlan(app, d.plan, d.scale, d.prewarmReplicas, d.revisions, o.now) : undefined;
  const requeueAfterMs = [d.requeueAfterMs, members?.requeueAfterMs].filter((x): x is number => x !== undefined);
  return {
    decision: d, problems: [], operations: members ? memberOperations(o, members) : childOperations(o, d), effects: d.effects,
    ...(requeueAfterMs.length ? { requeueAfterMs: Math.min(...requeueAfterMs) } : {}),
    // Served again: a route the platform had withdrawn is back (RouteWithdrawn goes).
    report: (outcome) => withoutCondition(reportReconcile(o, d, outcome), ROUTE_WITHDRAWN),
  };
}

/** When to look again: the plan's requeue or the status writer's, the earlier; whole milliseconds, at least one. */
export function nextLookMs(plan: Plan, statusRetryInMs?: number): number | undefined {
  const waits = [plan.requeueAfterMs, statusRetryInMs].filter((x): x is number => x !== undefined);
  return waits.length ? Math.max(1, Math.ceil(Math.min(...waits))) : undefined;
}

/** True while the platform has withdrawn the app's route (a gateway or host revoked); dropped once the app is served again. */
export const ROUTE_WITHDRAWN = 'RouteWithdrawn';

/**
 * A refused app: no child is made or changed, no effect started; Ready=False names the fields. A bad
 * edit never takes down what runs, but the platform's revocation does: a route that carries a gateway
 * or host the app may no longer use (revokedBy) is removed, and RouteWithdrawn=True says so; the
 * workload keeps serving (at the URL Knative gives it) and every other child stays as it was.
 */
function refusedPlan(o: ReconcileObservation, problems: SpecProblem[]): Plan {
  const { app, now } = o;
  const revoking = platformRevocations(o, problems);
  const withdrawals = withdrawnRoutes(o, revoking);
  let status = invalidSpecStatus(app, problems, now);
  const events: PlannedEvent[] = [{ type: 'Warning', reason: problems[0]!.reason, message: problems.map((p) => `${p.field}: ${p.message}`).join('; ') }];
  const withdrawn = routeWithdrawn(o, revoking, withdrawals);
  if (withdrawn) {
    const before = findCondition(app.status?.conditions, ROUTE_WITHDRAWN);
    const condition = setCondition(before ? [before] : [], { type: ROUTE_WITHDRAWN, status: 'True', ...withdrawn, observedGeneration: app.metadata.generation ?? 0 }, now)[0]!;
    status = { ...status, conditions: [...status.conditions ?? [], condition] };
    // Announced with the status write that first records it: a write refused as stale (409) announces
    // nothing, and the next pass, its route already gone, derives the same condition and announces it then.
    if (before?.status !== 'True') events.push({ type: 'Warning', reason: ROUTE_WITHDRAWN, message: withdrawn.message });
  }
  return {
    problems, operations: withdrawals.map((w) => w.op), effects: [],
    report: () => ({
      status, write: { mode: 'now' },
      ...withStatusWrite(events),
      metrics: { phase: status.phase, windowChanges: [] },
    }),
  };
}

/**
 * What of the refusal is the platform's to revoke: its policy (a gateway or host it no longer allows) and
 * another namespace's claim on a host. A host another app of the same namespace routes is not: within a
 * namespace, the app serving a host keeps it and one whose edit names it is refused
 * (controllers/host-claims.ts), so a tenant's own edit never takes down another app's route.
 */
function platformRevocations(o: ReconcileObservation, problems: SpecProblem[]): SpecProblem[] {
  // Another namespace's claim revokes a host whatever else is wrong with the spec (admission lists conflicts only for an otherwise valid one).
  const own = problems.filter((p) => !(p.reason === 'HostConflict' && o.hosts.problems.includes(p)));
  return [...own, ...o.hosts.conflicts.filter((c) => !own.some((p) => p.field === c.field && p.reason === c.reason))];
}

/**
 * RouteWithdrawn, derived from what is observed rather than from what this pass deletes, so a later pass
 * writes it if this one's status write is lost: True while the platform revokes a gateway or host of the
 * spec's ingress and the app, which has served (a stable version), has no route left after this pass's
 * withdrawals. Once withdrawn it stays True while the app is refused and has no route, whatever the
 * reason now; it goes once the app is served again (planReconcile). Its message names no more than the
 * spec and the route's own name, so every pass derives the same one.
 */
function routeWithdrawn(o: ReconcileObservation, revoking: SpecProblem[], withdrawals: Array<{ op: ChildOperation }>): { reason: string; message: string } | undefined {
  const { app } = o;
  const gone = new Set(withdrawals.map((w) => w.op.live));
  const routeLeft = [o.routes.live, o.routes.legacy, o.routes.retired].some((r) => r !== undefined && !gone.has(r));
  if (routeLeft) return undefined;
  const why = [...new Map(revoking.filter((p) => revokes(app, p)).map((p) => [`${p.reason} ${p.field}`, p])).values()];
  if (app.spec.ingress && why.length && (withdrawals.length || app.status?.versions?.stable)) {
    const message = `the platform no longer lets this app use ${why.map((p) => p.field).join(', ')} (${why.map((p) => p.message).join('; ')}): `
      + `${o.route.kind.kind} ${o.route.name(app)} withdrawn; the workload keeps serving at its own URL`;
    return { reason: why[0]!.reason, message };
  }
  const before = findCondition(app.status?.conditions, ROUTE_WITHDRAWN);
  return before?.status === 'True' ? { reason: before.reason, message: before.message } : undefined;
}

/** The app's routes (ours, ours before 0.2, the retired router's) that carry what `problems` revoke, each to remove. */
function withdrawnRoutes(o: ReconcileObservation, problems: SpecProblem[]): Array<{ op: ChildOperation; revoked: SpecProblem[] }> {
  const retiredKind = retiredRouteKind(o.route);
  const routes: Array<[string, ChildOperation['kind'] | undefined, WorkloadObject | undefined]> = [
    ['route', o.route.kind, o.routes.live], ['legacy-route', o.route.kind, o.routes.legacy], ['retired-route', retiredKind, o.routes.retired],
  ];
  return routes.flatMap(([id, kind, live]) => {
    const revoked = revokedBy(o.app, problems, live);
    if (!kind || !live || !revoked.length) return [];
    return [{ revoked, op: { id, action: 'remove', kind, live, why: `the platform revoked ${revoked.map((p) => p.field).join(', ')} (${revoked[0]!.reason}): the route goes, the workload keeps serving` } }];
  });
}

/** `report` without the condition `type`. */
function withoutCondition(report: Report, type: string): Report {
  const conditions = report.status.conditions;
  if (!conditions?.some((c) => c.type === type)) return report;
  return { ...report, status: { ...report.status, conditions: conditions.filter((c) => c.type !== type) } };
}

/**
 * The hosts no one holds are claimed first, and nothing else happens: the next pass reads the claims'
 * outcome from the cache (their events re-queue the app), so every verdict comes from the same
 * objects in every replica. A claim the API server refuses (admission, RBAC) is reported as any
 * refused write: Ready=False ApplyRejected, a Warning, the rejection metric, a retry with backoff.
 */
function claimPlan(app: ServerlessApp, missing: HostClaim[], now: Date): Plan {
  return {
    problems: [], effects: [], requeueAfterMs: CLAIM_RECHECK_MS,
    operations: missing.map((c): ChildOperation => ({
      id: `host-claim/${c.metadata.name}`, action: 'claim', kind: Kinds.HostClaim, desired: c as unknown as WorkloadObject,
      why: `claims host ${c.spec.host} for namespace ${c.spec.namespace}: of concurrent claims the API server lets one win`,
    })),
    report: (outcome) => claimsReport(app, missing.map((c) => c.spec.host), now, outcome.operations.find((x) => x.refusal)?.refusal),
  };
}

/** The workload, its revisions' bounds, the route, then what a kind switch leaves behind, each when its guard holds. */
function childOperations(o: ReconcileObservation, d: Decision): ChildOperation[] {
  const { app } = o;
  const { workload, plan, previous, other } = d;
  const ops: ChildOperation[] = [{
    id: 'workload', action: 'ensure', kind: workload.kind, write: workload.write, desired: desiredWorkload(app, d), ...(d.live ? { live: d.live } : {}),
    why: `the ${workload.kind.kind} runs version ${d.version}${d.fresh ? ' (a kind switch: it starts on its own)' : ''}`,
  }];
  if (workload.boundsOnRevisions) ops.push(...boundsOperations(d));
  const { live, legacy } = o.routes;
  const retiredKind = retiredRouteKind(o.route);
  const retired = o.routes.retired && retiredKind ? { kind: retiredKind, live: o.routes.retired } : undefined;
  if (legacy) ops.push({ id: 'legacy-route', action: 'remove', kind: o.route.kind, live: legacy, why: `before 0.2 our ${o.route.kind.kind} carried the app's name, which KServe also uses for its own` });
  if (!app.spec.ingress) {
    if (live) ops.push({ id: 'route', action: 'remove', kind: o.route.kind, live, why: 'spec.ingress was removed' });
    if (retired) ops.push({ id: 'retired-route', action: 'remove', kind: retired.kind, live: retired.live, why: 'spec.ingress was removed' });
  } else {
    // Header routes and mirroring reach a candidate only while the split lists it (ready, its own revision),
    // it is warm and not stopped (rolled back, aborted, failed), and, for a router that reports status,
    // once the route's parents accepted it.
    const admission = o.route.admission(app, live);
    const traffic = trafficPlan(plan);
    const reachable = splitReachesCandidate(traffic, !previous && !!plan.candidate?.warm && !isParked(plan.candidate?.state) && (admission?.accepted ?? true));
    const serving = previous?.workload ?? workload;
    ops.push({
      id: 'route', action: 'ensure', kind: o.route.kind, write: o.route.write, ...(live ? { live } : {}),
      desired: o.route.render(app, serving, { reachable, ...(plan.candidate?.revision ? { revision: plan.candidate.revision } : {}) }, traffic, { inForce: d.serving.traffic, routesReady: d.serving.routeReady, ...(live ? { live } : {}) }),
      why: `spec.ingress routes its hosts to the ${serving.kind.kind}${reachable ? ', header routes and mirroring to the candidate' : ''}`,
    });
    // Make before break across a router switch: the other router's route goes once ours is written
    // unchanged and (where the router reports status) admitted by its parents.
    if (retired && (admission?.admitted ?? true)) {
      ops.push({
        id: 'retired-route', action: 'remove', kind: retired.kind, live: retired.live,
        when: { op: 'route', outcome: ['unchanged'], why: `the ${o.route.kind.kind} routes the app's hosts already` },
        why: `the platform routes spec.ingress with ${o.route.kind.kind}s now`,
      });
    }
  }
  // The other kind goes once this kind serves: the route (if any) already points here.
  if (!previous && other) {
    ops.push({
      id: 'other-workload', action: 'remove', kind: other.workload.kind, live: other.live,
      ...(app.spec.ingress ? { when: { op: 'route', outcome: ['unchanged'], why: `the ${o.route.kind.kind} routes to the ${workload.kind.kind} already` } } : {}),
      why: `the app runs as a ${workload.kind.kind} now`,
    });
  }
  // Model -> container: with KServe's default ingress (disableIstioVirtualHost: false) KServe holds an
  // ExternalName Service named after the app, and Knative's Route cannot create its placeholder Service
  // of that name ("NotOwned") while it exists. So the new revision is made ready and warm first, then the
  // InferenceService goes and the Route follows (seconds without a route, documented).
  if (previous?.workload === o.kserve.workload && plan.candidate?.ready && plan.candidate.warm) {
    ops.push({ id: 'previous-workload', action: 'remove', kind: Kinds.InferenceService, live: previous.live, why: `version ${plan.candidate.version} is ready and warm on the ${workload.kind.kind}` });
  }
  return ops;
}

/**
 * An LLM app's members (planner/llm-workload.ts memberPlan), each its own write: those gaining weight first.
 * KServe weights are proportional and Istio answers 500 where a rule's weights add up to 0 (istio
 * conversion.go): raising first keeps a positive weight in every intermediate split (100/0 -> 0/100 passes
 * 100/100, never 0/0), and each such split lies between the old and the new one. Then the replaced ones past
 * their retention go. KServe routes an LLM app, so no route of ours is written.
 */
function memberOperations(o: ReconcileObservation, p: MemberPlan): ChildOperation[] {
  const { app } = o;
  const live = new Map((o.llm?.objects ?? []).map((m) => [m.metadata.name, m]));
  const liveWeight = (name: string) => Number((live.get(name)?.spec as { router?: { route?: { weight?: number } } } | undefined)?.router?.route?.weight ?? 0);
  const version = versionOf(app.spec);
  // The spec's version from the spec; any other from its own live member (its model is not the spec's any more).
  // One without a live member cannot be rendered, and is not made up from the spec.
  const writes = p.members.flatMap((m) => {
    const name = memberName(app.metadata.name, m.version);
    const workload = m.version === version ? versionWorkload(app, m.version) : live.has(name) ? liveWorkload(live.get(name)!) : undefined;
    return workload ? [{ m, name, workload }] : [];
  }).sort((a, b) => (b.m.weight - liveWeight(b.name)) - (a.m.weight - liveWeight(a.name)));
  return [
    ...writes.map(({ m, name, workload }): ChildOperation => ({
      id: `llm/${name}`, action: 'ensure', kind: Kinds.LLMInferenceService, write: 'apply',
      desired: renderLlmMember(app, m, workload) as unknown as WorkloadObject, ...(live.has(name) ? { live: live.get(name)! } : {}),
      why: m.stopped
        ? `version ${m.version} is ${m.retiredAt ? `replaced: kept stopped until ${new Date(Date.parse(m.retiredAt) + parseDuration(app.spec.rollout?.retainPrevious ?? ROLLOUT_DEFAULTS.retainPrevious)).toISOString()}` : 'parked: stopped at weight 0'}`
        : `version ${m.version} runs ${m.replicas} replica${m.replicas === 1 ? '' : 's'} at weight ${m.weight}`,
    })),
    ...p.remove.flatMap((name): ChildOperation[] => live.has(name)
      ? [{ id: `llm/${name}`, action: 'remove', kind: Kinds.LLMInferenceService, live: live.get(name)!, why: `${name} was replaced longer ago than rollout.retainPrevious (or more than ${MAX_RETAINED} are kept)` }]
      : []),
  ];
}

/** Knative >= 1.21 applies min/max-scale edits on a live Revision without a new revision. */
function boundsOperations(d: Decision): ChildOperation[] {
  const bounds = revisionBounds(d.plan, d.scale, d.prewarmReplicas);
  return d.revisions.flatMap((r): ChildOperation[] => {
    const want = bounds.get(r.metadata.name);
    // Retired: only undo a minimum this operator raised.
    if (!want && !(Number(r.metadata.annotations?.[MIN_SCALE] ?? 0) > 0)) return [];
    return [{
      id: `revision-bounds/${r.metadata.name}`, action: 'annotate', kind: Kinds.KnativeRevision,
      live: { apiVersion: apiVersionOf(Kinds.KnativeRevision), kind: Kinds.KnativeRevision.kind, ...r },
      annotations: want ? boundsAnnotations(want) : { [MIN_SCALE]: '0' },
      why: want ? `the scale bounds revision ${r.metadata.name} should have now` : `revision ${r.metadata.name} is retired: the minimum this operator raised goes`,
    }];
  });
}
