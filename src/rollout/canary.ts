// The rollout state machine: one pure step from (spec, what was recorded in
// status, what the data plane reports, the clock) to where traffic goes now.
// All progress lives in status, so a restart resumes exactly where it was, and
// re-applying the same spec is a no-op. Safety rules it enforces:
//  - traffic never moves to a revision that is not ready (and warm, if prewarm
//    is configured); the stable version is only replaced by a ready one;
//  - the stable version is what status recorded, never "latest";
//  - a rollout always ends: promoted, rolled back, aborted, or failed (revision
//    failed, progress deadline, warmup, checks or a burn-rate gate), with the
//    stable version serving all traffic in every ending but the first;
//  - checks run at the analysis cadence while a step or the bake lasts, and
//    once more at its end; a burn-rate gate that fires fails the candidate at
//    once; a round without data holds the rollout where it is;
//  - with a bake, a promoted version serves all traffic while the previous one
//    is held warm at 0%, so a failure in the bake is a weight change back;
//  - with a release freeze, a new version gets no traffic while the error
//    budget read over the SLO's window is below the floor, unless the spec's
//    override names it;
//  - precedence of the controls: abort > a recorded failure > the release
//    freeze > promote > paused > a manual canaryPercent > automated steps.
import type { FailureReason, Phase, RolloutSpec, ServerlessAppStatus } from '../api/v1alpha1/serverlessapp.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import { ROLLOUT_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import { releaseGate, type ReleaseGate } from './release-freeze.ts';

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

/**
 * The outcome of a round of metric checks and burn-rate gates, when it was due and run (`burn`: a
 * burn-rate gate fired, which fails the candidate at once); or, for a budget round, the reading of the
 * remaining error budget (`budget`, in percent; `shown`: its value may be shown, see AnalysisProvider.scoped).
 */
export type AnalysisOutcome =
  | { result: 'pass'; message: string; budget?: { remaining: number; shown: boolean } }
  | { result: 'fail'; message: string; burn?: boolean }
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
  /** When the last round of this step (or of the bake) ran: the next is due a cadence later. */
  checkedAt?: string;
  /** The release freeze let this candidate through (budget enough, or an override): it is not read again. */
  released?: boolean;
  /** When the bake began (all traffic on the candidate), the replicas the previous version is held at, and the revision baking. */
  bakeStartedAt?: string;
  bakeReplicas?: number;
  bakeRevision?: string;
}

export type ReleaseStatus = NonNullable<ServerlessAppStatus['release']>;

export interface RolloutInput {
  now: Date;
  /** The version the spec asks for, and the revision that serves it (undefined while KServe has not created it). */
  desired: { version: string; revision?: string };
  rollout?: RolloutSpec;
  previous: { stable?: RevisionRef; canary?: CanaryProgress; phase?: Phase; release?: ReleaseStatus };
  revisions: ObservedRevision[];
  /** Whether a version has finished prewarming (always true when prewarm is not configured). */
  isWarm: (version: string) => boolean;
  /** The desired version's warmup gave up (its last error). */
  warmupFailed?: string;
  analysis?: AnalysisOutcome;
  /** The reading of the error budget the plan asked for (due: budget), once it finished. */
  budget?: AnalysisOutcome;
  /** The release freeze in force, in percent of the error budget (0: none; slo.ts freezeFloor). */
  freezeFloor?: number;
  /** The traffic split the data plane reports now; a version counts as serving only once it is here. */
  traffic: Array<{ revision: string; percent: number }>;
}

/** The states in which the candidate is stopped, kept at 0% and scaled to zero, and the phase each shows. */
const PARKED_PHASES = { rolledBack: 'RolledBack', aborted: 'Aborted', failed: 'Failed', frozen: 'Frozen' } as const satisfies Record<string, Phase>;
type ParkedState = keyof typeof PARKED_PHASES;

/** The parked states (PARKED_PHASES) keep the candidate at 0% and scaled to zero; `testing` keeps it warm for header rules. */
export type CandidateState = 'starting' | 'canary' | 'testing' | 'promoting' | 'baking' | ParkedState;

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
  /** A round is due before the rollout can go on: checks and gates (`round` names it: its outcome comes back as input.analysis), or a reading of the error budget (input.budget). */
  due?: { kind: 'checks' | 'budget'; round: string };
  /** status.release: the freeze's last reading and the override used, when a freeze is in force. */
  release?: ReleaseStatus;
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
  const cut = bakeCutShort(input);
  if (cut) {
    const plan = planRollout({ ...input, previous: { ...input.previous, stable: cut.stable, canary: {} } });
    return { ...plan, events: [cut.event, ...plan.events] };
  }
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
      stable: next, phase: 'Stable', events,
      promoted: { status: 'True', reason: 'Promoted', message: `version ${stable.version} serves all traffic` },
      progressing: NO_CANDIDATE,
      ...auditOf(previous.release),
    };
  }

  return candidateStep(input, stable, isReady(desired.revision));
}

/**
 * An edit to a third version during a bake: the baking version has served all traffic, so it is promoted
 * now (its bake cut short) and the new version rolls out against it, not against the one it replaced.
 */
function bakeCutShort(input: RolloutInput): { stable: RevisionRef; event: RolloutEvent } | undefined {
  const { stable, canary } = input.previous;
  if (!stable || !canary?.bakeRevision || !canary.version || canary.failure || canary.aborted) return undefined;
  if (input.desired.version === canary.version || input.desired.version === stable.version) return undefined;
  return {
    stable: { version: canary.version, revision: canary.bakeRevision },
    event: { type: 'Normal', reason: 'Promoted', message: `version ${canary.version} (revision ${canary.bakeRevision}) promoted to stable: the edit to version ${input.desired.version} cut its bake short; ${stable.version} retired` },
  };
}

/** What status.release keeps once no candidate waits: the override used, for the audit; a freeze no longer holds anything. */
function auditOf(release: ReleaseStatus | undefined): { release?: ReleaseStatus } {
  if (!release?.override) return {};
  return { release: { ...(release.version ? { version: release.version } : {}), ...(release.freezeBelow !== undefined ? { freezeBelow: release.freezeBelow } : {}), override: release.override } };
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
      initial, phase: 'Failed', canary: { version, failure },
      events: held ? [] : [{ type: 'Warning', reason: failure.reason, message }],
      promoted: { status: 'False', reason: failure.reason, message },
      progressing: { status: 'False', reason: failure.reason, message },
    };
  }
  if (ready && warm && revision && reportedPercent(input.traffic, revision) === 100) {
    return {
      stable: { version, revision }, phase: 'Stable',
      events: [{ type: 'Normal', reason: 'Ready', message: `first version ${version} is ready on revision ${revision}` }],
      promoted: { status: 'True', reason: 'Promoted', message: `version ${version} serves all traffic` },
      progressing: NO_CANDIDATE,
    };
  }
  const waiting = !ready ? 'waiting for its revision to be ready' : !warm ? 'waiting for it to be prewarmed' : 'waiting for the data plane to route all traffic to it';
  return {
    initial, phase: 'Pending', events: [],
    promoted: { status: 'False', reason: 'FirstVersionStarting', message: `first version ${version}: ${waiting}` },
    progressing: NO_CANDIDATE,
  };
}

function candidateStep(input: RolloutInput, stable: RevisionRef, ready: boolean): RolloutPlan {
  const { desired, rollout, now } = input;
  const retry = rollout?.retry ?? 0;
  const prev = recorded(input.previous.canary);
  const events: RolloutEvent[] = [];

  // Progress belongs to one candidate. Another version, a retry of a failed one, or
  // an abort lifted, starts from a clean slate (and its deadline from now).
  const own = prev.version === undefined || prev.version === desired.version ? prev : {};
  const retried = own.failure !== undefined && !failureHolds(own.failure, retry);
  const fresh: CanaryProgress = retried || (own.aborted && !rollout?.abort) ? {} : own;
  const cadenceMs = parseDuration(rollout?.analysis?.cadence ?? ROLLOUT_DEFAULTS.cadence);
  const gate = releaseGate(input, fresh, cadenceMs, events);
  // Let through once, whatever the floor then: a floor set later does not hold back a rollout under way.
  const released = gate.state === 'open';
  const resumed = fresh.paused && !rollout?.paused;
  // The deadline counts from the release: time held by a freeze is not the candidate's.
  const startedAt = resumed || !fresh.startedAt || (gate.state === 'open' && gate.now) ? now.toISOString() : fresh.startedAt;
  const identity: CanaryProgress = { version: desired.version, startedAt, ...(released ? { released: true } : {}) };
  const plan = candidateSteps(input, stable, ready, { events, own, fresh, identity, gate, cadenceMs, resumed });
  return gate.release ? { ...plan, release: gate.release } : plan;
}

interface StepContext {
  events: RolloutEvent[];
  /** The candidate's recorded progress as it was. */
  own: CanaryProgress;
  /** The candidate's recorded progress, after a retry or a lifted abort cleared it. */
  fresh: CanaryProgress;
  /** What every progress of this candidate records. */
  identity: CanaryProgress;
  gate: ReleaseGate;
  cadenceMs: number;
  resumed: boolean | undefined;
}

/**
 * A period of continuous analysis (a step, the bake): a round due now (`final` at its end), or when to look
 * again. Without analysis (`cadenceMs` undefined) only its end.
 */
function periodRound(start: number, end: number, checkedAt: string | undefined, cadenceMs: number | undefined, now: number): { due: 'round' | 'final' } | { wakeAt: number } {
  if (now >= end) return { due: 'final' };
  if (cadenceMs === undefined) return { wakeAt: end };
  const checked = checkedAt ? Date.parse(checkedAt) : NaN;
  const next = (checked >= start ? checked : start) + cadenceMs;
  return now >= next ? { due: 'round' } : { wakeAt: Math.min(next, end) };
}

function candidateSteps(input: RolloutInput, stable: RevisionRef, ready: boolean, ctx: StepContext): RolloutPlan {
  const { desired, rollout, now } = input;
  const { events, own, fresh, identity, gate, cadenceMs, resumed } = ctx;
  const retry = rollout?.retry ?? 0;
  const warm = ready && input.isWarm(desired.version);
  const revision = desired.revision ?? '';
  const manual = rollout?.canaryPercent;
  const steps = rollout?.steps ?? [];
  const analysis = rollout?.analysis;
  const base = { version: desired.version, revision, ready, warm };
  const waiting = revision ? input.revisions.find((r) => r.name === revision)?.waiting : undefined;
  const notYet = !ready ? `candidate ${desired.version} is not ready yet${waiting ? ` (${waiting})` : ''}` : `candidate ${desired.version} is not prewarmed yet`;
  const wasPhase = input.previous.phase;

  const conditions = (promoted: ConditionOut, progressing: ConditionOut) => ({ promoted, progressing });
  const parked = (state: ParkedState, canary: CanaryProgress, reason: string, message: string): RolloutPlan => ({
    stable, candidate: { ...base, percent: 0, state }, phase: PARKED_PHASES[state], events,
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

  // 3. The release freeze: no traffic and no replicas until the budget suffices or an override names the
  // version; a frozen candidate stays Frozen while its budget is read again.
  if (gate.state !== 'open') {
    const next = gate.state === 'reading' ? { due: { kind: 'budget' as const, round: gate.round } } : { requeueAfterMs: gate.wakeAfterMs };
    const { released: _r, ...held } = identity;
    if (gate.state === 'frozen' || gate.release?.frozen) {
      return { ...parked('frozen', held, 'ReleaseFrozen', gate.state === 'frozen' ? gate.message : gate.release!.message ?? 'release frozen'), ...next };
    }
    // Not read yet, or read without data: held back the same way, shown as the canary waiting.
    const reading = gate.state === 'reading';
    const message = reading ? `reading the error budget before candidate ${desired.version} gets traffic (release freeze below ${input.freezeFloor}%)` : gate.message;
    return {
      ...parked('frozen', held, 'CanaryInProgress', message), phase: 'Canary', ...next,
      ...conditions({ status: 'False', reason: 'CanaryInProgress', message }, { status: reading ? 'True' : 'False', reason: reading ? 'ReadingErrorBudget' : 'BudgetNoData', message }),
    };
  }

  // 4. New failures: the data plane gave up on the revision, warmup gave up, or the deadline passed.
  const gaveUp = startFailure(input, revision, ready, warm);
  if (gaveUp) return fail(gaveUp);
  const deadlineMs = parseDuration(rollout?.progressDeadline ?? ROLLOUT_DEFAULTS.progressDeadline);
  const deadlineAt = Date.parse(identity.startedAt!) + deadlineMs;
  const paused = !!rollout?.paused && rollout.promote !== desired.version;
  if (!warm && !paused && now.getTime() >= deadlineAt) {
    return fail({ reason: 'ProgressDeadlineExceeded', message: `not ${ready ? 'warm' : 'ready'} within the progress deadline (${rollout?.progressDeadline ?? ROLLOUT_DEFAULTS.progressDeadline})` });
  }
  /** Wake up in time to fail a candidate that is still starting at its deadline. */
  const deadlineWake = !warm && !paused ? { requeueAfterMs: Math.max(1, deadlineAt - now.getTime()) } : {};

  const finish = (how: string): RolloutPlan => {
    events.push({ type: 'Normal', reason: 'Promoted', message: `version ${desired.version} (revision ${revision}) promoted to stable with all traffic${how}; ${stable.version} retired` });
    return {
      stable: { version: desired.version, revision }, phase: 'Stable', events,
      ...conditions({ status: 'True', reason: 'Promoted', message: `version ${desired.version} serves all traffic` }, { status: 'False', reason: 'Promoted', message: 'rollout finished' }),
    };
  };

  /**
   * `progress`: kept while traffic moves, so automated steps resume promoting on the next pass.
   * `withBake`: a bake follows once all traffic is on the candidate (not for rollout.promote, which skips checks).
   */
  const promote = (progress: CanaryProgress = {}, withBake = true): RolloutPlan => {
    if (!ready || !warm || !revision) {
      return {
        stable, candidate: { ...base, percent: 0, state: 'promoting' }, phase: 'Promoting', events,
        canary: { ...identity, weight: 0 }, ...deadlineWake,
        ...conditions({ status: 'False', reason: 'WaitingForCandidate', message: `promotion waits: ${notYet}` }, { status: 'True', reason: 'WaitingForCandidate', message: notYet }),
      };
    }
    // Once the bake began it goes on through a moment the data plane reports less (a route re-admitted).
    if (rollout?.bake && withBake && fresh.bakeStartedAt) return bake(progress, rollout.bake);
    const served = reportedPercent(input.traffic, revision);
    if (served < 100) {
      // Asked for, not done: the candidate is stable only once the data plane routes all traffic to it.
      const moving = `traffic moving to candidate ${desired.version}: the data plane reports ${served}% on ${revision}`;
      return {
        stable, candidate: { ...base, percent: 100, state: 'promoting' }, phase: 'Promoting', events,
        canary: { ...identity, ...progress, weight: 100 },
        ...conditions({ status: 'False', reason: 'TrafficMoving', message: moving }, { status: 'True', reason: 'Promoting', message: moving }),
      };
    }
    return rollout?.bake && withBake ? bake(progress, rollout.bake) : finish('');
  };

  /** The round that decides a period's outcome is named by the candidate, the period and the last round before it. */
  const roundKey = (period: string, startedAt: string, checkedAt: string | undefined) => `${desired.version}/${period}/${startedAt}/${checkedAt ?? ''}`;
  const threshold = analysis?.failureThreshold ?? ROLLOUT_DEFAULTS.failureThreshold;
  /** How often a period's rounds come: every cadence with analysis; without, none before its end. */
  const roundsEvery = analysis ? cadenceMs : undefined;

  /**
   * Judges the round due in a period of continuous analysis (a step, `where` "at 25%", or the bake):
   * a failure, a hold (`hold` renders the period with new progress), or `passed` when its final round passed.
   * No data and a failed round below the threshold start the period again: it needs a whole clean period.
   */
  const judge = (where: string, final: boolean, progress: CanaryProgress, restartField: 'stepStartedAt' | 'bakeStartedAt', round: string,
    hold: (canary: CanaryProgress, extra?: Partial<RolloutPlan>) => RolloutPlan): RolloutPlan | { passed: string } => {
    if (!analysis) return { passed: 'no checks configured' };
    const outcome = input.analysis;
    if (!outcome) return hold(progress, { due: { kind: 'checks', round } });
    const at = now.toISOString();
    const restart = { [restartField]: at, checkedAt: at };
    const { halted: _h, ...going } = progress;
    if (outcome.result === 'fail' && outcome.burn) {
      return fail({ reason: 'BurnRateExceeded', message: `${where}: ${outcome.message}` }, { ...going, message: outcome.message });
    }
    if (outcome.result === 'nodata') {
      if (!progress.halted) events.push({ type: 'Warning', reason: 'AnalysisNoData', message: `rollout halted ${where}: ${outcome.message} (no data is not a pass)` });
      return hold({ ...progress, ...restart, halted: true, message: `halted: ${outcome.message}` }, { requeueAfterMs: cadenceMs });
    }
    if (outcome.result === 'fail') {
      const failed = (progress.failedChecks ?? 0) + 1;
      if (failed >= threshold) {
        return fail({ reason: 'AnalysisFailed', message: `${failed} failed check rounds ${where}: ${outcome.message}` }, { ...going, failedChecks: failed, message: outcome.message });
      }
      events.push({ type: 'Warning', reason: 'CheckRoundFailed', message: `check round failed ${where} (${failed}/${threshold}): ${outcome.message}` });
      return hold({ ...going, ...restart, failedChecks: failed, message: outcome.message }, { requeueAfterMs: cadenceMs });
    }
    if (!final) return hold({ ...going, failedChecks: 0, checkedAt: at, message: outcome.message }, { requeueAfterMs: cadenceMs });
    return { passed: outcome.message };
  };

  /** After promotion: all traffic on the candidate, the previous version held warm, the analysis still running. */
  const bake = (progress: CanaryProgress, duration: string): RolloutPlan => {
    // A resume starts the bake again, as it starts a step's interval again.
    const startedAt = fresh.bakeStartedAt && !resumed ? fresh.bakeStartedAt : now.toISOString();
    const stableReplicas = input.revisions.find((r) => r.name === stable.revision)?.replicas ?? 0;
    const bakeReplicas = fresh.bakeReplicas ?? Math.max(1, stableReplicas);
    const bakeMs = parseDuration(duration);
    const start = Date.parse(startedAt), end = start + bakeMs;
    const carried = fresh.bakeStartedAt ? pick(fresh, ['checkedAt', 'halted', 'message', 'failedChecks']) : {};
    const state: CanaryProgress = { ...identity, ...progress, ...carried, weight: 100, bakeStartedAt: startedAt, bakeReplicas, bakeRevision: revision };
    const hold = (canary: CanaryProgress, extra: Partial<RolloutPlan> = {}): RolloutPlan => {
      const message = `version ${desired.version} serves all traffic; previous ${stable.version} is held warm (${canary.bakeReplicas} replicas) until ${new Date(Date.parse(canary.bakeStartedAt!) + bakeMs).toISOString()}, for a way back without a cold start`;
      return {
        stable, candidate: { ...base, percent: 100, state: 'baking' }, phase: 'Baking', events, canary: { ...canary, weight: 100 },
        ...conditions({ status: 'False', reason: 'Baking', message },
          canary.halted ? { status: 'False', reason: 'AnalysisNoData', message: canary.message ?? 'halted: no data' } : { status: 'True', reason: 'Baking', message }),
        ...extra,
      };
    };
    if (!fresh.bakeStartedAt) events.push({ type: 'Normal', reason: 'Baking', message: `version ${desired.version} serves all traffic; baking for ${duration} with ${stable.version} held warm` });
    const at = periodRound(start, end, state.checkedAt, roundsEvery, now.getTime());
    if ('wakeAt' in at) return hold(state, { requeueAfterMs: at.wakeAt - now.getTime() });
    const judged = judge('during the bake', at.due === 'final', state, 'bakeStartedAt', roundKey('bake', startedAt, state.checkedAt), hold);
    return 'passed' in judged ? finish(` after a bake of ${duration}`) : judged;
  };

  const canaryAt = (percent: number, canary: CanaryProgress, extra: Partial<RolloutPlan> = {}): RolloutPlan => {
    if (!ready || !warm || !revision) {
      return {
        stable, candidate: { ...base, percent: 0, state: 'starting' }, phase: 'Canary', events,
        canary: { ...identity, ...canary, weight: 0 }, ...deadlineWake,
        ...conditions({ status: 'False', reason: 'CanaryInProgress', message: notYet }, { status: 'True', reason: 'WaitingForCandidate', message: `${notYet}: it gets no traffic until it is` }),
        ...(extra.phase ? { phase: extra.phase } : {}),
      };
    }
    if (input.previous.canary?.weight !== percent) {
      events.push({ type: 'Normal', reason: 'CanaryWeightChanged', message: `candidate ${desired.version} now gets ${percent}% of traffic, stable ${stable.version} ${100 - percent}%` });
    }
    return {
      stable, candidate: { ...base, percent, state: 'canary' }, phase: 'Canary', events,
      canary: { ...identity, ...canary, weight: percent },
      ...conditions({ status: 'False', reason: 'CanaryInProgress', message: `candidate ${desired.version} at ${percent}%` },
        canary.halted
          ? { status: 'False', reason: 'AnalysisNoData', message: canary.message ?? `halted at ${percent}%: no data` }
          : { status: 'True', reason: 'CanaryInProgress', message: canary.message ?? `candidate ${desired.version} at ${percent}%` }),
      ...extra,
    };
  };

  // 5. Promote this exact version now.
  if (rollout?.promote === desired.version) return promote({}, false);

  // 6. Paused: hold the weight in force; no step advances, no checks, no deadline.
  if (paused) {
    const held = fresh.weight ?? 0;
    const message = `rollout paused at ${held}% (rollout.paused): remove paused to resume`;
    if (wasPhase !== 'Paused') events.push({ type: 'Normal', reason: 'Paused', message });
    const plan = canaryAt(held, { ...fresh, paused: true }, { phase: 'Paused' });
    return { ...plan, ...conditions(plan.promoted, { status: 'False', reason: 'Paused', message }) };
  }
  if (resumed) events.push({ type: 'Normal', reason: 'Resumed', message: `rollout resumed at ${fresh.weight ?? 0}%` });
  const { paused: _p, ...going } = fresh;

  // 7. Manual control.
  if (manual !== undefined) {
    if (manual === 100) return promote();
    if (manual === 0 && rollout?.match?.length) {
      // Header testing: testers reach the candidate by header only; it is kept warm for them.
      const message = `header testing: requests matching rollout.match reach candidate ${desired.version}${warm ? '' : ` once it is ${ready ? 'warm' : 'ready'}`}; all other traffic on stable ${stable.version}`;
      if (wasPhase !== 'Testing') events.push({ type: 'Normal', reason: 'Testing', message });
      return {
        stable, candidate: { ...base, percent: 0, state: 'testing' }, phase: 'Testing', events,
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

  // 8. Automated steps.
  if (!ready || !warm || !revision) return canaryAt(0, { step: 0, failedChecks: 0 });
  // Past the last step: promoting, waiting for the data plane to move the traffic.
  if ((going.step ?? 0) >= steps.length) return promote({ step: steps.length, failedChecks: going.failedChecks ?? 0 });

  const intervalMs = parseDuration(rollout?.interval ?? ROLLOUT_DEFAULTS.interval);
  const step = Math.min(going.step ?? 0, steps.length - 1);
  // A step's interval starts when its weight is in force; a resume starts it again.
  const stepStart = !resumed && going.stepStartedAt && going.weight !== undefined && going.weight > 0 ? new Date(going.stepStartedAt) : now;
  const sameStep = stepStart.toISOString() === going.stepStartedAt;
  const progress: CanaryProgress = {
    step, stepStartedAt: stepStart.toISOString(), failedChecks: going.failedChecks ?? 0,
    ...(going.message ? { message: going.message } : {}), ...(going.halted ? { halted: true } : {}),
    ...(sameStep && going.checkedAt ? { checkedAt: going.checkedAt } : {}),
  };
  const dueAt = stepStart.getTime() + intervalMs;
  const percent = steps[step]!;
  const at = periodRound(stepStart.getTime(), dueAt, progress.checkedAt, roundsEvery, now.getTime());
  if ('wakeAt' in at) return canaryAt(percent, progress, { requeueAfterMs: at.wakeAt - now.getTime() });
  const judged = judge(`at ${percent}%`, at.due === 'final', progress, 'stepStartedAt', roundKey(String(step), progress.stepStartedAt!, progress.checkedAt),
    (canary, extra) => canaryAt(percent, canary, extra));
  if (!('passed' in judged)) return judged;
  // A passing round ends a run of failed ones: failureThreshold counts consecutive failed rounds.
  if (step + 1 >= steps.length) return promote({ step: steps.length, failedChecks: 0 });
  const nextPercent = steps[step + 1]!;
  return canaryAt(nextPercent, { step: step + 1, stepStartedAt: now.toISOString(), failedChecks: 0, message: judged.passed },
    { requeueAfterMs: analysis ? Math.min(cadenceMs, intervalMs) : intervalMs });
}

function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]])) as Partial<Pick<T, K>>;
}
