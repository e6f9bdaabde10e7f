// The effects a ServerlessApp's plan asks for, started after its children and
// status are written: warmup requests to a new revision and check rounds of a
// canary step. Both run off the workers; their progress or end re-queues the
// app, and a later pass reads the result as an observation.
// The one place Events are recorded outside a reconcile's report: what happens
// while an effect runs, between two reconciles (a warmup request retried, work
// waiting for its namespace's share), is told when it happens, as Warnings
// (WarmupRetry, WarmupBudgetExceeded, AnalysisBudgetExceeded). How an effect
// ended is the report's, read back as an observation.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { AnalysisPolicy } from '../api/v1alpha1/analysis-target.ts';
import { readBudget, runChecks } from '../effects/analysis-checks.ts';
import { WarmupRunner } from '../effects/warmup-runner.ts';
import type { Effect, Observation } from '../planner/decide.ts';
import { AnalysisRunner } from '../rollout/analysis-runner.ts';
import { sleep, type TimerClock } from '../runtime/clock.ts';
import { budgetQueries, roundQueries } from '../rollout/analysis.ts';
import type { RateLimits } from '../util/query-rate.ts';
import type { SlotLimits } from '../util/fair-slots.ts';

export interface AppEffectsOptions {
  clock: TimerClock;
  warmupUrlTemplate: string;
  llmWarmupUrlTemplate: string;
  /** Backoff of failing warmup requests (tests shorten it). */
  warmupBackoffMs?: number;
  /** Warmup tasks and analysis rounds at once, per namespace and in all (default: the runners'). */
  warmupSlots?: SlotLimits;
  analysisSlots?: SlotLimits;
  /** Analysis queries each namespace may send per second (--analysis-queries-per-namespace; default: unbounded). */
  analysisRates?: RateLimits;
  analysisPolicy: AnalysisPolicy;
  /** Look at the app again (its key, "namespace/name"). */
  requeue: (key: string) => void;
  /** A Warning Event on the app. */
  warn: (key: string, reason: string, message: string) => void;
  /** Counts work that waits for its namespace's share or the operator's cap (the budget metric). */
  budgetRefused: (key: string, budget: 'warmup' | 'analysis') => void;
}

/** What the operator's configuration sets, passed through by the app controller. */
export type AppEffectsSettings = Pick<AppEffectsOptions, 'warmupUrlTemplate' | 'llmWarmupUrlTemplate' | 'warmupBackoffMs' | 'warmupSlots' | 'analysisSlots' | 'analysisRates'>;

export class AppEffects {
  readonly warmups: WarmupRunner;
  readonly analyses: AnalysisRunner;
  private readonly policy: AnalysisPolicy;

  constructor(o: AppEffectsOptions) {
    this.policy = o.analysisPolicy;
    this.warmups = new WarmupRunner({
      clock: o.clock, urlTemplate: o.warmupUrlTemplate, llmUrlTemplate: o.llmWarmupUrlTemplate, onProgress: o.requeue,
      onRetry: (key, message) => o.warn(key, 'WarmupRetry', message),
      onWait: (key, message) => { o.budgetRefused(key, 'warmup'); o.warn(key, 'WarmupBudgetExceeded', message); },
      ...(o.warmupBackoffMs ? { initialBackoffMs: o.warmupBackoffMs } : {}), ...(o.warmupSlots ? { slots: o.warmupSlots } : {}),
    });
    this.analyses = new AnalysisRunner({
      onDone: o.requeue, onWait: (key, message) => { o.budgetRefused(key, 'analysis'); o.warn(key, 'AnalysisBudgetExceeded', message); },
      ...(o.analysisSlots ? { slots: o.analysisSlots } : {}),
      ...(o.analysisRates ? { rates: o.analysisRates, now: () => o.clock.now().getTime(), wait: (ms: number, signal: AbortSignal) => sleep(ms, signal, o.clock) } : {}),
    });
  }

  /** Earlier effects' results, for the planner. */
  results(key: string): Pick<Observation, 'warmup' | 'analysis'> {
    const warmup = this.warmups.current(key), analysis = this.analyses.finished(key);
    return { ...(warmup ? { warmup } : {}), ...(analysis ? { analysis } : {}) };
  }

  start(app: ServerlessApp, key: string, e: Effect): void {
    const { namespace, name } = app.metadata;
    if (e.type === 'forgetWarmup') this.warmups.forget(key);
    if (e.type === 'forgetAnalysis') this.analyses.forget(key);
    if (e.type === 'warmup') this.warmups.ensure({ key, version: e.version, revision: e.revision, namespace, app: name, ...(e.llm ? { llm: e.llm } : {}) }, e.spec, e.startedAt);
    if (e.type === 'analysis') this.analyses.outcome(key, e.round, (signal) => runChecks(e.analysis, { app: name, namespace, revision: e.candidate.revision, version: e.version }, this.policy, {}, undefined, signal), roundQueries(e.analysis));
    if (e.type === 'budget') this.analyses.outcome(key, e.round, (signal) => readBudget(e.analysis, { app: name, namespace, revision: e.stable.revision, version: e.stable.version }, this.policy, {}, undefined, signal), budgetQueries(e.analysis));
  }

  /** The workers stopped: every task ends now, its request cut, and reports nothing. */
  stop(): void {
    this.warmups.stop();
    this.analyses.stop();
  }

  /** The app is gone or going: its in-memory work is dropped. */
  forget(key: string): void {
    this.warmups.forget(key);
    this.analyses.forget(key);
  }
}
