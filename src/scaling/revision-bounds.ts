// The scale bounds each live revision of an app should have right now: the
// effective bounds from windows for the revisions that serve, a raised minimum
// for a version still being prewarmed, zero for a rolled-back candidate and for
// retired revisions (a min-scale left behind would keep them running forever:
// knative/serving#4183), at least one replica for a candidate under header
// testing (testers must not meet a cold start), the replicas the previous
// version had for it during a bake. Pure.

import { isParked, type Candidate, type RolloutPlan } from '../rollout/canary.ts';
import type { ScaleBounds } from './windows.ts';

/** Bounds raised to hold a prewarm buffer of `replicas`. */
export function withBuffer(b: ScaleBounds, replicas: number): ScaleBounds {
  if (replicas <= b.minScale) return b;
  return { minScale: replicas, ...(b.maxScale !== undefined ? { maxScale: Math.max(b.maxScale, replicas) } : {}) };
}

export const RETIRED: ScaleBounds = { minScale: 0 };

/** Bounds for the revisions the plan uses, by revision name. */
export function revisionBounds(plan: RolloutPlan, effective: ScaleBounds, prewarmReplicas: number): Map<string, ScaleBounds> {
  const out = new Map<string, ScaleBounds>();
  if (plan.initial?.revision) out.set(plan.initial.revision, plan.initial.warm ? effective : withBuffer(effective, prewarmReplicas));
  // During a bake (paused in it too) the previous version keeps the replicas it had, at 0% traffic, to take it all back warm.
  const baking = plan.canary?.bakeReplicas !== undefined && !!plan.candidate && !isParked(plan.candidate.state);
  if (plan.stable) out.set(plan.stable.revision, baking ? withBuffer(effective, plan.canary!.bakeReplicas!) : effective);
  const c = plan.candidate;
  if (c?.revision && c.revision !== plan.stable?.revision) {
    out.set(c.revision, candidateBounds(c, effective, prewarmReplicas));
  }
  return out;
}

function candidateBounds(c: Candidate, effective: ScaleBounds, prewarmReplicas: number): ScaleBounds {
  if (isParked(c.state)) return { minScale: 0, ...(effective.maxScale !== undefined ? { maxScale: effective.maxScale } : {}) };
  const buffer = c.state === 'testing' ? Math.max(1, prewarmReplicas) : c.warm ? 0 : prewarmReplicas;
  return withBuffer(effective, buffer);
}

/** Bounds for the workload as a whole (KServe: minReplicas/maxReplicas apply to its latest revision). */
export function latestBounds(plan: RolloutPlan, effective: ScaleBounds, prewarmReplicas: number): ScaleBounds {
  const c = plan.candidate;
  if (c) return candidateBounds(c, effective, prewarmReplicas);
  if (plan.initial) return plan.initial.warm ? effective : withBuffer(effective, prewarmReplicas);
  return effective;
}
