// What a reconcile reports, given what executing its plan did: the status, the
// Events of the transitions it records, how the status is written, whether to
// retry, and what is counted. Pure.

import type { ServerlessApp, VersionStatus } from '../api/v1alpha1/serverlessapp.ts';
import { findCondition } from '../util/conditions.ts';
import { requestsGpu } from '../render/inference-service.ts';
import { summarize } from '../rollout/version.ts';
import type { EffectiveScale } from '../scaling/windows.ts';
import type { Decision } from './decide.ts';
import { cacheNameFor } from './model-cache-plan.ts';
import { withStatusWrite, type Outcome, type PlannedEvent, type Refusal, type Report, type ReportMetrics, type WindowChange } from './plan.ts';
import type { AnalysisOutcome } from '../rollout/canary.ts';
import type { ReconcileObservation } from './reconcile.ts';
import { claimingStatus, coalescedWrite, composeStatus, refusedClaimStatus } from './status.ts';

/** The report of a reconcile that changes nothing: the status as it is, nothing written, recorded or counted. */
export const nothingToReport = (app: ServerlessApp): Report => ({ status: app.status ?? {}, write: { mode: 'none' }, ...withStatusWrite([]), metrics: { windowChanges: [] } });

/**
 * The report of a reconcile that only claimed hosts: a new app's first status (Ready Unknown, Reconciling
 * Claiming), so it reads as reconciled from its first reconcile; an app reported on before is left as it
 * is, its stale observedGeneration reading as in progress until the next pass judges the claims. A claim
 * the API server refused (`refusal`) is reported as any refused write.
 */
export function claimsReport(app: ServerlessApp, hosts: string[], now: Date, refusal?: Refusal): Report {
  // Deleting a namespace refuses its creates: the app goes with it, nothing to report or retry.
  if (refusal?.namespaceTerminating) return nothingToReport(app);
  if (refusal) {
    // A claim admission or RBAC refused is a refused write like any other: shown at once, announced, counted, retried.
    const status = refusedClaimStatus(app, { kind: refusal.kind, object: refusal.object, message: refusal.message, reason: refusal.reason }, now);
    return {
      status, write: { mode: 'now' }, ...withStatusWrite([{ type: 'Warning', reason: refusal.reason, message: refusal.summary }]),
      ...(refusal.retry ? { retry: refusal } : {}), metrics: { phase: status.phase, rejectedKind: refusal.kind, windowChanges: [] },
    };
  }
  if (findCondition(app.status?.conditions, 'Ready')) return nothingToReport(app);
  const status = claimingStatus(app, hosts, now);
  return { status, write: coalescedWrite(status), ...withStatusWrite([]), metrics: { phase: status.phase, windowChanges: [] } };
}

export function reportReconcile(o: ReconcileObservation, d: Decision, outcome: Outcome): Report {
  const { app, now } = o;
  const { plan, scale, prewarm, version } = d;
  // Deleting a namespace removes children before the app's own deletion starts: nothing to report or retry.
  if (outcome.operations.some((x) => x.refusal?.namespaceTerminating)) {
    return nothingToReport(app);
  }
  // The first refusal is shown (Ready=False ApplyRejected or NotOwned, an Event, a metric); the others do not stop the writes.
  const refusal = outcome.operations.find((x) => x.refusal)?.refusal;
  const modelCache = cacheNameFor(app, o.cacheScope, o.policy);
  const status = composeStatus(app, {
    plan, workload: d.serving, revisions: d.observed,
    ...(refusal ? { rejected: { kind: refusal.kind, object: refusal.object, message: refusal.message, reason: refusal.reason } } : {}),
    ...(prewarm ? { prewarm } : {}), scale, now,
    describe: (v) => (v === version ? describeSpec(app) : describeFrom(app.status, v)),
    ...withDesiredRevision(d.workload.desiredRevision(app, version, scale, d.revisions)),
    ...(modelCache ? { modelCache } : {}),
    ...(d.routeAdmission ? { route: d.routeAdmission } : {}),
  });
  const windows = windowEvents(app, scale, now);
  const events: PlannedEvent[] = [
    ...plan.events,
    ...(refusal ? [{ type: 'Warning' as const, reason: refusal.reason, message: refusal.summary }] : []),
    ...windows.map((w) => w.event),
    ...(gpuMayScaleAway(app, d) ? [{ type: 'Warning' as const, reason: 'GpuScaleToZero', message: 'a GPU app may scale to zero without a warm buffer: a pod waiting for a GPU node can be scaled away before it is ready (kserve#1247); consider prewarm.replicas or a window with minScale >= 1' }] : []),
  ];
  const metrics = {
    rollout: plan, windowChanges: windows.flatMap((w) => (w.change ? [w.change] : [])),
    ...(refusal ? { rejectedKind: refusal.kind } : {}),
    ...(d.analysed ? { analysisRound: roundResult(d.analysed, d.analysedKind) } : {}),
    ...(prewarm ? { prewarmed: prewarm } : {}),
  };
  // A refused write is retried with backoff; an object the app does not own is not, but the plan's requeue is kept.
  const retry = refusal?.retry ? { retry: refusal } : {};
  // A transition (with its Events) is written at once; a burst of data-plane progress becomes one write
  // per significant change (a new app's first reconcile is one: Ready Unknown, Reconciling).
  const transition = plan.events.length > 0 || refusal !== undefined;
  const write: Report['write'] = transition ? { mode: 'now' } : coalescedWrite(status);
  return { status, write, ...withStatusWrite(events), ...retry, metrics };
}

const withDesiredRevision = (revision: string | undefined) => (revision ? { desiredRevision: revision } : {});

/** A GPU app without a warm buffer may lose a pod waiting for a GPU node: said once per generation. */
function gpuMayScaleAway(app: ServerlessApp, d: Decision): boolean {
  return requestsGpu(app) && d.scale.minScale === 0 && d.prewarmReplicas === 0 && app.status?.observedGeneration !== app.metadata.generation;
}

/** Windows opened, closed or prewarming since the status recorded them; and, on an edit, what happens next. */
function windowEvents(app: ServerlessApp, scale: EffectiveScale, now: Date): Array<{ event: PlannedEvent; change?: WindowChange }> {
  const before = app.status?.scaling;
  if (!before) return [];
  const bounds = `min ${scale.minScale}, max ${scale.maxScale ?? 'unbounded'}`;
  const out: Array<{ event: PlannedEvent; change?: WindowChange }> = [];
  const record = (change: WindowChange, reason: string, message: string) => out.push({ event: { type: 'Normal', reason, message }, change });
  for (const w of scale.openWindows) if (!before.openWindows?.includes(w)) record('open', 'WindowOpened', `scale window ${w} opened: bounds now ${bounds}`);
  for (const w of before.openWindows ?? []) if (!scale.openWindows.includes(w)) record('close', 'WindowClosed', `scale window ${w} closed: bounds now ${bounds}`);
  for (const w of scale.prewarmingWindows) if (!before.prewarmingWindows?.includes(w)) record('prewarm', 'WindowPrewarming', `scale window ${w} opens soon: its minimum applies now (prewarm lead time): bounds now ${bounds}`);
  // An edit of the windows (not time passing) that moves the schedule: say what happens next.
  const was = before.nextTransition, next = scale.next;
  const moved = (was?.at ?? '') !== (next?.at.toISOString() ?? '') || was?.window !== next?.window || was?.change !== next?.change;
  const passed = !!was && Date.parse(was.at) <= now.getTime();
  if (app.status?.observedGeneration !== app.metadata.generation && moved && !passed) {
    const upcoming = next ? `next: window ${next.window} ${next.change === 'prewarm' ? 'prewarms' : next.change === 'open' ? 'opens' : 'closes'} at ${next.at.toISOString()}` : 'no transition scheduled';
    out.push({ event: { type: 'Normal', reason: 'WindowsChanged', message: `scale windows changed: bounds now ${bounds}; ${upcoming}` } });
  }
  return out;
}

/** The version the spec asks for, as status describes it. */
function describeSpec(app: ServerlessApp): Pick<VersionStatus, 'image' | 'storageUri' | 'summary'> {
  return { ...(app.spec.container ? { image: app.spec.container.image } : { storageUri: app.spec.model?.storageUri ?? '' }), summary: summarize(app.spec) };
}

/** An earlier version, as status recorded it. */
function describeFrom(status: ServerlessApp['status'], version: string): Pick<VersionStatus, 'image' | 'storageUri' | 'summary'> {
  const v = [status?.versions?.stable, status?.versions?.candidate].find((x) => x?.version === version);
  return { ...(v?.image ? { image: v.image } : {}), ...(v?.storageUri ? { storageUri: v.storageUri } : {}), ...(v?.summary ? { summary: v.summary } : {}) };
}

/** What a round counts as in the metrics: a budget reading, a burn-rate gate that fired, or its result. */
function roundResult(outcome: AnalysisOutcome, kind: Decision['analysedKind']): NonNullable<ReportMetrics['analysisRound']> {
  if (kind === 'budget') return 'budget';
  return outcome.result === 'fail' && outcome.burn ? 'burn' : outcome.result;
}
