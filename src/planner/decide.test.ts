// The planner stepped through observations one at a time, as Flagger tests its
// scheduler: after each pass the test plays the data plane (Knative creates the
// revision the template names and reports the split it was asked for; KServe
// cuts a predictor revision per spec change and splits by canaryTrafficPercent)
// and asserts what the next pass renders, its phase, conditions, events and the
// effects it asks for. The simulation is this test's own, deliberately small:
// the real Knative and KServe judge the same flows in test/integration/.
import assert from 'node:assert/strict';
import type { ServerlessApp, ServerlessAppSpec } from '../api/v1alpha1/serverlessapp.ts';
import type { WarmupProgress } from '../prewarm/warmup-progress.ts';
import { containerApp, modelApp } from '../testing/apps.ts';
import { APP_LABEL, VERSION_LABEL } from '../render/metadata.ts';
import type { KnativeTrafficTarget } from '../render/traffic.ts';
import type { AnalysisOutcome } from '../rollout/canary.ts';
import { decide, desiredWorkload, type Decision } from './decide.ts';
import type { Revision } from './revisions.ts';
import { composeStatus } from './status.ts';
import { knativeWorkload, kserveWorkload, type WorkloadObject } from './workloads.ts';

type Traffic = Array<{ revisionName?: string; latestRevision?: boolean; percent: number; tag?: string }>;

class Cluster {
  app: ServerlessApp;
  now = new Date('2026-11-23T09:00:00Z');
  live?: WorkloadObject;
  revisions: Revision[] = [];
  /** Revisions that do not become ready (a pod no node takes). */
  stuck = new Set<string>();
  warmup?: { version: string; revision: string; progress: WarmupProgress };
  analysis?: { round: string; outcome: AnalysisOutcome };
  last!: Decision;
  private readonly workloads: { knative: ReturnType<typeof knativeWorkload>; kserve: ReturnType<typeof kserveWorkload> };
  private predictorGeneration = 0;
  private lastPredictor = '';

  constructor(app: ServerlessApp, inPlaceBounds = true) {
    this.app = structuredClone(app);
    this.workloads = { knative: knativeWorkload(inPlaceBounds), kserve: kserveWorkload(inPlaceBounds) };
  }

  edit(change: (spec: ServerlessAppSpec) => void): this {
    change(this.app.spec);
    this.app.metadata.generation = (this.app.metadata.generation ?? 0) + 1;
    return this;
  }

  /** One reconcile: plan, "apply" the workload, write the status the controller would. */
  reconcile(): Decision {
    const live = this.live;
    const d = decide({
      app: this.app, now: this.now,
      knative: { workload: this.workloads.knative, ...(!this.app.spec.model && live ? { live } : {}) },
      kserve: { workload: this.workloads.kserve, ...(this.app.spec.model && live ? { live } : {}) },
      revisions: this.revisions,
      ...(this.warmup ? { warmup: this.warmup } : {}), ...(this.analysis ? { analysis: this.analysis } : {}),
    });
    const desired = desiredWorkload(this.app, d);
    this.live = { ...desired, metadata: { ...desired.metadata, uid: 'ksvc-uid', creationTimestamp: '2026-11-23T08:00:00Z' }, ...(live?.status ? { status: live.status } : {}) };
    this.app.status = composeStatus(this.app, {
      plan: d.plan, workload: d.serving, revisions: d.observed, ...(d.prewarm ? { prewarm: d.prewarm } : {}), scale: d.scale, now: this.now,
      describe: () => ({}),
    });
    this.last = d;
    return d;
  }

  /** The data plane acts on what was applied: new revisions appear (ready unless stuck), the split is reported. */
  dataPlane(): this {
    const spec = this.live!.spec as { template?: { metadata: { name: string; labels: Record<string, string> } }; traffic?: Traffic; predictor?: { labels: Record<string, string>; canaryTrafficPercent?: number } };
    if (spec.template) {
      this.ensureRevision(spec.template.metadata.name, spec.template.metadata.labels, 'shop');
      const traffic = (spec.traffic ?? []).map((t) => ({ ...t, revisionName: t.revisionName ?? spec.template!.metadata.name }))
        .filter((t) => this.isReady(t.revisionName));
      this.report(traffic, 'Ready');
    } else {
      // KServe: a new predictor revision per spec change; canaryTrafficPercent splits latest vs the previous.
      const p = spec.predictor!;
      const shape = JSON.stringify({ ...p, canaryTrafficPercent: undefined });
      if (shape !== this.lastPredictor) {
        this.lastPredictor = shape;
        this.ensureRevision(`fraud-predictor-${String(++this.predictorGeneration).padStart(5, '0')}`, p.labels, 'fraud-predictor');
      }
      const latest = this.revisions.at(-1)!.metadata.name;
      const prev = this.revisions.at(-2)?.metadata.name;
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
const condition = (c: Cluster, type: string) => c.app.status?.conditions?.find((x) => x.type === type);
const image = (tag: string) => (s: ServerlessAppSpec) => { s.container!.image = `ghcr.io/acme/shop:${tag}`; };

describe('planner: a container app stepped through Knative\'s reports', () => {
  it('first version: pinned to its revision, Pending until Knative serves it, then Stable and Ready', () => {
    const c = new Cluster(containerApp());
    const d = c.reconcile();
    const traffic = (c.live!.spec as { traffic: Traffic }).traffic;
    assert.deepEqual(traffic, [{ revisionName: d.plan.initial!.revision, percent: 100, tag: 'stable' }], 'the first revision, by name');
    assert.equal(c.app.status?.phase, 'Pending');
    const done = c.dataPlane().settle();
    assert.deepEqual([c.app.status?.phase, condition(c, 'Ready')?.status, c.split()], ['Stable', 'True', { stable: 100 }]);
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
    const d = c.settle();
    const after = c.app.status!.versions!.stable!;
    assert.deepEqual([after.version, after.revision !== before.revision, c.app.status?.scaling?.minScale, c.split()], [before.version, true, 2, { stable: 100 }]);
    assert.ok(events(c.last).length === 0 || events(d).every((e) => e !== 'Promoted'), 'a same-version revision is no rollout');
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

  it('labels every predictor revision with the app and version it serves', () => {
    const c = new Cluster(noPrewarm());
    c.settle();
    const labels = c.revisions[0]!.metadata.labels!;
    assert.deepEqual([labels[APP_LABEL], labels[VERSION_LABEL]], ['fraud', c.app.status?.versions?.stable?.version]);
  });
});
