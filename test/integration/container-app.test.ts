import assert from 'node:assert/strict';
import { Kinds } from '../../src/runtime/kinds.ts';
import { startStandins } from '../standin/standin.ts';
import { app, applyApp, condition, eventually, getApp, getKsvc, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, writesSince } from '../support/cluster.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';

const spec = (image = 'ghcr.io/acme/shop:1.4.0', extra: Partial<AppSpec> = {}): AppSpec => ({
  container: { image, port: 8080 }, scaling: { minScale: 0, maxScale: 5 }, ...extra,
});

describe('container app on Knative (integration)', function () {
  this.timeout(90_000);
  let op: RunningOperator;
  let standins: Awaited<ReturnType<typeof startStandins>>;
  let ns: string;

  before(async () => {
    standins = await startStandins({ kubeConfig: testKubeConfig(), readyDelayMs: 100 });
    op = await startOperator();
  });
  after(async () => {
    await op?.stop();
    await standins?.stop();
  });
  beforeEach(async () => { ns = await freshNamespace('sapp'); });

  it('renders a Knative Service and reports Ready=True with the URL once the stand-in marks it ready', async () => {
    await applyApp(app(ns, 'shop', spec()));
    const a = await waitForApp(ns, 'shop', readyTrue, 'app Ready');
    const ksvc = await getKsvc(ns, 'shop');
    assert.ok(ksvc, 'Knative Service rendered');
    assert.equal(ksvc.spec.template.spec.containers[0]!.image, 'ghcr.io/acme/shop:1.4.0');
    assert.match(ksvc.spec.template.metadata.name, /^shop-[0-9a-f]{8}$/);
    assert.equal(ksvc.spec.template.metadata.annotations?.['autoscaling.knative.dev/metric'], 'concurrency');
    assert.equal((ksvc.metadata.ownerReferences as Array<{ kind: string }>)[0]?.kind, 'ServerlessApp');
    assert.equal(a.status?.url, `http://shop.${ns}.example.com`);
    assert.equal(a.status?.phase, 'Stable');
    assert.equal(a.status?.versions?.stable?.revision, ksvc.spec.template.metadata.name);
    assert.deepEqual(a.status?.traffic?.map((t) => [t.revision, t.percent, t.tag]), [[ksvc.spec.template.metadata.name, 100, 'stable']]);
    assert.equal(condition(a, 'Promoted')?.status, 'True');
  });

  it('gives a new image a new revision name and moves all traffic to it once it is ready', async () => {
    await applyApp(app(ns, 'shop', spec()));
    const v1 = await waitForApp(ns, 'shop', readyTrue, 'v1 ready');
    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:1.5.0')));
    const v2 = await waitForApp(ns, 'shop', (a) => a.status?.versions?.stable?.image === 'ghcr.io/acme/shop:1.5.0' && readyTrue(a), 'v2 stable');
    assert.notEqual(v2.status?.versions?.stable?.revision, v1.status?.versions?.stable?.revision);
    assert.notEqual(v2.status?.versions?.stable?.version, v1.status?.versions?.stable?.version);
    const ksvc = await getKsvc(ns, 'shop');
    assert.deepEqual(ksvc?.spec.traffic, [{ revisionName: v2.status?.versions?.stable?.revision, percent: 100, tag: 'stable' }]);
  });

  it('changing only scaling starts no new version and no new revision', async () => {
    await applyApp(app(ns, 'shop', spec()));
    const before = await waitForApp(ns, 'shop', readyTrue, 'ready');
    await applyApp(app(ns, 'shop', spec(undefined, { scaling: { minScale: 2, maxScale: 5 } })));
    const after = await waitForApp(ns, 'shop', (a) => a.status?.scaling?.minScale === 2, 'scale applied');
    assert.equal(after.status?.versions?.stable?.revision, before.status?.versions?.stable?.revision);
    assert.equal(after.status?.versions?.candidate, undefined);
    const rev = await userClient().get<{ metadata: { annotations?: Record<string, string> } }>(Kinds.KnativeRevision, ns, before.status!.versions!.stable!.revision!);
    assert.equal(rev?.metadata.annotations?.['autoscaling.knative.dev/min-scale'], '2', 'bounds set in place on the live revision');
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
      const good = await waitForApp(ns, 'shop', readyTrue, 'ready');
      const ksvcBefore = await getKsvc(ns, 'shop');
      await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:9.9.9', { scaling: { windows: [{ name: 'day', schedule: '0 25 * * *', duration: '8h', minScale: 2 }] } })));
      const bad = await waitForApp(ns, 'shop', (a) => condition(a, 'Ready')?.reason === 'InvalidSchedule', 'InvalidSchedule');
      assert.match(condition(bad, 'Ready')!.message, /spec\.scaling\.windows\[0\]\.schedule: window "day"/);
      const ksvcAfter = await getKsvc(ns, 'shop');
      assert.equal(ksvcAfter?.metadata.resourceVersion, ksvcBefore?.metadata.resourceVersion, 'Knative Service untouched');
      assert.equal(bad.status?.versions?.stable?.revision, good.status?.versions?.stable?.revision);
    });
  });

  it('restores a Knative Service edited by hand, and leaves fields owned by another manager alone', async () => {
    await applyApp(app(ns, 'shop', spec()));
    await waitForApp(ns, 'shop', readyTrue, 'ready');
    const ksvc = (await getKsvc(ns, 'shop'))!;
    const other = new (await import('../../src/runtime/client.ts')).KubeClient(testKubeConfig(), { fieldManager: 'someone-else', userAgent: 'someone-else' });
    // A hand edit of a field we own (the image), and a field we never set (an annotation).
    await other.apply({
      apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'shop', namespace: ns, annotations: { 'team.example.com/owner': 'alice' } },
      spec: { template: { metadata: { name: ksvc.spec.template.metadata.name }, spec: { containers: [{ image: 'evil:latest' }] } } },
    });
    const restored = await eventually(async () => {
      const k = await getKsvc(ns, 'shop');
      return k?.spec.template.spec.containers[0]?.image === 'ghcr.io/acme/shop:1.4.0' ? k : undefined;
    }, 'image restored');
    assert.equal(restored.metadata.annotations?.['team.example.com/owner'], 'alice', 'the other manager\'s field is kept');
  });

  it('recreates a Knative Service deleted by hand', async () => {
    await applyApp(app(ns, 'shop', spec()));
    await waitForApp(ns, 'shop', readyTrue, 'ready');
    await userClient().delete(Kinds.KnativeService, ns, 'shop');
    await eventually(async () => (await getKsvc(ns, 'shop')) ? true : undefined, 'Knative Service recreated');
  });

  it('makes no writes in steady state, even across a forced full resync', async () => {
    await applyApp(app(ns, 'shop', spec()));
    await waitForApp(ns, 'shop', readyTrue, 'ready');
    await op.manager.waitIdle();
    await new Promise((r) => setTimeout(r, 500));
    const since = new Date();
    op.manager.informer(Kinds.ServerlessApp).resync();
    await new Promise((r) => setTimeout(r, 300));
    await op.manager.waitIdle();
    await new Promise((r) => setTimeout(r, 1000));
    const writes = (await writesSince(since, 'serverlessapp-operator')).filter((w) => w.namespace === ns);
    assert.deepEqual(writes, [], 'operator writes during a resync of a converged app');
    assert.ok(readyTrue(await getApp(ns, 'shop')));
  });
});
