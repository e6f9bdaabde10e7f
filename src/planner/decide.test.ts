// The planner stepped through observations one at a time, as Flagger tests its
// scheduler: each pass plans, executes the plan's child operations against a
// simulated API server (recording the writes), and writes the status its report
// gives; then the test plays the data plane (Knative creates the revision the
// template names and reports the split it was asked for; KServe cuts a predictor
// revision per spec change and splits by canaryTrafficPercent) and asserts what
// the next pass writes, its phase, conditions, events and the effects it asks for. The simulation is this test's own, deliberately small:
// the real Knative and KServe judge the same flows in test/integration/.
import assert from 'node:assert/strict';
import type { ServerlessApp, ServerlessAppSpec } from '../api/v1alpha1/serverlessapp.ts';
import type { WarmupProgress } from '../prewarm/warmup-progress.ts';
import { containerApp, modelApp } from '../testing/apps.ts';
import { APP_LABEL, VERSION_LABEL } from '../render/metadata.ts';
import type { KnativeTrafficTarget } from '../render/traffic.ts';
import type { AnalysisOutcome } from '../rollout/canary.ts';
import { canonicalJson } from '../util/canonical-json.ts';
import type { Decision } from './decide.ts';
import { guardHolds, type ChildOperation, type ChildOutcome, type ExecutedOperation, type Plan } from './plan.ts';
import { planReconcile } from './reconcile.ts';
import { findCondition } from '../util/conditions.ts';
import type { Revision } from './revisions.ts';
import { gatewayApiRoute, istioRoute, type Route } from './route.ts';
import { knativeWorkload, kserveWorkload, type WorkloadObject } from './workloads.ts';

type Traffic = Array<{ revisionName?: string; latestRevision?: boolean; percent: number; tag?: string }>;

class Cluster {
  app: ServerlessApp;
  now = new Date('2026-11-23T09:00:00Z');
  /** The API server's objects, by kind: what the caches show the next pass. */
  objects: Record<string, WorkloadObject | undefined> = {};
  /** The last pass's operations and what each did ("workload:written", "route:unchanged", ...). */
  writes: string[] = [];
  /** Every pass's writes, in order. */
  history: string[][] = [];
  /** The reasons of every Event the passes' reports gave, in order. */
  events: string[] = [];
  plan!: Plan;
  revisions: Revision[] = [];
  /** Revisions that do not become ready (a pod no node takes). */
  stuck = new Set<string>();
  warmup?: { version: string; revision: string; progress: WarmupProgress };
  analysis?: { round: string; outcome: AnalysisOutcome };
  last!: Decision;
  private readonly workloads: { knative: ReturnType<typeof knativeWorkload>; kserve: ReturnType<typeof kserveWorkload> };
  private predictorGeneration = 0;
  private lastPredictor = '';

  /** The platform's router; with gateway-api, `gateway` plays the parent Gateway's controller writing the HTTPRoute's status. */
  route: Route = istioRoute('knative-local-gateway.istio-system.svc.cluster.local');
  gateway: 'accepts' | 'refuses' | 'silent' = 'accepts';

  constructor(app: ServerlessApp, inPlaceBounds = true) {
    this.app = structuredClone(app);
    this.workloads = { knative: knativeWorkload(inPlaceBounds), kserve: kserveWorkload(inPlaceBounds) };
  }

  edit(change: (spec: ServerlessAppSpec) => void): this {
    change(this.app.spec);
    this.app.metadata.generation = (this.app.metadata.generation ?? 0) + 1;
    return this;
  }

  /** The workload of the kind the spec asks for. */
  get live(): WorkloadObject | undefined {
    return this.objects[this.app.spec.model ? 'InferenceService' : 'Service'];
  }

  set live(obj: WorkloadObject | undefined) {
    this.objects[this.app.spec.model ? 'InferenceService' : 'Service'] = obj;
  }

  /** One reconcile as the controller runs it: plan, execute the operations in order, write the report's status. */
  reconcile(): Decision {
    const { objects } = this;
    this.plan = planReconcile({
      app: this.app, now: this.now, cacheScope: 'namespace', policy: { allowedGateways: ['*'], analysis: { providers: [{ name: 'main', url: 'http://prometheus.monitoring:9090' }], allowAddress: false } },
      knative: { workload: this.workloads.knative, ...(objects.Service ? { live: objects.Service } : {}) },
      kserve: { workload: this.workloads.kserve, ...(objects.InferenceService ? { live: objects.InferenceService } : {}) },
      revisions: this.revisions,
      ...(this.warmup ? { warmup: this.warmup } : {}), ...(this.analysis ? { analysis: this.analysis } : {}),
      hosts: { problems: [], conflicts: [], missing: [] }, unserved: { knative: [], kserve: [], istio: [], gatewayApi: [], llm: [] },
      route: this.route,
      routes: { ...(objects[this.route.kind.kind] ? { live: objects[this.route.kind.kind] } : {}), ...(objects.LegacyVirtualService ? { legacy: objects.LegacyVirtualService } : {}) },
    });
    const done: ExecutedOperation[] = [];
    for (const op of this.plan.operations) done.push({ op, outcome: guardHolds(op, done) ? this.execute(op) : 'skipped' });
    this.writes = done.map((x) => `${x.op.id}:${x.outcome}`);
    this.history.push(this.writes);
    const report = this.plan.report({ operations: done });
    this.app.status = report.status;
    this.events.push(...report.eventsFor(true).map((e) => e.reason)); // the status is always written here
    assert.ok(this.plan.decision, `a valid app is planned: ${this.plan.problems.map((p) => p.message).join('; ')}`);
    this.last = this.plan.decision;
    return this.last;
  }

  /** The API server's side of one operation. */
  private execute(op: ChildOperation): ChildOutcome {
    const slot = op.id === 'legacy-route' ? 'LegacyVirtualService' : op.kind.kind;
    if (op.action === 'remove') {
      if (!this.objects[slot]) return 'unchanged';
      this.objects[slot] = undefined;
      return 'removed';
    }
    if (op.action === 'annotate') {
      const r = this.revisions.find((x) => x.metadata.name === op.live?.metadata.name)!;
      const before = canonicalJson(r.metadata.annotations ?? {});
      r.metadata.annotations = { ...r.metadata.annotations, ...op.annotations };
      return canonicalJson(r.metadata.annotations) === before ? 'unchanged' : 'written';
    }
    const live = this.objects[slot], desired = op.desired!;
    if (live && canonicalJson(live.spec) === canonicalJson(desired.spec)) return 'unchanged';
    this.objects[slot] = { ...desired, metadata: { ...desired.metadata, uid: slot === 'Service' ? 'ksvc-uid' : `${slot}-uid`, creationTimestamp: '2026-11-23T08:00:00Z' }, ...(live?.status ? { status: live.status } : {}) };
    return 'written';
  }

  /** The data plane acts on what was applied: new revisions appear (ready unless stuck), the split is reported. */
  dataPlane(): this {
    const route = this.objects.HTTPRoute;
    if (route && this.gateway !== 'silent') {
      const accepted = this.gateway === 'accepts'
        ? { type: 'Accepted', status: 'True', reason: 'Accepted' }
        : { type: 'Accepted', status: 'False', reason: 'NotAllowedByListeners', message: 'no listener of gw/public allows routes from team-a' };
      this.objects.HTTPRoute = { ...route, status: { parents: [{ parentRef: { name: 'public', namespace: 'gw' }, conditions: [accepted, { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' }] }] } as WorkloadObject['status'] };
    }
    const spec = this.live!.spec as { template?: { metadata: { name: string; labels: Record<string, string> } }; traffic?: Traffic; predictor?: { labels: Record<string, string>; canaryTrafficPercent?: number } };
    if (spec.template) {
      this.ensureRevision(spec.template.metadata.name, spec.template.metadata.labels, this.app.metadata.name);
      const traffic = (spec.traffic ?? []).map((t) => ({ ...t, revisionName: t.revisionName ?? spec.template!.metadata.name }))
        .filter((t) => this.isReady(t.revisionName));
      this.report(traffic, 'Ready');
    } else {
      // KServe: a new predictor revision per spec change; canaryTrafficPercent splits latest vs the previous.
      const p = spec.predictor!;
      const shape = JSON.stringify({ ...p, canaryTrafficPercent: undefined });
      if (shape !== this.lastPredictor) {
        this.lastPredictor = shape;
        this.ensureRevision(`${this.app.metadata.name}-predictor-${String(++this.predictorGeneration).padStart(5, '0')}`, p.labels, `${this.app.metadata.name}-predictor`);
      }
      const own = this.revisions.filter((r) => r.metadata.labels?.['serving.knative.dev/service'] === `${this.app.metadata.name}-predictor`);
      const latest = own.at(-1)!.metadata.name;
      const prev = own.at(-2)?.metadata.name;
      const pct = p.canaryTrafficPercent;
      const traffic = pct === undefined || !prev
        ? [{ revisionName: latest, percent: 100, tag: 'latest' }]
        : [{ revisionName: prev, percent: 100 - pct, tag: 'prev' }, { revisionName: latest, percent: pct, tag: 'latest' }];
      this.report(traffic.filter((t) => this.isReady(t.revisionName)), 'PredictorReady');
    }
    return this;
  }

  /** Reconcile and let the data plane catch up until nothing changes (as the controller does on its events). */
  settle(): Decision {
    for (let i = 0; i < 6; i++) {
      const before = JSON.stringify([this.live?.spec, this.app.status?.phase, this.app.status?.canary]);
      this.reconcile();
      this.dataPlane();
      if (JSON.stringify([this.live?.spec, this.app.status?.phase, this.app.status?.canary]) === before) break;
    }
    return this.reconcile();
  }

  advance(ms: number): this {
    this.now = new Date(this.now.getTime() + ms);
    return this;
  }

  split(): Record<string, number> {
    return Object.fromEntries((this.app.status?.traffic ?? []).filter((t) => t.percent > 0).map((t) => [t.tag ?? t.revision, t.percent]));
  }

  private isReady(name: string): boolean {
    return this.revisions.some((r) => r.metadata.name === name) && !this.stuck.has(name);
  }

  private ensureRevision(name: string, labels: Record<string, string>, service: string): void {
    if (this.revisions.some((r) => r.metadata.name === name)) return;
    this.revisions.push({
      metadata: { name, namespace: this.app.metadata.namespace, labels: { ...labels, 'serving.knative.dev/service': service, 'serving.knative.dev/serviceUID': 'ksvc-uid' }, creationTimestamp: '2026-11-23T08:00:01Z' },
      status: { conditions: [{ type: 'Ready', status: this.stuck.has(name) ? 'Unknown' : 'True' }], actualReplicas: this.stuck.has(name) ? 0 : 1 },
    });
  }

  private report(traffic: KnativeTrafficTarget[], routeCondition: string): void {
    this.live = { ...this.live!, status: { conditions: [{ type: 'Ready', status: 'True' }, { type: routeCondition, status: 'True' }], traffic, url: 'http://app.local', components: { predictor: { traffic } } } };
  }
}

const events = (d: Decision) => d.plan.events.map((e) => e.reason);
const condition = (c: Cluster, type: string) => findCondition(c.app.status?.conditions, type);
const image = (tag: string) => (s: ServerlessAppSpec) => { s.container!.image = `ghcr.io/acme/shop:${tag}`; };

describe('planner: a container app stepped through Knative\'s reports', () => {
  it('first version: pinned to its revision, Pending until Knative serves it, then Stable and Ready', () => {
    const c = new Cluster(containerApp());
    const d = c.reconcile();
    const traffic = (c.live!.spec as { traffic: Traffic }).traffic;
    assert.deepEqual(traffic, [{ revisionName: d.plan.initial!.revision, percent: 100, tag: 'stable' }], 'the first revision, by name');
    assert.equal(c.app.status?.phase, 'Pending');
    const done = c.dataPlane().settle();
    assert.deepEqual([c.app.status?.phase, condition(c, "Ready")?.status, c.split()], ["Stable", "True", { stable: 100 }]);
    assert.equal(c.app.status?.versions?.stable?.revision, d.plan.initial!.revision);
    assert.deepEqual(done.effects, [], 'nothing to start');
  });

  it('canary 20% -> 100%: the candidate joins only once ready, the split follows the edits, promotion waits for the report', () => {
    const c = new Cluster(containerApp());
    c.settle();
    const stable = c.app.status!.versions!.stable!.revision!;
    c.edit((s) => { image('1.5.0')(s); s.rollout = { canaryPercent: 20 }; });
    let d = c.reconcile();
    assert.deepEqual((c.live!.spec as { traffic: Traffic }).traffic, [{ revisionName: stable, percent: 100, tag: 'stable' }], 'no candidate before Knative made it');
    assert.equal(d.plan.candidate?.state, 'starting');
    d = c.dataPlane().settle();
    assert.deepEqual([c.app.status?.phase, c.split(), c.app.status?.canary?.trafficPercent], ['Canary', { stable: 80, candidate: 20 }, 20]);
    c.edit((s) => { s.rollout = { canaryPercent: 100 }; });
    d = c.reconcile();
    assert.deepEqual([d.plan.phase, condition(c, 'Promoted')?.reason], ['Promoting', 'TrafficMoving'], 'asked for, not done until Knative reports it');
    d = c.dataPlane().settle();
    assert.deepEqual([c.app.status?.phase, c.split(), condition(c, 'Promoted')?.status], ['Stable', { stable: 100 }, 'True']);
    assert.notEqual(c.app.status?.versions?.stable?.revision, stable);
  });

  describe('with the gateway-api router', () => {
    const gwApp = () => containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['gw/public'] } });
    const weights = (c: Cluster) => (c.objects.HTTPRoute!.spec as { rules: Array<{ name: string; backendRefs: Array<{ name: string; weight: number }> }> })
      .rules.find((r) => r.name === 'default')!.backendRefs.map((b) => b.weight);

    it('splits in the HTTPRoute as in Knative, and promotes once the route as written is accepted', () => {
      const c = new Cluster(gwApp());
      c.route = gatewayApiRoute();
      c.settle();
      assert.equal(c.app.status?.phase, 'Stable');
      c.edit((s) => { image('1.5.0')(s); s.rollout = { canaryPercent: 20 }; });
      c.dataPlane().settle();
      assert.deepEqual([c.app.status?.phase, c.split(), weights(c)], ['Canary', { stable: 80, candidate: 20 }, [80, 20]]);
      c.edit((s) => { s.rollout = { canaryPercent: 100 }; });
      c.dataPlane().settle();
      assert.deepEqual([c.app.status?.phase, weights(c), condition(c, 'Promoted')?.status], ['Stable', [100], 'True']);
    });

    it('gives the candidate no weight and does not promote while the parent Gateway refuses the route, and says so', () => {
      const c = new Cluster(gwApp());
      c.route = gatewayApiRoute();
      c.settle();
      c.gateway = 'refuses';
      c.edit((s) => { image('1.5.0')(s); s.rollout = { canaryPercent: 100 }; });
      c.dataPlane().settle();
      assert.deepEqual(weights(c), [100], 'all on stable');
      assert.equal((c.objects.HTTPRoute!.spec as { rules: Array<{ backendRefs: Array<{ name: string }> }> }).rules[0]!.backendRefs[0]!.name, c.app.status!.versions!.stable!.revision);
      assert.deepEqual([c.app.status?.phase, condition(c, 'CanaryProgressing')?.status, condition(c, 'CanaryProgressing')?.reason], ['Promoting', 'False', 'RouteNotAccepted']);
      assert.match(condition(c, 'CanaryProgressing')!.message, /NotAllowedByListeners.*the candidate gets no traffic through it until it is/);
      c.gateway = 'accepts';
      c.dataPlane().settle();
      assert.deepEqual([c.app.status?.phase, weights(c)], ['Stable', [100]]);
      assert.notEqual(condition(c, 'CanaryProgressing')?.reason, 'RouteNotAccepted');
    });
  });

  describe('with the gateway-api router: Ready reads the route', () => {
    it('an ingress edit the parent Gateway refuses is not Ready=True at the new generation (Reconciling, RouteNotAccepted); accepted, it is', () => {
      const c = new Cluster(containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['gw/public'] } }));
      c.route = gatewayApiRoute();
      c.settle();
      assert.deepEqual([c.app.status?.phase, condition(c, 'Ready')?.status], ['Stable', 'True']);
      c.gateway = 'refuses';
      c.edit((s) => { s.ingress!.hosts = ['shop.example.com', 'api.example.com']; });
      c.dataPlane().settle();
      assert.equal(c.app.status?.observedGeneration, c.app.metadata.generation);
      assert.deepEqual([c.app.status?.phase, condition(c, 'Ready')?.status, condition(c, 'Reconciling')?.reason], ['Stable', 'Unknown', 'RouteNotAccepted']);
      assert.match(condition(c, 'Ready')!.message, /NotAllowedByListeners/);
      c.gateway = 'accepts';
      c.dataPlane().settle();
      assert.deepEqual([condition(c, 'Ready')?.status, condition(c, 'Reconciling')], ['True', undefined]);
    });
  });

  it('automated steps ask for a check round as an effect, and advance on its outcome', () => {
    const c = new Cluster(containerApp());
    c.settle();
    c.edit((s) => { image('2.0.0')(s); s.rollout = { steps: [10, 50], interval: '1m', analysis: { prometheus: { provider: 'main' }, checks: [{ name: 'ok', query: 'up', min: 1 }] } }; });
    let d = c.dataPlane().settle();
    assert.deepEqual([c.split(), d.effects], [{ stable: 90, candidate: 10 }, []]);
    c.advance(61_000);
    d = c.reconcile();
    const asked = d.effects.find((e) => e.type === 'analysis');
    assert.ok(asked && asked.type === 'analysis', 'a check round is due');
    assert.equal(c.split().candidate, 10, 'no step without the outcome');
    c.analysis = { round: asked.round, outcome: { result: 'pass', message: 'ok=1' } };
    d = c.dataPlane().settle();
    assert.deepEqual([c.split(), c.app.status?.canary?.step], [{ stable: 50, candidate: 50 }, 1]);
  });

  it('prewarm: warmup requests start as an effect once replicas are ready; traffic moves only when they succeeded', () => {
    const c = new Cluster(containerApp({ prewarm: { warmup: { path: '/warm', count: 2 } } }));
    c.settle();
    c.warmup = undefined;
    c.edit(image('3.0.0'));
    let d = c.dataPlane().settle();
    const start = d.effects.find((e) => e.type === 'warmup');
    assert.ok(start && start.type === 'warmup', 'warmup requests asked for');
    assert.equal(c.split().candidate, undefined, 'not warm: no traffic');
    c.warmup = { version: start.version, revision: start.revision, progress: { phase: 'succeeded', sent: 2, succeeded: 2, startedAt: start.startedAt, finishedAt: c.now } };
    d = c.dataPlane().settle();
    assert.deepEqual([c.app.status?.phase, c.app.status?.versions?.stable?.revision], ['Stable', start.revision]);
    assert.ok(!d.effects.some((e) => e.type === 'warmup'), 'no second warmup for a warm version');
  });

  it('a candidate that never becomes ready fails at its deadline; stable keeps all traffic', () => {
    const c = new Cluster(containerApp());
    c.settle();
    c.edit((s) => { image('4.0.0')(s); s.rollout = { progressDeadline: '2m' }; });
    const d = c.reconcile();
    c.stuck.add(d.plan.candidate!.revision);
    c.dataPlane().settle();
    assert.equal(c.app.status?.phase, 'Promoting');
    assert.ok(c.last.requeueAfterMs! <= 120_000, 'wakes up by the deadline');
    const failed = c.advance(120_000).reconcile();
    assert.deepEqual([c.app.status?.phase, condition(c, 'CanaryProgressing')?.reason, events(failed)], ['Failed', 'ProgressDeadlineExceeded', ['ProgressDeadlineExceeded']]);
    c.dataPlane();
    assert.deepEqual(c.split(), { stable: 100 });
  });

  it('template bounds (Knative < 1.21): a window that opens makes a new revision of the same version, and traffic moves once it is ready', () => {
    const c = new Cluster(containerApp({ scaling: { minScale: 0, windows: [{ name: 'day', schedule: '0 10 * * *', duration: '1h', timeZone: 'UTC', minScale: 2 }] } }), false);
    c.settle();
    const before = c.app.status!.versions!.stable!;
    assert.equal(c.last.requeueAfterMs, 3_600_001, 'requeued for the opening');
    c.advance(3_600_000);
    c.events = [];
    c.settle();
    const after = c.app.status!.versions!.stable!;
    assert.deepEqual([after.version, after.revision !== before.revision, c.app.status?.scaling?.minScale, c.split()], [before.version, true, 2, { stable: 100 }]);
    assert.deepEqual(c.events, ['WindowOpened', 'RevisionReplaced'], 'a same-version revision is no rollout: no canary, no Promoted');
  });
});

describe('planner: a model app stepped through KServe\'s reports', () => {
  const noPrewarm = () => modelApp({ prewarm: {} });

  it('first version, then a canary through canaryTrafficPercent, then promotion', () => {
    const c = new Cluster(noPrewarm());
    c.settle();
    assert.deepEqual([c.app.status?.phase, c.split()], ['Stable', { stable: 100 }], 'tagged stable, not KServe\'s latest');
    c.edit((s) => { s.model!.storageUri = 'gs://models/fraud/v8'; s.rollout = { canaryPercent: 30 }; });
    c.dataPlane().settle();
    assert.deepEqual([c.app.status?.phase, c.split(), (c.live!.spec as { predictor: { canaryTrafficPercent?: number } }).predictor.canaryTrafficPercent], ['Canary', { stable: 70, candidate: 30 }, 30]);
    c.edit((s) => { s.rollout = { canaryPercent: 100 }; });
    c.dataPlane().settle();
    assert.deepEqual([c.app.status?.phase, c.app.status?.versions?.stable?.revision, c.split()], ['Stable', 'fraud-predictor-00002', { stable: 100 }]);
  });

  it('labels every predictor revision with the app and the version it serves', () => {
    const c = new Cluster(noPrewarm());
    c.settle();
    const first = c.app.status!.versions!.stable!.version;
    c.edit((s) => { s.model!.storageUri = 'gs://models/fraud/v8'; s.rollout = { canaryPercent: 30 }; });
    c.dataPlane().settle();
    const second = c.app.status!.versions!.candidate!.version;
    assert.notEqual(first, second);
    assert.deepEqual(c.revisions.map((r) => [r.metadata.labels![APP_LABEL], r.metadata.labels![VERSION_LABEL]]), [['fraud', first], ['fraud', second]]);
  });
});

describe('planner: the writes a plan makes, executed against the simulated API server', () => {
  const withIngress = () => containerApp({ ingress: { hosts: ['shop.example.com'] } });

  it('first start: the workload, its revision\'s bounds and the route are written, and nothing else', () => {
    const c = new Cluster(withIngress());
    c.reconcile();
    assert.deepEqual(c.writes, ['workload:written', 'route:written']);
    c.dataPlane().settle();
    assert.deepEqual(c.writes, ['workload:unchanged', `revision-bounds/${c.app.status!.versions!.stable!.revision}:unchanged`, 'route:unchanged'], 'a converged app writes nothing');
  });

  it('canary: the new template is written; the route reaches the candidate only once it is ready and warm', () => {
    const c = new Cluster(withIngress());
    c.reconcile();
    c.dataPlane().settle();
    c.edit((s) => { image('1.5.0')(s); s.rollout = { canaryPercent: 20, match: [{ header: 'x-canary', exact: '1' }] }; });
    c.reconcile();
    assert.deepEqual(c.writes.filter((w) => !w.startsWith('revision-bounds/')), ['workload:written', 'route:unchanged'], 'the candidate is not ready yet: no header route');
    c.dataPlane().settle();
    const http = (c.objects.VirtualService!.spec as { http: Array<{ match?: unknown }> }).http;
    assert.ok(http.some((r) => r.match), 'a header route to the ready candidate');
  });

  it('removing spec.ingress removes the route', () => {
    const c = new Cluster(withIngress());
    c.reconcile();
    c.dataPlane().settle();
    c.edit((s) => { delete s.ingress; });
    c.reconcile();
    assert.ok(c.writes.includes('route:removed'));
    assert.equal(c.objects.VirtualService, undefined);
  });

  it('removes the VirtualService of the app\'s own name (ours before 0.2)', () => {
    const c = new Cluster(withIngress());
    c.objects.LegacyVirtualService = { apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'shop', namespace: 'team-a' } };
    c.reconcile();
    assert.ok(c.writes.includes('legacy-route:removed'));
  });

  it('container -> model: the Knative Service serves until the InferenceService is stable; it goes once the route points at the new kind', () => {
    const c = new Cluster(withIngress());
    c.reconcile();
    c.dataPlane().settle();
    c.edit((s) => { delete s.container; s.model = { format: { name: 'sklearn' }, storageUri: 'gs://models/shop/v1' }; });
    c.reconcile();
    assert.deepEqual(c.writes.filter((w) => !w.startsWith('revision-bounds/')), ['workload:written', 'route:unchanged'], 'make before break: the route still points at the Knative Service');
    c.history = [];
    c.dataPlane().settle();
    const moved = c.history.findIndex((w) => w.includes('route:written'));
    assert.ok(moved >= 0, 'the route moves to the predictor once it is stable');
    assert.ok(c.history[moved]!.includes('other-workload:skipped'), 'not in the pass that moves the route');
    assert.ok(c.history.slice(moved + 1).some((w) => w.includes('other-workload:removed')), 'in a later pass, once the route reads as written');
    assert.equal(c.objects.Service, undefined);
  });

  it('a kind switch beside a workload an earlier app of the same name controls (deleted, re-created with its status): that one does not serve, the new kind does', () => {
    const c = new Cluster(withIngress());
    c.reconcile();
    c.dataPlane().settle();
    assert.equal(c.objects.Service?.metadata.ownerReferences?.[0]?.uid, c.app.metadata.uid);
    c.app.metadata.uid = 'a-later-uid';
    c.edit((s) => { delete s.container; s.model = { format: { name: 'sklearn' }, storageUri: 'gs://models/shop/v1' }; });
    const d = c.reconcile();
    assert.deepEqual([d.fresh, d.previous, d.other?.live.metadata.name], [true, undefined, 'shop'], 'the Knative Service is the other kind\'s, but not this app\'s');
    const route = c.plan.operations.find((o) => o.id === 'route')!;
    assert.match(route.why, /routes its hosts to the InferenceService/);
  });

  it('model -> container: the InferenceService serves until the new revision is ready and warm, then goes', () => {
    const c = new Cluster(modelApp({ prewarm: {}, ingress: { hosts: ['fraud.example.com'] } }));
    c.reconcile();
    c.dataPlane().settle();
    c.edit((s) => { delete s.model; s.container = { image: 'ghcr.io/acme/fraud:1' }; });
    c.reconcile();
    assert.ok(!c.writes.some((w) => w.startsWith('previous-workload')), 'not before the new revision is ready');
    c.history = [];
    c.dataPlane().settle();
    const removed = c.history.findIndex((w) => w.some((x) => /^(previous|other)-workload:removed$/.test(x)));
    const moved = c.history.findIndex((w) => w.includes('route:written'));
    assert.ok(moved >= 0 && removed > moved, `the route points at the Knative Service before the InferenceService goes: ${c.history.map((w) => w.join(',')).join(' | ')}`);
    assert.equal(c.objects.InferenceService, undefined);
    assert.equal(c.app.status?.phase, 'Stable');
  });
});
