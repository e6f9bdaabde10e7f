// The rollout state machine: one pure step from (spec, what was recorded in
// status, what the data plane reports, the clock) to where traffic goes now.
// All progress lives in status, so a restart resumes exactly where it was, and
// re-applying the same spec is a no-op. Safety rules it enforces:
//  - traffic never moves to a revision that is not ready (and warm, if prewarm
//    is configured); the stable version is only replaced by a ready one;
//  - the stable version is what status recorded, never "latest";
//  - a rollout always ends: promoted, rolled back, aborted, or failed (revision
//    failed, progress deadline, warmup or checks), with the stable version
//    serving all traffic in every ending but the first;
//  - precedence of the controls: abort > a recorded failure > promote > paused >
//    a manual canaryPercent > automated steps.
import type { FailureReason, Phase, RolloutSpec } from '../api/v1alpha1/serverlessapp.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import { ROLLOUT_DEFAULTS } from '../api/v1alpha1/defaults.ts';

export interface RevisionRef { version: string; revision: string }

export interface ObservedRevision {
  name: string;
  version: string;
  ready: boolean;
  /** The data plane gave up on it: its reason and message. */
  failed?: string;
  /** Not ready, and the data plane says why while it keeps trying (e.g. Unschedulable). */
  waiting?: string;
  /** Ready replicas reported by the data plane. */
  replicas: number;
}

/** The outcome of the current step's metric checks, when they were due and run. */
export type AnalysisOutcome =
  | { result: 'pass'; message: string }
  | { result: 'fail'; message: string }
  | { result: 'nodata'; message: string };

export interface Failure { version: string; reason: FailureReason; message: string; at?: string; retry?: number }

/** A failure holds until rollout.retry changes: it records the value in force when it failed. */
export function failureHolds(failure: { retry?: number }, retry: number | undefined): boolean {
  return (failure.retry ?? 0) === (retry ?? 0);
}

export interface CanaryProgress {
  /** The candidate this progress belongs to: another version starts from a clean slate. */
  version?: string;
  /** When the candidate started (or resumed) making progress: the deadline counts from here. */
  startedAt?: string;
  paused?: boolean;
  aborted?: boolean;
  failure?: Failure;
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
  previous: { stable?: RevisionRef; canary?: CanaryProgress; phase?: Phase };
  revisions: ObservedRevision[];
  /** Whether a version has finished prewarming (always true when prewarm is not configured). */
  isWarm: (version: string) => boolean;
  /** The desired version's warmup gave up (its last error). */
  warmupFailed?: string;
  analysis?: AnalysisOutcome;
  /** The traffic split the data plane reports now; a version counts as serving only once it is here. */
  traffic: Array<{ revision: string; percent: number }>;
}

/** The states in which the candidate is stopped, kept at 0% and scaled to zero, and the phase each shows. */
const PARKED_PHASES = { rolledBack: 'RolledBack', aborted: 'Aborted', failed: 'Failed' } as const satisfies Record<string, Phase>;
type ParkedState = keyof typeof PARKED_PHASES;

/** The parked states (PARKED_PHASES) keep the candidate at 0% and scaled to zero; `testing` keeps it warm for header rules. */
export type CandidateState = 'starting' | 'canary' | 'testing' | 'promoting' | ParkedState;

/** States in which the candidate gets no traffic and no replicas. */
export function isParked(state: CandidateState | undefined): boolean {
  return state !== undefined && Object.hasOwn(PARKED_PHASES, state);
}

/** Phases in which a version was stopped: a parked candidate's, or (Failed) a first version's that failed. */
export function isStoppedPhase(phase: Phase): boolean {
  return (Object.values(PARKED_PHASES) as Phase[]).includes(phase);
}

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



type ConditionOut = RolloutPlan['promoted'];
const NO_CANDIDATE: ConditionOut = { status: 'False', reason: 'NoCandidate', message: 'no rollout in progress' };

/** A failure recorded before 0.2 only named the version (`abortedVersion`); read it as a failed analysis. */
function recorded(canary: CanaryProgress | undefined): CanaryProgress {
  if (!canary?.abortedVersion || canary.failure) return canary ?? {};
  const { abortedVersion, ...rest } = canary;
  return { ...rest, version: abortedVersion, failure: { version: abortedVersion, reason: 'AnalysisFailed', message: canary.message ?? 'failed its checks', retry: 0 } };
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
    const left = previous.canary;
    if (left?.failure === undefined && !left?.aborted && (left?.weight !== undefined || left?.step !== undefined)) {
      events.push({ type: 'Normal', reason: 'RolledBack', message: `workload spec reverted to stable version ${stable.version}: all traffic on ${stable.revision}` });
    }
    const next = desired.revision && desired.revision !== stable.revision && isReady(desired.revision)
      ? { version: stable.version, revision: desired.revision } : stable;
    if (next !== stable) events.push({ type: 'Normal', reason: 'RevisionReplaced', message: `revision ${next.revision} of version ${stable.version} is ready and replaces ${stable.revision}` });
    return {
      stable: next, phase: 'Stable', events, analysisDue: false,
      promoted: { status: 'True', reason: 'Promoted', message: `version ${stable.version} serves all traffic` },
      progressing: NO_CANDIDATE,
    };
  }

  return candidateStep(input, stable, isReady(desired.revision));
}

/** How to try again, for messages. */
const RETRY_HINT = 'change rollout.retry (kubectl sapp retry) or the workload spec to try again';

/** A version's start failed: the data plane gave up on its revision before it was ready, or warmup gave up before it was warm. */
function startFailure(input: RolloutInput, revision: string | undefined, ready: boolean, warm: boolean): Pick<Failure, 'reason' | 'message'> | undefined {
  const failedRevision = revision ? input.revisions.find((r) => r.name === revision)?.failed : undefined;
  if (failedRevision && !ready) return { reason: 'RevisionFailed', message: `revision ${revision} failed: ${failedRevision}` };
  if (input.warmupFailed && !warm) return { reason: 'WarmupFailed', message: `warmup did not succeed before its deadline: ${input.warmupFailed}` };
  return undefined;
}

function firstVersion(input: RolloutInput, ready: boolean): RolloutPlan {
  const { version, revision } = input.desired;
  const retry = input.rollout?.retry ?? 0;
  const prev = recorded(input.previous.canary);
  const held = prev.failure?.version === version && failureHolds(prev.failure, retry) ? prev.failure : undefined;
  const warm = ready && input.isWarm(version);
  const initial = { version, ...(revision ? { revision } : {}), ready, warm };
  const gaveUp = startFailure(input, revision, ready, warm);
  const failure: Failure | undefined = held ?? (gaveUp && { version, ...gaveUp, at: input.now.toISOString(), retry });
  if (failure) {
    // Nothing else can serve: the data plane routes to the first version whenever it is ready, warm or not.
    const message = `first version ${version} failed (${failure.reason}): ${failure.message}; ${ready ? 'it serves anyway, as nothing else can' : 'nothing serves'}; ${RETRY_HINT}`;
    return {
      initial, phase: 'Failed', analysisDue: false, canary: { version, failure },
      events: held ? [] : [{ type: 'Warning', reason: failure.reason, message }],
      promoted: { status: 'False', reason: failure.reason, message },
      progressing: { status: 'False', reason: failure.reason, message },
    };
  }
  if (ready && warm && revision && reportedPercent(input.traffic, revision) === 100) {
    return {
      stable: { version, revision }, phase: 'Stable', analysisDue: false,
      events: [{ type: 'Normal', reason: 'Ready', message: `first version ${version} is ready on revision ${revision}` }],
      promoted: { status: 'True', reason: 'Promoted', message: `version ${version} serves all traffic` },
      progressing: NO_CANDIDATE,
    };
  }
  const waiting = !ready ? 'waiting for its revision to be ready' : !warm ? 'waiting for it to be prewarmed' : 'waiting for the data plane to route all traffic to it';
  return {
    initial, phase: 'Pending', events: [], analysisDue: false,
    promoted: { status: 'False', reason: 'FirstVersionStarting', message: `first version ${version}: ${waiting}` },
    progressing: NO_CANDIDATE,
  };
}

function candidateStep(input: RolloutInput, stable: RevisionRef, ready: boolean): RolloutPlan {
  const { desired, rollout, now } = input;
  const retry = rollout?.retry ?? 0;
  const prev = recorded(input.previous.canary);
  const warm = ready && input.isWarm(desired.version);
  const revision = desired.revision ?? '';
  const manual = rollout?.canaryPercent;
  const steps = rollout?.steps ?? [];
  const events: RolloutEvent[] = [];
  const base = { version: desired.version, revision, ready, warm };
  const waiting = revision ? input.revisions.find((r) => r.name === revision)?.waiting : undefined;
  const notYet = !ready ? `candidate ${desired.version} is not ready yet${waiting ? ` (${waiting})` : ''}` : `candidate ${desired.version} is not prewarmed yet`;
  const wasPhase = input.previous.phase;

  // Progress belongs to one candidate. Another version, a retry of a failed one, or
  // an abort lifted, starts from a clean slate (and its deadline from now).
  const own = prev.version === undefined || prev.version === desired.version ? prev : {};
  const retried = own.failure !== undefined && !failureHolds(own.failure, retry);
  const fresh: CanaryProgress = retried || (own.aborted && !rollout?.abort) ? {} : own;
  const resumed = fresh.paused && !rollout?.paused;
  const startedAt = resumed || !fresh.startedAt ? now.toISOString() : fresh.startedAt;
  const identity: CanaryProgress = { version: desired.version, startedAt };

  const conditions = (promoted: ConditionOut, progressing: ConditionOut) => ({ promoted, progressing });
  const parked = (state: ParkedState, canary: CanaryProgress, reason: string, message: string): RolloutPlan => ({
    stable, candidate: { ...base, percent: 0, state }, phase: PARKED_PHASES[state], events, analysisDue: false,
    canary: { ...canary, weight: 0 },
    ...conditions({ status: 'False', reason, message }, { status: 'False', reason, message }),
  });
  const fail = (failure: Omit<Failure, 'version' | 'retry' | 'at'>, extra: CanaryProgress = {}): RolloutPlan => {
    const message = `candidate ${desired.version} failed (${failure.reason}): ${failure.message}; all traffic on stable ${stable.version}; ${RETRY_HINT}`;
    events.push({ type: 'Warning', reason: failure.reason, message });
    return parked('failed', { ...identity, ...extra, failure: { ...failure, version: desired.version, at: now.toISOString(), retry } }, failure.reason, message);
  };

  // 1. Abort: the stable version takes everything back, whatever else the spec says.
  if (rollout?.abort) {
    const message = `rollout aborted (rollout.abort): all traffic on stable ${stable.version}; candidate ${desired.version} kept at 0% and scaled to zero; remove abort to start it again`;
    if (!own.aborted) events.push({ type: 'Warning', reason: 'Aborted', message });
    return parked('aborted', { ...identity, aborted: true }, 'Aborted', message);
  }

  // 2. A recorded failure holds until a retry or another version.
  if (fresh.failure) {
    const f = fresh.failure;
    return parked('failed', fresh, f.reason, `candidate ${desired.version} failed (${f.reason}): ${f.message}; all traffic on stable ${stable.version}; ${RETRY_HINT}`);
  }

  // 3. New failures: the data plane gave up on the revision, warmup gave up, or the deadline passed.
  const gaveUp = startFailure(input, revision, ready, warm);
  if (gaveUp) return fail(gaveUp);
  const deadlineMs = parseDuration(rollout?.progressDeadline ?? ROLLOUT_DEFAULTS.progressDeadline);
  const deadlineAt = Date.parse(startedAt) + deadlineMs;
  const paused = !!rollout?.paused && rollout.promote !== desired.version;
  if (!warm && !paused && now.getTime() >= deadlineAt) {
    return fail({ reason: 'ProgressDeadlineExceeded', message: `not ${ready ? 'warm' : 'ready'} within the progress deadline (${rollout?.progressDeadline ?? ROLLOUT_DEFAULTS.progressDeadline})` });
  }
  /** Wake up in time to fail a candidate that is still starting at its deadline. */
  const deadlineWake = !warm && !paused ? { requeueAfterMs: Math.max(1, deadlineAt - now.getTime()) } : {};

  /** `progress`: kept while traffic moves, so automated steps resume promoting on the next pass. */
  const promote = (progress: CanaryProgress = {}): RolloutPlan => {
    if (!ready || !warm || !revision) {
      return {
        stable, candidate: { ...base, percent: 0, state: 'promoting' }, phase: 'Promoting', events, analysisDue: false,
        canary: { ...identity, weight: 0 }, ...deadlineWake,
        ...conditions({ status: 'False', reason: 'WaitingForCandidate', message: `promotion waits: ${notYet}` }, { status: 'True', reason: 'WaitingForCandidate', message: notYet }),
      };
    }
    const served = reportedPercent(input.traffic, revision);
    if (served < 100) {
      // Asked for, not done: the candidate is stable only once the data plane routes all traffic to it.
      const moving = `traffic moving to candidate ${desired.version}: the data plane reports ${served}% on ${revision}`;
      return {
        stable, candidate: { ...base, percent: 100, state: 'promoting' }, phase: 'Promoting', events, analysisDue: false,
        canary: { ...identity, ...progress, weight: 100 },
        ...conditions({ status: 'False', reason: 'TrafficMoving', message: moving }, { status: 'True', reason: 'Promoting', message: moving }),
      };
    }
    events.push({ type: 'Normal', reason: 'Promoted', message: `version ${desired.version} (revision ${revision}) promoted to stable with all traffic; ${stable.version} retired` });
    return {
      stable: { version: desired.version, revision }, phase: 'Stable', events, analysisDue: false,
      ...conditions({ status: 'True', reason: 'Promoted', message: `version ${desired.version} serves all traffic` }, { status: 'False', reason: 'Promoted', message: 'rollout finished' }),
    };
  };

  const canaryAt = (percent: number, canary: CanaryProgress, extra: Partial<RolloutPlan> = {}): RolloutPlan => {
    if (!ready || !warm || !revision) {
      return {
        stable, candidate: { ...base, percent: 0, state: 'starting' }, phase: 'Canary', events, analysisDue: false,
        canary: { ...identity, ...canary, weight: 0 }, ...deadlineWake,
        ...conditions({ status: 'False', reason: 'CanaryInProgress', message: notYet }, { status: 'True', reason: 'WaitingForCandidate', message: `${notYet}: it gets no traffic until it is` }),
        ...(extra.phase ? { phase: extra.phase } : {}),
      };
    }
    if (input.previous.canary?.weight !== percent) {
      events.push({ type: 'Normal', reason: 'CanaryWeightChanged', message: `candidate ${desired.version} now gets ${percent}% of traffic, stable ${stable.version} ${100 - percent}%` });
    }
    return {
      stable, candidate: { ...base, percent, state: 'canary' }, phase: 'Canary', events, analysisDue: false,
      canary: { ...identity, ...canary, weight: percent },
      ...conditions({ status: 'False', reason: 'CanaryInProgress', message: `candidate ${desired.version} at ${percent}%` },
        canary.halted
          ? { status: 'False', reason: 'AnalysisNoData', message: canary.message ?? `halted at ${percent}%: no data` }
          : { status: 'True', reason: 'CanaryInProgress', message: canary.message ?? `candidate ${desired.version} at ${percent}%` }),
      ...extra,
    };
  };

  // 4. Promote this exact version now.
  if (rollout?.promote === desired.version) return promote();

  // 5. Paused: hold the weight in force; no step advances, no checks, no deadline.
  if (paused) {
    const held = fresh.weight ?? 0;
    const message = `rollout paused at ${held}% (rollout.paused): remove paused to resume`;
    if (wasPhase !== 'Paused') events.push({ type: 'Normal', reason: 'Paused', message });
    const plan = canaryAt(held, { ...fresh, paused: true }, { phase: 'Paused' });
    return { ...plan, ...conditions(plan.promoted, { status: 'False', reason: 'Paused', message }) };
  }
  if (resumed) events.push({ type: 'Normal', reason: 'Resumed', message: `rollout resumed at ${fresh.weight ?? 0}%` });
  const { paused: _p, ...going } = fresh;

  // 6. Manual control.
  if (manual !== undefined) {
    if (manual === 100) return promote();
    if (manual === 0 && rollout?.match?.length) {
      // Header testing: testers reach the candidate by header only; it is kept warm for them.
      const message = `header testing: requests matching rollout.match reach candidate ${desired.version}${warm ? '' : ` once it is ${ready ? 'warm' : 'ready'}`}; all other traffic on stable ${stable.version}`;
      if (wasPhase !== 'Testing') events.push({ type: 'Normal', reason: 'Testing', message });
      return {
        stable, candidate: { ...base, percent: 0, state: 'testing' }, phase: 'Testing', events, analysisDue: false,
        canary: { ...identity, weight: 0 }, ...deadlineWake,
        ...conditions({ status: 'False', reason: 'Testing', message }, { status: 'True', reason: 'Testing', message }),
      };
    }
    if (manual === 0) {
      const message = `canaryPercent is 0: all traffic on stable ${stable.version}; candidate ${desired.version} kept at 0% and scaled to zero`;
      if (wasPhase !== 'RolledBack') events.push({ type: 'Normal', reason: 'RolledBack', message });
      return parked('rolledBack', identity, 'RolledBack', message);
    }
    return canaryAt(manual, {});
  }
  if (steps.length === 0) return promote();

  // 7. Automated steps.
  if (!ready || !warm || !revision) return canaryAt(0, { step: 0, failedChecks: 0 });
  // Past the last step: promoting, waiting for the data plane to move the traffic.
  if ((going.step ?? 0) >= steps.length) return promote({ step: steps.length, failedChecks: going.failedChecks ?? 0 });

  const intervalMs = parseDuration(rollout?.interval ?? ROLLOUT_DEFAULTS.interval);
  const step = Math.min(going.step ?? 0, steps.length - 1);
  // A step's interval starts when its weight is in force; a resume starts it again.
  const stepStart = !resumed && going.stepStartedAt && going.weight !== undefined && going.weight > 0 ? new Date(going.stepStartedAt) : now;
  const progress: CanaryProgress = {
    step, stepStartedAt: stepStart.toISOString(), failedChecks: going.failedChecks ?? 0,
    ...(going.message ? { message: going.message } : {}), ...(going.halted ? { halted: true } : {}),
  };
  const dueAt = stepStart.getTime() + intervalMs;
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
    const threshold = rollout?.analysis?.failureThreshold ?? ROLLOUT_DEFAULTS.failureThreshold;
    if (failed >= threshold) {
      return fail({ reason: 'AnalysisFailed', message: `${failed} failed check rounds at ${percent}%: ${outcome.message}` }, { step, failedChecks: failed, message: outcome.message });
    }
    events.push({ type: 'Warning', reason: 'CheckRoundFailed', message: `check round failed at ${percent}% (${failed}/${threshold}): ${outcome.message}` });
    const { halted: _h, ...resumedProgress } = progress;
    return canaryAt(percent, { ...resumedProgress, ...restart, failedChecks: failed, message: outcome.message }, { requeueAfterMs: intervalMs });
  }
  if (step + 1 >= steps.length) return promote({ step: steps.length, failedChecks: progress.failedChecks ?? 0 });
  const nextPercent = steps[step + 1]!;
  return canaryAt(nextPercent, { step: step + 1, ...restart, failedChecks: progress.failedChecks, message: outcome.message }, { requeueAfterMs: intervalMs });
}
