import assert from 'node:assert/strict';
import { Kinds } from '../../src/runtime/kinds.ts';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { startStandins } from '../standin/standin.ts';
import { app, applyApp, eventually, getApp, getKsvc, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, writesSince } from '../support/cluster.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';

interface Rev { metadata: { annotations?: Record<string, string> }; status?: { actualReplicas?: number } }

const minScaleOf = async (ns: string, revision: string) =>
  (await userClient().get<Rev>(Kinds.KnativeRevision, ns, revision))?.metadata.annotations?.['autoscaling.knative.dev/min-scale'];

// A weekday window 08:00-09:00 Berlin (07:00 UTC in winter), minScale 3; the clock starts just before it.
const day = { name: 'business-hours', schedule: '0 8 * * 1-5', duration: '1h', timeZone: 'Europe/Berlin', minScale: 3 };
const spec = (image: string, extra: Partial<AppSpec> = {}): AppSpec => ({
  container: { image }, scaling: { minScale: 0, maxScale: 10, windows: [day] }, ...extra,
});

describe('scale windows (integration, controlled clock)', function () {
  this.timeout(90_000);
  let op: RunningOperator;
  let clock: OffsetClock;
  let standins: Awaited<ReturnType<typeof startStandins>>;
  let ns: string;

  before(async () => { standins = await startStandins({ kubeConfig: testKubeConfig(), readyDelayMs: 100 }); });
  after(async () => {
    await op?.stop();
    await standins?.stop();
  });
  beforeEach(async () => {
    ns = await freshNamespace('windows');
    await op?.stop();
    clock = new OffsetClock(new Date('2026-11-23T06:00:00Z')); // Monday, 07:00 in Berlin: an hour before the window
    op = await startOperator({}, { clock });
  });

  /** Moves the clock to 2 s before the window opens and has the operator look again (no waiting on a loaded machine). */
  function openSoon(): void {
    clock.jumpTo(new Date('2026-11-23T06:59:58Z'));
    op.apps.controller.enqueueAll();
  }

  it('raises min-scale on the live revision when the window opens, and reports the next transition', async () => {
    await applyApp(app(ns, 'shop', spec('shop:1')));
    const before = await waitForApp(ns, 'shop', readyTrue, 'ready');
    const revision = before.status!.versions!.stable!.revision!;
    assert.equal(before.status?.scaling?.minScale, 0);
    assert.deepEqual(before.status?.scaling?.nextTransition, { at: '2026-11-23T07:00:00.000Z', window: 'business-hours', change: 'open', minScale: 3, maxScale: 10 });
    openSoon();
    const open = await waitForApp(ns, 'shop', (a) => a.status?.scaling?.openWindows?.includes('business-hours') ?? false, 'window open', 20_000);
    assert.equal(open.status?.scaling?.minScale, 3);
    assert.equal(open.status?.scaling?.nextTransition?.change, 'close');
    assert.equal(open.status?.scaling?.nextTransition?.at, '2026-11-23T08:00:00.000Z');
    assert.equal(await minScaleOf(ns, revision), '3');
    assert.equal(open.status?.versions?.stable?.revision, revision, 'no new revision, no new version');
    const lag = clock.now().getTime() - Date.parse('2026-11-23T07:00:00Z');
    console.log(`      window opened; observed ~${lag} ms after the transition (includes polling)`);
  });

  it('raises both stable and candidate during a canary, leaving traffic untouched', async () => {
    await applyApp(app(ns, 'shop', spec('shop:1')));
    await waitForApp(ns, 'shop', readyTrue, 'ready');
    await applyApp(app(ns, 'shop', spec('shop:2', { rollout: { canaryPercent: 20 } })));
    const canary = await waitForApp(ns, 'shop', (a) => a.status?.canary?.weight === 20, 'canary at 20%');
    const traffic = (await getKsvc(ns, 'shop'))?.spec.traffic;
    openSoon();
    await waitForApp(ns, 'shop', (a) => a.status?.scaling?.minScale === 3, 'window open', 20_000);
    await eventually(async () => (await minScaleOf(ns, canary.status!.versions!.candidate!.revision!)) === '3' || undefined, 'candidate raised');
    assert.equal(await minScaleOf(ns, canary.status!.versions!.stable!.revision!), '3');
    assert.deepEqual((await getKsvc(ns, 'shop'))?.spec.traffic, traffic, 'traffic untouched');
    const after = await getApp(ns, 'shop');
    assert.equal(after.status?.canary?.weight, 20, 'the canary neither advanced nor ended');
  });

  it('applies the window early by the prewarm lead time', async () => {
    clock.jumpTo(new Date('2026-11-23T06:57:00Z')); // 3 minutes before opening: inside the 5-minute lead
    await applyApp(app(ns, 'shop', spec('shop:1', { prewarm: { leadTime: '5m' } })));
    const a = await waitForApp(ns, 'shop', (x) => readyTrue(x) && x.status?.scaling?.minScale === 3, 'raised early');
    assert.deepEqual(a.status?.scaling?.prewarmingWindows, ['business-hours']);
    assert.deepEqual(a.status?.scaling?.openWindows, []);
    assert.equal(await minScaleOf(ns, a.status!.versions!.stable!.revision!), '3');
  });

  it('goes back to zero when the window closes', async () => {
    clock.jumpTo(new Date('2026-11-23T07:59:55Z'));
    await applyApp(app(ns, 'shop', spec('shop:1')));
    const open = await waitForApp(ns, 'shop', (a) => readyTrue(a) && a.status?.scaling?.minScale === 3, 'open');
    const closed = await waitForApp(ns, 'shop', (a) => a.status?.scaling?.minScale === 0, 'closed', 20_000);
    assert.deepEqual(closed.status?.scaling?.openWindows, []);
    assert.equal(await minScaleOf(ns, open.status!.versions!.stable!.revision!), '0');
    assert.equal(closed.status?.scaling?.nextTransition?.at, '2026-11-24T07:00:00.000Z', 'next opening on Tuesday');
  });

  it('after a restart inside a window: the same effective scale and no writes', async () => {
    clock.jumpTo(new Date('2026-11-23T07:30:00Z'));
    await applyApp(app(ns, 'shop', spec('shop:1')));
    await waitForApp(ns, 'shop', (a) => readyTrue(a) && a.status?.scaling?.minScale === 3, 'open');
    await op.manager.waitIdle();
    await op.stop();
    await new Promise((r) => setTimeout(r, 300));
    const since = new Date();
    op = await startOperator({}, { clock });
    await op.manager.waitIdle();
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await getApp(ns, 'shop')).status?.scaling?.minScale, 3);
    const writes = (await writesSince(since, 'serverlessapp-operator')).filter((w) => w.namespace === ns);
    assert.deepEqual(writes, []);
  });
  it('on Knative before 1.21 (bounds in the template): a transition makes a new revision of the same version, routed only once ready', async () => {
    await op.stop();
    clock = new OffsetClock(new Date('2026-11-23T06:00:00Z'));
    op = await startOperator({ knativeInPlaceScaling: 'false' }, { clock });
    await applyApp(app(ns, 'shop', spec('shop:1')));
    const before = await waitForApp(ns, 'shop', readyTrue, 'ready');
    const ksvcBefore = await getKsvc(ns, 'shop');
    assert.equal(ksvcBefore?.spec.template.metadata.annotations?.['autoscaling.knative.dev/min-scale'], '0');
    openSoon();
    const after = await waitForApp(ns, 'shop', (a) => a.status?.scaling?.minScale === 3 && a.status?.versions?.stable?.revision !== before.status?.versions?.stable?.revision && readyTrue(a), 'new revision serving', 20_000);
    assert.equal(after.status?.versions?.stable?.version, before.status?.versions?.stable?.version, 'same version: no canary');
    const ksvc = await getKsvc(ns, 'shop');
    assert.equal(ksvc?.spec.template.metadata.annotations?.['autoscaling.knative.dev/min-scale'], '3');
    assert.deepEqual(ksvc?.spec.traffic, [{ revisionName: after.status?.versions?.stable?.revision, percent: 100, tag: 'stable' }]);
  });

  it('model apps: the window raises the InferenceService\'s minReplicas', async () => {
    interface Isvc { spec: { predictor: { minReplicas?: number } } }
    await applyApp(app(ns, 'fraud', { model: { format: { name: 'sklearn' }, storageUri: 'gs://m/v1' }, scaling: { minScale: 0, maxScale: 10, windows: [day] } }));
    await waitForApp(ns, 'fraud', readyTrue, 'model ready');
    assert.equal((await userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud'))?.spec.predictor.minReplicas, 0);
    openSoon();
    await waitForApp(ns, 'fraud', (a) => a.status?.scaling?.minScale === 3, 'window open', 20_000);
    await eventually(async () => (await userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud'))?.spec.predictor.minReplicas === 3 || undefined, 'minReplicas raised');
  });
});
