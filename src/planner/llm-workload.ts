// LLM apps (spec.model.serving: llm): one LLMInferenceService per live version,
// all in the routing group named after the app (render/llm-inference-service.ts).
// Each member plays the part a Knative Revision plays for the other kinds: its
// name is the rollout's "revision", its readiness is KServe's, and the traffic
// in force is what KServe wrote into the routes, as its status reports it. So
// the rollout machine (rollout/canary.ts) runs unchanged; what differs is how a
// plan becomes objects (memberPlan: weights, replicas, stop, retention) and how
// they are read back. Pure.

import { parseDuration } from '../api/v1alpha1/duration.ts';
import { ROLLOUT_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import type { ServerlessApp, TrafficStatus } from '../api/v1alpha1/serverlessapp.ts';
import { APP_LABEL, VERSION_LABEL } from '../render/metadata.ts';
import { memberName, renderLlmMember, RETIRED_AT_ANNOTATION, STOP_ANNOTATION, type LlmMember } from '../render/llm-inference-service.ts';
import { isParked, type ObservedRevision, type RolloutPlan } from '../rollout/canary.ts';
import { revisionBounds } from '../scaling/revision-bounds.ts';
import type { ScaleBounds } from '../scaling/windows.ts';
import { findCondition } from '../util/conditions.ts';
import { Kinds } from '../util/kinds.ts';
import type { KnativeCondition, Revision } from './revisions.ts';
import type { Workload, WorkloadObject, WorkloadSummary } from './workloads.ts';
import { UNREPORTED } from './workloads.ts';

/** KServe's Ready reasons that speak of its routes and gateways only (lifecycle.go, router.go): the workloads may serve. */
const ROUTER_REASONS = ['HTTPRoutesNotReady', 'GatewaysNotReady', 'RouterNotReady'];

/** Replaced versions kept stopped at once, newest first: each holds objects (not pods) until its retention ends. */
export const MAX_RETAINED = 3;

interface MemberStatus {
  conditions?: KnativeCondition[];
  url?: string;
  workloads?: { primary?: { readyReplicas?: number } };
  router?: { group?: { name?: string; members?: Array<{ name: string; weight?: number; stopped?: boolean }> } };
}

/** Stopped by its annotation (KServe compares the value case-insensitively, pkg/utils/utils.go). */
export function isStopped(m: { metadata: { annotations?: Record<string, string> } }): boolean {
  return m.metadata.annotations?.[STOP_ANNOTATION]?.toLowerCase() === 'true';
}

/**
 * A member as the planner reads revisions: identity, labels and annotations (version, stop, retirement),
 * KServe's Ready, and its ready replicas. What the caches keep of each (a member's status carries its routes,
 * addresses and applied configs, none of which the planner reads beyond the group).
 */
export function memberRevision(m: WorkloadObject): Revision {
  const status = m.status as MemberStatus | undefined;
  const { name, namespace = '', labels, annotations, creationTimestamp, uid } = m.metadata;
  const conditions = ['Ready', 'WorkloadsReady'].flatMap((type) => {
    const c = findCondition(status?.conditions, type);
    return c ? [{ type, status: c.status, ...(c.reason ? { reason: c.reason } : {}), ...(c.message ? { message: c.message } : {}) }] : [];
  });
  return {
    apiVersion: m.apiVersion, kind: m.kind,
    metadata: { name, namespace, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}), ...(creationTimestamp ? { creationTimestamp } : {}), ...(uid ? { uid } : {}) },
    status: {
      ...(conditions.length ? { conditions } : {}),
      actualReplicas: status?.workloads?.primary?.readyReplicas ?? 0,
    },
  };
}

/** What the caches keep of a member's status: its conditions (type, status, reason, message), url, ready replicas and group. */
export function slimMember(m: WorkloadObject): WorkloadObject {
  const status = m.status as MemberStatus | undefined;
  if (!status) return m;
  const primary = status.workloads?.primary?.readyReplicas;
  const group = status.router?.group;
  return {
    ...m,
    status: {
      ...(status.conditions ? { conditions: status.conditions.map(({ type, status: st, reason, message }) => ({ type, status: st, ...(reason ? { reason } : {}), ...(message ? { message } : {}) })) } : {}),
      ...(status.url ? { url: status.url } : {}),
      ...(primary !== undefined ? { workloads: { primary: { readyReplicas: primary } } } : {}),
      ...(group ? { router: { group: { ...(group.name ? { name: group.name } : {}), members: (group.members ?? []).map(({ name, weight, stopped }) => ({ name, ...(weight !== undefined ? { weight } : {}), ...(stopped ? { stopped } : {}) })) } } } : {}),
    } as WorkloadObject['status'],
  };
}

/**
 * Ready when its workloads are ready with a replica and KServe's Ready is True, or False only for its router:
 * KServe's Ready drops to False (HTTPRoutesNotReady) for a moment at every weight change, until istiod has
 * accepted the rewritten route's new generation (router_discovery.go IsHTTPRouteReady), and an automated
 * rollout must not start over from its first step for that. Routing is judged by the traffic in force
 * instead: KServe gives a member it cannot route to no place in its peers' routes (router_group.go), so no
 * share is in force for it, whatever its weight. KServe's other Ready=False reasons are all ones it keeps
 * working on (pods starting, a stopped member): the rollout's progress deadline decides when a version failed.
 */
export function observeMember(r: Revision): ObservedRevision {
  const ready = findCondition(r.status?.conditions, 'Ready');
  const workloads = findCondition(r.status?.conditions, 'WorkloadsReady');
  const replicas = r.status?.actualReplicas ?? 0;
  const stopped = isStopped(r);
  const serving = !stopped && replicas > 0 && (ready?.status === 'True' || (workloads?.status === 'True' && ROUTER_REASONS.includes(ready?.reason ?? '')));
  const waiting = serving ? undefined : stopped ? 'Stopped: starting it again (its serving.kserve.io/stop annotation is being removed)'
    : ready?.status === 'False' ? `${ready.reason ?? 'NotReady'}: ${ready.message ?? 'no message'}`
      : ready?.status === 'True' && replicas === 0 ? 'NoReadyReplicas: KServe reports it Ready with no ready replica' : undefined;
  return {
    name: r.metadata.name, version: r.metadata.labels?.[VERSION_LABEL] ?? '',
    ready: serving, replicas,
    ...(waiting ? { waiting } : {}),
  };
}

/**
 * The member whose route carries the app's traffic: Istio merges HTTPRoutes with the same matches on a
 * host oldest first (istio pilot/pkg/config/kube/gateway/route_collections.go), and a stopped member has no
 * route of its own. Oldest by creation time, then name.
 */
export function routingMember(members: readonly WorkloadObject[]): WorkloadObject | undefined {
  return members.filter((m) => !isStopped(m))
    .sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || a.metadata.name.localeCompare(b.metadata.name))[0];
}

/** What the planner observes of an LLM app (decide.ts Observation.llm): its members as revisions, and the one routing. */
export function llmObservation(workload: Workload, objects: WorkloadObject[]): { workload: Workload; live?: WorkloadObject; members: Revision[]; objects: WorkloadObject[] } {
  const live = routingMember(objects);
  return { workload, members: objects.map(memberRevision), objects, ...(live ? { live } : {}) };
}

/**
 * The split in force: the routing member's status.router.group, which KServe writes after its route
 * (router_group_status.go): the members its route lists, each weight proportional. Stopped ones carry 0.
 */
export function groupTraffic(routing: WorkloadObject | undefined, versionOf: (member: string) => string | undefined): TrafficStatus[] {
  const members = (routing?.status as MemberStatus | undefined)?.router?.group?.members ?? [];
  const weights = members.map((m) => ({ name: m.name, weight: m.stopped ? 0 : Math.max(0, m.weight ?? 0) }));
  const total = weights.reduce((sum, m) => sum + m.weight, 0);
  if (total === 0) return [];
  return weights.map((m) => {
    const version = versionOf(m.name);
    return { revision: m.name, percent: Math.round((m.weight * 100) / total), ...(version ? { version } : {}) };
  });
}

export function llmWorkload(): Workload {
  return {
    kind: Kinds.LLMInferenceService,
    write: 'apply',
    boundsOnRevisions: false,
    runs: (r, app) => r.kind === Kinds.LLMInferenceService.kind && r.metadata.labels?.[APP_LABEL] === app.metadata.name,
    observe: observeMember,
    knativeServiceName: () => '',
    desiredRevision: (app, version) => memberName(app.metadata.name, version),
    // The members are written one by one (planner/reconcile.ts, from memberPlan); this is the spec's version's.
    render: ({ app, version, plan, effective, prewarmReplicas, revisions }) => {
      const own = memberPlan(app, plan, effective, prewarmReplicas, revisions, new Date(0)).members.find((m) => m.version === version);
      return renderLlmMember(app, own ?? { version, weight: 0, replicas: effective.minScale, stopped: false }) as unknown as WorkloadObject;
    },
    // KServe routes an LLM app (each member's own HTTPRoute): no route of ours, no tag hosts.
    hosts: () => ({ defaultHost: '', stableHost: '', candidateHost: '', stableTag: '', candidateTag: '' }),
    summarize: (live, versionOf) => summarizeMember(live, versionOf),
    isStale: () => false,
  };
}

function summarizeMember(live: WorkloadObject | undefined, versionOf: (r: string) => string | undefined): WorkloadSummary {
  const status = live?.status as MemberStatus | undefined;
  if (!status?.conditions) return { status: 'Unknown', reason: UNREPORTED, message: `waiting for KServe to report on ${live ? `LLMInferenceService ${live.metadata.name}` : 'the LLMInferenceService'}`, traffic: [], routeReady: false };
  const ready = findCondition(status.conditions, 'Ready');
  const router = findCondition(status.conditions, 'RouterReady');
  return {
    ...(ready ? { ready: ready.status === 'True' } : {}),
    status: ready?.status === 'True' || ready?.status === 'False' ? ready.status : 'Unknown',
    reason: ready?.status === 'True' ? 'Ready' : (ready?.reason ?? 'Pending'),
    message: ready?.status === 'True' ? `LLMInferenceService ${live!.metadata.name} is ready` : (ready?.message ?? `LLMInferenceService ${live!.metadata.name} is not ready`),
    ...(status.url ? { url: status.url } : {}),
    traffic: groupTraffic(live, versionOf),
    routeReady: router?.status === 'True',
  };
}

/** What the members should be now: each with its weight, replicas and stop, and the replaced ones past retention to delete. */
export interface MemberPlan {
  members: LlmMember[];
  /** Live members to delete: replaced, and past their retention (or beyond MAX_RETAINED). */
  remove: string[];
  /** When the next retention ends. */
  requeueAfterMs?: number;
}

/**
 * From the rollout plan: the first version takes all; then stable takes 100 - p and a candidate that is
 * ready and warm p (the machine keeps p at 0 before). A parked candidate (failed, aborted, rolled back) and
 * every replaced version are stopped: their GPUs are freed and they stay in the group at weight 0, so a
 * return to one restarts it rather than making a new one. Replicas are the revision bounds' minimum (the
 * window's, a bake's held replicas for the previous version).
 */
export function memberPlan(app: ServerlessApp, plan: RolloutPlan, effective: ScaleBounds, prewarmReplicas: number, live: readonly Revision[], now: Date): MemberPlan {
  const bounds = revisionBounds(plan, effective, prewarmReplicas);
  const versionOf = (name: string) => live.find((r) => r.metadata.name === name)?.metadata.labels?.[VERSION_LABEL];
  const replicas = (member: string) => bounds.get(member)?.minScale ?? effective.minScale;
  const members = new Map<string, LlmMember>();
  const add = (name: string | undefined, version: string, weight: number, stopped: boolean) => {
    if (!name || members.has(name)) return;
    members.set(name, { version, weight, replicas: replicas(name), stopped });
  };
  const c = plan.candidate;
  const candidateShare = c && !isParked(c.state) && c.ready && c.warm ? c.percent : 0;
  if (plan.initial) add(plan.initial.revision ?? memberName(app.metadata.name, plan.initial.version), plan.initial.version, 100, false);
  if (plan.stable) add(plan.stable.revision, plan.stable.version, 100 - candidateShare, false);
  if (c) add(c.revision ?? memberName(app.metadata.name, c.version), c.version, candidateShare, isParked(c.state));

  // Replaced: stopped, kept for rollout.retainPrevious from the first time they were, newest first.
  const retainMs = parseDuration(app.spec.rollout?.retainPrevious ?? ROLLOUT_DEFAULTS.retainPrevious);
  const replaced = live.filter((r) => !members.has(r.metadata.name))
    .map((r) => ({ r, since: r.metadata.annotations?.[RETIRED_AT_ANNOTATION] ?? now.toISOString() }))
    .sort((a, b) => b.since.localeCompare(a.since) || (b.r.metadata.creationTimestamp ?? '').localeCompare(a.r.metadata.creationTimestamp ?? ''));
  const remove: string[] = [];
  let nextEnd: number | undefined;
  replaced.forEach(({ r, since }, i) => {
    const ends = Date.parse(since) + retainMs;
    if (i >= MAX_RETAINED || !(ends > now.getTime())) { remove.push(r.metadata.name); return; }
    nextEnd = Math.min(nextEnd ?? ends, ends);
    members.set(r.metadata.name, { version: versionOf(r.metadata.name) ?? '', weight: 0, replicas: effective.minScale, stopped: true, retiredAt: since });
  });
  return { members: [...members.values()], remove, ...(nextEnd !== undefined ? { requeueAfterMs: Math.max(1, nextEnd - now.getTime()) } : {}) };
}
