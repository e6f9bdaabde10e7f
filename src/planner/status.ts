// Composes an app's status from what the reconcile decided and observed. Pure,
// and deterministic for the same inputs, so a converged app writes nothing.

import type { ServerlessApp, ServerlessAppStatus, VersionStatus } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import type { PrewarmEvaluation } from '../prewarm/prewarm.ts';
import { CANDIDATE_TAG, STABLE_TAG } from '../render/traffic.ts';
import { reportedPercent, type ObservedRevision, type RolloutPlan } from '../rollout/canary.ts';
import { setCondition, type Condition, findCondition } from '../util/conditions.ts';
import type { EffectiveScale } from '../scaling/windows.ts';
import { PAUSED, RECONCILING, STALLED, readinessConditions, readingOf, refusedReading, rolloutPaused, type ConditionInput, type Reading, type ReadingInput } from './readiness.ts';
import type { WorkloadSummary } from './workloads.ts';
import type { StatusWrite } from './plan.ts';

/**
 * The app's conditions, all judged now: each carries the generation it judged, so status.observedGeneration
 * (which moves with them) never claims a generation a condition did not judge. A condition of ours not
 * listed is gone (Reconciling and Stalled are absent when normal); a status kept its transition time.
 */
export function withConditions(app: ServerlessApp, conditions: ConditionInput[], now: Date): Condition[] {
  const before = (app.status?.conditions ?? []) as Condition[];
  const observedGeneration = app.metadata.generation ?? 0;
  return conditions.map((c) => {
    const previous = findCondition(before, c.type);
    return setCondition(previous ? [previous] : [], { ...c, observedGeneration }, now)[0]!;
  });
}

/**
 * Status for a spec the operator cannot serve: Stalled, and Ready=False, naming the field; phase,
 * versions, traffic and prewarm (what runs, and what was recorded of it) kept as they were (heldStatus).
 */
export function invalidSpecStatus(app: ServerlessApp, problems: SpecProblem[], now: Date): ServerlessAppStatus {
  const reading = { state: 'stalled' as const, reason: problems[0]!.reason, message: problemsMessage(problems) };
  return heldStatus(app, reading, 'the spec is refused: nothing rolls out until it is fixed; what runs is left as it was', now);
}

/**
 * Status for a host claim the API server refused (admission, RBAC): Ready=False and Reconciling with
 * the refusal while it is retried with backoff; what runs kept as it was (heldStatus).
 */
export function refusedClaimStatus(app: ServerlessApp, rejected: NonNullable<ReadingInput['rejected']>, now: Date): ServerlessAppStatus {
  return heldStatus(app, refusedReading({ ...rejected, message: trimmed(rejected.message) }), 'a host claim is refused: nothing rolls out until it is made; what runs is left as it was', now);
}

/**
 * Status while nothing rolls out, `reading` saying why: phase, versions, traffic and prewarm kept as
 * they were. The conditions are judged again for this generation: no rollout moves (CanaryProgressing,
 * Promoted False with the reason, `still` saying so); Prewarmed goes with the kept status.prewarm
 * (keptPrewarmed); the data plane is not read, so its WorkloadReady is not kept.
 */
function heldStatus(app: ServerlessApp, reading: Reading, still: string, now: Date): ServerlessAppStatus {
  const held = { status: 'False' as const, reason: reading.reason, message: still };
  const prewarmed = keptPrewarmed(app);
  return {
    ...app.status,
    observedGeneration: app.metadata.generation ?? 0,
    // The phase stays what it was (Pending for a new app): Failed is a failed candidate's, which a retry
    // can start again; a spec problem shows as Stalled naming the field, and only a spec change helps.
    phase: app.status?.phase ?? 'Pending',
    conditions: withConditions(app, [
      ...readinessConditions(reading, false),
      { type: 'CanaryProgressing', ...held }, { type: 'Promoted', ...held },
      ...(prewarmed ? [conditionInput(prewarmed)] : []),
    ], now),
  };
}

/**
 * Prewarmed goes with status.prewarm: where no version prewarms now (the stable one is asked for, or the
 * spec is refused) the warmth recorded is kept, and so is what Prewarmed says of it (the warmup metrics
 * read a failure back from it).
 */
function keptPrewarmed(app: ServerlessApp): Condition | undefined {
  return app.status?.prewarm ? findCondition(app.status.conditions, 'Prewarmed') : undefined;
}

/** A condition as judged again: what it says, without when or for which generation it last said it. */
function conditionInput(c: ConditionInput): ConditionInput {
  return { type: c.type, status: c.status, reason: c.reason, message: c.message };
}

/** A new app's first status while its hosts are claimed: nothing else is decided yet. */
export function claimingStatus(app: ServerlessApp, hosts: string[], now: Date): ServerlessAppStatus {
  const reading = { state: 'reconciling' as const, reason: 'Claiming', message: `claiming host ${hosts.join(', ')} for namespace ${app.metadata.namespace}` };
  return { observedGeneration: app.metadata.generation ?? 0, phase: 'Pending', conditions: withConditions(app, readinessConditions(reading, false), now) };
}

/** Under the status schema's condition message maxLength (32768), with room for the suffix. */
const MAX_PROBLEMS_MESSAGE = 8192;

/**
 * The problems as one message, the first ones whole and the rest counted: a message over the
 * schema's maxLength would make the API server refuse the status write, and the app would never
 * show why it is refused (256 env entries each naming a Secret are admitted, each a problem).
 */
export function problemsMessage(problems: SpecProblem[]): string {
  const suffix = '. The running version is left as it was.';
  const parts: string[] = [];
  let length = 0;
  for (const p of problems) {
    const part = `${p.field}: ${p.message}`.slice(0, MAX_PROBLEMS_MESSAGE / 2);
    if (parts.length > 0 && length + part.length + 2 > MAX_PROBLEMS_MESSAGE) break;
    parts.push(part);
    length += part.length + 2;
  }
  const more = problems.length - parts.length;
  return parts.join('; ') + (more > 0 ? `; …and ${more} more` : '') + suffix;
}

export interface StatusInput {
  plan: RolloutPlan;
  workload: WorkloadSummary;
  revisions: Map<string, ObservedRevision>;
  prewarm?: PrewarmEvaluation;
  scale: EffectiveScale;
  describe: (version: string) => Pick<VersionStatus, 'image' | 'storageUri' | 'summary'>;
  modelCache?: string;
  /** A child not written in this reconcile: the API server refused it (ApplyRejected, the default) or the app does not own it (NotOwned). */
  rejected?: { kind: string; object: string; message: string; reason?: 'ApplyRejected' | 'NotOwned' };
  /** The revision the spec asks for, where the data plane's names are known ahead (Knative). */
  desiredRevision?: string;
  /** What the route's parents say of it, where the router reports (ReadingInput.route). */
  route?: ReadingInput['route'];
  now: Date;
}

const MAX_SERVER_MESSAGE = 400;

/** The server's message, trimmed: Knative's refusals quote whole diffs. */
function trimmed(message: string): string {
  const flat = message.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_SERVER_MESSAGE ? `${flat.slice(0, MAX_SERVER_MESSAGE - 3)}...` : flat;
}

function versionStatus(ref: { version: string; revision?: string }, warm: boolean, s: StatusInput): VersionStatus {
  const r = ref.revision ? s.revisions.get(ref.revision) : undefined;
  return {
    version: ref.version,
    ...(ref.revision ? { revision: ref.revision } : {}),
    ...s.describe(ref.version),
    ready: !!r?.ready,
    warm: warm && !!r?.ready,
    replicas: r?.replicas ?? 0,
  };
}

/** The data plane's own Ready (Knative Service or InferenceService), reason and message passed through. */
function workloadCondition(w: WorkloadSummary): ConditionInput {
  return { type: 'WorkloadReady', status: w.status, reason: w.reason, message: w.message };
}

/** One naming scheme for container and model apps: KServe tags its targets prev/latest, status says stable/candidate. */
function namedTargets(traffic: WorkloadSummary['traffic'], plan: RolloutPlan): WorkloadSummary['traffic'] {
  const stable = plan.stable?.revision ?? plan.initial?.revision;
  const candidate = plan.candidate?.revision;
  return traffic.map((t) => {
    const tag = t.revision === stable ? STABLE_TAG : t.revision === candidate ? CANDIDATE_TAG : t.tag;
    return { ...t, ...(tag ? { tag } : {}) };
  });
}

export function composeStatus(app: ServerlessApp, s: StatusInput): ServerlessAppStatus {
  const { plan, scale } = s;
  const c = plan.candidate;
  const reading = readingOf({
    plan, workload: s.workload, revisions: s.revisions, scale,
    ...(app.spec.rollout ? { rollout: app.spec.rollout } : {}),
    ...(s.desiredRevision ? { desiredRevision: s.desiredRevision } : {}),
    ...(s.route ? { route: s.route } : {}),
    ...(s.rejected ? { rejected: { ...s.rejected, message: trimmed(s.rejected.message) } } : {}),
  });
  const prewarmed = s.prewarm ? { type: 'Prewarmed', ...s.prewarm.condition } : keptPrewarmed(app);
  const conditions: ConditionInput[] = [
    ...readinessConditions(reading, rolloutPaused(plan, app.spec.rollout)),
    ...(prewarmed ? [conditionInput(prewarmed)] : []),
    workloadCondition(s.workload),
    { type: 'CanaryProgressing', ...plan.progressing },
    { type: 'Promoted', ...plan.promoted },
  ];
  const next = scale.next;
  return {
    observedGeneration: app.metadata.generation ?? 0,
    phase: plan.phase,
    ...(s.workload.url ? { url: s.workload.url } : {}),
    conditions: withConditions(app, conditions, s.now),
    versions: {
      ...(plan.stable ? { stable: versionStatus(plan.stable, true, s) } : plan.initial ? { stable: versionStatus(plan.initial, plan.initial.warm, s) } : {}),
      ...(c ? { candidate: versionStatus(c, c.warm, s) } : {}),
    },
    traffic: namedTargets(s.workload.traffic, plan),
    ...(plan.canary ? { canary: { ...plan.canary, trafficPercent: c ? reportedPercent(s.workload.traffic, c.revision) : 0 } } : {}),
    ...(plan.release ? { release: plan.release } : {}),
    ...(s.prewarm?.status ? { prewarm: s.prewarm.status } : app.status?.prewarm ? { prewarm: app.status.prewarm } : {}),
    scaling: {
      minScale: scale.minScale,
      ...(scale.maxScale !== undefined ? { maxScale: scale.maxScale } : {}),
      openWindows: scale.openWindows,
      prewarmingWindows: scale.prewarmingWindows,
      ...(next ? {
        nextTransition: {
          at: next.at.toISOString(), window: next.window, change: next.change, minScale: next.minScale,
          ...(next.maxScale !== undefined ? { maxScale: next.maxScale } : {}),
        },
      } : {}),
    },
    ...(s.modelCache ? { modelCache: s.modelCache } : {}),
  };
}

/** Progress that leaves significantStatus as it was is written at most this often (a first start's: never). */
export const PROGRESS_MS = 5_000;

/** How a status that records no transition is written: its significant part at once, progress every PROGRESS_MS, a first start's only with a significant change. */
export function coalescedWrite(status: ServerlessAppStatus): Extract<StatusWrite, { mode: 'coalesce' }> {
  return { mode: 'coalesce', significant: significantStatus, ...(status.phase === 'Pending' ? {} : { windowMs: PROGRESS_MS }) };
}

/**
 * What a user waits for in a status: phase, conditions (status and reason; the data plane's own
 * WorkloadReady by status only), which versions and revisions, the traffic split, the rollout's
 * progress, the scale in force, warmth. Left out, and so written at most once per coalescing
 * window: messages, the data plane's reasons while it works, replica counts and warmup request counts.
 */
export function significantStatus(status: unknown): unknown {
  const s = (status ?? {}) as ServerlessAppStatus;
  // A first start (phase Pending) is one burst of data-plane progress, written when it starts (the first
  // reconcile: Ready Unknown, Reconciling) and then as what a user waits for changes: its end (Ready, or
  // Stalled), a new generation, what is in progress (Reconciling's reason: deploying, prewarming), or the
  // data plane saying something is wrong (its Ready False, not Unknown as while it works); its messages
  // on the way are not written. What the planner reads back from status is written at once too: when
  // prewarming started and that the version became warm (a buffer held by initial-scale is gone again soon after).
  const prewarm = s.prewarm && [s.prewarm.version, s.prewarm.startedAt, s.prewarm.warmedAt];
  if (s.phase === 'Pending') {
    const status = (type: string) => findCondition(s.conditions, type)?.status;
    const said = (type: string) => { const c = findCondition(s.conditions, type); return c && [c.status, c.reason]; };
    return {
      g: s.observedGeneration, phase: s.phase, ready: status('Ready'), workload: status('WorkloadReady'), prewarm,
      reconciling: said(RECONCILING), stalled: said(STALLED), paused: said(PAUSED),
    };
  }
  const version = (v: VersionStatus | undefined) => v && [v.version, v.revision];
  return {
    g: s.observedGeneration, phase: s.phase, url: s.url,
    conditions: (s.conditions ?? []).map((c) => (c.type === 'WorkloadReady' ? [c.type, c.status] : [c.type, c.status, c.reason])),
    versions: [version(s.versions?.stable), version(s.versions?.candidate)],
    traffic: (s.traffic ?? []).map((t) => [t.revision, t.percent]),
    canary: s.canary, release: s.release, scaling: s.scaling, modelCache: s.modelCache,
    prewarm,
  };
}
