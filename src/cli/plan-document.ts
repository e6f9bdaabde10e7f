// `kubectl sapp plan` as data: from what was read (the app as stored, the
// server's dry run of the edit, the app's own children and revisions, the
// platform's policy) to the plan document that the text view draws and
// `--output json` prints. Pure. Two steps, because the children's dry runs are
// I/O: `planChildren` runs the operator's checks and planner and returns the
// child operations; `planDocument` adds what the dry runs answered.
//
// The JSON document is versioned (apiVersion serverlessapp.io/plan/v1): fields
// are only ever added within v1; a change of meaning is a new version.

import { llmObservation, llmWorkload } from '../planner/llm-workload.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import { cacheNameFor, cacheScopeProblem, wantsCache } from '../controllers/model-cache.ts';
import type { Decision, Effect } from '../planner/decide.ts';
import type { ChildOperation } from '../planner/plan.ts';
import { planReconcile } from '../planner/reconcile.ts';
import { routerFor, type AppRoutes } from '../planner/route.ts';
import type { EnforcedSettings } from '../runtime/policy-publication.ts';
import type { Revision } from '../planner/revisions.ts';
import { knativeWorkload, kserveWorkload, type WorkloadObject } from '../planner/workloads.ts';
import { removableBy } from '../render/metadata.ts';
import { hasAnnotations } from '../runtime/apply.ts';
import { comparable, fieldDiff, type FieldChange } from './field-diff.ts';
import { explainRollout, type RolloutExplanation } from './plan-rollout.ts';
import { namespaceChecks, type NamespaceView } from './plan-namespace.ts';
import { planWindows, type WindowsPlan } from './plan-windows.ts';
import { WARMUP_DEFAULTS } from '../api/v1alpha1/defaults.ts';

export const PLAN_API_VERSION = 'serverlessapp.io/plan/v1';

/** The platform's settings the operator plans with, and where the CLI learnt them. */
export interface PlatformSettings extends EnforcedSettings {
  /** "the running operator's policy, published by ...", "deployment serverlessapp-system/serverlessapp-operator", or why the defaults are used. */
  source: string;
  /** Why these are not the running operator's published policy (no operator runs, none published): the plan's notes say it. */
  note?: string;
}

export interface PlanInput {
  now: Date;
  /** file: `plan -f` (an edit); live: `plan NAME` (what happens next without one). */
  source: 'file' | 'live';
  /** The app as stored now; absent for a new app. */
  live?: ServerlessApp;
  /** The app as it would be stored: the server's dry run of the edit (defaults and admission applied), or the live app. */
  edited: ServerlessApp;
  /** The API server refused the edit itself (schema, CEL, admission policy): its message. */
  appRefused?: string;
  knative?: WorkloadObject;
  kserve?: WorkloadObject;
  /** The app's routes under the platform's router, as the operator's caches would hold them. */
  routes: AppRoutes;
  /** The app's own revisions (by its label). */
  revisions: Revision[];
  /** An LLM app's LLMInferenceServices, one per live version (by the same label); absent: none. */
  llmMembers?: WorkloadObject[];
  settings: PlatformSettings;
  /** The HostClaims and the namespace's other apps the operator's host and budget rules read; absent: none read. */
  namespace?: NamespaceView;
  /** What the reads could not check, and why. */
  notes?: string[];
}

export interface Planned {
  problems: SpecProblem[];
  decision?: Decision;
  operations: ChildOperation[];
}

/** What the server's dry run of one child write answered. */
export type DryRun =
  | { result: 'accepted'; object?: WorkloadObject }
  | { result: 'refused' | 'forbidden'; message: string }
  | { result: 'not-run'; message: string };

export interface OperationDocument {
  id: string;
  action: ChildOperation['action'];
  kind: string;
  name: string;
  change: 'create' | 'update' | 'delete' | 'none';
  why: string;
  when?: string;
  diff: FieldChange[];
  dryRun: { result: DryRun['result']; message?: string };
}

export interface Refusal {
  /** operator: its own checks (the same reason and message as the app's Ready condition); api-server: the dry run of a write. */
  by: 'operator' | 'api-server';
  kind: string;
  object: string;
  reason?: string;
  field?: string;
  message: string;
}

export interface PlanDocument {
  apiVersion: typeof PLAN_API_VERSION;
  app: { namespace: string; name: string; exists: boolean };
  source: PlanInput['source'];
  /** The instant the plan is for (window transitions and step times are counted from it). */
  at: string;
  /** Anything at all changes: the app's spec, a child, the model cache. */
  changes: boolean;
  /** The API server or the operator would refuse the edit (or a child write). */
  refused: boolean;
  refusals: Refusal[];
  spec: { changed: boolean; diff: FieldChange[] };
  operations: OperationDocument[];
  rollout?: RolloutExplanation;
  scaling?: WindowsPlan;
  /** refused: the operator writes no cache for the edit, and says so as the app's ModelCached=False reason and message. */
  modelCache?: { change: 'none' | 'create' | 'replace' | 'remove'; from?: string; to?: string; refused?: { reason: string; message: string } };
  /** Started after the writes: warmup requests, a check round. */
  effects: string[];
  /** When the operator looks again without an event. */
  requeueAfterMs?: number;
  settings: string;
  /** What the plan could not check (it cannot be read from the API server, or this user may not read it). */
  notes: string[];
}

/** A warmup or check round runs in the operator's memory: the API server shows neither one running nor its result. */
export const EFFECTS_NOTE = 'warmups and check rounds run in the operator\'s memory, which the API server does not show: the plan takes none as running or finished, so one listed under "Then" may be running already (the operator then keeps it rather than starting another)';

/**
 * The operator's planner on what was read: the same `planReconcile` the
 * controller executes, observing what the controller observes (host claims
 * and the namespace's budgets as observe() builds them). Not known to the
 * CLI, so taken as clear: the warmup and check rounds in the operator's
 * memory (noted when the plan starts one), and which data-plane kinds are
 * installed (a child's dry run shows a missing kind).
 */
/** The view's route lookup, with the app's own routes (read beside its children): a host it serves stays its. */
function withOwnRoutes(view: NamespaceView, routes: AppRoutes | undefined): NamespaceView {
  const own = Object.values(routes ?? {}).filter((r): r is WorkloadObject => r !== undefined);
  if (!view.routeNamed && !own.length) return view;
  return { ...view, routeNamed: (kind, name) => own.find((r) => r.kind === kind.kind && r.metadata.name === name) ?? view.routeNamed?.(kind, name) };
}

export function planChildren(input: PlanInput): Planned {
  const { edited, settings } = input;
  if (input.appRefused) return { problems: [], operations: [] };
  const { hosts, budgets } = namespaceChecks(edited, withOwnRoutes(input.namespace ?? {}, input.routes), settings.policy, settings.cacheScope, routerFor(settings.router, settings.localGateway));
  const plan = planReconcile({
    app: edited, now: input.now,
    knative: { workload: knativeWorkload(settings.inPlaceBounds, settings.clusterLocal), ...(input.knative ? { live: input.knative } : {}) },
    kserve: { workload: kserveWorkload(settings.inPlaceBounds, settings.clusterLocal), ...(input.kserve ? { live: input.kserve } : {}) },
    llm: llmObservation(llmWorkload(), input.llmMembers ?? []),
    revisions: input.revisions,
    policy: settings.policy, cacheScope: settings.cacheScope,
    hosts, budgets,
    unserved: { knative: [], kserve: [], istio: [], gatewayApi: [], llm: [] },
    route: routerFor(settings.router, settings.localGateway),
    routes: input.routes,
  });
  return { problems: plan.problems, ...(plan.decision ? { decision: plan.decision } : {}), operations: plan.operations };
}

export function planDocument(input: PlanInput, planned: Planned, dryRuns: Map<string, DryRun>): PlanDocument {
  const { edited, live } = input;
  const { name, namespace } = edited.metadata;
  const specDiff = live ? fieldDiff({ metadata: comparableMeta(live), spec: live.spec }, { metadata: comparableMeta(edited), spec: edited.spec }) : [];
  const refusals: Refusal[] = [];
  if (input.appRefused) refusals.push({ by: 'api-server', kind: 'ServerlessApp', object: name, message: input.appRefused });
  for (const p of planned.problems) refusals.push({ by: 'operator', kind: 'ServerlessApp', object: name, reason: p.reason, field: p.field, message: `${p.field}: ${p.message}` });
  const operations = planned.operations.map((op) => operationDocument(edited, op, dryRuns.get(op.id) ?? { result: 'not-run', message: 'no dry run' }));
  for (const op of operations) {
    if (op.dryRun.result === 'refused') refusals.push({ by: 'api-server', kind: op.kind, object: op.name, message: op.dryRun.message ?? '' });
  }
  const d = planned.decision;
  const settings = input.settings;
  const cacheAfter = input.appRefused ? undefined : cacheNameFor(edited, settings.cacheScope, settings.policy);
  const cacheBefore = live ? cacheNameFor(live, settings.cacheScope, settings.policy) : undefined;
  const cacheRefused = !input.appRefused && wantsCache(edited, settings.policy) ? cacheScopeProblem(edited, settings.cacheScope, settings.policy) : undefined;
  const cacheChange = cacheAfter === cacheBefore ? 'none' : !cacheBefore ? 'create' : !cacheAfter ? 'remove' : 'replace';
  const specChanged = !live || specDiff.length > 0;
  const changes = specChanged || operations.some((o) => o.change !== 'none') || cacheChange !== 'none';
  const windows = planWindows(edited, live, input.now);
  return {
    apiVersion: PLAN_API_VERSION,
    app: { namespace, name, exists: !!live },
    source: input.source,
    at: input.now.toISOString(),
    changes,
    refused: refusals.length > 0,
    refusals,
    spec: { changed: specChanged, diff: specDiff },
    operations,
    ...(d ? { rollout: explainRollout(edited, d) } : {}),
    ...(windows ? { scaling: windows } : {}),
    ...(cacheBefore || cacheAfter || cacheRefused
      ? { modelCache: { change: cacheChange, ...(cacheBefore ? { from: cacheBefore } : {}), ...(cacheAfter ? { to: cacheAfter } : {}), ...(cacheRefused ? { refused: cacheRefused } : {}) } }
      : {}),
    effects: (d?.effects ?? []).map(describeEffect),
    ...(d?.requeueAfterMs !== undefined ? { requeueAfterMs: d.requeueAfterMs } : {}),
    settings: settings.source,
    notes: [...(settings.note ? [settings.note] : []), ...(input.notes ?? []), ...(d?.effects.some((e) => e.type === 'warmup' || e.type === 'analysis') ? [EFFECTS_NOTE] : [])],
  };
}

function comparableMeta(app: ServerlessApp) {
  return (comparable(app) as { metadata: unknown }).metadata;
}

function operationDocument(app: ServerlessApp, op: ChildOperation, dryRun: DryRun): OperationDocument {
  const name = op.desired?.metadata.name ?? op.live?.metadata.name ?? '';
  const kind = `${op.kind.kind}.${op.kind.group}`;
  const base = { id: op.id, action: op.action, kind, name, why: op.why, ...(op.when ? { when: op.when.why } : {}), dryRun: { result: dryRun.result, ...('message' in dryRun ? { message: dryRun.message } : {}) } };
  // The writer removes only what the app may remove (guarded by the uid).
  if (op.action === 'remove') return { ...base, change: removableBy(op.live, op.labelledFor ?? app) ? 'delete' : 'none', diff: [] };
  if (op.action === 'claim') return { ...base, change: 'create', diff: [] };
  if (op.action === 'annotate') {
    const unchanged = hasAnnotations(op.live, op.annotations);
    const diff = unchanged ? [] : fieldDiff(pick(op.live?.metadata.annotations ?? {}, op.annotations ?? {}), op.annotations).map((c) => ({ ...c, path: `metadata.annotations.${c.path}` }));
    return { ...base, change: unchanged ? 'none' : 'update', diff };
  }
  if (!op.live) return { ...base, change: 'create', diff: [] };
  // What the server would store, against what it stores: exact, defaults and all. Without a dry run,
  // the fields the operator states, against the same fields live.
  const diff = dryRun.result === 'accepted' && dryRun.object
    ? fieldDiff(comparable(op.live), comparable(dryRun.object))
    : fieldDiff(pick(comparable(op.live), comparable(op.desired)), comparable(op.desired));
  return { ...base, change: diff.length ? 'update' : 'none', diff };
}

/** `live` restricted to the fields `shape` states (objects key by key; anything else whole). */
function pick(live: unknown, shape: unknown): unknown {
  if (typeof shape !== 'object' || shape === null || Array.isArray(shape) || typeof live !== 'object' || live === null || Array.isArray(live)) return live;
  const l = live as Record<string, unknown>;
  return Object.fromEntries(Object.keys(shape).filter((k) => k in l).map((k) => [k, pick(l[k], (shape as Record<string, unknown>)[k])]));
}

function describeEffect(e: Effect): string {
  switch (e.type) {
    case 'forgetWarmup': return 'drop the warmup task of a version that no longer warms up';
    case 'warmup': return `send warmup requests to revision ${e.revision} (version ${e.version}): ${e.spec.method ?? WARMUP_DEFAULTS.method} ${e.spec.path}, ${e.spec.count ?? WARMUP_DEFAULTS.count} must succeed`;
    case 'analysis': return `run the checks and burn-rate gates due now against candidate ${e.candidate.version} (revision ${e.candidate.revision})`;
    case 'budget': return `read the error budget stable ${e.stable.version} left, for the release freeze`;
    case 'forgetAnalysis': return 'drop the last analysis round: no candidate is left for it';
  }
}

/** 0 nothing changes, 2 something does, 1 refused (terraform plan -detailed-exitcode). */
export function exitCode(doc: PlanDocument): 0 | 1 | 2 {
  return doc.refused ? 1 : doc.changes ? 2 : 0;
}
