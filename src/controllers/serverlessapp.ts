// The ServerlessApp controller. One reconcile, in the order data flows:
// read the app and its children from the caches -> validate -> window math ->
// prewarm -> rollout step (metric checks when due) -> render the workload, the
// revisions' bounds and the VirtualService -> apply what differs -> status ->
// requeue at the next window transition, rollout step or warmup poll.
// Everything it decides is in status; nothing needs remembering across restarts.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import { validateApp, type ValidationPolicy } from '../api/v1alpha1/validation.ts';
import { bufferReplicas, evaluatePrewarm, prewarmConfigured, type PrewarmEvaluation } from '../prewarm/prewarm.ts';
import { WarmupRunner } from '../prewarm/warmup-runner.ts';
import { MIN_SCALE, boundsAnnotations } from '../render/autoscaling.ts';

/** Knative labels each Revision with the Knative Service it belongs to (KServe's is `<isvc>-predictor`). */
const KNATIVE_SERVICE_LABEL = 'serving.knative.dev/service';
import { requestsGpu } from '../render/inference-service.ts';
import { APP_LABEL, MANAGED_BY } from '../render/metadata.ts';
import { renderVirtualService, virtualServiceName } from '../render/virtual-service.ts';
import { runChecks } from '../rollout/analysis.ts';
import { AnalysisRunner } from '../rollout/analysis-runner.ts';
import { planRollout, type ObservedRevision, type RevisionRef, type RolloutPlan } from '../rollout/canary.ts';
import { versionOf } from '../rollout/version.ts';
import { keepAppliedFields } from '../runtime/apply.ts';
import { Controller, type ReconcileContext, type Request, type Result } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import { Kinds } from '../runtime/kinds.ts';
import type { Manager } from '../runtime/manager.ts';
import { StatusWriter } from '../runtime/status.ts';
import { RETIRED, revisionBounds } from '../scaling/revision-bounds.ts';
import { effectiveScale, type EffectiveScale } from '../scaling/windows.ts';
import type { CacheScope } from '../render/local-model-cache.ts';
import { ChildWriter, WriteRejected, ownedBy, routingManager } from './children.ts';
import { missingDataPlane, type DataPlaneKinds } from './data-plane.ts';
import { HostClaims } from './host-claims.ts';
import { cacheNameFor } from './model-cache.ts';
import { RolloutMetrics } from './rollout-metrics.ts';
import { observeRevision, slimRevision, type Revision } from './revisions.ts';
import { composeStatus, invalidSpecStatus } from './status.ts';
import { kserveWorkload, knativeWorkload, type Workload, type WorkloadObject, type WorkloadSummary } from './workloads.ts';

export interface ServerlessAppOptions {
  /** What tenants may claim: gateways, hosts, analysis providers, model limits (the platform's settings). */
  policy: Required<ValidationPolicy>;
  warmupUrlTemplate: string;
  localGateway: string;
  /** Knative >= 1.21: set scale bounds on live Revisions instead of making new ones. */
  inPlaceBounds: boolean;
  concurrency?: number;
  /** Backoff of failing warmup requests (tests shorten it). */
  warmupBackoffMs?: number;
  modelCacheScope: CacheScope;
}

/** What one reconcile decided; the apply and report phases act on it. */
interface Decision {
  workload: Workload;
  /** The stable version runs on the other kind: this workload starts on its own (all traffic to its first revision). */
  fresh: boolean;
  /** The other kind's workload while a container <-> model switch is in progress: it serves until the new one is stable. */
  previous?: { workload: Workload; live: WorkloadObject };
  /** What the data plane reports for the workload that serves now. */
  serving: WorkloadSummary;
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
  readonly analyses: AnalysisRunner;
  private readonly apps: Informer<ServerlessApp>;
  private readonly services: Informer<WorkloadObject>;
  private readonly inferenceServices: Informer<WorkloadObject>;
  private readonly virtualServices: Informer<WorkloadObject>;
  private readonly revisions: Informer<Revision>;
  private readonly dataPlane: DataPlaneKinds;
  private readonly status: StatusWriter;
  private readonly hosts = new HostClaims();
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
    const transform = keepAppliedFields(mgr.client.fieldManager, routingManager(mgr.client.fieldManager));
    // Each data plane is optional: a missing CRD only stops the apps that need it (see data-plane.ts).
    this.services = mgr.informer<WorkloadObject>(Kinds.KnativeService, { labelSelector: managed, transform, optional: true });
    this.inferenceServices = mgr.informer<WorkloadObject>(Kinds.InferenceService, { labelSelector: managed, transform, optional: true });
    this.virtualServices = mgr.informer<WorkloadObject>(Kinds.VirtualService, { labelSelector: managed, transform, optional: true });
    this.revisions = mgr.informer<Revision>(Kinds.KnativeRevision, { labelSelector: APP_LABEL, transform: slimRevision, optional: true });
    this.dataPlane = { knative: [this.services, this.revisions], kserve: [this.inferenceServices], istio: [this.virtualServices] };
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
    this.analyses = new AnalysisRunner({ onDone: (key) => this.controller.enqueue(splitKey(key)) });
    this.controller = new Controller({
      name: 'serverlessapp', reconcile: (req, ctx) => this.reconcile(req, ctx),
      concurrency: o.concurrency ?? 4, logger: mgr.logger, metrics: mgr.metrics,
    })
      .watches(this.apps, (a) => [{ namespace: a.metadata.namespace, name: a.metadata.name }])
      .watches(this.services, ownedBy)
      .watches(this.inferenceServices, ownedBy)
      .watches(this.virtualServices, ownedBy)
      .watches(this.revisions, (r) => r.metadata.labels?.[APP_LABEL] ? [{ namespace: r.metadata.namespace, name: r.metadata.labels[APP_LABEL] }] : []);
    // A host freed or newly claimed can change who may route it: look at every app involved again.
    const recheck = (keys: string[]) => { for (const k of keys) this.controller.enqueue(splitKey(k)); };
    this.apps.on('add', (a) => recheck(this.hosts.set(a)));
    this.apps.on('update', (a) => recheck(this.hosts.set(a)));
    this.apps.on('delete', (a) => recheck(this.hosts.delete(a)));
    // A data plane installed (or removed) while running: every app may need to know.
    for (const i of [this.services, this.inferenceServices, this.virtualServices, this.revisions]) i.onServedChange(() => this.controller.enqueueAll());
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
      this.analyses.forget(key);
      if (!app) {
        this.metrics.forget(req.namespace, req.name);
        this.status.forget(req.namespace, req.name);
      }
      return;
    }
    const now = this.mgr.clock.now();

    const problems = [...validateApp(app, this.o.policy), ...this.hosts.conflicts(app), ...missingDataPlane(app, this.dataPlane)];
    if (problems.length) {
      // A bad edit never takes down what runs: children are left exactly as they are.
      const wrote = await this.status.write(app, invalidSpecStatus(app, problems, now));
      if (wrote) this.mgr.events.record(app, 'Warning', problems[0]!.reason, problems.map((p) => `${p.field}: ${p.message}`).join('; '));
      ctx.log.info('spec rejected', { problems });
      return;
    }

    const d = await this.decide(app, key, now, ctx);
    const rejected = await this.applyChildren(app, d);
    const wrote = await this.report(app, d, now, rejected);
    if (rejected) {
      // Shown on the app (Ready=False ApplyRejected or NotOwned, an Event, a metric). A refused write is
      // retried with backoff; an object the app does not own waits for the app to change (no retry loop).
      this.metrics.rejected(rejected.kind);
      if (rejected.retry) throw rejected;
      return;
    }

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
    const live = this.liveOf(workload, namespace, name);
    const otherKind = workload === this.kserve ? this.knative : this.kserve;
    const other = this.liveOf(otherKind, namespace, name);
    // Revisions an earlier workload of the same name left behind (a kind switched back) are not ours: they can carry the very name the new one will use.
    const revisions = this.revisions.list(namespace)
      .filter((r) => r.metadata.labels?.[APP_LABEL] === name && !workload.isStale(r, app, live) && !otherKind.isStale(r, app, other));
    const observed = new Map(revisions.map((r) => [r.metadata.name, observeRevision(r)]));
    const scaling = app.spec.scaling ?? {};
    const leadMs = app.spec.prewarm?.leadTime ? parseDuration(app.spec.prewarm.leadTime) : 0;
    const scale = effectiveScale({ minScale: scaling.minScale ?? 0, ...(scaling.maxScale !== undefined ? { maxScale: scaling.maxScale } : {}) }, scaling.windows ?? [], leadMs, now);
    const desiredRevision = workload.desiredRevision(app, version, scale, revisions);
    const stable = stableOf(app);
    // A stable revision that does not run in this kind's workload (a container <-> model switch): the
    // new kind starts on its own, and (make before break) the other kind serves until it is stable here.
    const knativeService = workload === this.kserve ? `${name}-predictor` : name;
    const stableHere = !!stable && revisions.some((r) => r.metadata.name === stable.revision && r.metadata.labels?.[KNATIVE_SERVICE_LABEL] === knativeService);
    const fresh = !!stable && !stableHere && stable.version !== version;
    const previous = fresh && other && ownedBy(other).length > 0 ? { workload: otherKind, live: other } : undefined;
    const summary = workload.summarize(live, (r) => observed.get(r)?.version);
    const serving = previous ? otherKind.summarize(previous.live, (r) => observed.get(r)?.version) : summary;

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
      // The promotion gate reads the new workload's own report: during a kind switch that is the new kind's.
      // A workload that serves nothing yet (the first version, or a kind switch) counts only once it answers
      // on its host: Knative and KServe report a split before their route's ingress is programmed.
      traffic: ((fresh || !stable) && !summary.routeReady ? [] : summary.traffic).map((t) => ({ revision: t.revision, percent: t.percent })),
    };
    let plan = planRollout(input);
    const analysis = app.spec.rollout?.analysis;
    if (plan.analysisDue && analysis && plan.candidate) {
      // Off the workers: the round's end re-queues this app, and a later pass reads its outcome.
      const candidate = plan.candidate;
      const round = `${candidate.version}/${plan.canary?.step ?? 0}/${plan.canary?.stepStartedAt ?? ''}`;
      const outcome = this.analyses.outcome(key, round, () => runChecks(analysis, { app: name, namespace, revision: candidate.revision, version }, this.o.policy.analysis));
      if (outcome) {
        ctx.log.info('analysis', { outcome });
        plan = planRollout({ ...input, analysis: outcome });
      }
    }
    return { workload, fresh, ...(previous ? { previous } : {}), serving, version, revisions, observed, scale, prewarm, prewarmReplicas: bufferReplicas(app.spec.prewarm), plan };
  }

  private liveOf(workload: Workload, namespace: string, name: string): WorkloadObject | undefined {
    return (workload === this.kserve ? this.inferenceServices : this.services).get(namespace, name);
  }

  /**
   * Workload, revision bounds, VirtualService: each written only when it differs
   * from the cache. A write the API server refuses does not stop the others; the
   * first refusal is returned for the status to show.
   */
  private async applyChildren(app: ServerlessApp, d: Decision): Promise<WriteRejected | undefined> {
    const { namespace, name } = app.metadata;
    const { workload, plan, scale, prewarmReplicas, previous, fresh } = d;
    const rejections: WriteRejected[] = [];
    const attempt = async (write: () => Promise<unknown>) => {
      try {
        await write();
      } catch (err) {
        if (!(err instanceof WriteRejected)) throw err;
        rejections.push(err);
      }
    };
    // During a kind switch the new workload starts on its own, all traffic to its first revision once ready.
    const renderPlan = fresh && plan.candidate
      ? { ...plan, stable: undefined, candidate: undefined, initial: { version: plan.candidate.version, revision: plan.candidate.revision, ready: plan.candidate.ready, warm: plan.candidate.warm } }
      : plan;
    const desired = workload.render({ app, version: d.version, plan: renderPlan, effective: scale, prewarmReplicas, revisions: d.revisions });
    await attempt(() => this.children.ensure(workload.kind, desired, this.liveOf(workload, namespace, name)));
    if (workload.boundsOnRevisions) await attempt(() => this.applyRevisionBounds(d.revisions, revisionBounds(plan, scale, prewarmReplicas)));
    const servingWorkload = previous?.workload ?? workload;
    const vs = await this.reconcileVirtualService(app, servingWorkload, !previous && !!(plan.candidate?.ready && plan.candidate.warm), attempt, plan.candidate?.revision);
    // The other kind goes once this kind serves: the VirtualService (if any) routes here already.
    const otherKind = workload === this.kserve ? this.knative : this.kserve;
    const other = this.liveOf(otherKind, namespace, name);
    if (!previous && other && (!app.spec.ingress || vs === 'current')) await attempt(() => this.children.remove(otherKind.kind, other, app));
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
  private async report(app: ServerlessApp, d: Decision, now: Date, rejected: WriteRejected | undefined): Promise<boolean> {
    const { plan, scale, prewarm, version } = d;
    const cache = cacheNameFor(app, this.o.modelCacheScope, this.o.policy);
    const status = composeStatus(app, {
      plan, workload: d.serving, revisions: d.observed,
      ...(rejected ? { rejected: { kind: rejected.kind, object: rejected.object, message: rejected.message, reason: rejected.reason } } : {}),
      ...(prewarm ? { prewarm } : {}), scale, now,
      describe: (v) => v === version ? describeWorkload(app) : describeFrom(app.status, v),
      ...(cache ? { modelCache: cache } : {}),
    });
    const wrote = await this.status.write(app, status);
    if (wrote) {
      for (const e of plan.events) this.mgr.events.record(app, e.type, e.reason, e.message);
      if (rejected) this.mgr.events.record(app, 'Warning', rejected.reason, rejected.summary);
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

