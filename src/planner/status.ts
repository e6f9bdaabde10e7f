// Composes an app's status from what the reconcile decided and observed. Pure,
// and deterministic for the same inputs, so a converged app writes nothing.

import { FIRST_START_REPORT_MS, UNSEEN_WORKLOAD_REPORT_MS, type ServerlessApp, type ServerlessAppStatus, type VersionStatus } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import { WARMUP_FAILED, warmupGaveUp, type PrewarmEvaluation } from '../prewarm/prewarm.ts';
import { CANDIDATE_TAG, STABLE_TAG } from '../render/traffic.ts';
import { reportedPercent, type ObservedRevision, type RolloutPlan } from '../rollout/canary.ts';
import { setCondition, type Condition, findCondition } from '../util/conditions.ts';
import type { EffectiveScale } from '../scaling/windows.ts';
import { UNREPORTED, type WorkloadSummary } from './workloads.ts';
import type { StatusWrite } from './plan.ts';

type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

export function withConditions(app: ServerlessApp, conditions: ConditionInput[], now: Date): Condition[] {
  let list = (app.status?.conditions ?? []) as Condition[];
  for (const c of conditions) list = setCondition(list, { ...c, observedGeneration: app.metadata.generation ?? 0 }, now);
  return list;
}

/** Status for a spec the operator cannot serve: Ready=False naming the field; everything else kept as it was. */
export function invalidSpecStatus(app: ServerlessApp, problems: SpecProblem[], now: Date): ServerlessAppStatus {
  const first = problems[0]!;
  const message = problemsMessage(problems);
  return {
    ...app.status,
    observedGeneration: app.metadata.generation ?? 0,
    // The phase stays what it was (Pending for a new app): Failed is a failed candidate's, which a retry
    // can start again; a spec problem shows as Ready=False naming the field, and only a spec change helps.
    phase: app.status?.phase ?? 'Pending',
    conditions: withConditions(app, [{ type: 'Ready', status: 'False', reason: first.reason, message }], now),
  };
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

function readyCondition(s: StatusInput): ConditionInput {
  const { plan, workload } = s;
  if (s.rejected?.reason === 'NotOwned') {
    return {
      type: 'Ready', status: 'False', reason: 'NotOwned',
      message: `${s.rejected.kind} ${s.rejected.object} already exists and this app does not control it (${trimmed(s.rejected.message)}); nothing was written to it. Rename the app, or have its owner remove it; the operator looks again when this app changes.`,
    };
  }
  if (s.rejected) {
    return {
      type: 'Ready', status: 'False', reason: 'ApplyRejected',
      message: `the API server refused the ${s.rejected.kind} ${s.rejected.object}: ${trimmed(s.rejected.message)}. What runs keeps serving; retrying with backoff.`,
    };
  }
  const stable = plan.stable ? s.revisions.get(plan.stable.revision) : undefined;
  if (plan.stable && stable?.ready && workload.traffic.length > 0) {
    return { type: 'Ready', status: 'True', reason: 'Serving', message: `version ${plan.stable.version} serves on ${plan.stable.revision}` };
  }
  if (plan.stable && stable && !stable.ready) {
    return { type: 'Ready', status: 'False', reason: 'StableNotReady', message: `stable revision ${plan.stable.revision} is not ready: ${workload.message}` };
  }
  if (s.prewarm && warmupGaveUp(s.prewarm.condition)) return { type: 'Ready', status: 'False', reason: WARMUP_FAILED, message: s.prewarm.condition.message };
  return { type: 'Ready', status: 'False', reason: workload.ready === false ? workload.reason : 'Deploying', message: plan.promoted.message + (workload.ready === false ? `: ${workload.message}` : '') };
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
  const conditions: ConditionInput[] = [
    readyCondition(s),
    ...(s.prewarm ? [{ type: 'Prewarmed', ...s.prewarm.condition }] : []),
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

/** Ready reasons that are the operator's own problems to show, not the data plane's progress. */
const OUR_PROBLEMS = new Set(['ApplyRejected', 'NotOwned', WARMUP_FAILED, 'StableNotReady']);

/**
 * Milliseconds a new app's first status is held back (0: write it now). A quiet first start is one
 * burst of data-plane progress, reported by one write at its end; meanwhile the app reads as the
 * CRD's default status (phase Pending, observedGeneration 0), which kstatus (Flux) and `kubectl get`
 * show as in progress. Quiet: the data plane working on it (its own Ready Unknown, also while the
 * first revision is ready and its route is not), no problem of the operator's own, and nothing the
 * planner reads back (prewarm). Its end (Ready, Failed), a problem (the data plane's Ready False, as
 * when a pod cannot be scheduled or its image pulled) or a refused write is written at once; a start
 * the data plane has not reported on at all after UNSEEN_WORKLOAD_REPORT_MS is written then (is
 * Knative or KServe running?).
 */
export function firstStatusHoldMs(app: ServerlessApp, status: ServerlessAppStatus, wallClock: Date): number {
  // Every status the operator writes has conditions; before that the app reads as the CRD's default.
  if (app.status?.conditions?.length) return 0;
  const condition = (type: string) => findCondition(status.conditions, type);
  const ready = condition('Ready'), workload = condition('WorkloadReady');
  const quiet = status.phase !== 'Failed' && !status.prewarm && workload?.status === 'Unknown'
    && ready?.status === 'False' && !OUR_PROBLEMS.has(ready.reason);
  const created = Date.parse(app.metadata.creationTimestamp ?? '');
  const deadline = workload?.reason === UNREPORTED ? UNSEEN_WORKLOAD_REPORT_MS : FIRST_START_REPORT_MS;
  // At most the deadline from now, whatever the difference of the operator's and the API server's clocks.
  return quiet && Number.isFinite(created) ? Math.min(deadline, Math.max(0, created + deadline - wallClock.getTime())) : 0;
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
  // A first start (phase Pending) is one burst of data-plane progress. What a user waits for is its
  // end (Ready, or phase Failed), a new generation, or the data plane saying something is wrong
  // (its Ready False, not Unknown as while it works); its messages on the way are not written.
  // What the planner reads back from status is written at once too: when prewarming started and
  // that the version became warm (a buffer held by initial-scale is gone again soon after).
  const prewarm = s.prewarm && [s.prewarm.version, s.prewarm.startedAt, s.prewarm.warmedAt];
  if (s.phase === 'Pending') {
    const status = (type: string) => findCondition(s.conditions, type)?.status;
    return { g: s.observedGeneration, phase: s.phase, ready: status('Ready'), workload: status('WorkloadReady'), prewarm };
  }
  const version = (v: VersionStatus | undefined) => v && [v.version, v.revision];
  return {
    g: s.observedGeneration, phase: s.phase, url: s.url,
    conditions: (s.conditions ?? []).map((c) => (c.type === 'WorkloadReady' ? [c.type, c.status] : [c.type, c.status, c.reason])),
    versions: [version(s.versions?.stable), version(s.versions?.candidate)],
    traffic: (s.traffic ?? []).map((t) => [t.revision, t.percent]),
    canary: s.canary, scaling: s.scaling, modelCache: s.modelCache,
    prewarm,
  };
}
