// The planner: one pure function from what a reconcile observed (the app, its
// children and revisions from the caches, the clock, the results of earlier
// effects) to everything it decides: window math, prewarm, the rollout step,
// which workload serves, and the effects to start (warmup requests, a check
// round). An effect's result comes back as an observation on a later pass, so
// the planner never waits and never does I/O; the controller observes, plans,
// applies, reports and runs the effects.

import type { Analysis } from '../api/v1alpha1/analysis-target.ts';
import type { ServerlessApp, WarmupSpec } from '../api/v1alpha1/serverlessapp.ts';
import { servesLlm } from '../api/v1alpha1/serving.ts';
import { memberService } from '../render/llm-inference-service.ts';
import { bufferReplicas, evaluatePrewarm, prewarmConfigured, warmupGaveUp, type PrewarmEvaluation } from '../prewarm/prewarm.ts';
import type { WarmupProgress } from '../prewarm/warmup-progress.ts';
import { controlledBy } from '../render/metadata.ts';
import { failureHolds, isParked, planRollout, type AnalysisOutcome, type ObservedRevision, type RevisionRef, type RolloutInput, type RolloutPlan } from '../rollout/canary.ts';
import { freezeFloor } from '../rollout/slo.ts';
import { versionOf } from '../rollout/version.ts';
import { scaleOf, type EffectiveScale } from '../scaling/windows.ts';
import { isRevisionOf, type Revision } from './revisions.ts';
import type { RouteAdmission } from './route-admission.ts';
import type { Workload, WorkloadObject, WorkloadSummary } from './workloads.ts';


/** While a version warms up or its replicas come up, look again this often even without events. */
export const PREWARM_POLL_MS = 5_000;

export interface Observation {
  app: ServerlessApp;
  now: Date;
  /** The two workload kinds (pure renderers and readers), and what the caches hold of each. */
  knative: { workload: Workload; live?: WorkloadObject };
  kserve: { workload: Workload; live?: WorkloadObject };
  /**
   * LLM apps (planner/llm-workload.ts): their LLMInferenceServices, one per live version, read as revisions
   * (`members`), and the one whose route carries the traffic (`live`). Absent where the kind is not served.
   */
  llm?: { workload: Workload; live?: WorkloadObject; members: Revision[]; objects: WorkloadObject[] };
  /** Revisions in the app's namespace (the planner picks the app's own). */
  revisions: Revision[];
  /** The warmup task the runner holds for this app, if any: an earlier effect's result. */
  warmup?: { version: string; revision: string; progress: WarmupProgress };
  /** The last finished round of this app (checks, or a reading of the error budget), if any: an earlier effect's result. */
  analysis?: { round: string; outcome: AnalysisOutcome };
  /** The platform's release-freeze floor for the app's namespace, in percent of the error budget (--release-freeze-below). */
  releaseFreezeFloor?: number;
  /** What the app's route's own status says (routers that report one: Gateway API); absent: nothing to wait for. */
  routeAdmission?: RouteAdmission;
}

export type Effect =
  /** Drop the app's warmup task (its version no longer warms, or a retry starts it afresh). */
  | { type: 'forgetWarmup' }
  /** Start (or keep) warmup requests to `revision` (an LLM app's member: by its workload Service); idempotent for the same version and revision. */
  | { type: 'warmup'; version: string; revision: string; spec: WarmupSpec; startedAt: Date; llm?: { service: string } }
  /** Run check round `round` of `analysis` against the candidate; its end re-queues the app. `version`: the spec's version, which the checks' templates name. */
  | { type: 'analysis'; round: string; analysis: Analysis; candidate: RevisionRef; version: string }
  /** Read the error budget `stable` left over the SLO's window (round `round`, for the release freeze); its end re-queues the app. */
  | { type: 'budget'; round: string; analysis: Analysis; stable: RevisionRef }
  /** Drop the app's last round: no candidate is left for it to judge, and a candidate that comes back must not read it. */
  | { type: 'forgetAnalysis' };

export interface Decision {
  workload: Workload;
  /** The stable version runs on the other kind: this workload starts on its own (all traffic to its first revision). */
  fresh: boolean;
  /** The other kind's workload while a container <-> model switch is in progress: it serves until the new one is stable. */
  previous?: { workload: Workload; live: WorkloadObject };
  /** This kind's live workload, and the other kind's (removed once this one serves). */
  live?: WorkloadObject;
  other?: { workload: Workload; live: WorkloadObject };
  /** What the data plane reports for the workload that serves now. */
  serving: WorkloadSummary;
  version: string;
  revisions: Revision[];
  observed: Map<string, ObservedRevision>;
  scale: EffectiveScale;
  prewarm: PrewarmEvaluation | undefined;
  prewarmReplicas: number;
  plan: RolloutPlan;
  /** The round outcome this plan applied, if one finished, and its kind (checks and gates, or a budget reading). */
  analysed?: AnalysisOutcome;
  analysedKind?: 'checks' | 'budget';
  effects: Effect[];
  /** When to look again without an event: the next window transition, rollout step, deadline or warmup poll. */
  requeueAfterMs?: number;
  /** What the route's own status says (Observation.routeAdmission): the spec's ingress is reached once it is admitted. */
  routeAdmission?: RouteAdmission;
}

export function decide(o: Observation): Decision {
  const { app, now } = o;
  // An LLM app never switches kind (the schema refuses it): nothing of the other kinds is its to serve or remove.
  const llm = servesLlm(app.spec) ? o.llm : undefined;
  if (servesLlm(app.spec) && !llm) throw new Error('an LLM app is planned only where LLMInferenceServices are served (admission refuses it otherwise)');
  const [mine, theirs] = llm ? [llm, { workload: o.knative.workload }] : app.spec.model ? [o.kserve, o.knative] : [o.knative, o.kserve];
  const workload = mine.workload, live = mine.live, other = theirs.live;
  const version = versionOf(app.spec);
  // Revisions an earlier workload of the same name left behind (a kind switched back) are not ours: they can carry the very name the new one will use.
  const revisions = (llm ? llm.members : o.revisions)
    .filter((r) => isRevisionOf(r, app) && !workload.isStale(r, app, live) && !theirs.workload.isStale(r, app, other));
  const observed = new Map(revisions.map((r) => [r.metadata.name, workload.observe(r)]));
  const scale = scaleOf(app.spec, now);
  const desiredRevision = workload.desiredRevision(app, version, scale, revisions);
  const stable = stableOf(app);
  // A stable revision that does not run in this kind's workload (a container <-> model switch): the
  // new kind starts on its own, and (make before break) the other kind serves until it is stable here.
  const stableHere = !!stable && revisions.some((r) => r.metadata.name === stable.revision && workload.runs(r, app));
  const fresh = !!stable && !stableHere && stable.version !== version;
  // Only this app's own (by uid, as the executor removes it): an earlier app of the same name left its workload to the garbage collector.
  const previous = fresh && other && controlledBy(app, other) ? { workload: theirs.workload, live: other } : undefined;
  const summary = workload.summarize(live, (r) => observed.get(r)?.version);
  const serving = previous ? theirs.workload.summarize(previous.live, (r) => observed.get(r)?.version) : summary;

  // Prewarm the version the spec asks for, unless it is the stable one. A retry of a failed
  // version warms it again from scratch.
  const effects: Effect[] = [];
  const prewarming = !stable || stable.version !== version;
  const retrying = retryRequested(app, version);
  const prewarm = prewarming ? prewarmStep(o, version, desiredRevision, observed, retrying, effects) : undefined;
  if (!prewarming && o.warmup) effects.push({ type: 'forgetWarmup' });
  // Without prewarm a version is warm as soon as it is ready (readiness is checked by the rollout step).
  const isWarm = (v: string) => v === stable?.version || (v === version && (prewarm ? prewarm.warm : true));

  const input: RolloutInput = {
    now, desired: { version, ...(desiredRevision ? { revision: desiredRevision } : {}) },
    ...(app.spec.rollout ? { rollout: app.spec.rollout } : {}),
    previous: {
      ...(stable ? { stable } : {}), ...(app.status?.canary ? { canary: app.status.canary } : {}), ...(app.status?.phase ? { phase: app.status.phase } : {}),
      ...(app.status?.release ? { release: app.status.release } : {}),
    },
    freezeFloor: freezeFloor(app.spec.rollout?.analysis?.slo, o.releaseFreezeFloor),
    revisions: [...observed.values()], isWarm,
    ...(prewarm && warmupGaveUp(prewarm.condition) ? { warmupFailed: prewarm.status?.lastError ?? 'no warmup request succeeded' } : {}),
    // The promotion gate reads the new workload's own report: during a kind switch that is the new kind's.
    // A workload that serves nothing yet (the first version, or a kind switch) counts only once it answers
    // on its host: Knative and KServe report a split before their route's ingress is programmed.
    // Through a router with status, nothing is in force until the route as written is admitted by its parents.
    traffic: (((fresh || !stable) && !summary.routeReady) || o.routeAdmission?.admitted === false ? [] : summary.traffic).map((t) => ({ revision: t.revision, percent: t.percent })),
  };
  let plan = withRouteAdmission(planRollout(input), o.routeAdmission);
  let analysed: AnalysisOutcome | undefined;
  const analysis = app.spec.rollout?.analysis;
  const due = plan.due;
  if (due && analysis && plan.candidate && plan.stable) {
    // The rollout names each round: its outcome, once an earlier pass's round of that name finished, decides.
    if (o.analysis?.round === due.round) {
      analysed = o.analysis.outcome;
      plan = withRouteAdmission(planRollout({ ...input, ...(due.kind === 'budget' ? { budget: analysed } : { analysis: analysed }) }), o.routeAdmission);
    } else if (due.kind === 'budget') {
      effects.push({ type: 'budget', round: due.round, analysis, stable: plan.stable });
    } else {
      effects.push({ type: 'analysis', round: due.round, analysis, candidate: { version: plan.candidate.version, revision: plan.candidate.revision }, version });
    }
  }

  if (!plan.candidate && o.analysis) effects.push({ type: 'forgetAnalysis' });

  const waits = [
    scale.next ? scale.next.at.getTime() - now.getTime() + 1 : undefined,
    plan.requeueAfterMs,
    prewarm && !prewarm.warm && !warmupGaveUp(prewarm.condition) ? PREWARM_POLL_MS : undefined,
  ].filter((x): x is number => x !== undefined && x >= 0);
  return {
    workload, fresh, ...(previous ? { previous } : {}), ...(live ? { live } : {}), ...(other ? { other: { workload: theirs.workload, live: other } } : {}),
    serving, version, revisions, observed, scale, prewarm, prewarmReplicas: bufferReplicas(app.spec.prewarm), plan,
    ...(analysed ? { analysed, analysedKind: due!.kind } : {}), effects,
    ...(o.routeAdmission ? { routeAdmission: o.routeAdmission } : {}),
    ...(waits.length ? { requeueAfterMs: Math.max(1, Math.min(...waits)) } : {}),
  };
}

/** The workload object the decision asks for. */
export function desiredWorkload(app: ServerlessApp, d: Decision): WorkloadObject {
  const { plan } = d;
  // During a kind switch the new workload starts on its own, all traffic to its first revision once ready.
  const renderPlan: RolloutPlan = d.fresh && plan.candidate
    ? { ...plan, stable: undefined, candidate: undefined, initial: { version: plan.candidate.version, revision: plan.candidate.revision, ready: plan.candidate.ready, warm: plan.candidate.warm } }
    : plan;
  return d.workload.render({ app, version: d.version, plan: renderPlan, effective: d.scale, prewarmReplicas: d.prewarmReplicas, revisions: d.revisions });
}

function prewarmStep(o: Observation, version: string, revision: string | undefined, observed: Map<string, ObservedRevision>, retrying: boolean, effects: Effect[]): PrewarmEvaluation | undefined {
  const { app, now } = o;
  if (!prewarmConfigured(app.spec.prewarm)) {
    if (o.warmup) effects.push({ type: 'forgetWarmup' });
    return undefined;
  }
  const rev = revision ? observed.get(revision) : undefined;
  // The runner's task counts only for this version on this revision; a retry drops a failed one.
  const task = o.warmup && o.warmup.version === version && o.warmup.revision === revision ? o.warmup.progress : undefined;
  const dropTask = retrying && task?.phase === 'failed';
  if (dropTask) effects.push({ type: 'forgetWarmup' });
  const progress = dropTask ? undefined : task;
  const previous = retrying ? undefined : app.status?.prewarm;
  let evaluation = evaluatePrewarm(app.spec.prewarm, version, rev, previous, revision ? progress : undefined, now);
  if (evaluation.startWarmup && revision && app.spec.prewarm?.warmup) {
    const startedAt = new Date(evaluation.status?.startedAt ?? now.toISOString());
    effects.push({ type: 'warmup', version, revision, spec: app.spec.prewarm.warmup, startedAt, ...(servesLlm(app.spec) ? { llm: { service: memberService(revision) } } : {}) });
    // The runner keeps a task it already has for this version and revision, else starts one now.
    evaluation = evaluatePrewarm(app.spec.prewarm, version, rev, previous, progress ?? { phase: 'running', sent: 0, succeeded: 0, startedAt }, now);
  }
  // A finished task is kept (not forgotten) until its version stops prewarming: the cache may
  // not show the status that records its outcome yet, and warmup must not run twice.
  return evaluation;
}

/** The stable version recorded in status, if one was ever established. */
export function stableOf(app: ServerlessApp): RevisionRef | undefined {
  const status = app.status;
  const s = status?.versions?.stable;
  // A stable version is only recorded once it was ready and warm on a named revision. Before that,
  // versions.stable shows the first version: while it starts (Pending), once it failed (its failure
  // names it), or while the spec cannot be served at all (Failed with no failure recorded).
  if (!s?.revision || status?.phase === 'Pending') return undefined;
  if (status?.phase === 'Failed' && (!status.canary?.failure || status.canary.failure.version === s.version)) return undefined;
  return { version: s.version, revision: s.revision };
}

/** The spec asks to retry the failed version it asks for (rollout.retry changed since the failure). */
function retryRequested(app: ServerlessApp, version: string): boolean {
  const f = app.status?.canary?.failure;
  return !!f && f.version === version && !failureHolds(f, app.spec.rollout?.retry);
}

/**
 * A candidate whose route is not admitted gets no traffic through it (planner/reconcile.ts keeps it
 * out of the route) and cannot be promoted (no split is in force): CanaryProgressing says why.
 */
function withRouteAdmission(plan: RolloutPlan, admission: RouteAdmission | undefined): RolloutPlan {
  if (!admission || admission.admitted || (!plan.candidate && !plan.initial) || isParked(plan.candidate?.state)) return plan;
  const message = `${admission.message}; the candidate gets no traffic through it until it is`;
  return { ...plan, progressing: { status: 'False', reason: admission.reason, message } };
}
