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
import { modelProblems, type SpecProblem, type ValidationPolicy } from '../api/v1alpha1/validation.ts';
import { CACHE_NAMESPACE_LABEL, modelCacheName, renderLocalModelCache, type CacheScope } from '../render/local-model-cache.ts';
import { APP_LABEL, controllingApp } from '../render/metadata.ts';
import { findCondition, setCondition, type Condition } from '../util/conditions.ts';
import { Kinds } from '../util/kinds.ts';
import type { ChildOperation, ChildOutcome, Executed, PlannedEvent, Refusal } from './plan.ts';
import type { WorkloadObject } from './workloads.ts';

export const CACHE_FINALIZER = 'serverlessapp.io/model-cache';

export type ModelPolicy = Pick<ValidationPolicy, 'maxModelSizeBytes' | 'allowedStorageUriPrefixes'>;

/** As ModelPolicy, with the budget of each namespace's caches (see controllers/model-cache-quota.ts). */
export type ModelCachePolicy = ModelPolicy & Pick<ValidationPolicy, 'maxModelCacheBytesPerNamespace'>;

export interface CacheObject extends WorkloadObject {
  spec?: { sourceModelUri?: string };
}

export interface CacheObservation {
  /** The app's key: the app itself may be gone, its caches not. */
  request: { namespace: string; name: string };
  app: ServerlessApp | undefined;
  scope: CacheScope;
  nodeGroup: string;
  policy: ModelPolicy;
  /** Whether the API server serves the cache kind (KServe's LocalModel feature). */
  served: boolean;
  /** The app's caches, found by their labels. */
  caches: CacheObject[];
  /** A read of the cache informer: the cache of that name, whoever's it is. */
  cacheNamed(namespace: string | undefined, name: string): CacheObject | undefined;
  /** The app's InferenceService, as the cache shows it. */
  inferenceService: WorkloadObject | undefined;
  /** Why the namespace's budget refuses the app a cache, if it does. */
  quota: SpecProblem | undefined;
}

/** Adds (present) or removes the app's finalizer. Outcome: written. */
export interface FinalizerOperation {
  id: string;
  action: 'finalizer';
  present: boolean;
  when?: ChildOperation['when'];
  why: string;
}

export type CacheOperation = ChildOperation | FinalizerOperation;

export type ExecutedCacheOperation = Executed<CacheOperation>;

type ConditionInput = Pick<Condition, 'status' | 'reason' | 'message'>;

export interface CacheReport {
  events: PlannedEvent[];
  /** The app's ModelCached condition: set it, drop it (null), or leave it (undefined: the app is gone or going). */
  condition: ConditionInput | null | undefined;
  /** A refusal backoff may cure: the reconcile ends in an error, so the queue retries it. */
  retry?: Refusal;
}

export interface CachePlan {
  operations: CacheOperation[];
  report(executed: ExecutedCacheOperation[]): CacheReport;
}

export function wantsCache(app: ServerlessApp, policy: ModelPolicy = {}): boolean {
  return !!app.spec.model && app.spec.prewarm?.cacheModel === true && !app.metadata.deletionTimestamp && modelProblems(app, policy).length === 0;
}

export function cacheNameFor(app: ServerlessApp, scope: CacheScope, policy: ModelPolicy = {}): string | undefined {
  return wantsCache(app, policy) ? modelCacheName(app, scope) : undefined;
}

/** The app a cache was made for, from its labels (a cluster-scoped cache names its app's namespace in a label). */
export function cacheOwner(c: CacheObject): { namespace: string; name: string } | undefined {
  const name = c.metadata.labels?.[APP_LABEL];
  const namespace = c.metadata.namespace ?? c.metadata.labels?.[CACHE_NAMESPACE_LABEL];
  return name && namespace ? { namespace, name } : undefined;
}

/**
 * The InferenceService a deleted app must lose before its cluster-scoped
 * caches can: its own, if it still has one. KServe refuses to delete a
 * LocalModelCache an InferenceService uses, and that InferenceService would
 * be collected only after the app, which waits on the cache.
 */
export function inferenceServiceToRemoveFirst<T extends WorkloadObject>(app: ServerlessApp, scope: CacheScope, caches: number, isvc: T | undefined): T | undefined {
  if (!app.metadata.deletionTimestamp || scope !== 'cluster' || caches === 0 || !isvc) return undefined;
  return controllingApp(isvc) === app.metadata.name ? isvc : undefined;
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
  const { app } = o;
  const kind = o.scope === 'cluster' ? Kinds.LocalModelCache : Kinds.LocalModelNamespaceCache;

  const blocking = app && inferenceServiceToRemoveFirst(app, o.scope, o.caches.length, o.inferenceService);
  if (blocking) {
    // Its deletion event brings the app back here, and the caches go then.
    return {
      operations: [{ id: 'inference-service', action: 'remove', kind: Kinds.InferenceService, live: blocking, why: 'the app is deleted and its InferenceService uses its cluster-scoped model cache, which KServe refuses to delete while in use' }],
      report: (done) => ({ events: [], condition: undefined, ...retryOf(done) }),
    };
  }

  const wants = !!app && wantsCache(app, o.policy);
  const wanted = app && wants && !o.quota ? renderLocalModelCache(app, o.scope, o.nodeGroup) : undefined;
  const needsFinalizer = o.scope === 'cluster' && !!wanted && o.served;
  const hasFinalizer = app?.metadata.finalizers?.includes(CACHE_FINALIZER) ?? false;
  const operations: CacheOperation[] = [];
  if (app && needsFinalizer && !hasFinalizer) {
    operations.push({ id: 'finalizer', action: 'finalizer', present: true, why: 'a cluster-scoped cache cannot be owned by the app: the finalizer removes it when the app goes' });
  }

  // Why the wanted cache is not written, when that is decided before any write.
  let blocked: (PlannedEvent & { condition: ConditionInput }) | undefined;
  if (wanted) {
    const { namespace, name } = o.request;
    const taken = o.cacheNamed(wanted.metadata.namespace, wanted.metadata.name);
    const takenBy = taken ? cacheOwner(taken) : undefined;
    if (takenBy !== undefined && (takenBy.namespace !== namespace || takenBy.name !== name)) {
      // Never reached with hashed names short of a collision; if it is, the other app's cache stays as it is.
      const message = `${wanted.kind} ${wanted.metadata.name} belongs to another app; not changed`;
      blocked = { type: 'Warning', reason: 'ModelCacheConflict', message, condition: { status: 'False', reason: 'ModelCacheConflict', message: `${message}: the model is not cached` } };
    } else if (!o.served) {
      const message = `prewarm.cacheModel needs KServe's ${wanted.kind} (${kind.plural}.${kind.group}), which this cluster does not serve: the model is not cached; install KServe's LocalModel feature`;
      blocked = { type: 'Warning', reason: 'ModelCacheNotInstalled', message, condition: { status: 'False', reason: 'ModelCacheNotInstalled', message } };
    } else {
      operations.push({
        id: 'cache', action: 'ensure', kind, desired: wanted, why: `caches ${app!.spec.model?.storageUri} on node group ${o.nodeGroup}`,
        ...liveOf(o.caches.find((c) => c.metadata.name === wanted.metadata.name)),
        ...(operations.length ? { when: { op: 'finalizer', outcome: ['written'], why: 'the finalizer is on the app before its cluster-scoped cache exists' } } : {}),
      });
    }
  }

  // Every other cache of the app (model changed, caching off, app gone), one after the other as each goes.
  let previous = operations.find((op) => op.id === 'cache') ? 'cache' : undefined;
  for (const c of o.caches) {
    if (c.metadata.name === wanted?.metadata.name) continue;
    const id = `remove/${c.metadata.name}`;
    operations.push({
      id, action: 'remove', kind, live: c,
      why: !app ? 'the app is gone' : wanted ? 'the app\'s model changed' : 'the app no longer caches this model',
      ...(previous === 'cache'
        ? { when: { op: 'cache', outcome: ['unchanged', 'written', 'rejected'], why: 'a new model\'s cache is written first: KServe moves the InferenceService to it, and refuses to delete a cache still in use' } }
        : previous ? { when: { op: previous, outcome: ['removed'], why: 'the caches go one by one; a refused removal stops the rest until it is retried' } } : {}),
    });
    previous = id;
  }
  if (app && !needsFinalizer && hasFinalizer) {
    operations.push({
      id: 'drop-finalizer', action: 'finalizer', present: false, why: 'the app has no cluster-scoped cache left to remove',
      ...(previous && previous !== 'cache' ? { when: { op: previous, outcome: ['removed'], why: 'every cache of the app is gone first' } } : {}),
    });
  }

  return {
    operations,
    report(done) {
      const events: PlannedEvent[] = [];
      const cache = done.find((d) => d.op.id === 'cache');
      if (blocked) events.push({ type: blocked.type, reason: blocked.reason, message: blocked.message });
      if (cache?.outcome === 'written') events.push({ type: 'Normal', reason: 'ModelCacheApplied', message: `${wanted!.kind} ${wanted!.metadata.name} caches ${app!.spec.model?.storageUri} on node group ${o.nodeGroup}` });
      if (cache?.outcome === 'rejected') events.push({ type: 'Warning', reason: cacheRefusal(cache.refusal!).reason, message: cache.refusal!.summary });
      for (const d of done) {
        if (d.op.action === 'remove' && d.outcome === 'removed' && app) events.push({ type: 'Normal', reason: 'ModelCacheRemoved', message: `removed ${d.op.live!.kind} ${d.op.live!.metadata.name}` });
      }
      const refused = cache?.outcome === 'rejected' && cacheRefusal(cache.refusal!).retry ? { retry: cache.refusal! } : retryOf(done.filter((d) => d !== cache));
      return { events, condition: condition(app, wants, o.quota, blocked?.condition, cache, wanted?.metadata.name), ...refused };
    },
  };
}

/** What the app's ModelCached condition says about this pass. */
function condition(app: ServerlessApp | undefined, wants: boolean, quota: SpecProblem | undefined, blocked: ConditionInput | undefined, cache: ExecutedCacheOperation | undefined, name: string | undefined): ConditionInput | null | undefined {
  if (!app || app.metadata.deletionTimestamp) return undefined;
  // No cache asked for, or one the platform's per-app limits refuse (Ready says so, naming the field).
  if (!wants) return null;
  if (quota) return { status: 'False', reason: quota.reason, message: `${quota.field}: ${quota.message}` };
  if (blocked) return blocked;
  if (!cache || cache.outcome === 'skipped') return undefined;
  if (cache.outcome === 'rejected') return { status: 'False', reason: cacheRefusal(cache.refusal!).reason, message: cache.refusal!.summary };
  return { status: 'True', reason: 'ModelCacheApplied', message: `${(cache.op as ChildOperation).kind.kind} ${name} caches ${app.spec.model?.storageUri} on the node group's nodes` };
}

/** Whether `op` runs after `done`: it has no guard, or the operation it names ended as the guard asks. */
/** The first refusal among `done` that backoff may cure. */
function retryOf(done: ExecutedCacheOperation[]): { retry?: Refusal } {
  const r = done.find((d) => d.outcome === 'rejected' && d.refusal?.retry)?.refusal;
  return r ? { retry: r } : {};
}

/**
 * The ModelCached entry to apply under the model-cache controller's own field
 * manager (conditions is a list keyed by type, so its entry and the app
 * controller's never overwrite each other): `[]` drops it, undefined writes
 * nothing. Set only once the app controller has reported on the app (its
 * Ready condition): before that the app reads as the CRD's default status,
 * which a first write of ours alone would replace.
 */
export function modelCachedUpdate(app: ServerlessApp, want: ConditionInput | null | undefined, now: Date): Condition[] | undefined {
  if (want === undefined) return undefined;
  const conditions = (app.status?.conditions ?? []) as Condition[];
  const live = findCondition(conditions, MODEL_CACHED);
  if (want === null) return live ? [] : undefined;
  if (!findCondition(conditions, 'Ready')) return undefined;
  const next = { type: MODEL_CACHED, ...want, observedGeneration: app.metadata.generation ?? 0 };
  if (live && live.status === next.status && live.reason === next.reason && live.message === next.message && live.observedGeneration === next.observedGeneration) return undefined;
  return setCondition(live ? [live] : [], next, now);
}

function liveOf(live: CacheObject | undefined): { live?: CacheObject } {
  return live ? { live } : {};
}
