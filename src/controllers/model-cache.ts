// The model-cache controller: keeps one KServe LocalModelCache per model app
// with prewarm.cacheModel, replaces it when the model changes and removes it
// when the app goes. The app controller's shape: observe (the app, the caches
// and its InferenceService from the informers, the namespace's budget) -> plan
// (planner/model-cache-plan.ts, pure: the operations in KServe's order, each
// guarded by an earlier one's outcome, and the report) -> execute (execute.ts,
// the app controller's executor: ownership, refusals and outcomes one way) ->
// write the report's ModelCached condition, under this controller's own field
// manager so the app controller's status writes never touch it, and record the
// Events the report gives for that write (CacheReport.eventsFor). When to look
// again is decided by planner/model-cache-triggers.ts.
// A cluster-scoped cache cannot be owned by a namespaced app, so the app
// carries a finalizer, and the cache is the app's by its labels. Every delete
// carries the cache's UID as a precondition, so a cache recreated under the
// same name in between is never removed; one already gone is not waited on
// (its deletion brings the app back, the finalizer dropped then).

import type { NamespaceShare } from '../runtime/namespace-share.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { AdmissionObservation } from '../planner/admission.ts';
import { cachesNamespace, planModelCache, type CacheObject, type CacheReport, type ModelCachePolicy } from '../planner/model-cache-plan.ts';
import { appChangeMatters, appDeletedWith, appOfCache, appsWaitingForCache, appToReconcile, inferenceServiceChangeMatters } from '../planner/model-cache-triggers.ts';
import type { WorkloadObject } from '../planner/workloads.ts';
import { cacheKind, type CacheScope } from '../render/local-model-cache.ts';
import { keepAppliedFields } from '../runtime/apply.ts';
import { Controller, refusedWriteRetry, type ReconcileContext, type Request } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import type { Manager } from '../runtime/manager.ts';
import { StatusWriter } from '../runtime/status.ts';
import { Kinds } from '../util/kinds.ts';
import { MANAGED_SELECTOR } from '../util/managed-by.ts';
import { splitKey } from '../util/object-key.ts';
import { appInformer, childInformer } from './app-caches.ts';
import { ChildWriter } from './children.ts';
import { executeForApp } from './execute.ts';
import type { ModelCacheQuota } from './model-cache-quota.ts';

// Where the rest of the operator (and its tests) have always found them.
export { CACHE_FINALIZER, cacheNameFor, cacheScopeProblem, wantsCache, type ModelCachePolicy, type ModelPolicy } from '../planner/model-cache-plan.ts';

export interface ModelCacheOptions {
  scope: CacheScope;
  nodeGroup: string;
  /** Each namespace's share of the operator's time (runtime/namespace-share.ts); default: unbounded. */
  share?: NamespaceShare;
  /** The platform's model limits (default: 100Gi, any storage URI, 200Gi per namespace); a model over them gets no cache. */
  policy?: ModelCachePolicy;
  /** The namespaces' cache budgets, shared with the app controller (operator.ts builds it). */
  quota: ModelCacheQuota;
  /** What the app controller's admission verdict reads of an app (ServerlessAppReconciler.admissionOf): only an app it serves gets a cache. */
  admissionOf: (app: ServerlessApp) => AdmissionObservation;
}

/**
 * Reconcile workers. Two, so that one slow write (KServe's webhook answering for a cache) holds up
 * one app and not every other; more buy little, as only apps that cache their model come here and
 * a pass makes a few writes at most.
 */
const WORKERS = 2;

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
    this.apps = appInformer(mgr);
    // Optional: KServe without its LocalModel feature (or no KServe) only means no model is cached.
    this.caches = mgr.informer<CacheObject>(cacheKind(o.scope), { labelSelector: MANAGED_SELECTOR, transform: keepAppliedFields(mgr.client.fieldManager), optional: true });
    // The app controller's InferenceServices: one definition (childInformer), so the manager shares one informer.
    this.inferenceServices = childInformer(mgr, Kinds.InferenceService);
    this.children = new ChildWriter(mgr.client);
    this.quota = o.quota;
    this.status = new StatusWriter(mgr.client, { fieldManager: modelCacheFieldManager(mgr.client.fieldManager) });
    // When to look again is the planner's (planner/model-cache-triggers.ts); this only wires it.
    // No clock: queue delays stay on real time (runtime/controller.ts ControllerOptions.clock says why).
    this.controller = new Controller({
      name: 'modelcache', reconcile: (req, ctx) => this.reconcile(req, ctx), concurrency: WORKERS, logger: mgr.logger, metrics: mgr.metrics,
      ...(o.share ? { share: o.share } : {}),
    })
      .watches(this.apps, appToReconcile, appChangeMatters)
      .watches(this.caches, appOfCache)
      .watches(this.inferenceServices, (i) => appDeletedWith(i, (namespace, name) => this.apps.get(namespace, name)), inferenceServiceChangeMatters);
    // At once, with the backoff restarted: KServe's webhook may see the old cache a moment longer than our
    // informer does, and a refusal then is retried after the base delay, not the minutes earlier ones grew it to.
    this.caches.on('delete', (gone: CacheObject) => {
      for (const r of appsWaitingForCache(gone, this.apps.list(), this.caches.list(), o.policy)) this.controller.retryNow(r);
    });
    this.caches.onServedChange(() => this.controller.enqueueAll());
    // One app's model taking or leaving its namespace's budget can give or take another's cache.
    this.quota.onChange((keys) => { for (const k of keys) this.controller.enqueue(splitKey(k)); });
    mgr.add(this.controller);
  }

  /** Observe -> plan -> execute -> report -> write the condition and record the Events the report gives for it. */
  async reconcile(req: Request, ctx: ReconcileContext): Promise<void> {
    const app = this.apps.get(req.namespace, req.name);
    const quota = app ? this.quota.problem(app) : undefined;
    const plan = planModelCache({
      request: req, app, now: this.mgr.clock.now(), scope: this.o.scope, nodeGroup: this.o.nodeGroup, policy: this.o.policy ?? {},
      served: this.caches.served(),
      caches: this.caches.list(cachesNamespace(this.o.scope, req.namespace)),
      cacheNamed: (namespace, name) => this.caches.get(namespace, name),
      inferenceService: this.inferenceServices.get(req.namespace, req.name),
      quota,
      sizeRefusal: app && quota?.reason === 'ModelCacheLargerThanDeclared' ? this.quota.sizeRefusal(app) : undefined,
      admission: app ? this.o.admissionOf(app) : undefined,
    });
    const done = await executeForApp(this.children, app, plan.operations, ctx.signal);
    for (const { op, outcome, refusal } of done) {
      if (outcome !== 'unchanged') ctx.log.info(`model cache: ${op.id} ${outcome}`, { why: op.why, ...(refusal ? { refusal: refusal.message } : {}) });
    }
    const report = plan.report(done);
    if (app) await this.record(app, report, ctx.signal);
    if (report.retry) throw refusedWriteRetry(report.retry.summary);
  }

  /** The condition under this controller's field manager, then the Events the report gives for that write, even one that failed. */
  private async record(app: ServerlessApp, report: CacheReport, signal: AbortSignal): Promise<void> {
    let wrote = false;
    try {
      if (report.write) wrote = await this.status.writePart(app, report.write, signal);
    } finally {
      for (const e of report.eventsFor(wrote)) this.mgr.events.record(app, e.type, e.reason, e.message);
    }
  }
}
