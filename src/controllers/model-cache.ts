// The model-cache controller: keeps one KServe LocalModelCache per model app
// with prewarm.cacheModel, replaces it when the model changes and removes it
// when the app goes. One reconcile observes (the app, its caches and
// InferenceService from the informers, the namespace's budget), plans
// (planner/model-cache-plan.ts, pure: the operations in KServe's order, each
// guarded by an earlier one's outcome), executes the operations, and reports:
// Events, and the app's ModelCached condition, written under this controller's
// own field manager so the app controller's status writes never touch it.
// A cluster-scoped cache cannot be owned by a namespaced app, so the app
// carries a finalizer; deleting an app never hangs on a cache that is already
// gone (NotFound counts as done). Every delete carries the cache's UID as a
// precondition, so a cache recreated under the same name in between is never
// removed.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { cacheOwner, CACHE_FINALIZER, modelCachedUpdate, planModelCache, wantsCache, type CacheObject, type CacheOperation, type ModelCachePolicy } from '../planner/model-cache-plan.ts';
import type { ChildOutcome } from '../planner/plan.ts';
import type { WorkloadObject } from '../planner/workloads.ts';
import { controllingApp } from '../render/metadata.ts';
import { MANAGED_SELECTOR } from '../util/managed-by.ts';
import type { CacheScope } from '../render/local-model-cache.ts';
import { keepAppliedFields } from '../runtime/apply.ts';
import { Controller, type ReconcileContext, type Request } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import { Kinds } from '../util/kinds.ts';
import type { Manager } from '../runtime/manager.ts';
import { StatusWriter } from '../runtime/status.ts';
import { findCondition } from '../util/conditions.ts';
import { ChildWriter } from './children.ts';
import { executeOperations } from './execute.ts';
import type { ModelCacheQuota } from './model-cache-quota.ts';
import { splitKey } from '../util/object-key.ts';

// Where the rest of the operator (and its tests) have always found them.
export { CACHE_FINALIZER, cacheNameFor, wantsCache, type ModelCachePolicy, type ModelPolicy } from '../planner/model-cache-plan.ts';

export interface ModelCacheOptions {
  scope: CacheScope;
  nodeGroup: string;
  /** The platform's model limits (default: 100Gi, any storage URI, 200Gi per namespace); a model over them gets no cache. */
  policy?: ModelCachePolicy;
  /** The namespaces' cache budgets, shared with the app controller (operator.ts builds it). */
  quota: ModelCacheQuota;
}

/** The field manager of the ModelCached condition, beside the operator's own. */
export const modelCacheFieldManager = (operatorManager: string) => `${operatorManager}-model-cache`;

export class ModelCacheReconciler {
  readonly controller: Controller;
  private readonly apps: Informer<ServerlessApp>;
  private readonly caches: Informer<CacheObject>;
  private readonly inferenceServices: Informer<WorkloadObject>;
  private readonly children: ChildWriter;
  private readonly quota: ModelCacheQuota;
  private readonly status: StatusWriter;

  private readonly mgr: Manager;
  private readonly o: ModelCacheOptions;

  constructor(mgr: Manager, o: ModelCacheOptions) {
    this.mgr = mgr;
    this.o = o;
    this.apps = mgr.informer<ServerlessApp>(Kinds.ServerlessApp);
    const kind = o.scope === 'cluster' ? Kinds.LocalModelCache : Kinds.LocalModelNamespaceCache;
    // Optional: KServe without its LocalModel feature (or no KServe) only means no model is cached.
    this.caches = mgr.informer<CacheObject>(kind, { labelSelector: MANAGED_SELECTOR, transform: keepAppliedFields(mgr.client.fieldManager), optional: true });
    // The app controller's informer (same kind and selector, so the manager shares it).
    this.inferenceServices = mgr.informer<WorkloadObject>(Kinds.InferenceService, { labelSelector: MANAGED_SELECTOR, optional: true });
    this.children = new ChildWriter(mgr.client);
    this.quota = o.quota;
    this.status = new StatusWriter(mgr.client, { fieldManager: modelCacheFieldManager(mgr.client.fieldManager) });
    const reported = (a: ServerlessApp) => !!findCondition(a.status?.conditions, 'Ready');
    // No clock: queue delays stay on real time (runtime/controller.ts ControllerOptions.clock says why).
    this.controller = new Controller({
      name: 'modelcache', reconcile: (req, ctx) => this.reconcile(req, ctx), concurrency: 2, logger: mgr.logger, metrics: mgr.metrics,
    })
      // Only what this controller reads: the spec (generation), finalizers and deletion, and the app
      // controller's first report (ModelCached waits for it), not every status write.
      .watches(this.apps, (a) => a.spec.model || a.metadata.finalizers?.includes(CACHE_FINALIZER) ? [{ namespace: a.metadata.namespace, name: a.metadata.name }] : [],
        (a, old) => a.metadata.generation !== old.metadata.generation || a.metadata.deletionTimestamp !== old.metadata.deletionTimestamp
          || String(a.metadata.finalizers) !== String(old.metadata.finalizers) || reported(a) !== reported(old))
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
    // not when their backoff (up to minutes) runs out; from the base delay, since KServe's webhook
    // may see the old cache a moment longer than our informer does.
    this.caches.on('delete', (gone: CacheObject) => {
      for (const a of this.apps.list()) {
        if (a.spec.model?.storageUri === gone.spec?.sourceModelUri && wantsCache(a, o.policy) && this.cachesOf(a.metadata.namespace, a.metadata.name).length === 0) {
          this.controller.retryNow({ namespace: a.metadata.namespace, name: a.metadata.name });
        }
      }
    });
    this.caches.onServedChange(() => this.controller.enqueueAll());
    // One app's model taking or leaving its namespace's budget can give or take another's cache.
    this.quota.onChange((keys) => { for (const k of keys) this.controller.enqueue(splitKey(k)); });
    mgr.add(this.controller);
  }

  private cachesOf(namespace: string, name: string): CacheObject[] {
    return this.caches.list(this.o.scope === 'cluster' ? undefined : namespace).filter((c) => {
      const owner = cacheOwner(c);
      return owner?.name === name && owner.namespace === namespace;
    });
  }

  /** Observe -> plan -> execute -> report. */
  async reconcile(req: Request, ctx: ReconcileContext): Promise<void> {
    const app = this.apps.get(req.namespace, req.name);
    const plan = planModelCache({
      request: req, app, scope: this.o.scope, nodeGroup: this.o.nodeGroup, policy: this.o.policy ?? {},
      served: this.caches.served(),
      caches: this.cachesOf(req.namespace, req.name),
      cacheNamed: (namespace, name) => this.caches.get(namespace, name),
      inferenceService: this.inferenceServices.get(req.namespace, req.name),
      quota: app ? this.quota.problem(app) : undefined,
    });
    const done = await executeOperations(plan.operations, (op) => this.run(app, op));
    for (const { op, outcome, refusal } of done) {
      if (outcome !== 'unchanged') ctx.log.info(`model cache: ${op.id} ${outcome}`, { why: op.why, ...(refusal ? { refusal: refusal.message } : {}) });
    }
    const report = plan.report(done);
    if (app) for (const e of report.events) this.mgr.events.record(app, e.type, e.reason, e.message);
    if (app) await this.writeCondition(app, modelCachedUpdate(app, report.condition, this.mgr.clock.now()));
    if (report.retry) throw new Error(report.retry.summary);
  }

  /** Runs one operation (a refusal the executor turns into an outcome; anything else fails the reconcile). */
  private async run(app: ServerlessApp | undefined, op: CacheOperation): Promise<ChildOutcome> {
    switch (op.action) {
      case 'finalizer':
        await this.children.finalizer(app!, CACHE_FINALIZER, op.present);
        return 'written';
      case 'remove':
        await this.children.removeMatched(op.kind, op.live!);
        return 'removed';
      case 'ensure': return await this.children.ensure(op.kind, op.desired!, op.live) ? 'written' : 'unchanged';
      default: throw new Error(`model cache: no executor for ${op.action}`);
    }
  }

  /** Applies the ModelCached entry (or drops it, with `[]`) under this controller's field manager. */
  private async writeCondition(app: ServerlessApp, conditions: ReturnType<typeof modelCachedUpdate>): Promise<void> {
    if (conditions) await this.status.writePart(app, conditions.length ? { conditions } : {});
  }
}
