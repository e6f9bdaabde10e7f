// Traffic routing behind one small interface (Flagger's router idea): the
// rollout decides "stable gets 100-p, candidate gets p"; a router turns that
// into the data plane's own fields. Knative pins revisions by name with tags;
// KServe only knows canaryTrafficPercent between its latest and previously
// rolled-out revision. Both report the split in force the same way (Knative's
// traffic targets, KServe's under status.components.predictor): trafficInForce.

import type { TrafficStatus } from '../api/v1alpha1/serverlessapp.ts';
import { clusterLocalHost } from '../util/cluster-local-host.ts';

/** Where traffic should go, in data-plane-neutral terms. */
export interface TrafficPlan {
  /** The first version, before anything is stable: all traffic, served once ready. */
  initial?: { revision?: string; version: string };
  stable?: { revision: string; version: string };
  /** `ready`: its revision is ready, so it may be tagged (at 0% until the plan gives it weight). */
  candidate?: { revision: string; version: string; percent: number; ready: boolean };
  /** The newest revision the workload runs (KServe routes "latest" unless told otherwise). */
  latest?: string;
}

export const STABLE_TAG = 'stable';
export const CANDIDATE_TAG = 'candidate';
/**
 * The tag KServe gives its latest (candidate) revision when tag routing is enabled: a literal in
 * kserve's pkg/controller/v1beta1/inferenceservice/reconcilers/knative/ksvc_reconciler.go,
 * createKnativeService (beside "prev" for the previously rolled-out one).
 */
export const KSERVE_LATEST_TAG = 'latest';
/**
 * The tag KServe gives the previously rolled-out (stable) revision while a canary percent below 100
 * is set (same function): the stable version's own address during a canary, which sticky sessions need.
 */
export const KSERVE_PREVIOUS_TAG = 'prev';

/** A tagged target's cluster-local host, by Knative's default tag template `{{.Tag}}-{{.Name}}` (config-network). */
export function tagHost(tag: string, route: string, namespace: string): string {
  return clusterLocalHost(`${tag}-${route}`, namespace);
}

export interface KnativeTrafficTarget {
  revisionName?: string;
  latestRevision?: boolean;
  percent: number;
  tag?: string;
  url?: string;
}

export interface TrafficRouter<Fields> {
  /** The data plane's traffic fields for a plan. */
  routes(plan: TrafficPlan): Fields;
}

/** The split in force, from Knative's traffic targets (KServe reports its predictor's the same way). */
export function trafficInForce(status: { traffic?: KnativeTrafficTarget[] } | undefined, versionOf: (revision: string) => string | undefined): TrafficStatus[] {
  return (status?.traffic ?? [])
    .filter((t) => t.revisionName)
    .map((t) => {
      const version = versionOf(t.revisionName!);
      return { revision: t.revisionName!, percent: t.percent ?? 0, ...(version ? { version } : {}), ...(t.tag ? { tag: t.tag } : {}), ...(t.url ? { url: t.url } : {}) };
    });
}

/** One revision's share of the traffic, with the tag that gives it an address of its own. */
export interface TrafficShare {
  revision: string;
  /** The version the revision runs (its hash): what a session cookie names. */
  version: string;
  percent: number;
  tag: string;
}

/**
 * The split of a plan, stable (or the first version) first: the one rule for both routers that carry
 * weights, Knative's traffic block and the Gateway API HTTPRoute (KServe takes a percent instead).
 * Before anything is stable the first version's revision takes all, and nothing is named until it
 * has a revision. Then stable takes 100 - p and a ready candidate p, listed even at 0%: Knative gives
 * it its tag address then, and keeps an unrouted revision in reserve at zero replicas. A candidate
 * that is not ready, that the route may not reach (`candidateReachable`: the HTTPRoute's, which
 * carries the split itself), or that is the stable revision itself gets nothing and is not listed:
 * stable keeps 100, as Knative refuses a split that does not sum to 100.
 */
export function trafficSplit(plan: TrafficPlan, candidateReachable = true): TrafficShare[] {
  const { stable, candidate: c } = plan;
  if (!stable) return plan.initial?.revision ? [{ revision: plan.initial.revision, version: plan.initial.version, percent: 100, tag: STABLE_TAG }] : [];
  const stableShare = (percent: number) => ({ revision: stable.revision, version: stable.version, percent, tag: STABLE_TAG });
  if (!c || !c.ready || !candidateReachable || c.revision === stable.revision) return [stableShare(100)];
  return [stableShare(100 - c.percent), { revision: c.revision, version: c.version, percent: c.percent, tag: CANDIDATE_TAG }];
}

/**
 * Whether the split gives the candidate a place: its tag address, its weight, and with them the
 * header routes and mirroring of either router. One rule, so no route sends a request to a tag
 * host Knative has not made (a candidate that is the stable revision has none).
 */
export function splitReachesCandidate(plan: TrafficPlan, candidateReachable = true): boolean {
  return trafficSplit(plan, candidateReachable).some((s) => s.tag === CANDIDATE_TAG);
}

/** Knative Service `spec.traffic`: revisions pinned by name, tags stable/candidate. */
export const knativeRouter: TrafficRouter<{ traffic: KnativeTrafficTarget[] }> = {
  routes(plan) {
    const split = trafficSplit(plan);
    // No revision to pin yet: Knative's own default for an empty traffic block, the latest revision
    // (knative.dev/serving v0.48.1 pkg/apis/serving/v1/route_defaults.go, RouteSpec.SetDefaults).
    if (!split.length) return { traffic: [{ latestRevision: true, percent: 100 }] };
    return { traffic: split.map((s) => ({ revisionName: s.revision, percent: s.percent, tag: s.tag })) };
  },
};

/**
 * KServe `canaryTrafficPercent`: the latest revision (the candidate's) gets P, the
 * previously rolled-out one (stable) the rest. Unset means "latest takes all once
 * ready", which is right only when the latest is the stable version or promoted.
 */
export const kserveRouter: TrafficRouter<{ canaryTrafficPercent?: number }> = {
  routes(plan) {
    const c = plan.candidate;
    if (!plan.stable) return {};
    if (c) return { canaryTrafficPercent: c.ready ? c.percent : 0 };
    // A newer revision that is not yet the stable one (e.g. the spec was reverted to
    // stable, or a scale change made a new revision): keep everything on stable.
    if (plan.latest && plan.latest !== plan.stable.revision) return { canaryTrafficPercent: 0 };
    return {};
  },
};
