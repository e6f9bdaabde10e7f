// The ServerlessApp controller. One reconcile, in the order data flows:
// read the app and its children from the caches -> validate -> window math ->
// prewarm -> rollout step (metric checks when due) -> render the workload, the
// revisions' bounds and the VirtualService -> apply what differs -> status ->
// requeue at the next window transition, rollout step or warmup poll.
// Everything it decides is in status; nothing needs remembering across restarts.

import type { HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { validateApp, type ValidationPolicy } from '../api/v1alpha1/validation.ts';
import { WarmupRunner } from '../effects/warmup-runner.ts';
import { MIN_SCALE, boundsAnnotations } from '../render/autoscaling.ts';
import { requestsGpu } from '../render/inference-service.ts';
import { APP_LABEL, MANAGED_SELECTOR } from '../render/metadata.ts';
import { renderVirtualService, virtualServiceName } from '../render/virtual-service.ts';
import { runChecks } from '../effects/analysis-checks.ts';
import { AnalysisRunner } from '../rollout/analysis-runner.ts';
import { isParked } from '../rollout/canary.ts';
import { summarize } from '../rollout/version.ts';
import { keepAppliedFields } from '../runtime/apply.ts';
import { Controller, type ReconcileContext, type Request, type Result } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import { Kinds } from '../util/kinds.ts';
import type { Manager } from '../runtime/manager.ts';
import { StatusWriter } from '../runtime/status.ts';
import { RETIRED, revisionBounds } from '../scaling/revision-bounds.ts';
import type { EffectiveScale } from '../scaling/windows.ts';
import type { CacheScope } from '../render/local-model-cache.ts';
import type { SlotLimits } from '../util/fair-slots.ts';
import { ChildWriter, WriteRejected, ownedBy, routingManager } from './children.ts';
import { missingDataPlane, type DataPlaneKinds } from './data-plane.ts';
import { HostClaimBudget } from './host-claim-budget.ts';
import { HostClaims } from './host-claims.ts';
import { cacheNameFor, wantsCache } from './model-cache.ts';
import { ModelCacheQuota } from './model-cache-quota.ts';
import { RolloutMetrics, type WindowChange } from './rollout-metrics.ts';
import { decide, desiredWorkload, type Decision, type Effect } from '../planner/decide.ts';
import { slimRevision, type Revision } from '../planner/revisions.ts';
import { composeStatus, firstStatusHoldMs, invalidSpecStatus, progressWindowMs, significantStatus } from '../planner/status.ts';
import { kserveWorkload, knativeWorkload, type Workload, type WorkloadObject } from '../planner/workloads.ts';
import { splitKey } from '../util/object-key.ts';

export interface ServerlessAppOptions {
  /** What tenants may claim: gateways, hosts, analysis providers, model limits (the platform's settings). */
  policy: Required<ValidationPolicy>;
  warmupUrlTemplate: string;
  localGateway: string;
  /** Knative >= 1.21: set scale bounds on live Revisions instead of making new ones. */
  inPlaceBounds: boolean;
  /** Workloads are cluster-local (the default): reached only through the hosts the app claims. */
  clusterLocal?: boolean;
  concurrency?: number;
  /** Backoff of failing warmup requests (tests shorten it). */
  warmupBackoffMs?: number;
  modelCacheScope: CacheScope;
  /** Warmup tasks and analysis rounds at once, per namespace and in all (default: the runners'). */
  warmupSlots?: SlotLimits;
  analysisSlots?: SlotLimits;
}

/** After creating host claims, when to look again should their events not come first. */
const CLAIM_RECHECK_MS = 2_000;

export class ServerlessAppReconciler {
  readonly controller: Controller;
  readonly warmups: WarmupRunner;
  readonly analyses: AnalysisRunner;
  private readonly apps: Informer<ServerlessApp>;
  private readonly services: Informer<WorkloadObject>;
  private readonly inferenceServices: Informer<WorkloadObject>;
  private readonly virtualServices: Informer<WorkloadObject>;
  private readonly revisions: Informer<Revision>;
  private readonly dataPlane: DataPlaneKinds;
  private readonly status: StatusWriter;
  private readonly hosts: HostClaims;
  private readonly hostBudget: HostClaimBudget;
  private readonly cacheQuota: ModelCacheQuota;
  private readonly children: ChildWriter;
  private readonly metrics: RolloutMetrics;
  private readonly knative: Workload;
  private readonly kserve: Workload;

  private readonly mgr: Manager;
  private readonly o: ServerlessAppOptions;

  constructor(mgr: Manager, o: ServerlessAppOptions) {
    this.mgr = mgr;
    this.o = o;
    this.apps = mgr.informer<ServerlessApp>(Kinds.ServerlessApp);
    // Children keep our own managedFields entry: it tells which fields we applied (see needsApply).
    const transform = keepAppliedFields(mgr.client.fieldManager, routingManager(mgr.client.fieldManager));
    // Each data plane is optional: a missing CRD only stops the apps that need it (see data-plane.ts).
    this.services = mgr.informer<WorkloadObject>(Kinds.KnativeService, { labelSelector: MANAGED_SELECTOR, transform, optional: true });
    this.inferenceServices = mgr.informer<WorkloadObject>(Kinds.InferenceService, { labelSelector: MANAGED_SELECTOR, transform, optional: true });
    this.virtualServices = mgr.informer<WorkloadObject>(Kinds.VirtualService, { labelSelector: MANAGED_SELECTOR, transform, optional: true });
    // Found by app through an index: a reconcile never scans the namespace's revisions.
    this.revisions = mgr.informer<Revision>(Kinds.KnativeRevision, { labelSelector: APP_LABEL, transform: slimRevision, optional: true, indexBy: revisionApp });
    this.dataPlane = { knative: [this.services, this.revisions], kserve: [this.inferenceServices], istio: [this.virtualServices] };
    this.status = new StatusWriter(mgr.client);
    this.children = new ChildWriter(mgr.client);
    const claims = mgr.informer<HostClaim>(Kinds.HostClaim);
    this.hosts = new HostClaims(claims, this.children);
    this.hostBudget = new HostClaimBudget(claims, o.policy.maxHostClaimsPerNamespace);
    this.metrics = new RolloutMetrics(mgr.metrics.registry);
    this.knative = knativeWorkload(o.inPlaceBounds, o.clusterLocal ?? true);
    this.kserve = kserveWorkload(o.inPlaceBounds, o.clusterLocal ?? true);
    this.warmups = new WarmupRunner({
      clock: mgr.clock, urlTemplate: o.warmupUrlTemplate,
      onProgress: (key) => this.controller.enqueue(splitKey(key)),
      onRetry: (key, message) => this.recordFor(key, 'Warning', 'WarmupRetry', message),
      onWait: (key, message) => this.budgetExceeded(key, 'WarmupBudgetExceeded', message),
      ...(o.warmupBackoffMs ? { initialBackoffMs: o.warmupBackoffMs } : {}),
      ...(o.warmupSlots ? { slots: o.warmupSlots } : {}),
    });
    this.analyses = new AnalysisRunner({
      onDone: (key) => this.controller.enqueue(splitKey(key)),
      onWait: (key, message) => this.budgetExceeded(key, 'AnalysisBudgetExceeded', message),
      ...(o.analysisSlots ? { slots: o.analysisSlots } : {}),
    });
    this.controller = new Controller({
      name: 'serverlessapp', reconcile: (req, ctx) => this.reconcile(req, ctx),
      concurrency: o.concurrency ?? 4, logger: mgr.logger, metrics: mgr.metrics,
    })
      .watches(this.apps, (a) => [{ namespace: a.metadata.namespace, name: a.metadata.name }])
      .watches(this.services, ownedBy)
      .watches(this.inferenceServices, ownedBy)
      .watches(this.virtualServices, ownedBy)
      .watches(this.revisions, (r) => r.metadata.labels?.[APP_LABEL] ? [{ namespace: r.metadata.namespace, name: r.metadata.labels[APP_LABEL] }] : []);
    // A host claimed or released (HostClaim), or named or dropped by an app of the same namespace,
    // can change who may route it: look at every app involved again.
    this.controller.watches(claims, (c) => this.hosts.appsAffectedBy(c));
    const recheck = (reqs: Request[]) => { for (const r of reqs) this.controller.enqueue(r); };
    this.apps.on('add', (a) => recheck(this.hosts.setApp(a)));
    this.apps.on('update', (a) => recheck(this.hosts.setApp(a)));
    this.apps.on('delete', (a) => recheck(this.hosts.deleteApp(a)));
    this.cacheQuota = new ModelCacheQuota(o.policy, (a) => wantsCache(a, o.policy));
    this.cacheQuota.track(this.apps, (keys) => recheck(keys.map(splitKey)));
    // A data plane installed (or removed) while running: every app may need to know.
    for (const i of [this.services, this.inferenceServices, this.virtualServices, this.revisions]) i.onServedChange(() => this.controller.enqueueAll());
    mgr.add(this.controller);
  }

  /** Background work waits for its namespace's share or the operator's cap: an Event on the app, and a metric per namespace. */
  private budgetExceeded(key: string, reason: 'WarmupBudgetExceeded' | 'AnalysisBudgetExceeded', message: string): void {
    this.mgr.metrics.budgetRefused(splitKey(key).namespace, reason === 'WarmupBudgetExceeded' ? 'warmup' : 'analysis');
    this.recordFor(key, 'Warning', reason, message);
  }

  private recordFor(key: string, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const { namespace, name } = splitKey(key);
    const app = this.apps.get(namespace, name);
    if (app) this.mgr.events.record(app, type, reason, message);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | void> {
    const key = `${req.namespace}/${req.name}`;
    const app = this.apps.get(req.namespace, req.name);
    if (!app || app.metadata.deletionTimestamp) {
      // Children go with their owner (garbage collection); only in-memory work is ours to drop.
      this.warmups.forget(key);
      this.analyses.forget(key);
      if (!app) {
        this.metrics.forget(req.namespace, req.name);
        this.status.forget(req.namespace, req.name);
      }
      return;
    }
    const now = this.mgr.clock.now();

    const quota = this.cacheQuota.problem(app);
    const hostBudget = this.hostBudget.problem(app);
    let problems = [...validateApp(app, this.o.policy), ...this.hosts.problems(app), ...(quota ? [quota] : []), ...(hostBudget ? [hostBudget] : []), ...missingDataPlane(app, this.dataPlane)];
    // Only a spec the platform allows claims hosts: a refused one never takes a host from anyone.
    if (!problems.length) {
      const claimed = await this.hosts.claim(app);
      if (claimed === 'pending') return { requeueAfterMs: CLAIM_RECHECK_MS };
      problems = claimed;
    }
    if (problems.length) {
      // A bad edit never takes down what runs: children are left exactly as they are.
      const status = invalidSpecStatus(app, problems, now);
      const wrote = await this.status.write(app, status);
      this.metrics.phase(app, status.phase);
      if (wrote) this.mgr.events.record(app, 'Warning', problems[0]!.reason, problems.map((p) => `${p.field}: ${p.message}`).join('; '));
      ctx.log.info('spec rejected', { problems });
      return;
    }

    const d = this.decide(app, key, now, ctx);
    const rejected = await this.applyChildren(app, d);
    if (rejected?.namespaceTerminating) {
      // Deleting a namespace removes children before the app's own deletion starts.
      ctx.log.debug('namespace terminating', { refused: `${rejected.kind} ${rejected.object}` });
      return;
    }
    const { wrote, retryInMs } = await this.report(app, d, now, rejected);
    if (rejected) {
      // Shown on the app (Ready=False ApplyRejected or NotOwned, an Event, a metric). A refused write is
      // retried with backoff; an object the app does not own is not retried, but the plan's requeue (window
      // transition, step interval, deadline, warmup poll) is kept: its timed behaviour goes on.
      this.metrics.rejected(rejected.kind);
      if (rejected.retry) throw rejected;
    }

    ctx.log.debug('reconciled', { phase: d.plan.phase, wroteStatus: wrote });
    const waits = [d.requeueAfterMs, retryInMs].filter((x): x is number => x !== undefined);
    return waits.length ? { requeueAfterMs: Math.max(1, Math.ceil(Math.min(...waits))) } : undefined;
  }

  /** Observe (caches, clock, effects' results) -> plan (pure) -> start the effects it asks for. */
  private decide(app: ServerlessApp, key: string, now: Date, ctx: ReconcileContext): Decision {
    const { namespace, name } = app.metadata;
    const d = decide({
      app, now,
      knative: { workload: this.knative, ...optional('live', this.services.get(namespace, name)) },
      kserve: { workload: this.kserve, ...optional('live', this.inferenceServices.get(namespace, name)) },
      revisions: this.revisions.byIndex(`${namespace}/${name}`),
      ...optional('warmup', this.warmups.current(key)),
      ...optional('analysis', this.analyses.finished(key)),
    });
    if (d.analysed) ctx.log.info('analysis', { outcome: d.analysed });
    for (const e of d.effects) this.run(app, key, d, e);
    return d;
  }

  private run(app: ServerlessApp, key: string, d: Decision, e: Effect): void {
    const { namespace, name } = app.metadata;
    if (e.type === 'forgetWarmup') this.warmups.forget(key);
    if (e.type === 'warmup') this.warmups.ensure({ key, version: e.version, revision: e.revision, namespace, app: name }, e.spec, e.startedAt);
    const analysis = app.spec.rollout?.analysis;
    if (e.type === 'analysis' && analysis) {
      // Off the workers: the round's end re-queues this app, and a later pass reads its outcome.
      this.analyses.outcome(key, e.round, () => runChecks(analysis, { app: name, namespace, revision: e.candidate.revision, version: d.version }, this.o.policy.analysis));
    }
  }

  /**
   * Workload, revision bounds, VirtualService: each written only when it differs
   * from the cache. A write the API server refuses does not stop the others; the
   * first refusal is returned for the status to show.
   */
  private async applyChildren(app: ServerlessApp, d: Decision): Promise<WriteRejected | undefined> {
    const { workload, plan, scale, prewarmReplicas, previous, other } = d;
    const rejections: WriteRejected[] = [];
    const attempt = async (write: () => Promise<unknown>) => {
      try {
        await write();
      } catch (err) {
        if (!(err instanceof WriteRejected)) throw err;
        rejections.push(err);
      }
    };
    const desired = desiredWorkload(app, d);
    await attempt(() => this.children.ensure(workload.kind, desired, d.live));
    if (workload.boundsOnRevisions) await attempt(() => this.applyRevisionBounds(d.revisions, revisionBounds(plan, scale, prewarmReplicas)));
    const servingWorkload = previous?.workload ?? workload;
    // Header routes and mirroring reach a candidate only while it is ready, warm and not stopped (rolled back, aborted, failed).
    const reachable = !previous && !!(plan.candidate?.ready && plan.candidate.warm) && !isParked(plan.candidate?.state);
    const vs = await this.reconcileVirtualService(app, servingWorkload, reachable, attempt, plan.candidate?.revision);
    // The other kind goes once this kind serves: the VirtualService (if any) routes here already.
    if (!previous && other && (!app.spec.ingress || vs === 'current')) await attempt(() => this.children.remove(other.workload.kind, other.live, app));
    // Model -> container: with KServe's default ingress (disableIstioVirtualHost: false) KServe holds an
    // ExternalName Service named after the app, and Knative's Route cannot create its placeholder Service
    // of that name ("NotOwned") while it exists. So the new revision is made ready and warm first, then the
    // InferenceService goes and the Route follows (seconds without a route, documented).
    if (previous?.workload === this.kserve && plan.candidate?.ready && plan.candidate.warm) {
      await attempt(() => this.children.remove(Kinds.InferenceService, previous.live, app));
    }
    return rejections[0];
  }

  /** Status (only when it changed), the Events of the transitions it records, and metrics. */
  private async report(app: ServerlessApp, d: Decision, now: Date, rejected: WriteRejected | undefined): Promise<{ wrote: boolean; retryInMs?: number }> {
    const { plan, scale, prewarm, version } = d;
    const cache = cacheNameFor(app, this.o.modelCacheScope, this.o.policy);
    const status = composeStatus(app, {
      plan, workload: d.serving, revisions: d.observed,
      ...(rejected ? { rejected: { kind: rejected.kind, object: rejected.object, message: rejected.message, reason: rejected.reason } } : {}),
      ...(prewarm ? { prewarm } : {}), scale, now,
      describe: (v) => v === version ? describeWorkload(app) : describeFrom(app.status, v),
      ...(cache ? { modelCache: cache } : {}),
    });
    // A burst of data-plane progress becomes one write; a transition (with its Events) is written at once.
    // A new app's quiet first start is that burst too: written once, at its end or on a problem. Its
    // report deadline is counted on the wall clock, as its creationTimestamp (a controlled clock for
    // windows may be far from it).
    const transition = plan.events.length > 0 || rejected !== undefined;
    const hold = transition ? 0 : firstStatusHoldMs(app, status, new Date());
    if (hold > 0) {
      this.metrics.observe(app, plan, false);
      return { wrote: false, retryInMs: hold };
    }
    const { wrote, retryInMs } = transition
      ? { wrote: await this.status.write(app, status) }
      : await this.status.writeCoalesced(app, status, significantStatus, progressWindowMs(status));
    if (wrote) {
      for (const e of plan.events) this.mgr.events.record(app, e.type, e.reason, e.message);
      if (rejected) this.mgr.events.record(app, 'Warning', rejected.reason, rejected.summary);
      this.recordWindowEvents(app, scale);
      if (requestsGpu(app) && scale.minScale === 0 && d.prewarmReplicas === 0 && app.status?.observedGeneration !== app.metadata.generation) {
        this.mgr.events.record(app, 'Warning', 'GpuScaleToZero', 'a GPU app may scale to zero without a warm buffer: a pod waiting for a GPU node can be scaled away before it is ready (kserve#1247); consider prewarm.replicas or a window with minScale >= 1');
      }
    }
    this.metrics.observe(app, plan, wrote);
    if (wrote && d.analysed) this.metrics.analysisRound(d.analysed.result);
    if (wrote && prewarm) this.metrics.prewarmed(app, prewarm);
    return { wrote, ...(retryInMs !== undefined ? { retryInMs } : {}) };
  }

  /** Knative >= 1.21 applies min/max-scale edits on a live Revision without a new revision. */
  private async applyRevisionBounds(revisions: Revision[], bounds: Map<string, { minScale: number; maxScale?: number }>): Promise<void> {
    for (const r of revisions) {
      let want = bounds.get(r.metadata.name);
      if (!want) {
        // Retired: only undo a minimum this operator raised.
        const min = Number(r.metadata.annotations?.[MIN_SCALE] ?? 0);
        if (!(min > 0)) continue;
        want = RETIRED;
      }
      const annotations = want === RETIRED ? { [MIN_SCALE]: '0' } : boundsAnnotations(want);
      await this.children.annotate(Kinds.KnativeRevision, { apiVersion: 'serving.knative.dev/v1', kind: 'Revision', ...r }, annotations);
    }
  }

  /** Returns 'current' when the live VirtualService already routes as desired (nothing written). */
  private async reconcileVirtualService(app: ServerlessApp, workload: Workload, candidateReady: boolean, attempt: (write: () => Promise<unknown>) => Promise<void>, candidateRevision?: string): Promise<'current' | 'written' | 'rejected' | 'none'> {
    const live = this.virtualServices.get(app.metadata.namespace, virtualServiceName(app));
    // Before 0.2 ours carried the app's name, which KServe also uses for its own: ours goes.
    const legacy = this.virtualServices.get(app.metadata.namespace, app.metadata.name);
    if (legacy) await attempt(() => this.children.remove(Kinds.VirtualService, legacy, app));
    if (!app.spec.ingress) {
      await attempt(() => this.children.remove(Kinds.VirtualService, live, app));
      return 'none';
    }
    const desired = renderVirtualService(app, { localGateway: this.o.localGateway, candidateReady, ...workload.hosts(app), ...(candidateRevision ? { candidateRevision } : {}) });
    let outcome: 'current' | 'written' | 'rejected' = 'rejected';
    await attempt(async () => { outcome = (await this.children.ensure(Kinds.VirtualService, desired as unknown as WorkloadObject, live)) ? 'written' : 'current'; });
    return outcome;
  }

  private recordWindowEvents(app: ServerlessApp, scale: EffectiveScale): void {
    const before = app.status?.scaling;
    if (!before) return;
    const bounds = `min ${scale.minScale}, max ${scale.maxScale ?? 'unbounded'}`;
    const record = (change: WindowChange, reason: string, message: string) => {
      this.mgr.events.record(app, 'Normal', reason, message);
      this.metrics.windowTransition(change);
    };
    for (const w of scale.openWindows) if (!before.openWindows?.includes(w)) record('open', 'WindowOpened', `scale window ${w} opened: bounds now ${bounds}`);
    for (const w of before.openWindows ?? []) if (!scale.openWindows.includes(w)) record('close', 'WindowClosed', `scale window ${w} closed: bounds now ${bounds}`);
    for (const w of scale.prewarmingWindows) if (!before.prewarmingWindows?.includes(w)) record('prewarm', 'WindowPrewarming', `scale window ${w} opens soon: its minimum applies now (prewarm lead time): bounds now ${bounds}`);
    // An edit of the windows (not time passing) that moves the schedule: say what happens next.
    const was = before.nextTransition, next = scale.next;
    const moved = (was?.at ?? '') !== (next?.at.toISOString() ?? '') || was?.window !== next?.window || was?.change !== next?.change;
    const passed = !!was && Date.parse(was.at) <= this.mgr.clock.now().getTime();
    if (app.status?.observedGeneration !== app.metadata.generation && moved && !passed) {
      const upcoming = next ? `next: window ${next.window} ${next.change === 'prewarm' ? 'prewarms' : next.change === 'open' ? 'opens' : 'closes'} at ${next.at.toISOString()}` : 'no transition scheduled';
      this.mgr.events.record(app, 'Normal', 'WindowsChanged', `scale windows changed: bounds now ${bounds}; ${upcoming}`);
    }
  }

}

function describeWorkload(app: ServerlessApp) {
  return { ...(app.spec.container ? { image: app.spec.container.image } : { storageUri: app.spec.model?.storageUri ?? '' }), summary: summarize(app.spec) };
}

function describeFrom(status: ServerlessApp['status'], version: string) {
  const v = [status?.versions?.stable, status?.versions?.candidate].find((x) => x?.version === version);
  return { ...(v?.image ? { image: v.image } : {}), ...(v?.storageUri ? { storageUri: v.storageUri } : {}), ...(v?.summary ? { summary: v.summary } : {}) };
}

/** The app a revision belongs to, as "namespace/app" (its APP_LABEL, propagated from the template). */
function revisionApp(r: Revision): string | undefined {
  const app = r.metadata.labels?.[APP_LABEL];
  return app ? `${r.metadata.namespace}/${app}` : undefined;
}

/** `{ [key]: value }` when the value is there: optional properties stay absent rather than undefined. */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}


