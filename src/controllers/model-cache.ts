// The model-cache controller: keeps one KServe LocalModelCache per model app
// with prewarm.cacheModel, replaces it when the model changes and removes it
// when the app goes. A cluster-scoped cache cannot be owned by a namespaced app,
// so the app carries a finalizer; deleting an app never hangs on a cache that
// is already gone (NotFound counts as done). Every delete carries the cache's
// UID as a precondition, so a cache recreated under the same name in between
// is never removed; a model the platform's limits refuse gets no cache; a
// cache of that name that belongs to another app is left alone and reported;
// and a cache the API server refuses (KServe's webhook: one cache per model)
// is reported and retried. KServe's webhook also refuses to delete a
// cluster-scoped cache an InferenceService still uses (with its localModel
// setting on), and the app's InferenceService would be collected only once the
// app is gone, which waits on this finalizer: so a deleted app's
// InferenceService is deleted first.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { modelProblems, type ValidationPolicy } from '../api/v1alpha1/validation.ts';
import { APP_LABEL, controllingApp, MANAGED_SELECTOR } from '../render/metadata.ts';
import { CACHE_NAMESPACE_LABEL, modelCacheName, renderLocalModelCache, type CacheScope } from '../render/local-model-cache.ts';
import { keepAppliedFields } from '../runtime/apply.ts';
import { Controller, type ReconcileContext, type Request } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import { Kinds, type ResourceKind } from '../util/kinds.ts';
import type { Manager } from '../runtime/manager.ts';
import { ChildWriter, WriteRejected } from './children.ts';
import { ModelCacheQuota } from './model-cache-quota.ts';
import { splitKey } from '../util/object-key.ts';

export const CACHE_FINALIZER = 'serverlessapp.io/model-cache';

interface Cache {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { sourceModelUri?: string };
}

interface Child {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; ownerReferences?: Array<{ uid: string; kind: string; name?: string; controller?: boolean }> };
}

export type ModelPolicy = Pick<ValidationPolicy, 'maxModelSizeBytes' | 'allowedStorageUriPrefixes'>;

/** As ModelPolicy, with the budget of each namespace's caches (see model-cache-quota.ts). */
export type ModelCachePolicy = ModelPolicy & Pick<ValidationPolicy, 'maxModelCacheBytesPerNamespace'>;

export interface ModelCacheOptions {
  scope: CacheScope;
  nodeGroup: string;
  /** The platform's model limits (default: 100Gi, any storage URI, 200Gi per namespace); a model over them gets no cache. */
  policy?: ModelCachePolicy;
}

export function wantsCache(app: ServerlessApp, policy: ModelPolicy = {}): boolean {
  return !!app.spec.model && app.spec.prewarm?.cacheModel === true && !app.metadata.deletionTimestamp && modelProblems(app, policy).length === 0;
}

/** The app a cache was made for, from its labels (a cluster-scoped cache names its app's namespace in a label). */
function cacheOwner(c: Cache): Request | undefined {
  const name = c.metadata.labels?.[APP_LABEL];
  const namespace = c.metadata.namespace ?? c.metadata.labels?.[CACHE_NAMESPACE_LABEL];
  return name && namespace ? { namespace, name } : undefined;
}

export class ModelCacheReconciler {
  readonly controller: Controller;
  private readonly apps: Informer<ServerlessApp>;
  private readonly caches: Informer<Cache>;
  private readonly inferenceServices: Informer<Child>;
  private readonly children: ChildWriter;
  private readonly quota: ModelCacheQuota;

  private readonly mgr: Manager;
  private readonly o: ModelCacheOptions;

  constructor(mgr: Manager, o: ModelCacheOptions) {
    this.mgr = mgr;
    this.o = o;
    this.apps = mgr.informer<ServerlessApp>(Kinds.ServerlessApp);
    const kind = o.scope === 'cluster' ? Kinds.LocalModelCache : Kinds.LocalModelNamespaceCache;
    // Optional: KServe without its LocalModel feature (or no KServe) only means no model is cached.
    this.caches = mgr.informer<Cache>(kind, { labelSelector: MANAGED_SELECTOR, transform: keepAppliedFields(mgr.client.fieldManager), optional: true });
    // The app controller's informer (same kind and selector, so the manager shares it).
    this.inferenceServices = mgr.informer<Child>(Kinds.InferenceService, { labelSelector: MANAGED_SELECTOR, optional: true });
    this.children = new ChildWriter(mgr.client);
    this.quota = new ModelCacheQuota(o.policy ?? {}, (a) => wantsCache(a, o.policy));
    this.controller = new Controller({
      name: 'modelcache', reconcile: (req, ctx) => this.reconcile(req, ctx), concurrency: 2, logger: mgr.logger, metrics: mgr.metrics,
    })
      // Only what this controller reads: the spec (generation), finalizers and deletion, not every status write.
      .watches(this.apps, (a) => a.spec.model || a.metadata.finalizers?.includes(CACHE_FINALIZER) ? [{ namespace: a.metadata.namespace, name: a.metadata.name }] : [],
        (a, old) => a.metadata.generation !== old.metadata.generation || a.metadata.deletionTimestamp !== old.metadata.deletionTimestamp
          || String(a.metadata.finalizers) !== String(old.metadata.finalizers))
      .watches(this.caches, (c) => {
        const owner = cacheOwner(c);
        return owner ? [owner] : [];
      })
      // Only while its app is being deleted: its InferenceService gone, the cache can go.
      .watches(this.inferenceServices, (i) => {
        const name = controllingApp(i);
        const namespace = i.metadata.namespace;
        return name && namespace && this.apps.get(namespace, name)?.metadata.deletionTimestamp ? [{ namespace, name }] : [];
      }, () => false);
    // KServe admits one cache per model: apps refused a cache of a model try again as soon as one goes,
    // not when their backoff (up to minutes) runs out.
    this.caches.on('delete', (gone: Cache) => {
      for (const a of this.apps.list()) {
        if (a.spec.model?.storageUri === gone.spec?.sourceModelUri && wantsCache(a, o.policy) && this.cachesOf(a.metadata.namespace, a.metadata.name).length === 0) {
          this.controller.enqueue({ namespace: a.metadata.namespace, name: a.metadata.name });
        }
      }
    });
    this.caches.onServedChange(() => this.controller.enqueueAll());
    // One app's model taking or leaving its namespace's budget can give or take another's cache.
    this.quota.track(this.apps, (keys) => { for (const k of keys) this.controller.enqueue(splitKey(k)); });
    mgr.add(this.controller);
  }

  private cachesOf(namespace: string, name: string): Cache[] {
    return this.caches.list(this.o.scope === 'cluster' ? undefined : namespace).filter((c) => {
      const owner = cacheOwner(c);
      return owner?.name === name && owner.namespace === namespace;
    });
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<void> {
    const kind = this.o.scope === 'cluster' ? Kinds.LocalModelCache : Kinds.LocalModelNamespaceCache;
    const app = this.apps.get(req.namespace, req.name);
    const existing = this.cachesOf(req.namespace, req.name);
    const wanted = app && wantsCache(app, this.o.policy) && this.quota.allows(app) ? renderLocalModelCache(app, this.o.scope, this.o.nodeGroup) : undefined;

    const blocking = app && inferenceServiceToRemoveFirst(app, this.o.scope, existing.length, this.inferenceServices.get(req.namespace, req.name));
    if (blocking) {
      await this.children.removeMatched(Kinds.InferenceService, blocking);
      ctx.log.info('removed the InferenceService before its model cache', { inferenceService: blocking.metadata.name });
      return;
    }
    const needsFinalizer = this.o.scope === 'cluster' && !!wanted && this.caches.served();
    const hasFinalizer = app?.metadata.finalizers?.includes(CACHE_FINALIZER) ?? false;
    if (app && needsFinalizer && !hasFinalizer) await this.children.finalizer(app, CACHE_FINALIZER, true);
    let refused: unknown;
    try {
      if (app && wanted) await this.writeWanted(app, wanted, existing, kind, req, ctx);
    } catch (err) {
      refused = err; // retried, once the old caches are gone all the same
    }
    // Then every cache of this app that is not the wanted one (model changed, caching off, app gone):
    // a new model's cache exists before the old one goes (KServe refuses to delete a cache an
    // InferenceService still uses, and points the InferenceService at the new one when it exists).
    for (const c of existing) {
      if (c.metadata.name === wanted?.metadata.name) continue;
      await this.children.removeMatched(kind, c);
      ctx.log.info('removed model cache', { cache: c.metadata.name });
      if (app) this.mgr.events.record(app, 'Normal', 'ModelCacheRemoved', `removed ${c.kind} ${c.metadata.name}`);
    }
    if (app && !needsFinalizer && hasFinalizer) await this.children.finalizer(app, CACHE_FINALIZER, false);
    if (refused !== undefined) throw refused;
  }

  /** Writes the cache `app` wants, unless another app holds its name or KServe does not serve caches. */
  private async writeWanted(app: ServerlessApp, wanted: ReturnType<typeof renderLocalModelCache>, existing: Cache[], kind: ResourceKind, req: Request, ctx: ReconcileContext): Promise<void> {
    const taken = this.caches.get(wanted.metadata.namespace, wanted.metadata.name);
    const takenBy = taken ? cacheOwner(taken) : undefined;
    if (takenBy !== undefined && (takenBy.namespace !== req.namespace || takenBy.name !== req.name)) {
      // Never reached with hashed names short of a collision; if it is, the other app's cache stays as it is.
      ctx.log.info('model cache name taken by another app', { cache: wanted.metadata.name });
      this.mgr.events.record(app, 'Warning', 'ModelCacheConflict', `${wanted.kind} ${wanted.metadata.name} belongs to another app; not changed`);
    } else if (!this.caches.served()) {
      this.mgr.events.record(app, 'Warning', 'ModelCacheNotInstalled', `prewarm.cacheModel needs KServe's ${wanted.kind} (${this.caches.kind.plural}.${this.caches.kind.group}), which this cluster does not serve: the model is not cached; install KServe's LocalModel feature`);
    } else {
      const live = existing.find((c) => c.metadata.name === wanted.metadata.name);
      const written = await this.children.ensure(kind, wanted, live).catch((err: unknown) => {
        if (!(err instanceof WriteRejected)) throw err;
        const refusal = cacheRefusal(err);
        this.mgr.events.record(app, 'Warning', refusal.reason, err.summary);
        if (refusal.retry) throw err;
        return false;
      });
      if (written) this.mgr.events.record(app, 'Normal', 'ModelCacheApplied', `${wanted.kind} ${wanted.metadata.name} caches ${app.spec.model?.storageUri} on node group ${this.o.nodeGroup}`);
    }
  }
}


/**
 * The InferenceService a deleted app must lose before its cluster-scoped
 * caches can: its own, if it still has one. KServe refuses to delete a
 * LocalModelCache an InferenceService uses, and that InferenceService would
 * be collected only after the app, which waits on the cache.
 */
export function inferenceServiceToRemoveFirst<T extends Child>(app: ServerlessApp, scope: CacheScope, caches: number, isvc: T | undefined): T | undefined {
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
export function cacheRefusal(err: WriteRejected): { reason: 'ModelCacheConflict' | 'ModelCacheRejected'; retry: boolean } {
  return err.reason === 'NotOwned' ? { reason: 'ModelCacheConflict', retry: false } : { reason: 'ModelCacheRejected', retry: err.retry };
}

export function cacheNameFor(app: ServerlessApp, scope: CacheScope, policy: ModelPolicy = {}): string | undefined {
  return wantsCache(app, policy) ? modelCacheName(app, scope) : undefined;
}
