// Scale windows on the rig's real Knative Serving 1.21, on a controlled clock,
// in both ways the operator can set bounds: in place on the live Revision
// (Knative >= 1.21; the rig's CRDs are labelled 1.21.1, so auto-detection picks
// it) and in the revision template (older Knative; forced with
// knativeInPlaceScaling: 'false'). Each flow is checked on the real Revisions
// and on what Knative reports, not only on what the operator wrote.
import assert from 'node:assert/strict';
import type { OperatorConfig } from '../../src/config.ts';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { VERSION_LABEL } from '../../src/render/metadata.ts';
import { app, applyApp, condition, getApp, getKsvc, getRevision, knativeReady, readyTrue, reportedSplit, userClient, waitForApp, type AppSpec, type KnativeRevision } from '../support/apps.ts';
import { assertNoWrites, freshNamespace } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';
import { waitIdle } from '../support/idle.ts';

const MIN_SCALE = 'autoscaling.knative.dev/min-scale';

// A weekday window 08:00-09:00 Berlin (07:00 UTC in winter), minScale 3; the clock starts an hour before it.
const day = { name: 'business-hours', schedule: '0 8 * * 1-5', duration: '1h', timeZone: 'Europe/Berlin', minScale: 3 };
const spec = (image: string, extra: Partial<AppSpec> = {}): AppSpec => ({
  container: { image: `ghcr.io/acme/shop:${image}`, port: 8080 }, scaling: { minScale: 0, maxScale: 10, windows: [day] }, ...extra,
});

const minScaleOf = async (ns: string, revision: string) => (await getRevision(ns, revision))?.metadata.annotations?.[MIN_SCALE];

/** Knative runs `replicas` ready pods of `revision`, as the Revision's status reports. */
const knativeRuns = (ns: string, revision: string, replicas: number) =>
  waitFor(`Knative runs ${replicas} replicas of ${revision}`, async () => (await getRevision(ns, revision))?.status?.actualReplicas === replicas, { timeoutMs: 90_000 });

/** The revision Knative routes all traffic to (under the stable tag), once it reports that for the Service's current generation. */
async function knativeServes(ns: string, revision: string): Promise<void> {
  await waitFor(`Knative routes all traffic to ${revision}`, async () => {
    const k = await getKsvc(ns, 'shop');
    return JSON.stringify(await reportedSplit(ns, 'shop')) === '{"stable":100}' && k?.status?.traffic?.[0]?.revisionName === revision;
  }, { timeoutMs: SETTLE_MS });
}

async function revisionsOf(ns: string): Promise<KnativeRevision[]> {
  return (await userClient().list<KnativeRevision>(Kinds.KnativeRevision, ns)).items;
}

const modes: Array<{ title: string; settings: Partial<OperatorConfig>; inPlace: boolean }> = [
  { title: 'in-place bounds (Knative 1.21, detected)', settings: {}, inPlace: true },
  { title: 'template bounds (knativeInPlaceScaling: false)', settings: { knativeInPlaceScaling: 'false' }, inPlace: false },
];

for (const mode of modes) {
  describe(`scale windows with ${mode.title} (integration, controlled clock)`, function () {
    this.timeout(600_000);
    let op: RunningOperator | undefined;
    let clock: OffsetClock;
    let ns: string;

    after(async () => { await op?.stop(); });
    beforeEach(async () => {
      ns = await freshNamespace('windows');
      await op?.stop();
      clock = new OffsetClock(new Date('2026-11-23T06:00:00Z')); // Monday, 07:00 in Berlin: an hour before the window
      op = await startOperator(mode.settings, { clock });
      assert.equal(op.settings.inPlaceBounds, mode.inPlace, 'the operator sets bounds the way this suite tests');
    });

    /** Moves the clock to 2 s before the window opens and has the operator look again; it requeues itself at the opening. */
    function openSoon(): void {
      clock.jumpTo(new Date('2026-11-23T06:59:58Z'));
      op!.apps.controller.enqueueAll();
    }

    /**
     * Template bounds: a window transition makes a new revision of the same
     * version. Polls until the app serves a revision other than `from`; at
     * every look, any revision in the traffic the operator asks for or Knative
     * reports must be one Knative reports Ready. Returns how many looks saw the
     * new revision exist while not ready (the gate at work).
     */
    async function newRevisionRoutedOnlyWhenReady(from: string): Promise<{ revision: string; unreadyLooks: number }> {
      let unreadyLooks = 0;
      let revision = '';
      await waitFor('a new revision serving', async () => {
        const [k, revisions, a] = await Promise.all([getKsvc(ns, 'shop'), revisionsOf(ns), getApp(ns, 'shop')]);
        const ready = new Map(revisions.map((r) => [r.metadata.name, knativeReady(r)]));
        const routed = [...(k?.spec.traffic ?? []), ...(k?.status?.traffic ?? [])].filter((t) => t.percent > 0).map((t) => t.revisionName);
        // Read after the Service: a revision does not stop being Ready, so one that is Ready now may have been routed before.
        for (const r of routed) assert.ok(r && ready.get(r), `traffic to ${r}, which Knative does not report Ready`);
        const fresh = revisions.find((r) => r.metadata.name !== from);
        if (fresh && !knativeReady(fresh)) unreadyLooks++;
        revision = a.status?.versions?.stable?.revision ?? '';
        return revision !== from && readyTrue(a) && a.status?.observedGeneration === a.metadata.generation;
      }, { timeoutMs: 240_000, intervalMs: 100 });
      return { revision, unreadyLooks };
    }

    if (mode.inPlace) {
      it('raises min-scale on the live revision when the window opens (no new revision; Knative runs 3 pods), and reports the next transition', async () => {
        await applyApp(app(ns, 'shop', spec('1')));
        const before = await waitForApp(ns, 'shop', readyTrue, 'ready', READY_MS);
        const revision = before.status!.versions!.stable!.revision!;
        assert.equal(before.status?.scaling?.minScale, 0);
        assert.deepEqual(before.status?.scaling?.nextTransition, { at: '2026-11-23T07:00:00.000Z', window: 'business-hours', change: 'open', minScale: 3, maxScale: 10 });
        openSoon();
        const open = await waitForApp(ns, 'shop', (a) => a.status?.scaling?.openWindows?.includes('business-hours') ?? false, 'window open', SETTLE_MS);
        assert.equal(open.status?.scaling?.minScale, 3);
        assert.equal(open.status?.scaling?.nextTransition?.change, 'close');
        assert.equal(open.status?.scaling?.nextTransition?.at, '2026-11-23T08:00:00.000Z');
        assert.equal(await minScaleOf(ns, revision), '3');
        assert.equal(open.status?.versions?.stable?.revision, revision, 'no new revision, no new version');
        await knativeRuns(ns, revision, 3);
        assert.equal((await getKsvc(ns, 'shop'))?.status?.latestCreatedRevisionName, revision, 'Knative made no new revision');
        await knativeServes(ns, revision);
      });

      it('raises both stable and candidate during a canary, leaving the traffic Knative reports untouched', async () => {
        await applyApp(app(ns, 'shop', spec('1')));
        await waitForApp(ns, 'shop', readyTrue, 'ready', READY_MS);
        await applyApp(app(ns, 'shop', spec('2', { rollout: { canaryPercent: 20 } })));
        const canary = await waitForApp(ns, 'shop', (a) => a.status?.canary?.trafficPercent === 20, 'Knative serves the canary 20%', READY_MS);
        const { stable, candidate } = { stable: canary.status!.versions!.stable!.revision!, candidate: canary.status!.versions!.candidate!.revision! };
        await waitFor('Knative reports 80/20', async () => JSON.stringify(await reportedSplit(ns, 'shop')) === '{"stable":80,"candidate":20}', { timeoutMs: SETTLE_MS });
        openSoon();
        await waitForApp(ns, 'shop', (a) => a.status?.scaling?.minScale === 3, 'window open', SETTLE_MS);
        await waitFor('candidate raised', async () => (await minScaleOf(ns, candidate)) === '3' || undefined, { timeoutMs: SETTLE_MS });
        assert.equal(await minScaleOf(ns, stable), '3');
        await knativeRuns(ns, stable, 3);
        await knativeRuns(ns, candidate, 3);
        assert.deepEqual(await reportedSplit(ns, 'shop'), { stable: 80, candidate: 20 }, 'traffic untouched');
        const after = await getApp(ns, 'shop');
        assert.equal(after.status?.canary?.trafficPercent, 20, 'the canary neither advanced nor ended');
        assert.deepEqual([after.status?.versions?.stable?.revision, after.status?.versions?.candidate?.revision], [stable, candidate], 'no new revisions');
      });
    } else {
      it('makes a new revision of the same version with min-scale 3 when the window opens; traffic moves to it only once Knative reports it ready', async () => {
        await applyApp(app(ns, 'shop', spec('1')));
        const before = await waitForApp(ns, 'shop', readyTrue, 'ready', READY_MS);
        const first = before.status!.versions!.stable!.revision!;
        assert.equal((await getKsvc(ns, 'shop'))?.spec.template.metadata.annotations?.[MIN_SCALE], '0');
        assert.equal(await minScaleOf(ns, first), '0');
        openSoon();
        const { revision, unreadyLooks } = await newRevisionRoutedOnlyWhenReady(first);
        assert.ok(unreadyLooks > 0, 'the new revision was seen before it was ready (and got no traffic then)');
        const after = await getApp(ns, 'shop');
        assert.equal(after.status?.scaling?.minScale, 3);
        assert.equal(after.status?.versions?.stable?.version, before.status?.versions?.stable?.version, 'same version: no canary');
        assert.equal((await getKsvc(ns, 'shop'))?.spec.template.metadata.annotations?.[MIN_SCALE], '3');
        const rev = await getRevision(ns, revision);
        assert.equal(rev?.metadata.annotations?.[MIN_SCALE], '3', 'the bounds are in the new revision');
        assert.equal(rev?.metadata.labels?.[VERSION_LABEL], before.status?.versions?.stable?.version);
        assert.equal(await minScaleOf(ns, first), '0', 'the old revision is left as it was made');
        await knativeServes(ns, revision);
        await knativeRuns(ns, revision, 3);
      });
    }

    it('applies the window early by the prewarm lead time', async () => {
      clock.jumpTo(new Date('2026-11-23T06:57:00Z')); // 3 minutes before opening: inside the 5-minute lead
      await applyApp(app(ns, 'shop', spec('1', { prewarm: { leadTime: '5m' } })));
      const a = await waitForApp(ns, 'shop', (x) => readyTrue(x) && x.status?.scaling?.minScale === 3, 'raised early', READY_MS);
      assert.deepEqual(a.status?.scaling?.prewarmingWindows, ['business-hours']);
      assert.deepEqual(a.status?.scaling?.openWindows, []);
      const revision = a.status!.versions!.stable!.revision!;
      assert.equal(await minScaleOf(ns, revision), '3');
      if (!mode.inPlace) assert.equal((await getKsvc(ns, 'shop'))?.spec.template.metadata.annotations?.[MIN_SCALE], '3', 'in the template');
      await knativeRuns(ns, revision, 3);
    });

    it('goes back to zero when the window closes', async () => {
      clock.jumpTo(new Date('2026-11-23T07:30:00Z'));
      await applyApp(app(ns, 'shop', spec('1')));
      const open = await waitForApp(ns, 'shop', (a) => readyTrue(a) && a.status?.scaling?.minScale === 3, 'open', READY_MS);
      const revision = open.status!.versions!.stable!.revision!;
      assert.equal(await minScaleOf(ns, revision), '3');
      clock.jumpTo(new Date('2026-11-23T08:00:00Z'));
      op!.apps.controller.enqueueAll();
      const closed = await waitForApp(ns, 'shop', (a) => a.status?.scaling?.minScale === 0, 'closed', SETTLE_MS);
      assert.deepEqual(closed.status?.scaling?.openWindows, []);
      assert.equal(closed.status?.scaling?.nextTransition?.at, '2026-11-24T07:00:00.000Z', 'next opening on Tuesday');
      if (mode.inPlace) {
        await waitFor('min-scale 0 on the same revision', async () => (await minScaleOf(ns, revision)) === '0', { timeoutMs: SETTLE_MS });
        assert.equal((await getApp(ns, 'shop')).status?.versions?.stable?.revision, revision);
      } else {
        const { revision: next } = await newRevisionRoutedOnlyWhenReady(revision);
        assert.equal(await minScaleOf(ns, next), '0');
        assert.equal((await getKsvc(ns, 'shop'))?.spec.template.metadata.annotations?.[MIN_SCALE], '0');
        await knativeServes(ns, next);
      }
    });

    it('after a restart inside a window: the same effective scale and no writes', async () => {
      clock.jumpTo(new Date('2026-11-23T07:30:00Z'));
      await applyApp(app(ns, 'shop', spec('1')));
      // Settled: Knative runs the 3 replicas and the status says so, so the data plane gives nothing new to report.
      await waitForApp(ns, 'shop', (a) => readyTrue(a) && a.status?.scaling?.minScale === 3 && a.status?.versions?.stable?.replicas === 3
        && condition(a, 'WorkloadReady')?.status === 'True', 'open, 3 replicas', READY_MS);
      await waitIdle(op!.manager);
      const before = await getApp(ns, 'shop');
      await op!.stop();
      const since = new Date();
      op = await startOperator(mode.settings, { clock });
      await waitIdle(op.manager);
      // "No write" cannot be waited for: an idle queue says the restart's first pass is done;
      // the window after it catches a requeue or an event that pass caused.
      const running = op;
      await assertNoWrites({ what: 'operator writes after a restart inside a window', namespace: ns, userAgentPrefix: 'serverlessapp-operator', since, windowMs: 3_000,
        control: (marker) => running.manager.client.create(Kinds.ConfigMap, marker) });
      const after = await getApp(ns, 'shop');
      assert.equal(after.status?.scaling?.minScale, 3);
      assert.deepEqual(after.status, before.status);
    });

    if (mode.inPlace) {
      it('model apps: the window raises the InferenceService\'s minReplicas, and KServe carries it to its predictor', async () => {
        interface Isvc { spec: { predictor: { minReplicas?: number } } }
        await applyApp(app(ns, 'fraud', { model: { format: { name: 'sklearn' }, storageUri: 'gs://m/v1' }, scaling: { minScale: 0, maxScale: 10, windows: [day] } }));
        await waitForApp(ns, 'fraud', readyTrue, 'model ready', READY_MS);
        assert.equal((await userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud'))?.spec.predictor.minReplicas, 0);
        openSoon();
        await waitForApp(ns, 'fraud', (a) => a.status?.scaling?.minScale === 3, 'window open', SETTLE_MS);
        await waitFor('minReplicas raised', async () => (await userClient().get<Isvc>(Kinds.InferenceService, ns, 'fraud'))?.spec.predictor.minReplicas === 3 || undefined, { timeoutMs: SETTLE_MS });
        await waitFor('KServe sets min-scale 3 on its predictor', async () => (await getKsvc(ns, 'fraud-predictor'))?.spec.template.metadata.annotations?.[MIN_SCALE] === '3', { timeoutMs: SETTLE_MS });
      });
    }
  });
}
