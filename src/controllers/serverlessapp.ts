// The ServerlessApp controller: observe (caches, clock, effects' results) ->
// plan (planner/reconcile.ts, pure: it decides everything) -> execute the child
// operations -> report -> write status, with the Events the report gives for the
// write -> start effects -> requeue as the plan says, whatever a write returned.
// Everything decided is in status; nothing needs remembering across restarts.
// The status write is bound to the read the plan was made from: a plan from a
// copy the API server has moved past writes, announces and counts nothing; it
// is made again from the fresh object (runtime/status.ts StaleRead).

import type { HostClaim } from '../api/v1alpha1/hostclaim.ts';
import { MODEL_CACHED, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem, ValidationPolicy } from '../api/v1alpha1/validation.ts';
import { routedHosts, type AdmissionObservation } from '../planner/admission.ts';
import type { Farewell, Report } from '../planner/plan.ts';
import { leaving, nextLookMs, planApp, type AppObservation } from '../planner/reconcile.ts';
import type { Route } from '../planner/route.ts';
import { changedBeyondLabels } from '../planner/app-triggers.ts';
import { kserveWorkload, knativeWorkload, type Workload } from '../planner/workloads.ts';
import { llmWorkload } from '../planner/llm-workload.ts';
import type { CacheScope } from '../render/local-model-cache.ts';
import { Controller, keepingRequeue, refusedWriteRetry, type ReconcileContext, type Request, type Result } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import type { Manager } from '../runtime/manager.ts';
import type { NamespaceShare } from '../runtime/namespace-share.ts';
import { StaleRead, StatusWriter } from '../runtime/status.ts';
import { Kinds } from '../util/kinds.ts';
import { objectKey, splitKey } from '../util/object-key.ts';
import { AppCaches, appInformer } from './app-caches.ts';
import { AppEffects, type AppEffectsSettings } from './app-effects.ts';
import { ChildWriter } from './children.ts';
import { execute } from './execute.ts';
import { NamespaceBudgets } from './budgets.ts';
import { HostClaims } from './host-claims.ts';
import type { ModelCacheQuota } from './model-cache-quota.ts';
import { RolloutMetrics } from './rollout-metrics.ts';
import { freezeFloorFor } from '../rollout/slo.ts';

/** With the effects' settings (controllers/app-effects.ts): warmup URL template and backoff, both runners' slots. */
export interface ServerlessAppOptions extends AppEffectsSettings {
  /** What tenants may claim: gateways, hosts, analysis providers, model limits (the platform's settings). */
  policy: Required<ValidationPolicy>;
  /** What spec.ingress becomes: an Istio VirtualService or a Gateway API HTTPRoute (planner/route.ts routerFor). */
  route: Route;
  /** Knative >= 1.21: set scale bounds on live Revisions instead of making new ones. */
  inPlaceBounds: boolean;
  /** Workloads are cluster-local (--knative-visibility, config.ts): reached only through the hosts the app claims. */
  clusterLocal: boolean;
  /** Reconcile workers (--concurrency, config.ts). */
  concurrency: number;
  modelCacheScope: CacheScope;
  /** The namespaces' model-cache budgets, shared with the model-cache controller (operator.ts builds it). */
  cacheQuota: ModelCacheQuota;
  /** Each namespace's share of the operator's time (runtime/namespace-share.ts); default: unbounded. */
  share?: NamespaceShare;
  /** The platform's release-freeze floor per namespace (--release-freeze-below; config.ts freezeFloorFor). */
  releaseFreezeBelow?: Record<string, number>;
}

export class ServerlessAppReconciler {
  readonly controller: Controller;
  readonly effects: AppEffects;
  private readonly apps: Informer<ServerlessApp>;
  private readonly caches: AppCaches;
  private readonly status: StatusWriter;
  private readonly hosts: HostClaims;
  private readonly budgets: NamespaceBudgets;
  private readonly children: ChildWriter;
  private readonly metrics: RolloutMetrics;
  private readonly kinds: { knative: Workload; kserve: Workload; llm: Workload };
  private readonly route: Route;
  private readonly mgr: Manager;
  private readonly o: ServerlessAppOptions;

  constructor(mgr: Manager, o: ServerlessAppOptions) {
    this.mgr = mgr;
    this.o = o;
    this.apps = appInformer(mgr);
    this.route = o.route;
    this.caches = new AppCaches(mgr, this.route);
    // ModelCached is the model-cache controller's (see model-cache.ts).
    this.status = new StatusWriter(mgr.client, { othersConditions: [MODEL_CACHED], othersFields: ['refusedModelCache'] });
    this.children = new ChildWriter(mgr.client);
    const claims = mgr.informer<HostClaim>(Kinds.HostClaim);
    // Within a namespace the app serving a host keeps it: read from the route caches.
    this.hosts = new HostClaims(claims, (a, host) => this.caches.servesHost(a, host, this.route));
    this.budgets = new NamespaceBudgets(o.cacheQuota, claims, o.policy.maxHostClaimsPerNamespace);
    this.metrics = new RolloutMetrics(mgr.metrics.registry);
    this.kinds = { knative: knativeWorkload(o.inPlaceBounds, o.clusterLocal), kserve: kserveWorkload(o.inPlaceBounds, o.clusterLocal), llm: llmWorkload() };
    this.effects = new AppEffects({
      clock: mgr.clock, analysisPolicy: o.policy.analysis, warmupUrlTemplate: o.warmupUrlTemplate, llmWarmupUrlTemplate: o.llmWarmupUrlTemplate, warmupBackoffMs: o.warmupBackoffMs,
      warmupSlots: o.warmupSlots, analysisSlots: o.analysisSlots, ...(o.analysisRates ? { analysisRates: o.analysisRates } : {}),
      requeue: (key) => this.controller.enqueue(splitKey(key)),
      budgetRefused: (key, budget) => this.mgr.metrics.budgetRefused(splitKey(key).namespace, budget),
      warn: (key, reason, message) => {
        const app = this.apps.get(splitKey(key).namespace, splitKey(key).name);
        if (app) this.mgr.events.record(app, 'Warning', reason, message);
      },
    });
    const reconcile = (req: Request, ctx: ReconcileContext) => this.reconcile(req, ctx);
    // No clock: queue delays stay on real time (runtime/controller.ts ControllerOptions.clock says why).
    const { logger, metrics } = mgr;
    const share = o.share ? { share: o.share } : {};
    this.controller = new Controller({ name: 'serverlessapp', reconcile, concurrency: o.concurrency, logger, metrics, onStopped: () => this.effects.stop(), ...share })
      // Not on label or annotation edits: the reconcile reads neither (a tenant's label storm costs no reconcile).
      .watches(this.apps, (a) => [{ namespace: a.metadata.namespace, name: a.metadata.name }], changedBeyondLabels);
    this.caches.watchedBy(this.controller);
    // A host claimed or released, or named or dropped by an app of the same namespace, can change who may route it.
    this.controller.watches(claims, (c) => this.hosts.appsAffectedBy(c));
    const recheck = (reqs: Request[]) => { for (const r of reqs) this.controller.enqueue(r); };
    // The host bookkeeping of an app's event is its namespace's work too.
    const charged = <T>(a: ServerlessApp, fn: () => T): T => (o.share ? o.share.measure(a.metadata.namespace, fn) : fn());
    this.apps.on('add', (a) => recheck(charged(a, () => this.hosts.setApp(a))));
    this.apps.on('update', (a) => recheck(charged(a, () => this.hosts.setApp(a))));
    // A key left waiting for the cache to move past an outdated read (StatusWriter.behind) is queued when it does, whatever changed.
    this.apps.on('update', (a: ServerlessApp, old?: ServerlessApp) => {
      if (old && this.status.behind(old) && !this.status.behind(a)) this.controller.enqueue({ namespace: a.metadata.namespace, name: a.metadata.name });
    });
    this.apps.on('delete', (a) => recheck(charged(a, () => this.hosts.deleteApp(a))));
    // A route that starts or stops carrying a host can change which app of its namespace holds it.
    this.caches.onRouteChange((r) => recheck(this.hosts.appsNaming(r.metadata.namespace ?? '', routedHosts(r))));
    o.cacheQuota.onChange((keys) => recheck(keys.map(splitKey)));
    mgr.add(this.controller);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | void> {
    const key = objectKey(req.namespace, req.name);
    // The cache still shows a read the API server has moved past (our last status write replaced it, or a
    // write over it was refused): a plan from it would be refused or repeat a transition. The key comes back
    // when the cache moves on (the update listener above).
    const cached = this.apps.get(req.namespace, req.name);
    if (cached && this.status.behind(cached)) {
      ctx.log.debug('waiting for the cache to move past an outdated read of the app', { resourceVersion: cached.metadata.resourceVersion });
      return;
    }
    const next = planApp(this.observe(req, key));
    if ('farewell' in next) return this.forget(req, key, next.farewell);
    const { app, plan } = next;
    if (plan.problems.length) ctx.log.info('spec rejected', { problems: plan.problems });
    if (plan.decision?.analysed) ctx.log.info('analysis', { outcome: plan.decision.analysed });
    // A write that fails (409, 429, 5xx, the network) or is refused is retried with backoff, the plan's requeue kept.
    const keepPlanned = keepingRequeue(nextLookMs(plan));
    const outcome = await execute(this.children, app, plan.operations, ctx.signal).catch(keepPlanned);
    const report = plan.report(outcome);
    let written: { wrote: boolean; retryInMs?: number };
    try {
      written = await this.writeStatus(app, report, ctx.signal);
    } catch (err) {
      if (!(err instanceof StaleRead)) return keepPlanned(err);
      // Planned from an outdated read: no transition is recorded, announced or counted; plan again now.
      ctx.log.debug('status planned from an outdated read: planning again', { err: err.message });
      return { replan: true };
    }
    const { wrote, retryInMs } = written;
    for (const e of report.eventsFor(wrote)) this.mgr.events.record(app, e.type, e.reason, e.message);
    this.metrics.report(app, report.metrics, wrote);
    for (const e of plan.effects) this.effects.start(app, key, e);
    ctx.log.debug('reconciled', { phase: report.status.phase, wroteStatus: wrote, operations: outcome.operations.map((x) => `${x.op.id}:${x.outcome}`) });
    const after = nextLookMs(plan, retryInMs);
    if (report.retry) throw refusedWriteRetry(report.retry.summary, after);
    return after === undefined ? undefined : { requeueAfterMs: after };
  }

  private observe(req: Request, key: string): AppObservation {
    const app = this.apps.get(req.namespace, req.name);
    if (!app || leaving(app)) return { leaving: true, ...(app ? { app } : {}) };
    return {
      ...this.admissionOf(app), now: this.mgr.clock.now(), cacheScope: this.o.modelCacheScope,
      ...this.caches.children(app, this.kinds, this.route), ...this.effects.results(key), route: this.route,
      releaseFreezeFloor: freezeFloorFor(this.o.releaseFreezeBelow ?? {}, app.metadata.namespace),
    };
  }

  /**
   * What the admission verdict (planner/admission.ts) reads of `app`, from this controller's caches: the
   * model-cache controller asks the same verdict with it, so no child of any kind is made for a refused app.
   */
  admissionOf(app: ServerlessApp): AdmissionObservation {
    return this.admissionWith(app, this.budgets.problems(app));
  }

  /** As admissionOf but for the model cache's budget: what that budget asks (an app refused for any other reason holds none of it). */
  admissionButForCacheBudget(app: ServerlessApp): AdmissionObservation {
    return this.admissionWith(app, this.budgets.problemsButModelCache(app));
  }

  private admissionWith(app: ServerlessApp, budgets: SpecProblem[]): AdmissionObservation {
    return { app, policy: this.o.policy, route: this.route, hosts: this.hosts.verdict(app), budgets, unserved: this.caches.unserved() };
  }

  /** A farewell writes nothing: it drops what the operator holds of the app in memory. */
  private forget(req: Request, key: string, f: Farewell): void {
    if (f.forget.includes('work')) this.effects.forget(key);
    if (f.forget.includes('records')) [this.metrics, this.status].forEach((x) => x.forget(req.namespace, req.name));
  }

  private async writeStatus(app: ServerlessApp, r: Report, signal: AbortSignal): Promise<{ wrote: boolean; retryInMs?: number }> {
    switch (r.write.mode) {
      case 'now': return { wrote: await this.status.write(app, r.status, signal) };
      case 'coalesce': return this.status.writeCoalesced(app, r.status, r.write.significant, r.write.windowMs, signal);
      case 'none': return { wrote: false };
    }
  }
}
