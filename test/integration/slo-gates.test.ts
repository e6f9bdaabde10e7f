// SLO-gated releases (issue 37) on the rig's real Knative Serving 1.21 and
// KServe 0.20, with KWOK pods: burn-rate gates read every cadence during a
// step and the bake, a bake rolling back to the previous version without a new
// revision, and the release freeze with its override. The operator runs on a
// controlled clock; a SIMULATED Prometheus (test/support/scripted-prometheus.ts)
// answers its queries from scripted series per version at that clock. Each
// story is judged where it takes effect: the split Knative or KServe reports,
// the revisions that exist, the Events and the status the user reads.
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { parseDuration } from '../../src/api/v1alpha1/duration.ts';
import { MIN_SCALE } from '../../src/render/autoscaling.ts';
import { gateWindows, judgeBurn, type Slo } from '../../src/rollout/slo.ts';
import { versionOf } from '../../src/rollout/version.ts';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, readyTrue, reportedSplit, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { judge } from '../support/gitops-judge.ts';
import { ErrorSeries, ScriptedPrometheus, errorsAmong, ratiosAt, seeded, since, type Bucket } from '../support/scripted-prometheus.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS } from '../support/wait.ts';

const MIN = 60_000;
const CADENCE = '10s';
const CADENCE_MS = parseDuration(CADENCE);
const T0 = Date.parse('2026-12-01T09:00:00Z');
const ERROR_RATIO = '(sum(increase(requests_total{app="{{app}}",version="{{version}}",code=~"5.."}[{{window}}])) or vector(0)) / sum(increase(requests_total{app="{{app}}",version="{{version}}"}[{{window}}]))';
const SLO: Slo = { objective: 99.9, errorRatio: ERROR_RATIO };

const failing = (p: (atMs: number) => number, seed = 3) => {
  const random = seeded(seed);
  return (atMs: number): Bucket => ({ total: 500, errors: errorsAmong(500, p(atMs), random) });
};
const healthy = failing(() => 0.0002);

interface Annotated { metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> } }

/** What kstatus (Flux, kubectl wait) and Argo CD's health check conclude, asked of their own code. */
async function toolsRead(a: ServerlessApp): Promise<string> {
  const j = await judge(a);
  return `${j.kstatus.status} / ${j.argocd?.status ?? 'no health'}`;
}

/** The Knative revisions of a Knative Service (a KServe predictor's included). */
async function revisions(ns: string, service: string): Promise<Annotated[]> {
  return (await userClient().list<Annotated>(Kinds.KnativeRevision, ns, { labelSelector: `serving.knative.dev/service=${service}` })).items;
}

async function eventMessages(ns: string, reason: string): Promise<string[]> {
  const list = await userClient().list<{ reason?: string; note?: string; message?: string }>(Kinds.Event, ns);
  return list.items.filter((e) => e.reason === reason).map((e) => e.note ?? e.message ?? '');
}

describe('SLO-gated releases on the real Knative and KServe, controlled clock (integration)', function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let clock: OffsetClock;
  let prom: ScriptedPrometheus;
  let series: ErrorSeries;
  let ns: string;

  before(async () => {
    clock = new OffsetClock(new Date(T0));
    series = new ErrorSeries(T0 - 721 * 60 * MIN);
    prom = new ScriptedPrometheus(series, () => clock.now());
    await prom.start();
    op = await startOperator({
      analysisProviders: [{ name: 'prom', url: prom.server.url, scoped: true }],
      allowedStorageUriPrefixes: ['gs://models/'],
    }, { clock });
  });
  after(async () => {
    await op?.stop();
    await prom?.stop();
  });
  beforeEach(async () => {
    ns = await freshNamespace('slo');
    prom.down = false;
    // Each story scripts its own series (the versions' hashes repeat across stories).
    series = prom.series = new ErrorSeries(T0 - 721 * 60 * MIN);
  });

  const rollout = (extra: Partial<NonNullable<AppSpec['rollout']>> = {}, slo: Partial<Slo> = {}): AppSpec['rollout'] => ({
    steps: [10, 50], interval: '1m', bake: '5m',
    analysis: { prometheus: { provider: 'prom' }, slo: { ...SLO, ...slo }, cadence: CADENCE },
    ...extra,
  });
  const container = (tag: string, r?: AppSpec['rollout']): AppSpec => ({ container: { image: `ghcr.io/acme/shop:${tag}`, port: 8080 }, scaling: { minScale: 0 }, ...(r ? { rollout: r } : {}) });

  /** When the workbook's gate first fires on the scripted series (the test's oracle, read from the series itself). */
  function firstFiring(version: string, fromMs: number, toMs: number): number | undefined {
    for (let t = fromMs; t <= toMs; t += 5_000) {
      const ratios = ratiosAt(series, version, gateWindows(SLO), t);
      if (judgeBurn(SLO, ratios).fired) return t;
    }
    return undefined;
  }

  /** The rollout's own clock marks (a round, a step, the bake, a failure) and its phase. */
  const mark = (a: ServerlessApp) => Math.max(...[a.status?.canary?.checkedAt, a.status?.canary?.stepStartedAt, a.status?.canary?.bakeStartedAt, a.status?.canary?.failure?.at]
    .map((t) => (t ? Date.parse(t) : 0)));

  /**
   * Moves the operator's clock a cadence at a time, each time waiting until the operator has acted on it (a round
   * ran, a step or the bake began, the candidate failed) or its phase changed, until `done`.
   */
  async function cadenceUntil(name: string, done: (a: ServerlessApp) => boolean, what: string, maxTicks = 120): Promise<ServerlessApp> {
    let a = await waitForApp(ns, name, () => true, 'the app');
    for (let i = 0; i < maxTicks && !done(a); i++) {
      const phase = a.status?.phase;
      clock.advance(CADENCE_MS);
      const tick = clock.now().getTime();
      op.apps.controller.enqueueAll();
      a = await waitForApp(ns, name, (x) => done(x) || x.status?.phase !== phase || mark(x) >= tick, `${what}: the operator acts on the clock at +${(tick - T0) / 1000}s`, SETTLE_MS);
    }
    assert.ok(done(a), `${what}: not reached in ${maxTicks} cadences; phase ${a.status?.phase}, ${a.status?.canary?.message ?? ''}`);
    return a;
  }

  async function stableV1(name: string, spec: AppSpec): Promise<ServerlessApp> {
    await applyApp(app(ns, name, spec));
    const v1 = await waitForApp(ns, name, readyTrue, 'v1 Ready', READY_MS);
    series.fill(v1.status!.versions!.stable!.version, T0 + 12 * 60 * MIN, healthy);
    return v1;
  }

  it('a fast burn during a step rolls all traffic back to stable within one cadence of the gate firing', async () => {
    const v1 = await stableV1('shop', container('1'));
    const v2spec = container('2', rollout());
    const v2 = versionOf(v2spec);
    const burnAt = clock.now().getTime() + 30_000;
    series.fill(v2, T0 + 12 * 60 * MIN, since(clock.now().getTime(), failing((t) => (t >= burnAt ? 0.2 : 0.0002))));
    await applyApp(app(ns, 'shop', v2spec));
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 10, 'step 1: Knative serves 10%', READY_MS);
    const a = await cadenceUntil('shop', (x) => x.status?.phase === 'Failed', 'the burn fails the candidate');
    const failure = a.status!.canary!.failure!;
    assert.equal(failure.reason, 'BurnRateExceeded');
    assert.match(failure.message, /at (10|50)%: error budget burning faster than (14\.4x over both 1h and 5m|6x over both 6h and 30m) \([\d.]+x and [\d.]+x\) \(objective 99\.9%\)/);
    const fired = firstFiring(v2, burnAt, Date.parse(failure.at!))!;
    assert.ok(fired !== undefined && Date.parse(failure.at!) - fired <= CADENCE_MS + 1_000, `failed at ${failure.at}, ${(Date.parse(failure.at!) - fired) / 1000}s after the gate fired on the series (cadence ${CADENCE})`);
    assert.equal(condition(a, 'Stalled')?.reason, 'BurnRateExceeded');
    assert.equal(await toolsRead(a), 'Failed / Degraded', 'a rollout the gate stopped looks failed to kstatus and Argo CD');
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 0, 'Knative moved all traffic back', SETTLE_MS);
    const split = await reportedSplit(ns, 'shop');
    assert.equal(split['stable'], 100, `Knative routes all traffic to stable ${v1.status!.versions!.stable!.revision}: ${JSON.stringify(split)}`);
    assert.equal((await eventMessages(ns, 'BurnRateExceeded')).length, 1, 'one Warning event');
  });

  it('a burn in the bake moves all traffic back to the previous version, held warm, without a new revision', async () => {
    const v1 = await stableV1('shop', container('1'));
    const stableRev = v1.status!.versions!.stable!.revision!;
    const v2spec = container('2', rollout());
    const v2 = versionOf(v2spec);
    series.fill(v2, T0 + 12 * 60 * MIN, since(clock.now().getTime(), healthy));
    await applyApp(app(ns, 'shop', v2spec));
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 10, 'step 1: Knative serves 10%', READY_MS);
    const baking = await cadenceUntil('shop', (x) => x.status?.phase === 'Baking', 'the steps pass and the bake begins');
    const candidateRev = baking.status!.versions!.candidate!.revision!;
    assert.equal(await toolsRead(baking), 'InProgress / Progressing', 'the rollout is not done until the bake ends');
    assert.deepEqual(await reportedSplit(ns, 'shop'), { stable: 0, candidate: 100 }, 'all traffic on the new version in the bake');
    const held = (await revisions(ns, 'shop')).find((r) => r.metadata.name === stableRev);
    assert.equal(held?.metadata.annotations?.[MIN_SCALE], String(baking.status!.canary!.bakeReplicas), 'the previous revision holds its replicas');
    assert.ok(baking.status!.canary!.bakeReplicas! >= 1);
    const before = (await revisions(ns, 'shop')).map((r) => r.metadata.name).sort();

    // The burn starts a minute into the bake.
    series.truncate(v2, clock.now().getTime() + MIN).fill(v2, T0 + 12 * 60 * MIN, failing(() => 0.25));
    const a = await cadenceUntil('shop', (x) => x.status?.phase === 'Failed' || x.status?.phase === 'Stable', 'the burn in the bake fails the candidate');
    assert.equal(a.status?.phase, 'Failed', `the bake ended without the burn failing it: ${a.status?.canary?.message}`);
    assert.match(a.status!.canary!.failure!.message, /^during the bake: error budget burning faster than/);
    assert.equal(a.status?.versions?.stable?.revision, stableRev, 'the previous version is stable again, on its own revision');
    await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 0, 'Knative moved all traffic back', SETTLE_MS);
    const split = await reportedSplit(ns, 'shop');
    assert.equal(split['stable'], 100, JSON.stringify(split));
    assert.deepEqual((await revisions(ns, 'shop')).map((r) => r.metadata.name).sort(), before, `no new revision: ${candidateRev} and ${stableRev} only`);
  });

  it('a release freeze holds a new version at 0% while the budget is spent; an override lets it through and is recorded', async () => {
    const v1 = await stableV1('shop', container('1'));
    // Replace v1's history: 90% of a 99.9% budget spent over the last 30 days.
    const spent = new ErrorSeries(T0 - 721 * 60 * MIN).fill(v1.status!.versions!.stable!.version, T0 + 12 * 60 * MIN, failing(() => 0.0009));
    const v2spec = container('2', rollout({}, { freezeBelow: 25 }));
    spent.fill(versionOf(v2spec), T0 + 12 * 60 * MIN, since(clock.now().getTime(), healthy));
    prom.series = series = spent;
    await applyApp(app(ns, 'shop', v2spec));
    const frozen = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Frozen', 'the release is frozen', READY_MS);
    assert.equal(condition(frozen, 'Stalled')?.reason, 'ReleaseFrozen');
    assert.equal(await toolsRead(frozen), 'Failed / Degraded', 'a frozen release reads as stuck until an edit or the budget moves it');
    assert.match(condition(frozen, 'Stalled')!.message, /release frozen: (9|10)(\.\d+)?% of the error budget remains over 720h, below the freeze policy of 25%/);
    assert.equal(frozen.status?.release?.frozen, true);
    assert.deepEqual((frozen.status?.traffic ?? []).filter((t) => t.percent > 0).map((t) => [t.revision, t.percent]), [[v1.status!.versions!.stable!.revision, 100]], 'nothing reaches the new version');
    assert.equal((await eventMessages(ns, 'ReleaseFrozen')).length, 1);

    const version = versionOf(v2spec);
    await applyApp(app(ns, 'shop', container('2', rollout({ releaseOverride: { version, by: 'alice@oncall', reason: 'INC-4211 hotfix' } }, { freezeBelow: 25 }))));
    const through = await waitForApp(ns, 'shop', (x) => x.status?.canary?.trafficPercent === 10, 'the override lets it through: Knative serves 10%', READY_MS);
    assert.deepEqual(through.status?.release?.override && { ...through.status.release.override, at: 'set' }, { version, by: 'alice@oncall', reason: 'INC-4211 hotfix', at: 'set' });
    const audit = await eventMessages(ns, 'ReleaseFreezeOverridden');
    assert.equal(audit.length, 1);
    assert.match(audit[0]!, /release freeze overridden for version \w+ by "alice@oncall": INC-4211 hotfix/);
  });

  it('a model app on KServe: a burn in the bake rolls back to the previous revision, warm, without a new revision', async () => {
    const model = (uri: string, r?: AppSpec['rollout']): AppSpec => ({
      model: { format: { name: 'sklearn' }, storageUri: uri, resources: { limits: { cpu: '1', memory: '2Gi' } } }, scaling: { minScale: 0, maxScale: 2 }, ...(r ? { rollout: r } : {}),
    });
    const v1 = await stableV1('fraud', model(`gs://models/${ns}/v1`));
    const r1 = v1.status!.versions!.stable!.revision!;
    const v2spec = model(`gs://models/${ns}/v2`, rollout());
    series.fill(versionOf(v2spec), T0 + 12 * 60 * MIN, since(clock.now().getTime(), healthy));
    await applyApp(app(ns, 'fraud', v2spec));
    await waitForApp(ns, 'fraud', (x) => x.status?.canary?.trafficPercent === 10, 'step 1: KServe serves 10%', READY_MS);
    const baking = await cadenceUntil('fraud', (x) => x.status?.phase === 'Baking', 'the steps pass and the bake begins');
    const r2 = baking.status!.versions!.candidate!.revision!;
    const before = (await revisions(ns, 'fraud-predictor')).map((r) => r.metadata.name).sort();
    assert.deepEqual(before, [r1, r2].sort());
    series.truncate(versionOf(v2spec), clock.now().getTime() + MIN).fill(versionOf(v2spec), T0 + 12 * 60 * MIN, failing(() => 0.25));
    const a = await cadenceUntil('fraud', (x) => x.status?.phase === 'Failed' || x.status?.phase === 'Stable', 'the burn in the bake fails the candidate');
    assert.equal(a.status?.phase, 'Failed', `the bake ended without the burn failing it: ${a.status?.canary?.message}`);
    assert.equal(a.status?.canary?.failure?.reason, 'BurnRateExceeded');
    // KServe moves its "prev" back to r1 (its status propagation handles a rollback after a full rollout).
    const back = await waitForApp(ns, 'fraud', (x) => isDeepStrictEqual(Object.fromEntries((x.status?.traffic ?? []).filter((t) => t.percent > 0).map((t) => [t.revision, t.percent])), { [r1]: 100 }),
      'KServe routes all traffic back to the previous revision', SETTLE_MS);
    assert.equal(back.status?.versions?.stable?.revision, r1);
    assert.deepEqual((await revisions(ns, 'fraud-predictor')).map((r) => r.metadata.name).sort(), before, 'no new revision');
  });
});
