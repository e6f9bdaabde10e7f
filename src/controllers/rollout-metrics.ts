// Rollout metrics. Per app, as Flagger exposes them: the candidate's weight and
// the rollout status (0 progressing, 1 stable/promoted, 2 rolled back); per-app
// labels are deliberate there, these are the numbers a dashboard plots for one
// app's rollout. Across apps, with low-cardinality labels only: apps by phase,
// rollout outcomes, check rounds, warmups and window transitions. Counters
// count a transition once: only when the status recording it was written.

import type { ReportMetrics, WindowChange } from '../planner/plan.ts';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { FAILURE_REASONS, phases, type Phase, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { warmupGaveUp, type PrewarmEvaluation } from '../prewarm/prewarm.ts';
import { isStoppedPhase, type AnalysisOutcome, type RolloutPlan } from '../rollout/canary.ts';
import { findCondition } from '../util/conditions.ts';
import { objectKey } from '../util/object-key.ts';


/** Warmup takes seconds to many minutes (a model loading); its deadline is at most an hour. */
const WARMUP_BUCKETS = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600];

/** Rollout events that end (or, for header testing, start) a rollout, by the result label they count under. */
const OUTCOMES: Record<string, string> = {
  Promoted: 'promoted', RolledBack: 'rolled_back', Aborted: 'aborted', Testing: 'header_testing',
  ...Object.fromEntries(FAILURE_REASONS.map((reason) => [reason, 'failed'])),
  // The SLO's own: a burn-rate gate that fired, a release held back by a freeze, one let through by an override.
  BurnRateExceeded: 'burn_rate', ReleaseFrozen: 'frozen', ReleaseFreezeOverridden: 'freeze_overridden',
};

/** What a finished round counts as: its result, a burn-rate gate that fired, or a reading of the error budget. */
export type RoundResult = AnalysisOutcome['result'] | 'burn' | 'budget';

export class RolloutMetrics {
  private readonly weight: Gauge<'namespace' | 'name'>;
  private readonly status: Gauge<'namespace' | 'name'>;
  private readonly outcomes: Counter<'result'>;
  private readonly rejections: Counter<'kind'>;
  private readonly analysisRounds: Counter<'result'>;
  private readonly warmupDuration: Histogram;
  private readonly warmupFailures: Counter;
  private readonly windowTransitions: Counter<'change'>;
  /** Each app's phase, by "namespace/name": the per-phase counts are computed from it at scrape time. */
  private readonly phaseOf = new Map<string, Phase>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.weight = new Gauge({ name: 'serverlessapp_canary_weight', help: 'Traffic percentage of the candidate version.', labelNames: ['namespace', 'name'], registers });
    this.status = new Gauge({ name: 'serverlessapp_rollout_status', help: 'Rollout status: 0 progressing, 1 stable, 2 stopped (rolled back, aborted or failed).', labelNames: ['namespace', 'name'], registers });
    this.rejections = new Counter({ name: 'serverlessapp_write_rejections_total', help: 'Attempts to write a child that were refused, by kind: by the API server (admission webhook, schema; Ready=False ApplyRejected, retried with backoff, each retry counted) or because the object is not the app\'s (Ready=False NotOwned, counted at each reconcile that finds it).', labelNames: ['kind'], registers });
    this.outcomes = new Counter({ name: 'serverlessapp_rollouts_total', help: 'Rollouts by result: promoted, rolled_back (canaryPercent 0), aborted (rollout.abort), failed (revision, progress deadline, warmup or checks), burn_rate (a burn-rate gate fired), header_testing (started); and releases frozen (held back by a release freeze) and freeze_overridden (let through by rollout.releaseOverride).', labelNames: ['result'], registers });
    this.analysisRounds = new Counter({ name: 'serverlessapp_analysis_rounds_total', help: 'Analysis rounds finished, by result: pass, fail (a check), burn (a burn-rate gate fired), nodata; budget (a reading of the error budget for the release freeze).', labelNames: ['result'], registers });
    this.warmupDuration = new Histogram({ name: 'serverlessapp_warmup_duration_seconds', help: 'Time from a version\'s replicas being ready (warmup start) to it being warm, for versions with warmup requests.', buckets: WARMUP_BUCKETS, registers });
    this.warmupFailures = new Counter({ name: 'serverlessapp_warmup_failures_total', help: 'Versions whose warmup did not succeed before its deadline (the candidate fails: phase Failed, no traffic).', registers });
    this.windowTransitions = new Counter({ name: 'serverlessapp_window_transitions_total', help: 'Scale windows that opened, closed or entered their prewarm lead time, by change.', labelNames: ['change'], registers });
    const phaseOf = this.phaseOf;
    new Gauge({
      name: 'serverlessapp_apps', help: 'ServerlessApps this operator reconciles, by rollout phase.', labelNames: ['phase'], registers,
      collect() {
        const counts = new Map<Phase, number>(phases.map((p) => [p, 0]));
        for (const p of phaseOf.values()) counts.set(p, (counts.get(p) ?? 0) + 1);
        for (const [phase, n] of counts) this.set({ phase }, n);
      },
    });
    // Zero series up front, so rate() and the dashboard's stacks work from the first scrape.
    for (const result of ['pass', 'fail', 'burn', 'nodata', 'budget'] as const) this.analysisRounds.inc({ result }, 0);
    for (const change of ['open', 'close', 'prewarm'] as const) this.windowTransitions.inc({ change }, 0);
    this.warmupFailures.inc(0);
  }

  /** `transitioned`: the status recording this plan was just written (count outcomes once). */
  observe(app: ServerlessApp, plan: RolloutPlan, transitioned: boolean): void {
    const labels = { namespace: app.metadata.namespace, name: app.metadata.name };
    this.weight.set(labels, plan.candidate?.percent ?? 0);
    // A stopped version reads 2, as Flagger's "failed".
    this.status.set(labels, isStoppedPhase(plan.phase) ? 2 : plan.candidate || plan.phase === 'Pending' ? 0 : 1);
    this.phase(app, plan.phase);
    for (const e of transitioned ? plan.events : []) {
      const result = OUTCOMES[e.reason];
      if (result) this.outcomes.inc({ result });
    }
  }

  /** The phase the app's status shows now; undefined (no status yet) leaves it out of the counts. */
  phase(app: ServerlessApp, phase: Phase | undefined): void {
    const key = objectKey(app.metadata.namespace, app.metadata.name);
    if (phase) this.phaseOf.set(key, phase);
    else this.phaseOf.delete(key);
  }

  analysisRound(result: RoundResult): void {
    this.analysisRounds.inc({ result });
  }

  warmed(seconds: number): void {
    this.warmupDuration.observe(Math.max(0, seconds));
  }

  warmupFailed(): void {
    this.warmupFailures.inc();
  }

  /**
   * Counts the warmup `evaluation` finished, if it finished just now: `app`
   * still carries the status from before. Call only when the status recording
   * the evaluation was written.
   */
  prewarmed(app: ServerlessApp, evaluation: PrewarmEvaluation): void {
    const outcome = warmupOutcome(app, evaluation);
    if (outcome === 'failed') this.warmupFailed();
    else if (outcome) this.warmed(outcome.seconds);
  }

  windowTransition(change: WindowChange): void {
    this.windowTransitions.inc({ change });
  }

  rejected(kind: string): void {
    this.rejections.inc({ kind });
  }

  /** What a reconcile's report counts: the gauges whatever the write, the rest only with a status write (as its Events). */
  report(app: ServerlessApp, m: ReportMetrics, wrote: boolean): void {
    if (m.rollout) this.observe(app, m.rollout, wrote);
    else if (m.phase) this.phase(app, m.phase);
    // Attempts, not transitions: a refusal that lasts keeps counting, so its rate shows it lasting.
    if (m.rejectedKind) this.rejected(m.rejectedKind);
    if (!wrote) return;
    for (const c of m.windowChanges) this.windowTransition(c);
    if (m.analysisRound) this.analysisRound(m.analysisRound);
    if (m.prewarmed) this.prewarmed(app, m.prewarmed);
  }

  forget(namespace: string, name: string): void {
    this.weight.remove({ namespace, name });
    this.status.remove({ namespace, name });
    this.phaseOf.delete(objectKey(namespace, name));
  }
}

/**
 * How a version's warmup ended, if it ended between the app's status and
 * `evaluation`: warm after warmup requests (with the time since its replicas
 * were ready), or failed. A prewarm of replicas alone has no warmup to time.
 */
export function warmupOutcome(app: ServerlessApp, evaluation: PrewarmEvaluation): { seconds: number } | 'failed' | undefined {
  const before = app.status;
  const next = evaluation.status;
  if (warmupGaveUp(evaluation.condition)) {
    const failedBefore = warmupGaveUp(findCondition(before?.conditions, 'Prewarmed')) && before?.prewarm?.version === next?.version;
    return failedBefore ? undefined : 'failed';
  }
  if (!evaluation.warm || !next?.warmedAt || !next.startedAt || !app.spec.prewarm?.warmup) return undefined;
  if (before?.prewarm?.version === next.version && before.prewarm.warmedAt) return undefined;
  return { seconds: (Date.parse(next.warmedAt) - Date.parse(next.startedAt)) / 1000 };
}
