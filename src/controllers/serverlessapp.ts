// The ServerlessApp controller. One reconcile, in the order data flows:
// read the app and its children from the caches -> validate -> window math ->
// prewarm -> rollout step (metric checks when due) -> render the workload, the
// revisions' bounds and the VirtualService -> apply what differs -> status ->
// requeue at the next window transition, rollout step or warmup poll.
// Everything it decides is in status; nothing needs remembering across restarts.

import type { AxiosInstance } from 'axios';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import { validateApp } from '../api/v1alpha1/validation.ts';
import { bufferReplicas, evaluatePrewarm, prewarmConfigured, type PrewarmEvaluation } from '../prewarm/prewarm.ts';
import { WarmupRunner } from '../prewarm/warmup-runner.ts';
import { MIN_SCALE, boundsAnnotations } from '../render/autoscaling.ts';
import { requestsGpu } from '../render/inference-service.ts';
import { APP_LABEL, MANAGED_BY } from '../render/metadata.ts';
import { renderVirtualService } from '../render/virtual-service.ts';
import { runChecks } from '../rollout/analysis.ts';
import { planRollout, type ObservedRevision, type RevisionRef, type RolloutPlan } from '../rollout/canary.ts';
import { versionOf } from '../rollout/version.ts';
import { isSemanticSubset, keepAppliedFields } from '../runtime/apply.ts';
import { Controller, type ReconcileContext, type Request, type Result } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import { Kinds } from '../runtime/kinds.ts';
import type { Manager } from '../runtime/manager.ts';
import { StatusWriter } from '../runtime/status.ts';
import { RETIRED, revisionBounds } from '../scaling/revision-bounds.ts';
import { effectiveScale, type EffectiveScale } from '../scaling/windows.ts';
import type { CacheScope } from '../render/local-model-cache.ts';
import { ChildWriter, ownedBy } from './children.ts';
import { cacheNameFor } from './model-cache.ts';
import { RolloutMetrics } from './rollout-metrics.ts';
import { observeRevision, slimRevision, type Revision } from './revisions.ts';
import { composeStatus, invalidSpecStatus } from './status.ts';
import { kserveWorkload, knativeWorkload, type Workload, type WorkloadObject } from './workloads.ts';

export interface ServerlessAppOptions {
  allowedGateways: string[];
  warmupUrlTemplate: string;
  localGateway: string;
  /** Knative >= 1.21: set scale bounds on live Revisions instead of making new ones. */
  inPlaceBounds: boolean;
  concurrency?: number;
  /** For Prometheus analysis (tests inject one). */
  http?: AxiosInstance;
  /** Backoff of failing warmup requests (tests shorten it). */
  warmupBackoffMs?: number;
  modelCacheScope: CacheScope;
}

/** What one reconcile decided; the apply and report phases act on it. */
interface Decision {
  workload: Workload;
  version: string;
  revisions: Revision[];
  observed: Map<string, ObservedRevision>;
  scale: EffectiveScale;
  prewarm: PrewarmEvaluation | undefined;
  prewarmReplicas: number;
  plan: RolloutPlan;
}

/** While a version warms up or its replicas come up, look again this often even without events. */
const PREWARM_POLL_MS = 5_000;

export class ServerlessAppReconciler {
  readonly controller: Controller;
  readonly warmups: WarmupRunner;
  private readonly apps: Informer<ServerlessApp>;
  private readonly services: Informer<WorkloadObject>;
  private readonly inferenceServices: Informer<WorkloadObject>;
  private readonly virtualServices: Informer<WorkloadObject>;
  private readonly revisions: Informer<Revision>;
  private readonly status: StatusWriter;
  private readonly children: ChildWriter;
  private readonly metrics: RolloutMetrics;
  private readonly knative: Workload;
  private readonly kserve: Workload;

  private readonly mgr: Manager;
  private readonly o: ServerlessAppOptions;

  constructor(mgr: Manager, o: ServerlessAppOptions) {
    this.mgr = mgr;
    this.o = o;
    const managed = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
    this.apps = mgr.informer<ServerlessApp>(Kinds.ServerlessApp);
    // Children keep our own managedFields entry: it tells which fields we applied (see needsApply).
    const transform = keepAppliedFields(mgr.client.fieldManager);
    this.services = mgr.informer<WorkloadObject>(Kinds.KnativeService, { labelSelector: managed, transform });
    this.inferenceServices = mgr.informer<WorkloadObject>(Kinds.InferenceService, { labelSelector: managed, transform });
    this.virtualServices = mgr.informer<WorkloadObject>(Kinds.VirtualService, { labelSelector: managed, transform });
    this.revisions = mgr.informer<Revision>(Kinds.KnativeRevision, { labelSelector: APP_LABEL, transform: slimRevision });
    this.status = new StatusWriter(mgr.client);
    this.children = new ChildWriter(mgr.client);
    this.metrics = new RolloutMetrics(mgr.metrics.registry);
    this.knative = knativeWorkload(o.inPlaceBounds);
    this.kserve = kserveWorkload(o.inPlaceBounds);
    this.warmups = new WarmupRunner({
      clock: mgr.clock, urlTemplate: o.warmupUrlTemplate,
      onProgress: (key) => this.controller.enqueue(splitKey(key)),
      onRetry: (key, message) => this.recordFor(key, 'Warning', 'WarmupRetry', message),
      ...(o.warmupBackoffMs ? { initialBackoffMs: o.warmupBackoffMs } : {}),
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
    mgr.add(this.controller);
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
      if (!app) {
        this.metrics.forget(req.namespace, req.name);
        this.status.forget(req.namespace, req.name);
      }
      return;
    }
    const now = this.mgr.clock.now();

    const problems = validateApp(app, { allowedGateways: this.o.allowedGateways });
    if (problems.length) {
      // A bad edit never takes down what runs: children are left exactly as they are.
      const wrote = await this.status.write(app, invalidSpecStatus(app, problems, now));
      if (wrote) this.mgr.events.record(app, 'Warning', problems[0]!.reason, problems.map((p) => `${p.field}: ${p.message}`).join('; '));
      ctx.log.info('spec rejected', { problems });
      return;
    }

    const d = await this.decide(app, key, now, ctx);
    await this.applyChildren(app, d);
    const wrote = await this.report(app, d, now);

    const waits = [
      d.scale.next ? d.scale.next.at.getTime() - now.getTime() + 1 : undefined,
      d.plan.requeueAfterMs,
      d.prewarm && !d.prewarm.warm && d.prewarm.condition.reason !== 'WarmupFailed' ? PREWARM_POLL_MS : undefined,
    ].filter((x): x is number => x !== undefined && x >= 0);
    ctx.log.debug('reconciled', { phase: d.plan.phase, wroteStatus: wrote });
    return waits.length ? { requeueAfterMs: Math.max(1, Math.min(...waits)) } : undefined;
  }

  /** Everything the reconcile decides, from the caches and the clock: window math, prewarm, the rollout step. */
  private async decide(app: ServerlessApp, key: string, now: Date, ctx: ReconcileContext): Promise<Decision> {
    const { namespace, name } = app.metadata;
    const workload = app.spec.model ? this.kserve : this.knative;
    const version = versionOf(app.spec);
    const revisions = this.revisions.list(namespace).filter((r) => r.metadata.labels?.[APP_LABEL] === name);
    const observed = new Map(revisions.map((r) => [r.metadata.name, observeRevision(r)]));
    const scaling = app.spec.scaling ?? {};
    const leadMs = app.spec.prewarm?.leadTime ? parseDuration(app.spec.prewarm.leadTime) : 0;
    const scale = effectiveScale({ minScale: scaling.minScale ?? 0, ...(scaling.maxScale !== undefined ? { maxScale: scaling.maxScale } : {}) }, scaling.windows ?? [], leadMs, now);
    const desiredRevision = workload.desiredRevision(app, version, scale, revisions);
    const stable = stableOf(app);

    // Prewarm the version the spec asks for, unless it is the stable one.
    const prewarming = !stable || stable.version !== version;
    const prewarm = prewarming ? this.prewarm(app, key, version, desiredRevision, observed, now) : undefined;
    if (!prewarming) this.warmups.forget(key);
    // Without prewarm a version is warm as soon as it is ready (readiness is checked by the rollout step).
    const isWarm = (v: string) => v === stable?.version || (v === version && (prewarm ? prewarm.warm : true));

    const input = {
      now, desired: { version, ...(desiredRevision ? { revision: desiredRevision } : {}) },
      ...(app.spec.rollout ? { rollout: app.spec.rollout } : {}),
      previous: { ...(stable ? { stable } : {}), ...(app.status?.canary ? { canary: app.status.canary } : {}) },
      revisions: [...observed.values()], isWarm,
    };
    let plan = planRollout(input);
    if (plan.analysisDue && app.spec.rollout?.analysis && plan.candidate) {
      const outcome = await runChecks(app.spec.rollout.analysis, { app: name, namespace, revision: plan.candidate.revision, version }, this.o.http);
      ctx.log.info('analysis', { outcome });
      plan = planRollout({ ...input, analysis: outcome });
    }
    return { workload, version, revisions, observed, scale, prewarm, prewarmReplicas: bufferReplicas(app.spec.prewarm), plan };
  }

  /** Workload, revision bounds, VirtualService: each written only when it differs from the cache. */
  private async applyChildren(app: ServerlessApp, d: Decision): Promise<void> {
    const { namespace, name } = app.metadata;
    const { workload, plan, scale, prewarmReplicas } = d;
    const isModel = workload === this.kserve;
    const desired = workload.render({ app, version: d.version, plan, effective: scale, prewarmReplicas, revisions: d.revisions });
    await this.children.ensure(workload.kind, desired, (isModel ? this.inferenceServices : this.services).get(namespace, name));
    // Switching between container and model removes the other kind.
    await this.children.remove(isModel ? Kinds.KnativeService : Kinds.InferenceService, (isModel ? this.services : this.inferenceServices).get(namespace, name), app);
    if (workload.boundsOnRevisions) await this.applyRevisionBounds(d.revisions, revisionBounds(plan, scale, prewarmReplicas));
    await this.reconcileVirtualService(app, workload, !!(plan.candidate?.ready && plan.candidate.warm));
  }

  /** Status (only when it changed), the Events of the transitions it records, and metrics. */
  private async report(app: ServerlessApp, d: Decision, now: Date): Promise<boolean> {
    const { namespace, name } = app.metadata;
    const { plan, scale, prewarm, version } = d;
    const live = (d.workload === this.kserve ? this.inferenceServices : this.services).get(namespace, name);
    const cache = cacheNameFor(app, this.o.modelCacheScope);
    const status = composeStatus(app, {
      plan, workload: d.workload.summarize(live, (r) => d.observed.get(r)?.version), revisions: d.observed,
      ...(prewarm ? { prewarm } : {}), scale, now,
      describe: (v) => v === version ? describeWorkload(app) : describeFrom(app.status, v),
      ...(cache ? { modelCache: cache } : {}),
    });
    const wrote = await this.status.write(app, status);
    if (wrote) {
      for (const e of plan.events) this.mgr.events.record(app, e.type, e.reason, e.message);
      this.recordWindowEvents(app, scale);
      if (requestsGpu(app) && scale.minScale === 0 && d.prewarmReplicas === 0 && app.status?.observedGeneration !== app.metadata.generation) {
        this.mgr.events.record(app, 'Warning', 'GpuScaleToZero', 'a GPU app may scale to zero without a warm buffer: a pod waiting for a GPU node can be scaled away before it is ready (kserve#1247); consider prewarm.replicas or a window with minScale >= 1');
      }
    }
    this.metrics.observe(app, plan, wrote);
    return wrote;
  }

  private prewarm(app: ServerlessApp, key: string, version: string, revision: string | undefined, observed: Map<string, ObservedRevision>, now: Date): PrewarmEvaluation | undefined {
    if (!prewarmConfigured(app.spec.prewarm)) {
      this.warmups.forget(key);
      return undefined;
    }
    const target = { key, version, revision: revision ?? '', namespace: app.metadata.namespace, app: app.metadata.name };
    const previous = app.status?.prewarm;
    const rev = revision ? observed.get(revision) : undefined;
    let evaluation = evaluatePrewarm(app.spec.prewarm, version, rev, previous, revision ? this.warmups.progress(target) : undefined, now);
    if (evaluation.startWarmup && revision && app.spec.prewarm?.warmup) {
      const progress = this.warmups.ensure(target, app.spec.prewarm.warmup, new Date(evaluation.status?.startedAt ?? now.toISOString()));
      evaluation = evaluatePrewarm(app.spec.prewarm, version, rev, previous, progress, now);
    }
    // A finished task is kept (not forgotten) until its version stops prewarming: the cache may
    // not show the status that records its outcome yet, and warmup must not run twice.
    return evaluation;
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
      if (isSemanticSubset({ metadata: { annotations } }, r)) continue;
      await this.mgr.client.apply({ apiVersion: 'serving.knative.dev/v1', kind: 'Revision', metadata: { name: r.metadata.name, namespace: r.metadata.namespace, annotations } });
    }
  }

  private async reconcileVirtualService(app: ServerlessApp, workload: Workload, candidateReady: boolean): Promise<void> {
    const live = this.virtualServices.get(app.metadata.namespace, app.metadata.name);
    if (!app.spec.ingress) {
      await this.children.remove(Kinds.VirtualService, live, app);
      return;
    }
    const desired = renderVirtualService(app, { localGateway: this.o.localGateway, candidateReady, ...workload.hosts(app) });
    await this.children.ensure(Kinds.VirtualService, desired as unknown as WorkloadObject, live);
  }

  private recordWindowEvents(app: ServerlessApp, scale: EffectiveScale): void {
    const before = app.status?.scaling;
    if (!before) return;
    const bounds = `min ${scale.minScale}, max ${scale.maxScale ?? 'unbounded'}`;
    for (const w of scale.openWindows) if (!before.openWindows?.includes(w)) this.mgr.events.record(app, 'Normal', 'WindowOpened', `scale window ${w} opened: bounds now ${bounds}`);
    for (const w of before.openWindows ?? []) if (!scale.openWindows.includes(w)) this.mgr.events.record(app, 'Normal', 'WindowClosed', `scale window ${w} closed: bounds now ${bounds}`);
    for (const w of scale.prewarmingWindows) if (!before.prewarmingWindows?.includes(w)) this.mgr.events.record(app, 'Normal', 'WindowPrewarming', `scale window ${w} opens soon: its minimum applies now (prewarm lead time): bounds now ${bounds}`);
  }

}

function stableOf(app: ServerlessApp): RevisionRef | undefined {
  const s = app.status?.versions?.stable;
  // A stable version is only recorded once it was ready and warm on a named revision.
  return s?.revision && app.status?.phase !== 'Pending' ? { version: s.version, revision: s.revision } : undefined;
}

function describeWorkload(app: ServerlessApp) {
  return app.spec.container ? { image: app.spec.container.image } : { storageUri: app.spec.model?.storageUri ?? '' };
}

function describeFrom(status: ServerlessApp['status'], version: string) {
  const v = [status?.versions?.stable, status?.versions?.candidate].find((x) => x?.version === version);
  return { ...(v?.image ? { image: v.image } : {}), ...(v?.storageUri ? { storageUri: v.storageUri } : {}) };
}

function splitKey(key: string): Request {
  const i = key.indexOf('/');
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

