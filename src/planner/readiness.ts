// How far an app is from its spec's desired state, in the terms GitOps tools
// read (kstatus: Flux, kpt, `kubectl wait`; Argo CD's health script): reached
// (Ready=True), still being reached (Reconciling=True, Ready Unknown, or False
// for a problem the operator or the data plane is retrying), or not reachable
// without a new edit (Stalled=True, Ready=False). Reconciling and Stalled are
// abnormal-true: absent when normal, and never both. Pure.

import type { RolloutSpec } from '../api/v1alpha1/serverlessapp.ts';
import { reportedPercent, type ObservedRevision, type RolloutPlan } from '../rollout/canary.ts';
import type { EffectiveScale } from '../scaling/windows.ts';
import type { Condition } from '../util/conditions.ts';
import type { RouteAdmission } from './route-admission.ts';
import type { WorkloadSummary } from './workloads.ts';

export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/** The abnormal-true conditions (and the informational Paused): present only while they hold. */
export const RECONCILING = 'Reconciling', STALLED = 'Stalled', PAUSED = 'Paused';

interface Said { reason: string; message: string }

export type Reading =
  | ({ state: 'reached' } & Said)
  /** `problem`: what Ready says instead (False) while the work goes on: a refused write being retried, a stable revision not ready. */
  | ({ state: 'reconciling'; problem?: Said } & Said)
  | ({ state: 'stalled' } & Said);

export interface ReadingInput {
  plan: RolloutPlan;
  workload: WorkloadSummary;
  revisions: Map<string, ObservedRevision>;
  rollout?: RolloutSpec;
  /** The revision the spec asks for, where the data plane's names are known ahead (Knative): a replacement of the stable one is awaited. */
  desiredRevision?: string;
  scale: EffectiveScale;
  /** A child not written in this reconcile (see StatusInput.rejected). */
  rejected?: { kind: string; object: string; message: string; reason?: 'ApplyRejected' | 'NotOwned' };
  /** What the app's route's parents say of it, where the router reports (Gateway API; planner/route-admission.ts). */
  route?: Pick<RouteAdmission, 'admitted' | 'reason' | 'message'>;
}

/** What the app's spec came to in this reconcile. */
export function readingOf(r: ReadingInput): Reading {
  const { plan } = r;
  if (r.rejected?.reason === 'NotOwned') {
    return {
      state: 'stalled', reason: 'NotOwned',
      message: `${r.rejected.kind} ${r.rejected.object} already exists and this app does not control it (${r.rejected.message}); nothing was written to it. Rename the app, or have its owner remove it; the operator looks again when this app changes.`,
    };
  }
  // A failure holds until rollout.retry or the workload spec changes; an abort until it is removed. Their messages say so.
  if (plan.phase === 'Failed') return { state: 'stalled', reason: plan.canary?.failure?.reason ?? plan.progressing.reason, message: plan.progressing.message };
  if (plan.phase === 'Aborted') return { state: 'stalled', reason: 'Aborted', message: plan.progressing.message };
  // A freeze lifts on its own once the budget recovers, but until then only an edit (rollout.releaseOverride, or the old version back) moves it.
  if (plan.phase === 'Frozen') return { state: 'stalled', reason: 'ReleaseFrozen', message: plan.progressing.message };
  const replacing = plan.phase === 'Stable' && r.desiredRevision && r.desiredRevision !== plan.stable?.revision ? r.revisions.get(r.desiredRevision) : undefined;
  if (replacing?.failed) {
    return {
      state: 'stalled', reason: 'RevisionFailed',
      message: `revision ${replacing.name} of version ${replacing.version} failed: ${replacing.failed}; ${plan.stable!.revision} keeps serving; change the workload spec to try again`,
    };
  }
  if (r.rejected) return refusedReading(r.rejected);
  const stable = plan.stable ? r.revisions.get(plan.stable.revision) : undefined;
  if (plan.stable && stable && !stable.ready) {
    const said = { reason: 'StableNotReady', message: `stable revision ${plan.stable.revision} is not ready: ${r.workload.message}` };
    return { state: 'reconciling', ...said, problem: said };
  }
  return progress(r);
}

/** A write the API server refused, retried with backoff: in progress, Ready=False with the refusal. */
export function refusedReading(rejected: NonNullable<ReadingInput['rejected']>): Reading {
  const said = { reason: 'ApplyRejected', message: `the API server refused the ${rejected.kind} ${rejected.object}: ${rejected.message}. What runs keeps serving; retrying with backoff.` };
  return { state: 'reconciling', ...said, problem: said };
}

/** The rollout machine's phase, read against the spec: the desired state reached, or what is in progress. */
function progress(r: ReadingInput): Reading {
  const { plan, workload } = r;
  const going = (reason: string, message = plan.progressing.message): Reading => ({ state: 'reconciling', reason, message });
  const reached = (reason: string, message = plan.progressing.message): Reading =>
    (workload.traffic.length > 0 ? { state: 'reached', reason, message } : going('Deploying', `waiting for the data plane to route traffic: ${workload.message}`));
  const c = plan.candidate;
  const warm = !!c?.ready && c.warm;
  // A router that reports on its route (Gateway API) has not admitted it while CanaryProgressing is
  // False in a phase that moves traffic (decide.ts withRouteAdmission): the split is not in force there.
  const routed = plan.progressing.status === 'True';
  /** A manual canaryPercent is reached once the data plane reports it in force. */
  const held = (percent: number) => warm && routed && reportedPercent(workload.traffic, c?.revision) === percent;
  switch (plan.phase) {
    case 'Pending': {
      const reason = plan.initial?.ready && !plan.initial.warm ? 'Prewarming' : 'Deploying';
      const message = plan.promoted.message;
      // The data plane says what is wrong while it keeps trying (a pod not scheduled, an image not pulled yet).
      return workload.status === 'False'
        ? { state: 'reconciling', reason, message, problem: { reason: workload.reason, message: `${message}: ${workload.message}` } }
        : going(reason, message);
    }
    case 'Stable': return stableReading(r, reached, going);
    case 'Canary': {
      if (r.rollout?.canaryPercent === undefined) return going(plan.progressing.reason === 'AnalysisNoData' ? 'AnalysisNoData' : 'CanaryProgressing');
      const percent = r.rollout.canaryPercent;
      return held(percent)
        ? reached('CanaryHeld', `candidate ${c!.version} gets canaryPercent ${percent}% as set, stable ${plan.stable!.version} the rest`)
        : going('CanaryProgressing');
    }
    case 'Testing': return warm && routed ? reached('Testing') : going('CanaryProgressing');
    case 'RolledBack': return reportedPercent(workload.traffic, c?.revision) === 0 ? reached('RolledBack') : going('CanaryProgressing', `traffic moving back to stable ${plan.stable!.version}`);
    // Held where it stands: what the spec asks for until paused is removed.
    case 'Paused': return reached('Paused');
    case 'Promoting': return going('Promoting');
    // The rollout is not done until the bake ends: the previous version still holds its replicas.
    case 'Baking': return going(plan.progressing.reason === 'AnalysisNoData' ? 'AnalysisNoData' : 'Baking');
    case 'Failed': case 'Aborted': case 'Frozen': throw new Error(`${plan.phase} is read as stalled before progress`);
  }
}

/** The stable version serves alone: reached once a replacement revision is in and its minimum replicas are up. */
function stableReading(r: ReadingInput, reached: (reason: string, message: string) => Reading, going: (reason: string, message: string) => Reading): Reading {
  const stable = r.plan.stable!;
  if (r.desiredRevision && r.desiredRevision !== stable.revision) {
    return going('Deploying', `revision ${r.desiredRevision} of version ${stable.version} replaces ${stable.revision} once it is ready`);
  }
  const replicas = r.revisions.get(stable.revision)?.replicas ?? 0;
  if (replicas < r.scale.minScale) {
    const windows = [...r.scale.openWindows, ...r.scale.prewarmingWindows];
    return going(windows.length ? 'WindowOpening' : 'ScalingUp', `${replicas}/${r.scale.minScale} replicas ready on ${stable.revision}${windows.length ? ` (scale window ${windows.join(', ')})` : ''}`);
  }
  // The spec's ingress (an edit of its hosts or gateways) is reached once the route as written is admitted by its parents.
  if (r.route && !r.route.admitted) return going(r.route.reason, r.route.message);
  return reached('Serving', `version ${stable.version} serves on ${stable.revision}`);
}

/** Ready, Reconciling and Stalled as the reading says them; Paused while the spec holds the rollout. */
export function readinessConditions(reading: Reading, paused: boolean): ConditionInput[] {
  const said = { reason: reading.reason, message: reading.message };
  const ready: ConditionInput = reading.state === 'reached' ? { type: 'Ready', status: 'True', ...said }
    : reading.state === 'stalled' ? { type: 'Ready', status: 'False', ...said }
      : reading.problem ? { type: 'Ready', status: 'False', ...reading.problem } : { type: 'Ready', status: 'Unknown', ...said };
  return [
    ready,
    ...(reading.state === 'reconciling' ? [{ type: RECONCILING, status: 'True' as const, ...said }] : []),
    ...(reading.state === 'stalled' ? [{ type: STALLED, status: 'True' as const, ...said }] : []),
    ...(paused ? [pausedCondition] : []),
  ];
}

const pausedCondition: ConditionInput = {
  type: PAUSED, status: 'True', reason: 'RolloutPaused',
  message: 'rollout.paused: the rollout holds where it stands; remove paused (kubectl sapp resume) to go on',
};

/** Whether the rollout machine honours rollout.paused: not for a first version (nothing to hold yet), nor over a promote of the candidate. */
export function rolloutPaused(plan: RolloutPlan, rollout: RolloutSpec | undefined): boolean {
  return !!rollout?.paused && plan.phase !== 'Pending' && plan.phase !== 'Promoting';
}
