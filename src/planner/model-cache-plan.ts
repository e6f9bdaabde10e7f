// The model-cache controller's plan, pure: from what the caches show (the app,
// its caches, the cache of the name it wants, its InferenceService, whether
// KServe serves caches, the namespace's budget) to the ordered operations one
// reconcile runs, each guarded by an earlier one's outcome, and a report of
// what they did: Events, the app's ModelCached condition, and whether to retry.
//
// The order is KServe's: a deleted app's InferenceService goes before its
// cluster-scoped cache (KServe refuses to delete a cache an InferenceService
// uses, and that InferenceService would be collected only once the app is gone,
// which waits on the cache's finalizer); the finalizer is on the app before a
// cluster-scoped cache exists; a new model's cache is written before the old
// one goes (KServe moves the InferenceService to it); the finalizer goes last,
// once every cache of the app is gone.

import { MODEL_CACHED, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { modelProblems, storageUriShared, type SpecProblem, type ValidationPolicy } from '../api/v1alpha1/validation.ts';
import { cacheKind, modelCacheName, renderLocalModelCache, type CacheScope } from '../render/local-model-cache.ts';
import { controlledBy, labelsName } from '../render/metadata.ts';
import { findCondition, setCondition, type Condition } from '../util/conditions.ts';
import { crdName, Kinds } from '../util/kinds.ts';
import type { ObjectRef } from '../util/object-key.ts';
import { admission, type AdmissionObservation } from './admission.ts';
import type { AppOperation, Executed, PlannedEvent, Refusal } from './plan.ts';
import { type RefusedModelCache } from './model-cache-size.ts';
import type { WorkloadObject } from './workloads.ts';

export const CACHE_FINALIZER = 'serverlessapp.io/model-cache';

export type ModelPolicy = Pick<ValidationPolicy, 'maxModelSizeBytes' | 'allowedStorageUriPrefixes'>;

/** As ModelPolicy, with the budget of each namespace's caches (see controllers/model-cache-quota.ts). */
export type ModelCachePolicy = ModelPolicy & Pick<ValidationPolicy, 'maxModelCacheBytesPerNamespace' | 'maxModelCachesPerNamespace' | 'modelCacheMinChargeBytes'>;

export interface CacheObject extends WorkloadObject {
  spec?: { sourceModelUri?: string };
}

export interface CacheObservation {
  /** The app's key: the app itself may be gone, its caches not. */
  request: ObjectRef;
  app: ServerlessApp | undefined;
  /** The operator's clock (the condition's transition time). */
  now: Date;
  scope: CacheScope;
  nodeGroup: string;
  policy: ModelPolicy;
  /** Whether the API server serves the cache kind (KServe's LocalModel feature). */
  served: boolean;
  /** The caches the operator made (the informer's); the app's are those whose labels name it. */
  caches: CacheObject[];
  /** A read of the cache informer: the cache of that name, whoever's it is. */
  cacheNamed(namespace: string | undefined, name: string): CacheObject | undefined;
  /** The app's InferenceService, as the cache shows it. */
  inferenceService: WorkloadObject | undefined;
  /** Why the namespace's budget refuses the app a cache, if it does (ModelCacheLargerThanDeclared too: a model larger than declared). */
  quota: SpecProblem | undefined;
  /** With a ModelCacheLargerThanDeclared quota problem: the refusal the app's status is to record (planner/model-cache-size.ts). */
  sizeRefusal?: RefusedModelCache | undefined;
  /** What the app's admission reads (planner/admission.ts), the app controller's own inputs; undefined when the app is gone. */
  admission: AdmissionObservation | undefined;
}

/**
 * The namespace whose caches the plan of an app of `appNamespace` reads (CacheObservation.caches):
 * the app's own when caches are namespaced, so another tenant's caches cost its reconcile nothing;
 * every cache (undefined) when they are cluster-scoped, and so in no namespace.
 */
export function cachesNamespace(scope: CacheScope, appNamespace: string): string | undefined {
  return cacheKind(scope).namespaced ? appNamespace : undefined;
}

export type CacheOperation = AppOperation;

export type ExecutedCacheOperation = Executed<CacheOperation>;

type ConditionInput = Pick<Condition, 'status' | 'reason' | 'message'>;

export interface CacheReport {
  /**
   * The Events to record: one per operation that wrote, removed or was refused (and the reason a cache
   * is not written), on the app while it exists. The same whether or not the condition was written
   * (`wrote`), unlike the app report's transition Events: each reports a write this pass made or was
   * refused, and a deleted app, whose status is no longer written, still shows a removal that is refused.
   */
  eventsFor(wrote: boolean): PlannedEvent[];
  /** What the app's ModelCached condition says: set it, drop it (null), or leave it (undefined: the app is gone or going). */
  condition: ConditionInput | null | undefined;
  /**
   * The part of the app's status to apply under this controller's field manager (`{}` drops ModelCached and
   * refusedModelCache); absent: nothing to write. Whatever of its own it leaves out, the apply removes.
   */
  write?: { conditions?: Condition[]; refusedModelCache?: RefusedModelCache };
  /** A refusal backoff may cure: the reconcile ends in an error, so the queue retries it. */
  retry?: Refusal;
}

/** Events recorded whatever the write (CacheReport.eventsFor says why). */
function whateverTheWrite(events: PlannedEvent[]): Pick<CacheReport, 'eventsFor'> {
  return { eventsFor: () => events };
}

export interface CachePlan {
  operations: CacheOperation[];
  report(executed: ExecutedCacheOperation[]): CacheReport;
}

/** Whether the app asks for a cache of a model the platform's per-app limits allow (whatever the scope allows). */
export function wantsCache(app: ServerlessApp, policy: ModelPolicy = {}): boolean {
  return !!app.spec.model && app.spec.prewarm?.cacheModel === true && !app.metadata.deletionTimestamp && modelProblems(app, policy).length === 0;
}

/**
 * Why the cache scope refuses the app its cache, or undefined. A cluster-scoped cache is KServe's
 * for every namespace: it serves any InferenceService whose storageUri is its model or under it,
 * takes that URI from everyone (one cache per URI) and cannot be deleted while another namespace's
 * InferenceService uses it. So one is written only for a storage URI no other namespace's app can
 * name (validation.ts storageUriShared); the namespace scope's caches serve their namespace only.
 */
export function cacheScopeProblem(app: ServerlessApp, scope: CacheScope, policy: ModelPolicy = {}): { reason: 'ModelCacheNotIsolated'; message: string } | undefined {
  const uri = app.spec.model?.storageUri;
  const why = scope === 'cluster' && uri !== undefined ? storageUriShared(uri, app.metadata.namespace, policy.allowedStorageUriPrefixes ?? []) : undefined;
  if (why === undefined) return undefined;
  return {
    reason: 'ModelCacheNotIsolated',
    message: `a cluster-scoped LocalModelCache of ${uri} would serve every namespace's InferenceServices of that model or under it, and ${why}: the model is not cached. `
      + 'The platform must give each namespace its own storage path (--allowed-storage-uri-prefixes, chart modelCache.allowedStorageUriPrefixes, e.g. s3://models/{namespace}/) '
      + 'and the app load its model from under its own, or use modelCache.scope: namespace',
  };
}

/** Whether the app gets a cache: it wants one and the scope allows it (what the namespace's cache budget counts). */
export function getsCache(app: ServerlessApp, scope: CacheScope, policy: ModelPolicy = {}): boolean {
  return wantsCache(app, policy) && !cacheScopeProblem(app, scope, policy);
}

export function cacheNameFor(app: ServerlessApp, scope: CacheScope, policy: ModelPolicy = {}): string | undefined {
  return getsCache(app, scope, policy) ? modelCacheName(app, scope) : undefined;
}

/** Whether the app controller has reported on the app (its Ready condition): until then ModelCached waits. */
export function appReported(app: ServerlessApp): boolean {
  return !!findCondition(app.status?.conditions, 'Ready');
}

/**
 * The InferenceService a deleted app must lose before its cluster-scoped
 * caches can: its own (by its owner reference's uid, the rule by which it is
 * removed), if it still has one. KServe refuses to delete a
 * LocalModelCache an InferenceService uses, and that InferenceService would
 * be collected only after the app, which waits on the cache.
 */
export function inferenceServiceToRemoveFirst<T extends WorkloadObject>(app: ServerlessApp, scope: CacheScope, caches: number, isvc: T | undefined): T | undefined {
  if (!app.metadata.deletionTimestamp || scope !== 'cluster' || caches === 0 || !isvc) return undefined;
  return controlledBy(app, isvc) ? isvc : undefined;
}

/**
 * What a refused cache write tells the app's owner. A cache of that name that
 * is not this app's is a conflict, left as it is and not retried. A refusal by
 * the API server is retried with backoff, since it may pass later: KServe's
 * webhook admits one LocalModelCache per storage URI, so a second app caching
 * the same model can get its cache once the first one's is gone.
 */
export function cacheRefusal(r: Pick<Refusal, 'reason' | 'retry'>): { reason: 'ModelCacheConflict' | 'ModelCacheRejected'; retry: boolean } {
  return r.reason === 'NotOwned' ? { reason: 'ModelCacheConflict', retry: false } : { reason: 'ModelCacheRejected', retry: r.retry };
}

export function planModelCache(o: CacheObservation): CachePlan {
  const { app, request } = o;
  const kind = cacheKind(o.scope);
  const caches = o.caches.filter((c) => labelsName(c, request));

  const blocking = app && inferenceServiceToRemoveFirst(app, o.scope, caches.length, o.inferenceService);
  if (blocking) {
    // Its deletion event brings the app back here, and the caches go then.
    return {
      operations: [{ id: 'inference-service', action: 'remove', kind: Kinds.InferenceService, live: blocking, why: 'the app is deleted and its InferenceService uses its cluster-scoped model cache, which KServe refuses to delete while in use' }],
      report: (done) => ({ ...whateverTheWrite(done.flatMap((d) => (d.refusal ? [refusalEvent(d.refusal)] : []))), condition: undefined, ...retryOf(done) }),
    };
  }

  // Only an app the operator serves gets a cache (planner/admission.ts). One still claiming its hosts
  // keeps what it has, unchanged; a refused one gets none and loses any it had: it holds no budget.
  const verdict = app && !app.metadata.deletionTimestamp && o.admission ? admission(o.admission) : undefined;
  if (verdict?.verdict === 'claiming') return { operations: [], report: () => ({ ...whateverTheWrite([]), condition: undefined }) };
  const refused = verdict?.verdict === 'refused' ? verdict.problems : undefined;
  const wants = !!app && wantsCache(app, o.policy);
  const scoped = app && wants ? cacheScopeProblem(app, o.scope, o.policy) : undefined;
  const wanted = app && wants && !refused && !o.quota && !scoped ? renderLocalModelCache(app, o.scope, o.nodeGroup) : undefined;
  const needsFinalizer = !kind.namespaced && !!wanted && o.served;
  const hasFinalizer = app?.metadata.finalizers?.includes(CACHE_FINALIZER) ?? false;
  const operations: CacheOperation[] = [];
  if (app && needsFinalizer && !hasFinalizer) {
    operations.push({ id: 'finalizer', action: 'finalizer', name: CACHE_FINALIZER, present: true, why: 'a cluster-scoped cache cannot be owned by the app: the finalizer removes it when the app goes' });
  }

  // Why the wanted cache is not written, when that is decided before any write.
  let blocked: (PlannedEvent & { condition: ConditionInput }) | undefined;
  if (scoped) {
    // Decided by the storage URI and the platform's prefixes, which no retry changes; a cache the app has goes.
    blocked = { type: 'Warning', ...scoped, condition: { status: 'False', ...scoped } };
  } else if (wanted) {
    const taken = o.cacheNamed(wanted.metadata.namespace, wanted.metadata.name);
    if (taken && !labelsName(taken, request)) {
      // Never reached with hashed names short of a collision; if it is, the other app's cache stays as it is.
      const message = `${wanted.kind} ${wanted.metadata.name} belongs to another app; not changed`;
      blocked = { type: 'Warning', reason: 'ModelCacheConflict', message, condition: { status: 'False', reason: 'ModelCacheConflict', message: `${message}: the model is not cached` } };
    } else if (!o.served) {
      const message = `prewarm.cacheModel needs KServe's ${wanted.kind} (${crdName(kind)}), which this cluster does not serve: the model is not cached; install KServe's LocalModel feature`;
      blocked = { type: 'Warning', reason: 'ModelCacheNotInstalled', message, condition: { status: 'False', reason: 'ModelCacheNotInstalled', message } };
    } else {
      operations.push({
        id: 'cache', action: 'ensure', kind, desired: wanted, why: `caches ${app!.spec.model?.storageUri} on node group ${o.nodeGroup}`,
        ...liveOf(caches.find((c) => c.metadata.name === wanted.metadata.name)),
        ...(operations.length ? { when: { op: 'finalizer', outcome: ['written'], why: 'the finalizer is on the app before its cluster-scoped cache exists' } } : {}),
      });
    }
  }

  // Every other cache of the app (model changed, caching off, app gone), one after the other as each goes.
  // A namespaced cache of an app that is gone goes with it (garbage collection: its owner reference).
  let previous = operations.find((op) => op.id === 'cache') ? 'cache' : undefined;
  for (const c of kind.namespaced && !app ? [] : caches) {
    if (c.metadata.name === wanted?.metadata.name) continue;
    const id = `remove/${c.metadata.name}`;
    operations.push({
      id, action: 'remove', kind, live: c,
      // A cluster-scoped cache cannot carry the app's owner reference: it is the app's by the labels it was found by.
      ...(kind.namespaced ? {} : { labelledFor: request }),
      why: !app ? 'the app is gone' : wanted ? 'the app\'s model changed' : refused ? `the app is refused (${refused[0]!.reason}): a refused app holds no cache`
        : o.sizeRefusal ? `the model takes ${o.sizeRefusal.measuredBytes} bytes on a node, more than its declared ${o.sizeRefusal.size} (ModelCacheLargerThanDeclared)` : scoped ? 'other namespaces\' apps can name the app\'s model: a cluster-scoped cache of it is refused (ModelCacheNotIsolated)' : 'the app no longer caches this model',
      ...(previous === 'cache'
        ? { when: { op: 'cache', outcome: ['unchanged', 'written', 'rejected'], why: 'a new model\'s cache is written first: KServe moves the InferenceService to it, and refuses to delete a cache still in use' } }
        : previous ? { when: { op: previous, outcome: ['removed'], why: 'the caches go one by one; a refused removal stops the rest until it is retried' } } : {}),
    });
    previous = id;
  }
  if (app && !needsFinalizer && hasFinalizer) {
    operations.push({
      id: 'drop-finalizer', action: 'finalizer', name: CACHE_FINALIZER, present: false, why: 'the app has no cluster-scoped cache left to remove',
      ...(previous && previous !== 'cache' ? { when: { op: previous, outcome: ['removed'], why: 'every cache of the app is gone first' } } : {}),
    });
  }

  return {
    operations,
    report(done) {
      // Deleting a namespace removes the app with it: nothing to report or retry. An app gone has nothing to report on.
      if (done.some((d) => d.refusal?.namespaceTerminating)) return { ...whateverTheWrite([]), condition: undefined };
      if (!app) return { ...whateverTheWrite([]), condition: undefined, ...retryOf(done) };
      const events: PlannedEvent[] = blocked ? [{ type: blocked.type, reason: blocked.reason, message: blocked.message }] : [];
      // Once, when the refusal is first recorded: the status keeps it from then on.
      const newRefusal = o.sizeRefusal && !sameRefusal(o.sizeRefusal, app.status?.refusedModelCache) ? o.sizeRefusal : undefined;
      if (newRefusal && o.quota) events.push({ type: 'Warning', reason: o.quota.reason, message: `${o.quota.field}: ${o.quota.message}` });
      for (const d of done) {
        if (d.refusal) events.push(refusalEvent(d.refusal));
        else if (d.op.id === 'cache' && d.outcome === 'written') events.push({ type: 'Normal', reason: 'ModelCacheApplied', message: `${wanted!.kind} ${wanted!.metadata.name} caches ${app.spec.model?.storageUri} on node group ${o.nodeGroup}` });
        else if (d.op.action === 'remove' && d.outcome === 'removed') events.push({ type: 'Normal', reason: 'ModelCacheRemoved', message: `removed ${d.op.live!.kind} ${d.op.live!.metadata.name}` });
      }
      const said = condition(app, wants, o.quota ?? refused?.[0], blocked?.condition, done, wanted);
      const write = statusUpdate(app, said, o.sizeRefusal, o.now);
      return { ...whateverTheWrite(events), condition: said, ...(write ? { write } : {}), ...retryOf(done) };
    },
  };
}

/** The Warning of a refused operation, as its refusal reads for the app's owner (cacheRefusal). */
function refusalEvent(r: Refusal): PlannedEvent {
  return { type: 'Warning', reason: cacheRefusal(r).reason, message: r.summary };
}

/**
 * What the app's ModelCached condition says about this pass: the first refusal of any operation (the
 * cache's write, an old cache's removal, the finalizer's); else why no cache is written (`refusedBy`: the
 * namespace's budget, or the app's refusal); else that it is.
 */
function condition(app: ServerlessApp, wants: boolean, refusedBy: SpecProblem | undefined, blocked: ConditionInput | undefined, done: ExecutedCacheOperation[], wanted: CacheObject | undefined): ConditionInput | null | undefined {
  if (app.metadata.deletionTimestamp) return undefined;
  const refusal = done.find((d) => d.refusal)?.refusal;
  if (refusal) return { status: 'False', reason: cacheRefusal(refusal).reason, message: refusal.summary };
  // No cache asked for, or one the platform's per-app limits refuse (Ready says so, naming the field).
  if (!wants) return null;
  if (refusedBy) return { status: 'False', reason: refusedBy.reason, message: `${refusedBy.field}: ${refusedBy.message}` };
  if (blocked) return blocked;
  const cache = done.find((d) => d.op.id === 'cache');
  if (!wanted || !cache || cache.outcome === 'skipped') return undefined;
  return { status: 'True', reason: 'ModelCacheApplied', message: `${wanted.kind} ${wanted.metadata.name} caches ${app.spec.model?.storageUri} on the node group's nodes` };
}

/** The first refusal among `done` that backoff may cure (cacheRefusal: a conflict is not retried). */
function retryOf(done: ExecutedCacheOperation[]): { retry?: Refusal } {
  const r = done.find((d) => d.refusal && cacheRefusal(d.refusal).retry)?.refusal;
  return r ? { retry: r } : {};
}

/**
 * The ModelCached entry to apply under the model-cache controller's own field
 * manager (conditions is a list keyed by type, so its entry and the app
 * controller's never overwrite each other): `[]` drops it, undefined writes
 * nothing. Set only once the app controller has reported on the app
 * (appReported): before that the app reads as the CRD's default status,
 * which a first write of ours alone would replace.
 */
export function modelCachedUpdate(app: ServerlessApp, want: ConditionInput | null | undefined, now: Date): Condition[] | undefined {
  if (want === undefined) return undefined;
  const conditions = (app.status?.conditions ?? []) as Condition[];
  const live = findCondition(conditions, MODEL_CACHED);
  if (want === null) return live ? [] : undefined;
  if (!appReported(app)) return undefined;
  const next = { type: MODEL_CACHED, ...want, observedGeneration: app.metadata.generation ?? 0 };
  if (live && live.status === next.status && live.reason === next.reason && live.message === next.message && live.observedGeneration === next.observedGeneration) return undefined;
  return setCondition(live ? [live] : [], next, now);
}

/**
 * This controller's part of the app's status, when it changes: the ModelCached entry (modelCachedUpdate) and
 * the size refusal to remember. Both go in every write, as an apply removes what it leaves out of its own.
 */
function statusUpdate(app: ServerlessApp, said: ConditionInput | null | undefined, refusal: RefusedModelCache | undefined, now: Date): { conditions?: Condition[]; refusedModelCache?: RefusedModelCache } | undefined {
  const conditions = modelCachedUpdate(app, said, now);
  const recorded = app.status?.refusedModelCache;
  if (conditions === undefined && sameRefusal(refusal, recorded)) return undefined;
  if (said === undefined || !appReported(app)) return undefined;
  const live = findCondition((app.status?.conditions ?? []) as Condition[], MODEL_CACHED);
  const entries = conditions ?? (live ? [live] : []);
  return { ...(entries.length ? { conditions: entries } : {}), ...(refusal ? { refusedModelCache: refusal } : {}) };
}

function sameRefusal(a: RefusedModelCache | undefined, b: RefusedModelCache | undefined): boolean {
  return a?.storageUri === b?.storageUri && a?.size === b?.size && a?.measuredBytes === b?.measuredBytes && a?.node === b?.node;
}

function liveOf(live: CacheObject | undefined): { live?: CacheObject } {
  return live ? { live } : {};
}
