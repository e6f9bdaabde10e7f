// A container app on the rig's real Knative Serving 1.21 (controller, webhooks,
// autoscaler) with KWOK pods: what the operator renders, what Knative makes of
// it and reports back, bad input, drift, and steady state.
import assert from 'node:assert/strict';
import { Kinds } from '../../src/util/kinds.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { app, applyApp, condition, getApp, getKsvc, getRevision, knativeReady, readyTrue, reportedSplit, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { writeLabel } from '../envtest/audit.ts';
import { assertNoWrites, freshNamespace, writesSince } from '../support/cluster.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';
import { waitIdle } from '../support/idle.ts';

const spec = (image = 'ghcr.io/acme/shop:1.4.0', extra: Partial<AppSpec> = {}): AppSpec => ({
  container: { image, port: 8080 }, scaling: { minScale: 0, maxScale: 5 }, ...extra,
});

/** Reconciles the operator's controller has finished, from its metrics. */
async function reconcileCount(op: RunningOperator): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${op.manager.ports.metrics}/metrics`)).text();
  return [...text.matchAll(/^controller_runtime_reconcile_total\{controller="serverlessapp",[^}]*\} (\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('container app on the real Knative (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let ns: string;

  before(async () => { op = await startOperator(); });
  after(async () => { await op?.stop(); });
  beforeEach(async () => { ns = await freshNamespace('sapp'); });

  it('renders a Knative Service and reports Ready=True with the URL once Knative reports the Service ready', async () => {
    const since = new Date();
    const created = await applyApp(app(ns, 'shop', spec()));
    // Created, the app reads as the CRD's default status: in progress for kstatus and kubectl until the operator reports.
    assert.deepEqual(created.status, { observedGeneration: 0, phase: 'Pending' });
    // Its first reconcile reports at once: Ready Unknown, Reconciling, the generation observed.
    const first = await waitForApp(ns, 'shop', (x) => x.status?.observedGeneration === 1, 'the first report', SETTLE_MS);
    assert.ok(readyTrue(first) || (condition(first, 'Ready')?.status === 'Unknown' && condition(first, 'Reconciling')?.reason === 'Deploying'), JSON.stringify(first.status?.conditions));
    const a = await waitForApp(ns, 'shop', readyTrue, 'app Ready', READY_MS);
    // A quiet first start is reported at its start and at its end: from creation to Ready the operator wrote three times.
    const writes = writesSince(since, 'serverlessapp-operator').filter((w) => w.namespace === ns && w.resource !== 'events').map(writeLabel);
    assert.deepEqual(writes, ['patch services', 'patch serverlessapps/status', 'patch serverlessapps/status'], 'operator writes from creation to Ready');
    assert.equal(condition(a, 'Reconciling'), undefined, 'Reconciling absent once served');
    const ksvc = await getKsvc(ns, 'shop');
    assert.ok(ksvc, 'Knative Service rendered');
    // Knative reports a split before its ingress is programmed; its Ready waits for the route (RoutesReady).
    assert.ok(knativeReady(ksvc), `Knative reports the Service Ready: ${JSON.stringify(ksvc.status?.conditions)}`);
    assert.equal(condition(a, 'WorkloadReady')?.status, 'True');
    const revision = ksvc.spec.template.metadata.name;
    assert.equal(ksvc.spec.template.spec.containers[0]!.image, 'ghcr.io/acme/shop:1.4.0');
    assert.match(revision, /^shop-[0-9a-f]{8}$/);
    assert.equal(ksvc.spec.template.metadata.annotations?.['autoscaling.knative.dev/metric'], 'concurrency');
    assert.equal((ksvc.metadata.ownerReferences as Array<{ kind: string }>)[0]?.kind, 'ServerlessApp');
    assert.equal(ksvc.status?.latestReadyRevisionName, revision, 'Knative made the revision the operator named, and reports it ready');
    assert.ok(knativeReady(await getRevision(ns, revision)));
    assert.deepEqual(ksvc.status?.traffic?.map((t) => [t.revisionName, t.percent, t.tag]), [[revision, 100, 'stable']], 'Knative routes all traffic to it');
    assert.equal(a.status?.url, ksvc.status?.url, 'the URL Knative reports');
    assert.equal(a.status?.url, `http://shop.${ns}.svc.cluster.local`, 'cluster-local by default: no route on Knative\'s external domain');
    assert.equal(ksvc.metadata.labels?.['networking.knative.dev/visibility'], 'cluster-local');
    assert.equal(a.status?.phase, 'Stable');
    assert.equal(a.status?.versions?.stable?.revision, revision);
    assert.deepEqual(a.status?.traffic?.map((t) => [t.revision, t.percent, t.tag]), [[revision, 100, 'stable']]);
    assert.equal(condition(a, 'Promoted')?.status, 'True');
  });

  it('gives a new image a new revision name and Knative moves all traffic to it once it is ready', async () => {
    await applyApp(app(ns, 'shop', spec()));
    const v1 = await waitForApp(ns, 'shop', readyTrue, 'v1 ready', READY_MS);
    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:1.5.0')));
    const v2 = await waitForApp(ns, 'shop', (a) => a.status?.versions?.stable?.image === 'ghcr.io/acme/shop:1.5.0' && readyTrue(a), 'v2 stable', READY_MS);
    const revision = v2.status!.versions!.stable!.revision!;
    assert.notEqual(revision, v1.status?.versions?.stable?.revision);
    assert.notEqual(v2.status?.versions?.stable?.version, v1.status?.versions?.stable?.version);
    assert.ok(knativeReady(await getRevision(ns, revision)), 'Knative reports the new revision Ready');
    // v2 is stable once Knative routes all traffic to it (under the candidate tag); then it becomes the stable tag alone.
    assert.equal(v2.status?.traffic?.find((t) => t.revision === revision)?.percent, 100, 'status.traffic: all on v2 as Knative reports it');
    await waitFor('Knative routes all traffic to v2 under the stable tag, v1 no longer', async () => {
      const k = await getKsvc(ns, 'shop');
      return k?.status?.traffic?.map((t) => `${t.revisionName}=${t.percent}:${t.tag}`).join() === `${revision}=100:stable`;
    }, { timeoutMs: SETTLE_MS });
  });

  it('changing only scaling starts no new version and no new revision: Knative scales the live revision to the new minimum', async () => {
    await applyApp(app(ns, 'shop', spec()));
    const before = await waitForApp(ns, 'shop', readyTrue, 'ready', READY_MS);
    const revision = before.status!.versions!.stable!.revision!;
    await applyApp(app(ns, 'shop', spec(undefined, { scaling: { minScale: 2, maxScale: 5 } })));
    const after = await waitForApp(ns, 'shop', (a) => a.status?.scaling?.minScale === 2, 'scale applied', SETTLE_MS);
    assert.equal(after.status?.versions?.stable?.revision, revision);
    assert.equal(after.status?.versions?.candidate, undefined);
    const rev = await getRevision(ns, revision);
    assert.equal(rev?.metadata.annotations?.['autoscaling.knative.dev/min-scale'], '2', 'bounds set in place on the live revision');
    // Knative (>= 1.21) carries the edit to the revision's autoscaler: two pods, reported on the Revision and in the app's status.
    await waitFor('Knative runs 2 replicas of the same revision', async () => (await getRevision(ns, revision))?.status?.actualReplicas === 2, { timeoutMs: 90_000 });
    await waitForApp(ns, 'shop', (a) => a.status?.versions?.stable?.replicas === 2, 'status reports 2 replicas', SETTLE_MS);
    assert.equal((await getKsvc(ns, 'shop'))?.status?.latestCreatedRevisionName, revision, 'no new revision');
  });

  describe('bad input', () => {
    const rejects = async (s: unknown, pattern: RegExp) => {
      await assert.rejects(applyApp(app(ns, 'bad', s as AppSpec)), (e: Error) => {
        assert.match(e.message, pattern);
        return true;
      });
    };

    it('rejects at admission, naming the field: both or neither of container/model', async () => {
      await rejects({ container: { image: 'a' }, model: { format: { name: 'sklearn' }, storageUri: 'gs://b/m' } }, /exactly one of container or model/);
      await rejects({ scaling: { minScale: 1 } }, /exactly one of container or model/);
    });

    it('rejects minScale > maxScale, out-of-range percentages, bad durations, hosts and paths', async () => {
      await rejects({ container: { image: 'a' }, scaling: { minScale: 5, maxScale: 2 } }, /spec\.scaling\.minScale.*minScale must be <= maxScale/);
      await rejects({ container: { image: 'a' }, rollout: { canaryPercent: 150 } }, /spec\.rollout\.canaryPercent/);
      await rejects({ container: { image: 'a' }, scaling: { scaleToZeroAfter: 'soon' } }, /spec\.scaling\.scaleToZeroAfter/);
      await rejects({ container: { image: 'a' }, ingress: { hosts: ['Not A Host!'] } }, /spec\.ingress\.hosts\[0\]/);
      await rejects({ container: { image: 'a' }, prewarm: { warmup: { path: 'no-slash' } } }, /spec\.prewarm\.warmup\.path/);
      await rejects({ container: { image: 'a', port: 'http' } }, /spec\.container\.port/);
    });

    it('flags a bad cron as InvalidSchedule naming the window, and leaves the running service as it was', async () => {
      await applyApp(app(ns, 'shop', spec()));
      const good = await waitForApp(ns, 'shop', readyTrue, 'ready', READY_MS);
      const ksvcBefore = await getKsvc(ns, 'shop');
      const since = new Date();
      await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:9.9.9', { scaling: { windows: [{ name: 'day', schedule: '0 25 * * *', duration: '8h', minScale: 2 }] } })));
      const bad = await waitForApp(ns, 'shop', (a) => condition(a, 'Ready')?.reason === 'InvalidSchedule', 'InvalidSchedule', SETTLE_MS);
      assert.match(condition(bad, 'Ready')!.message, /spec\.scaling\.windows\[0\]\.schedule: window "day"/);
      const ksvcAfter = await getKsvc(ns, 'shop');
      // Knative writes the Service's status as it likes; its spec (generation) is the operator's.
      assert.equal(ksvcAfter?.metadata.generation, ksvcBefore?.metadata.generation, 'Knative Service spec untouched');
      assert.deepEqual(writesSince(since, 'serverlessapp-operator').filter((w) => w.namespace === ns && w.resource !== 'serverlessapps' && w.resource !== 'events'), [], 'no write to a child');
      assert.equal(bad.status?.versions?.stable?.revision, good.status?.versions?.stable?.revision);
      assert.deepEqual(await reportedSplit(ns, 'shop'), { stable: 100 }, 'Knative keeps serving the stable revision');
    });
  });

  it('restores a Knative Service edited by hand (a new image and revision), and leaves fields owned by another manager alone', async () => {
    await applyApp(app(ns, 'shop', spec()));
    const ready = await waitForApp(ns, 'shop', readyTrue, 'ready', READY_MS);
    const revision = ready.status!.versions!.stable!.revision!;
    const other = new KubeClient(testKubeConfig(), { fieldManager: 'someone-else', userAgent: 'someone-else' });
    // A hand edit of fields we own (the image, with the new revision name Knative requires for it),
    // and a field we never set (an annotation).
    await other.apply({
      apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'shop', namespace: ns, annotations: { 'team.example.com/owner': 'alice' } },
      spec: { template: { metadata: { name: 'shop-by-hand' }, spec: { containers: [{ image: 'ghcr.io/evil/shop:latest' }] } } },
    });
    const restored = await waitFor('template restored', async () => {
      const k = await getKsvc(ns, 'shop');
      return k?.spec.template.metadata.name === revision && k.spec.template.spec.containers[0]?.image === 'ghcr.io/acme/shop:1.4.0' ? k : undefined;
    }, { timeoutMs: SETTLE_MS });
    assert.equal(restored.metadata.annotations?.['team.example.com/owner'], 'alice', 'the other manager\'s field is kept');
    // Knative serves the operator's revision again, and the app never left it.
    await waitFor('Knative routes all traffic to the operator\'s revision', async () => {
      const k = await getKsvc(ns, 'shop');
      return knativeReady(k) && k?.status?.observedGeneration === k?.metadata.generation
        && k?.status?.traffic?.map((t) => `${t.revisionName}=${t.percent}`).join() === `${revision}=100`;
    }, { timeoutMs: SETTLE_MS });
    const a = await waitForApp(ns, 'shop', readyTrue, 'still Ready', SETTLE_MS);
    assert.equal(a.status?.versions?.stable?.revision, revision);
  });

  it('recreates a Knative Service deleted by hand, and Knative serves it again', async () => {
    await applyApp(app(ns, 'shop', spec()));
    const ready = await waitForApp(ns, 'shop', readyTrue, 'ready', READY_MS);
    const revision = ready.status!.versions!.stable!.revision!;
    const first = await getKsvc(ns, 'shop');
    await userClient().delete(Kinds.KnativeService, ns, 'shop');
    const again = await waitFor('Knative Service recreated', async () => {
      const k = await getKsvc(ns, 'shop');
      return k && k.metadata.uid !== first?.metadata.uid ? k : undefined;
    }, { timeoutMs: SETTLE_MS });
    assert.equal(again.spec.template.metadata.name, revision, 'the same revision name for the same version');
    // The garbage collector removes the old Revision; Knative then makes the revision again under the new Service.
    await waitFor('the recreated Service Ready, serving the revision', async () => {
      const k = await getKsvc(ns, 'shop');
      return knativeReady(k) && k?.metadata.uid === again.metadata.uid && k?.status?.traffic?.[0]?.revisionName === revision;
    }, { timeoutMs: READY_MS });
    const a = await waitForApp(ns, 'shop', readyTrue, 'app Ready again', SETTLE_MS);
    assert.equal(a.status?.versions?.stable?.revision, revision);
  });

  it('makes no writes in steady state, even across a forced full resync', async () => {
    // minScale 1: Knative keeps the pod, so nothing in the data plane changes meanwhile.
    await applyApp(app(ns, 'shop', spec(undefined, { scaling: { minScale: 1, maxScale: 5 } })));
    await waitForApp(ns, 'shop', (a) => readyTrue(a) && condition(a, 'WorkloadReady')?.status === 'True' && a.status?.versions?.stable?.replicas === 1, 'ready', READY_MS);
    await waitIdle(op.manager);
    const since = new Date();
    const reconciled = await reconcileCount(op);
    op.manager.informer(Kinds.ServerlessApp).resync();
    await waitIdle(op.manager);
    assert.ok(await reconcileCount(op) > reconciled, 'the resync reconciled the apps again');
    // "No write" cannot be waited for: a bounded window after the queue is idle catches a
    // requeue or an event the resync caused.
    await assertNoWrites({ what: 'operator writes during a resync of a converged app', namespace: ns, userAgentPrefix: 'serverlessapp-operator', since, windowMs: 3_000,
      control: (marker) => op.manager.client.create(Kinds.ConfigMap, marker) });
    assert.ok(readyTrue(await getApp(ns, 'shop')));
  });
});
