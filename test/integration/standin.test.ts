// The SIMULATED Knative/KServe stand-ins against the real API server with the
// upstream CRDs: what they write for Knative Services and InferenceServices.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient, resourcePath } from '../standin/kube.ts';
import { KSVC, REVISION } from '../standin/knative.ts';
import { ISVC } from '../standin/kserve.ts';
import { startStandins, type Standins } from '../standin/standin.ts';
import { freshNamespace, testEnv, waitFor, writesSince } from '../support/cluster.ts';

const cond = (obj: any, type: string) => obj?.status?.conditions?.find((c: any) => c.type === type);
const ready = (obj: any) => cond(obj, 'Ready')?.status === 'True';

describe('Knative and KServe stand-ins (integration)', function () {
  this.timeout(60_000);
  let standins: Standins;
  let client: KubeClient;
  let ns: string;

  before(async () => {
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), readyDelayMs: 100 });
    client = new KubeClient(testEnv().kubeConfig(), 'standin-integration-test');
  });
  after(async () => {
    await standins?.stop();
    await client?.close();
  });
  beforeEach(async () => { ns = await freshNamespace('standin'); });

  const get = (r: typeof KSVC, name: string) => client.get(resourcePath(r, ns, name)).catch(() => undefined);
  const until = <T>(fn: () => Promise<T | undefined | false>, message: string) => waitFor(fn, { timeoutMs: 15_000, message });
  const ksvc = (template: any, traffic?: any[]) => ({
    apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'shop', namespace: ns }, spec: { template, ...(traffic ? { traffic } : {}) },
  });
  const template = (name: string, image: string, annotations: Record<string, string> = {}) => ({ metadata: { name, annotations }, spec: { containers: [{ image }] } });
  const applyKsvc = (obj: any) => client.apply(resourcePath(KSVC, ns, 'shop'), obj);

  it('creates a BYO-named Revision, makes it Ready and reports the route, writing only status and its revisions', async () => {
    const since = new Date(Date.now() - 1_000);
    await applyKsvc(ksvc(template('shop-v1', 'shop:1'), [{ revisionName: 'shop-v1', percent: 100, tag: 'stable' }]));
    const svc = await until(async () => { const s = await get(KSVC, 'shop'); return ready(s) && s; }, 'ksvc Ready');
    assert.equal(svc.status.latestCreatedRevisionName, 'shop-v1');
    assert.equal(svc.status.latestReadyRevisionName, 'shop-v1');
    assert.equal(svc.status.url, `http://shop.${ns}.example.com`);
    assert.deepEqual(svc.status.address, { url: `http://shop.${ns}.svc.cluster.local` });
    assert.deepEqual(svc.status.traffic, [{ tag: 'stable', revisionName: 'shop-v1', latestRevision: false, percent: 100, url: `http://stable-shop.${ns}.example.com` }]);
    assert.equal(svc.status.observedGeneration, svc.metadata.generation);

    const rev = await get(REVISION, 'shop-v1');
    assert.ok(ready(rev));
    assert.equal(rev.metadata.labels['serving.knative.dev/service'], 'shop');
    assert.equal(rev.metadata.labels['serving.knative.dev/routingState'], 'active');
    assert.equal(rev.metadata.ownerReferences[0].uid, svc.metadata.uid);
    assert.equal(rev.status.actualReplicas, 1, 'one replica while it has traffic');

    const writes = writesSince(since, 'knative-standin').filter((w) => w.namespace === ns);
    assert.ok(writes.length > 0, 'the stand-in writes under its own User-Agent');
    for (const w of writes) {
      assert.ok(w.resource === 'revisions' || (w.resource === 'services' && w.subresource === 'status'), `${w.verb} ${w.resource}/${w.subresource ?? ''}`);
    }
  });

  it('keeps traffic pinned to the old revision, scales an unrouted new one by Knative reachability, and follows in-place min-scale edits', async () => {
    await applyKsvc(ksvc(template('shop-v1', 'shop:1'), [{ revisionName: 'shop-v1', percent: 100 }]));
    await until(async () => ready(await get(KSVC, 'shop')), 'v1 Ready');

    await applyKsvc(ksvc(template('shop-v2', 'shop:2', { 'autoscaling.knative.dev/min-scale': '3' }), [{ revisionName: 'shop-v1', percent: 100 }]));
    const v2 = await until(async () => { const r = await get(REVISION, 'shop-v2'); return ready(r) && r.metadata.labels['serving.knative.dev/routingState'] === 'reserve' && r; }, 'v2 Ready and reserve');
    assert.equal(v2.status.actualReplicas, 0, 'min-scale does not hold an unrouted (reserve) revision');
    const svc = await until(async () => { const s = await get(KSVC, 'shop'); return s?.status?.latestCreatedRevisionName === 'shop-v2' && s; }, 'v2 latest created');
    assert.deepEqual(svc.status.traffic.map((t: any) => [t.revisionName, t.percent]), [['shop-v1', 100]]);
    assert.equal(svc.status.latestReadyRevisionName, 'shop-v2');

    await applyKsvc(ksvc(template('shop-v2', 'shop:2', { 'autoscaling.knative.dev/min-scale': '3' }), [
      { revisionName: 'shop-v1', percent: 100, tag: 'stable' }, { revisionName: 'shop-v2', percent: 0, tag: 'candidate' },
    ]));
    await until(async () => (await get(REVISION, 'shop-v2'))?.status?.actualReplicas === 3, 'v2 routed at 0% holds min-scale 3');

    await client.mergePatch(resourcePath(REVISION, ns, 'shop-v2'), { metadata: { annotations: { 'autoscaling.knative.dev/min-scale': '1' } } });
    await until(async () => (await get(REVISION, 'shop-v2'))?.status?.actualReplicas === 1, 'v2 follows min-scale 1 edited on the Revision');
    await client.mergePatch(resourcePath(REVISION, ns, 'shop-v2'), { metadata: { annotations: { 'autoscaling.knative.dev/min-scale': '0' } } });
    await until(async () => (await get(REVISION, 'shop-v2'))?.status?.actualReplicas === 0, 'v2 at 0% with min-scale 0 scales to zero');
    assert.equal((await get(REVISION, 'shop-v1')).status.actualReplicas, 1);
  });

  it('reports a traffic target that does not exist with Knative\'s message and keeps the last good route', async () => {
    await applyKsvc(ksvc(template('shop-v1', 'shop:1'), [{ revisionName: 'shop-v1', percent: 100 }]));
    await until(async () => ready(await get(KSVC, 'shop')), 'v1 Ready');
    await applyKsvc(ksvc(template('shop-v1', 'shop:1'), [{ revisionName: 'shop-nope', percent: 100 }]));
    const svc = await until(async () => { const s = await get(KSVC, 'shop'); return cond(s, 'RoutesReady')?.status === 'False' && s; }, 'RoutesReady False');
    assert.equal(cond(svc, 'RoutesReady').reason, 'RevisionMissing');
    assert.equal(cond(svc, 'RoutesReady').message, 'Revision "shop-nope" referenced in traffic not found.');
    assert.deepEqual(svc.status.traffic.map((t: any) => t.revisionName), ['shop-v1']);
  });

  it('never makes an "unready" image Ready, and holds a revision until released', async () => {
    await applyKsvc(ksvc(template('shop-v1', 'shop:unready')));
    await until(async () => get(REVISION, 'shop-v1'), 'revision created');
    await sleep(600);
    const rev = await get(REVISION, 'shop-v1');
    assert.equal(cond(rev, 'Ready')?.status, 'Unknown');
    assert.equal(cond(rev, 'Ready')?.reason, 'Deploying');
    const svc = await get(KSVC, 'shop');
    assert.equal(cond(svc, 'Ready')?.status, 'Unknown');
    assert.equal(cond(svc, 'RoutesReady')?.message, 'Configuration "shop" is waiting for a Revision to become ready.');

    standins.knative.hold(ns, 'shop-v2');
    await applyKsvc(ksvc(template('shop-v2', 'shop:2')));
    await until(async () => get(REVISION, 'shop-v2'), 'v2 created');
    await sleep(500);
    assert.equal(cond(await get(REVISION, 'shop-v2'), 'Ready')?.status, 'Unknown', 'held');
    standins.knative.release(ns, 'shop-v2');
    await until(async () => ready(await get(KSVC, 'shop')), 'ksvc Ready once v2 is released');
  });

  it('stands in for garbage collection: a Service deleted and re-created gets a fresh revision of the same name', async () => {
    await applyKsvc(ksvc(template('shop-v1', 'shop:1'), [{ revisionName: 'shop-v1', percent: 100 }]));
    const first = await until(async () => { const r = await get(REVISION, 'shop-v1'); return ready(r) && r; }, 'v1 Ready');
    await client.delete(resourcePath(KSVC, ns, 'shop'));
    await applyKsvc(ksvc(template('shop-v1', 'shop:1'), [{ revisionName: 'shop-v1', percent: 100 }]));
    const svc = await until(async () => { const s = await get(KSVC, 'shop'); return ready(s) && s; }, 're-created ksvc Ready');
    const again = await get(REVISION, 'shop-v1');
    assert.notEqual(again.metadata.uid, first.metadata.uid);
    assert.equal(again.metadata.ownerReferences[0].uid, svc.metadata.uid);
  });

  describe('KServe', () => {
    const isvc = (storageUri: string, predictor: any = {}) => ({
      apiVersion: 'serving.kserve.io/v1beta1', kind: 'InferenceService',
      metadata: { name: 'iris', namespace: ns, annotations: { 'serving.kserve.io/enable-tag-routing': 'true' } },
      spec: { predictor: { minReplicas: 1, model: { modelFormat: { name: 'sklearn' }, storageUri }, ...predictor } },
    });
    const applyIsvc = (obj: any) => client.apply(resourcePath(ISVC, ns, 'iris'), obj);
    const predictorStatus = async () => (await get(ISVC, 'iris'))?.status?.components?.predictor;

    it('turns an InferenceService into a predictor Knative Service, a revision, and a Ready ISVC with a URL', async () => {
      await applyIsvc(isvc('gs://models/iris/v1'));
      const i = await until(async () => { const x = await get(ISVC, 'iris'); return ready(x) && x.status.modelStatus?.transitionStatus === 'UpToDate' && x; }, 'ISVC Ready');
      assert.equal(i.status.url, `http://iris.${ns}.example.com`);
      assert.equal(i.status.deploymentMode, 'Knative');
      assert.equal(i.status.components.predictor.latestReadyRevision, 'iris-predictor-00001');
      assert.equal(i.status.components.predictor.latestRolledoutRevision, 'iris-predictor-00001');
      const k = await get(KSVC, 'iris-predictor');
      assert.equal(k.metadata.ownerReferences[0].uid, i.metadata.uid);
      assert.equal(k.spec.template.metadata.annotations['autoscaling.knative.dev/min-scale'], '1');
      assert.equal(i.status.observedGeneration, k.status.observedGeneration, 'observedGeneration copied from the ksvc, as KServe does');
    });

    it('splits 20/80 against the previously rolled-out revision after a model change, and promotes when the percent is removed', async () => {
      await applyIsvc(isvc('gs://models/iris/v1'));
      await until(async () => ready(await get(ISVC, 'iris')), 'v1 Ready');

      await applyIsvc(isvc('gs://models/iris/v2', { canaryTrafficPercent: 20 }));
      const split = await until(async () => {
        const p = await predictorStatus();
        return p?.latestReadyRevision === 'iris-predictor-00002' && p.traffic?.length === 2 && p;
      }, '20/80 split');
      assert.deepEqual(split.traffic.map((t: any) => [t.revisionName, t.percent, t.tag]), [['iris-predictor-00002', 20, 'latest'], ['iris-predictor-00001', 80, 'prev']]);
      assert.equal(split.latestRolledoutRevision, 'iris-predictor-00001');

      await applyIsvc(isvc('gs://models/iris/v2'));
      const promoted = await until(async () => { const p = await predictorStatus(); return p?.latestRolledoutRevision === 'iris-predictor-00002' && p; }, 'promoted');
      assert.equal(promoted.previousRolledoutRevision, 'iris-predictor-00001');
      assert.deepEqual(promoted.traffic.map((t: any) => [t.revisionName, t.percent]), [['iris-predictor-00002', 100]]);
    });
  });
});
