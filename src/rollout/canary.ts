// The rollout state machine: one pure step from (spec, what was recorded in
// status, what the data plane reports, the clock) to where traffic goes now.
// All progress lives in status, so a restart resumes exactly where it was, and
// re-applying the same spec is a no-op. Safety rules it enforces:
//  - traffic never moves to a revision that is not ready (and warm, if prewarm
//    is configured); the stable version is only replaced by a ready one;
//  - the stable version is what status recorded, never "latest";
//  - a manual canaryPercent always wins over automated steps.

import type { Phase, RolloutSpec } from '../api/v1alpha1/serverlessapp.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';

export interface RevisionRef { version: string; revision: string }

export interface ObservedRevision {
  name: string;
  version: string;
  ready: boolean;
  /** Ready replicas reported by the data plane. */
  replicas: number;
}

/** The outcome of the current step's metric checks, when they were due and run. */
export type AnalysisOutcome =
  | { result: 'pass'; message: string }
  | { result: 'fail'; message: string }
  | { result: 'nodata'; message: string };

export interface CanaryProgress {
  weight?: number;
  /** The last check round returned no data: the rollout stays where it is until a round has data. */
  halted?: boolean;
  step?: number;
  stepStartedAt?: string;
  failedChecks?: number;
  message?: string;
  abortedVersion?: string;
}

export interface RolloutInput {
  now: Date;
  /** The version the spec asks for, and the revision that serves it (undefined while KServe has not created it). */
  desired: { version: string; revision?: string };
  rollout?: RolloutSpec;
  previous: { stable?: RevisionRef; canary?: CanaryProgress };
  revisions: ObservedRevision[];
  /** Whether a version has finished prewarming (always true when prewarm is not configured). */
  isWarm: (version: string) => boolean;
  analysis?: AnalysisOutcome;
  /** The traffic split the data plane reports now; a version counts as serving only once it is here. */
  traffic: Array<{ revision: string; percent: number }>;
}

export type CandidateState = 'starting' | 'canary' | 'promoting' | 'rolledBack';

export interface Candidate extends RevisionRef {
  /** Share of traffic the candidate gets now. */
  percent: number;
  ready: boolean;
  warm: boolean;
  state: CandidateState;
}

export interface RolloutEvent { type: 'Normal' | 'Warning'; reason: string; message: string }

export interface RolloutPlan {
  /** Serves 100 - candidate.percent. Undefined only before the first version is ready. */
  stable?: RevisionRef;
  /** The first version, while nothing is stable yet: Knative serves it as soon as it is ready. */
  initial?: { version: string; revision?: string; ready: boolean; warm: boolean };
  candidate?: Candidate;
  phase: Phase;
  canary?: CanaryProgress;
  promoted: { status: 'True' | 'False'; reason: string; message: string };
  progressing: { status: 'True' | 'False'; reason: string; message: string };
  events: RolloutEvent[];
  /** Run the metric checks of the current step before the next step (they are due). */
  analysisDue: boolean;
  requeueAfterMs?: number;
}

/** Share of traffic the data plane reports for `revision`. */
export function reportedPercent(traffic: RolloutInput['traffic'], revision: string | undefined): number {
  return revision ? traffic.filter((t) => t.revision === revision).reduce((sum, t) => sum + t.percent, 0) : 0;
}

export function planRollout(input: RolloutInput): RolloutPlan {
  const { desired, previous } = input;
  const byName = new Map(input.revisions.map((r) => [r.name, r]));
  const isReady = (name?: string) => !!name && !!byName.get(name)?.ready;
  const stable = previous.stable;

  if (!stable) return firstVersion(input, isReady(desired.revision));

  // The spec asks for the stable version: no canary. A newer revision of the same
  // version (a changed template setting) replaces the stable one once it is ready.
  if (desired.version === stable.version) {
    const events: RolloutEvent[] = [];
    if (previous.canary?.weight !== undefined || previous.canary?.step !== undefined) {
      events.push({ type: 'Normal', reason: 'RolledBack', message: `workload spec reverted to stable version ${stable.version}: all traffic on ${stable.revision}` });
    }
    const next = desired.revision && desired.revision !== stable.revision && isReady(desired.revision)
      ? { version: stable.version, revision: desired.revision } : stable;
    if (next !== stable) events.push({ type: 'Normal', reason: 'RevisionReplaced', message: `revision ${next.revision} of version ${stable.version} is ready and replaces ${stable.revision}` });
    return {
      stable: next, phase: 'Stable', events, analysisDue: false,
      promoted: { status: 'True', reason: 'Promoted', message: `version ${stable.version} serves all traffic` },
      progressing: { status: 'False', reason: 'NoCandidate', message: 'no rollout in progress' },
    };
  }

  return candidateStep(input, stable, isReady(desired.revision));
}

function firstVersion(input: RolloutInput, ready: boolean): RolloutPlan {
  const { version, revision } = input.desired;
  const warm = ready && input.isWarm(version);
  if (ready && warm && revision && reportedPercent(input.traffic, revision) === 100) {
    return {
      stable: { version, revision }, phase: 'Stable', analysisDue: false,
      events: [{ type: 'Normal', reason: 'Ready', message: `first version ${version} is ready on revision ${revision}` }],
      promoted: { status: 'True', reason: 'Promoted', message: `version ${version} serves all traffic` },
      progressing: { status: 'False', reason: 'NoCandidate', message: 'no rollout in progress' },
    };
  }
  const waiting = !ready ? 'waiting for its revision to be ready' : !warm ? 'waiting for it to be prewarmed' : 'waiting for the data plane to route all traffic to it';
  return {
    initial: { version, ...(revision ? { revision } : {}), ready, warm },
    phase: 'Pending', events: [], analysisDue: false,
    promoted: { status: 'False', reason: 'FirstVersionStarting', message: `first version ${version}: ${waiting}` },
    progressing: { status: 'False', reason: 'NoCandidate', message: 'no rollout in progress' },
  };
}

function candidateStep(input: RolloutInput, stable: RevisionRef, ready: boolean): RolloutPlan {
  const { desired, rollout, now } = input;
  const prev = input.previous.canary ?? {};
  const warm = ready && input.isWarm(desired.version);
  const revision = desired.revision ?? '';
  const manual = rollout?.canaryPercent;
  const steps = rollout?.steps ?? [];
  const events: RolloutEvent[] = [];
  const base = { version: desired.version, revision, ready, warm };
  const notYet = !ready ? `candidate ${desired.version} is not ready yet` : `candidate ${desired.version} is not prewarmed yet`;

  // A new candidate version (or a replaced one) starts from a clean slate.
  const fresh = prev.abortedVersion !== undefined && prev.abortedVersion !== desired.version ? {} : prev;

  /** `progress`: kept while traffic moves, so automated steps resume promoting on the next pass. */
  const promote = (progress: CanaryProgress = {}): RolloutPlan => {
    if (!ready || !warm || !revision) {
      return {
        stable, candidate: { ...base, percent: 0, state: 'promoting' }, phase: 'Promoting', events, analysisDue: false,
        canary: { weight: 0 },
        promoted: { status: 'False', reason: 'WaitingForCandidate', message: `promotion waits: ${notYet}` },
        progressing: { status: 'True', reason: 'WaitingForCandidate', message: notYet },
      };
    }
    const served = reportedPercent(input.traffic, revision);
    if (served < 100) {
      // Asked for, not done: the candidate is stable only once the data plane routes all traffic to it.
      const moving = `traffic moving to candidate ${desired.version}: the data plane reports ${served}% on ${revision}`;
      return {
        stable, candidate: { ...base, percent: 100, state: 'promoting' }, phase: 'Promoting', events, analysisDue: false,
        canary: { ...progress, weight: 100 },
        promoted: { status: 'False', reason: 'TrafficMoving', message: moving },
        progressing: { status: 'True', reason: 'Promoting', message: moving },
      };
    }
    events.push({ type: 'Normal', reason: 'Promoted', message: `version ${desired.version} (revision ${revision}) promoted to stable with all traffic; ${stable.version} retired` });
    return {
      stable: { version: desired.version, revision }, phase: 'Stable', events, analysisDue: false,
      promoted: { status: 'True', reason: 'Promoted', message: `version ${desired.version} serves all traffic` },
      progressing: { status: 'False', reason: 'Promoted', message: 'rollout finished' },
    };
  };

  const rollback = (reason: string, message: string, canary: CanaryProgress): RolloutPlan => {
    if (input.previous.canary?.weight !== 0 || fresh.abortedVersion !== canary.abortedVersion) {
      events.push({ type: reason === 'RolledBack' ? 'Normal' : 'Warning', reason, message });
    }
    return {
      stable, candidate: { ...base, percent: 0, state: 'rolledBack' }, phase: 'RolledBack', events, analysisDue: false,
      canary: { ...canary, weight: 0 },
      promoted: { status: 'False', reason, message },
      progressing: { status: 'False', reason, message },
    };
  };

  const canaryAt = (percent: number, canary: CanaryProgress, extra: Partial<RolloutPlan> = {}): RolloutPlan => {
    if (!ready || !warm || !revision) {
      return {
        stable, candidate: { ...base, percent: 0, state: 'starting' }, phase: 'Canary', events, analysisDue: false,
        canary: { ...canary, weight: 0 },
        promoted: { status: 'False', reason: 'CanaryInProgress', message: notYet },
        progressing: { status: 'True', reason: 'WaitingForCandidate', message: `${notYet}: it gets no traffic until it is` },
      };
    }
    if (input.previous.canary?.weight !== percent) {
      events.push({ type: 'Normal', reason: 'CanaryWeightChanged', message: `candidate ${desired.version} now gets ${percent}% of traffic, stable ${stable.version} ${100 - percent}%` });
    }
    return {
      stable, candidate: { ...base, percent, state: 'canary' }, phase: 'Canary', events, analysisDue: false,
      canary: { ...canary, weight: percent },
      promoted: { status: 'False', reason: 'CanaryInProgress', message: `candidate ${desired.version} at ${percent}%` },
      progressing: canary.halted
        ? { status: 'False', reason: 'AnalysisNoData', message: canary.message ?? `halted at ${percent}%: no data` }
        : { status: 'True', reason: 'CanaryInProgress', message: canary.message ?? `candidate ${desired.version} at ${percent}%` },
      ...extra,
    };
  };

  // Manual control always wins.
  if (manual !== undefined) {
    if (manual === 100) return promote();
    if (manual === 0) return rollback('RolledBack', `canaryPercent is 0: all traffic on stable ${stable.version}; candidate ${desired.version} kept at 0% and scaled to zero`, {});
    return canaryAt(manual, {});
  }
  if (steps.length === 0) return promote();

  // Automated steps.
  if (fresh.abortedVersion === desired.version) {
    return rollback('RollbackAutomatic', fresh.message ?? `candidate ${desired.version} failed its checks and was rolled back`, fresh);
  }
  if (!ready || !warm || !revision) return canaryAt(0, { step: 0, failedChecks: 0 });
  // Past the last step: promoting, waiting for the data plane to move the traffic.
  if ((fresh.step ?? 0) >= steps.length) return promote({ step: steps.length, failedChecks: fresh.failedChecks ?? 0 });

  const intervalMs = parseDuration(rollout?.interval ?? '1m');
  const step = Math.min(fresh.step ?? 0, steps.length - 1);
  const startedAt = fresh.stepStartedAt && fresh.weight !== undefined && fresh.weight > 0 ? new Date(fresh.stepStartedAt) : now;
  const progress: CanaryProgress = {
    step, stepStartedAt: startedAt.toISOString(), failedChecks: fresh.failedChecks ?? 0,
    ...(fresh.message ? { message: fresh.message } : {}), ...(fresh.halted ? { halted: true } : {}),
  };
  const dueAt = startedAt.getTime() + intervalMs;
  const percent = steps[step]!;

  if (now.getTime() < dueAt) {
    return canaryAt(percent, progress, { requeueAfterMs: dueAt - now.getTime() });
  }
  if (rollout?.analysis && !input.analysis) {
    return canaryAt(percent, progress, { analysisDue: true });
  }
  const outcome: AnalysisOutcome = input.analysis ?? { result: 'pass', message: 'no checks configured' };
  const restart = { stepStartedAt: now.toISOString() };
  if (outcome.result === 'nodata') {
    if (!progress.halted) events.push({ type: 'Warning', reason: 'AnalysisNoData', message: `rollout halted at ${percent}%: ${outcome.message} (no data is not a pass)` });
    return canaryAt(percent, { ...progress, ...restart, halted: true, message: `halted: ${outcome.message}` }, { requeueAfterMs: intervalMs });
  }
  if (outcome.result === 'fail') {
    const failed = progress.failedChecks! + 1;
    const threshold = rollout?.analysis?.failureThreshold ?? 2;
    if (failed >= threshold) {
      return rollback('RollbackAutomatic', `candidate ${desired.version} rolled back after ${failed} failed check rounds: ${outcome.message}`,
        { failedChecks: failed, abortedVersion: desired.version, message: outcome.message });
    }
    events.push({ type: 'Warning', reason: 'AnalysisFailed', message: `check round failed at ${percent}% (${failed}/${threshold}): ${outcome.message}` });
    const { halted: _h, ...resumed } = progress;
    return canaryAt(percent, { ...resumed, ...restart, failedChecks: failed, message: outcome.message }, { requeueAfterMs: intervalMs });
  }
  if (step + 1 >= steps.length) return promote({ step: steps.length, failedChecks: progress.failedChecks ?? 0 });
  const nextPercent = steps[step + 1]!;
  return canaryAt(nextPercent, { step: step + 1, ...restart, failedChecks: progress.failedChecks, message: outcome.message }, { requeueAfterMs: intervalMs });
}
