// Traffic routing behind one small interface (Flagger's router idea): the
// rollout decides "stable gets 100-p, candidate gets p"; a router turns that
// into the data plane's own fields. Knative pins revisions by name with tags;
// KServe only knows canaryTrafficPercent between its latest and previously
// rolled-out revision. Both report the split in force the same way (Knative's
// traffic targets, KServe's under status.components.predictor): trafficInForce.

import type { TrafficStatus } from '../api/v1alpha1/serverlessapp.ts';

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

/** A tagged target's cluster-local host, by Knative's default tag template `{{.Tag}}-{{.Name}}` (config-network). */
export function tagHost(tag: string, route: string, namespace: string): string {
  return `${tag}-${route}.${namespace}.svc.cluster.local`;
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

/** Knative Service `spec.traffic`: revisions pinned by name, tags stable/candidate. */
export const knativeRouter: TrafficRouter<{ traffic: KnativeTrafficTarget[] }> = {
  routes(plan) {
    if (!plan.stable) {
      // Nothing stable yet: pin the first revision; Knative serves it only once it is ready.
      return { traffic: plan.initial?.revision ? [{ revisionName: plan.initial.revision, percent: 100, tag: STABLE_TAG }] : [{ latestRevision: true, percent: 100 }] };
    }
    const c = plan.candidate;
    const candidatePercent = c && c.ready ? c.percent : 0;
    const traffic: KnativeTrafficTarget[] = [{ revisionName: plan.stable.revision, percent: 100 - candidatePercent, tag: STABLE_TAG }];
    // A candidate appears (with its own tag URL) only once it is ready, even at 0%.
    if (c && c.ready && c.revision !== plan.stable.revision) traffic.push({ revisionName: c.revision, percent: candidatePercent, tag: CANDIDATE_TAG });
    return { traffic };
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
