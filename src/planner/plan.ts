// The executable plan: everything one reconcile will do, as data. The planner
// builds it from an observation (pure); the controller executes its child
// operations in order, hands what happened to `report`, writes the status that
// returns and starts the effects. `kubectl sapp plan` prints the same object,
// so what a developer sees before an edit is what the operator then does.

import type { Phase, ServerlessAppStatus } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import type { PrewarmEvaluation } from '../prewarm/prewarm.ts';
import type { AnalysisOutcome, RolloutPlan } from '../rollout/canary.ts';
import type { ResourceKind } from '../util/kinds.ts';
import type { ObjectRef } from '../util/object-key.ts';
import type { Decision, Effect } from './decide.ts';
import type { WorkloadObject } from './workloads.ts';
import type { WriteRuleName } from './write-rules.ts';

/**
 * ensure: create or update to `desired`; annotate: set `annotations` on `live`; remove: delete `live`
 * (guarded by its uid, and only when the app controls it); claim: create `desired` once (of concurrent
 * creates the API server lets one win; an existing one is left as it is).
 */
export type ChildAction = 'ensure' | 'annotate' | 'remove' | 'claim';

/** What executing one operation did. `skipped`: its guard did not hold. */
export type ChildOutcome = 'unchanged' | 'written' | 'removed' | 'rejected' | 'skipped';

export interface ChildOperation {
  /** Unique within a plan and stable across plans of one app: "workload", "route", "revision-bounds/<name>", ... */
  id: string;
  action: ChildAction;
  kind: ResourceKind;
  /** ensure: the whole object as rendered. */
  desired?: WorkloadObject;
  /** annotate: the annotations to set. */
  annotations?: Record<string, string>;
  /** What the caches hold now; for ensure, undefined means "not cached" (read from the API server before a create). */
  live?: WorkloadObject;
  /** Run only when an earlier operation (by id) ended in one of `outcome`; otherwise skipped. */
  when?: { op: string; outcome: ChildOutcome[]; why: string };
  /** Why the operation is in the plan, in a person's words (for `kubectl sapp plan` and the logs). */
  why: string;
  /** ensure: how the kind must be written (its data plane's rule, see write-rules.ts); 'apply' when absent. */
  write?: WriteRuleName;
  /**
   * remove: `live` cannot carry an owner reference (a namespaced app's cluster-scoped cache), so it is the
   * app's by its labels: removed only when they name this app (render/metadata.ts labelledFor, the rule by
   * which ensure writes it). Absent: only when the app controls it by its owner reference.
   */
  labelledFor?: ObjectRef;
}

/** Adds (present) or removes the app's finalizer `name` (the model-cache controller's). Outcome: written, or unchanged when the app is gone. */
export interface FinalizerOperation {
  id: string;
  action: 'finalizer';
  name: string;
  present: boolean;
  when?: ChildOperation['when'];
  why: string;
}

/** Every operation the executor (controllers/execute.ts) runs. */
export type AppOperation = ChildOperation | FinalizerOperation;

/** A write the API server refused (ApplyRejected) or an object the app does not control (NotOwned). */
export interface Refusal {
  kind: string;
  object: string;
  reason: 'ApplyRejected' | 'NotOwned';
  message: string;
  /** One line for the Event. */
  summary: string;
  /** Whether retrying with backoff can help. */
  retry: boolean;
  /** The namespace is being deleted: the app goes with it, so there is nothing to report or retry. */
  namespaceTerminating?: boolean;
}

/** An operation as the executor left it: what happened, and the refusal when the API server refused it. */
export interface Executed<Op> {
  op: Op;
  outcome: ChildOutcome;
  refusal?: Refusal;
}

export type ExecutedOperation = Executed<ChildOperation>;

/** What a guard needs of an operation (child writes, and the model-cache controller's finalizer). */
export interface Guarded {
  id: string;
  when?: ChildOperation['when'];
}

/** An operation with a guard runs only when the earlier operation it names ended in one of the outcomes listed. */
export function guardHolds(op: Guarded, done: readonly Executed<Guarded>[]): boolean {
  if (!op.when) return true;
  const earlier = done.find((x) => x.op.id === op.when!.op);
  return !!earlier && op.when.outcome.includes(earlier.outcome);
}

/** What the executor hands back to the plan. */
export interface Outcome {
  operations: ExecutedOperation[];
}

export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** Events that go with the status write (Report.eventsFor): none when it did not happen. */
export function withStatusWrite(events: PlannedEvent[]): Pick<Report, 'eventsFor'> {
  return { eventsFor: (wrote) => (wrote ? events : []) };
}

/**
 * How the status is written: a transition at once; progress coalesced; none while there is nothing to
 * report (host claims just made for an app reported on before, the namespace going away).
 */
export type StatusWrite =
  | { mode: 'now' }
  /** `significant`: the part of the status whose change is written at once; the rest at most every `windowMs`. */
  | { mode: 'coalesce'; significant: (status: unknown) => unknown; windowMs?: number }
  | { mode: 'none' };

/** A scale window's change, counted as a metric beside its Event. */
export type WindowChange = 'open' | 'close' | 'prewarm';

/** What the report counts (controllers/rollout-metrics.ts). */
export interface ReportMetrics {
  /** Set whatever the write: the rollout's gauges (its phase and weight), or only the phase when no rollout was planned. */
  rollout?: RolloutPlan;
  phase?: Phase;
  /** The kind of the refused child, counted whatever the write. */
  rejectedKind?: string;
  /** Counted only when the status write happened, as the Events. */
  windowChanges: WindowChange[];
  /** What the round this plan applied counts as (controllers/rollout-metrics.ts RoundResult). */
  analysisRound?: AnalysisOutcome['result'] | 'burn' | 'budget';
  prewarmed?: PrewarmEvaluation;
}

export interface Report {
  status: ServerlessAppStatus;
  write: StatusWrite;
  /**
   * The Events to record, given whether the status write happened (`wrote`: false when it was not
   * needed, was held or failed): only with it, as an Event belongs to the transition it reports, and
   * a status not written has not made that transition (withStatusWrite).
   */
  eventsFor(wrote: boolean): PlannedEvent[];
  /** Back off and retry: the refused write the API server may accept later, which explains the retry. The requeue is kept either way. */
  retry?: Refusal;
  metrics: ReportMetrics;
}

export interface Plan {
  /**
   * The planner's decision (rollout step, scale, prewarm, versions): what `kubectl sapp plan` explains.
   * Absent when nothing was planned: the spec has problems, or the app's host claims were just made.
   */
  decision?: Decision;
  /** Why the spec cannot be served (fields and what is allowed); empty when it can. Children are then left untouched. */
  problems: SpecProblem[];
  /** In order; each may be guarded by an earlier one's outcome. */
  operations: ChildOperation[];
  /** Started after the status is written; their results come back as observations on a later pass. */
  effects: Effect[];
  /** When to look again without an event, whatever the writes returned. */
  requeueAfterMs?: number;
  /** Pure: what to write and record, given what executing the operations did. */
  report(outcome: Outcome): Report;
}

/**
 * What an app absent or being deleted leaves to drop from the operator's memory: 'work', its warmup
 * and check rounds; 'records', what the status writer and the metrics remember of it.
 */
export interface Farewell {
  forget: Array<'work' | 'records'>;
}
