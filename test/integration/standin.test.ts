// What is left of the SIMULATED Knative/KServe stand-ins beside the rig's real
// Knative Serving and KServe: their Knative half and their InferenceService
// half switch themselves off (the real controllers own those objects), and
// their LocalModelCache half still writes the cache status that KServe's
// separate local-model controller would (it does not run in the rig).
import assert from 'node:assert/strict';
import { KubeClient, resourcePath } from '../standin/kube.ts';
import { LOCAL_MODEL_NAMESPACE_CACHE } from '../standin/kserve.ts';
import { simulatedNode } from '../standin/local-model-cache.ts';
import { startStandins, type Standins } from '../standin/standin.ts';
import { getKsvc, knativeReady } from '../support/apps.ts';
import { applyYaml, fixture, freshNamespace, testEnv, waitFor, writesSince, writesWithin } from '../support/cluster.ts';

describe('Knative and KServe stand-ins beside the real Knative and KServe (integration)', function () {
  this.timeout(240_000);
  let standins: Standins | undefined;
  let client: KubeClient;
  let ns: string;

  before(function () {
    if (!testEnv().dataPlane?.knative || !testEnv().dataPlane?.kserve) this.skip();
    client = new KubeClient(testEnv().kubeConfig(), 'standin-integration-test');
  });
  after(async () => { await client?.close(); });
  beforeEach(async () => {
    ns = await freshNamespace('standin');
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), namespaces: [ns], readyDelayMs: 100 });
  });
  afterEach(async () => { await standins?.stop(); });

  it('leaves Knative Services, Revisions and InferenceServices to the real controllers, and refuses to hold a revision', async () => {
    const since = new Date();
    await applyYaml(fixture('knative-service.yaml'), { namespace: ns });
    await applyYaml(fixture('inference-service.yaml'), { namespace: ns });
    await waitFor(async () => knativeReady(await getKsvc(ns, 'hello')), { timeoutMs: 120_000, message: 'the real Knative makes the Service Ready' });
    await waitFor(async () => knativeReady(await getKsvc(ns, 'iris-predictor')), { timeoutMs: 120_000, message: 'the real KServe makes its predictor Ready' });
    // The stand-ins saw every one of those objects' events while the real controllers worked; a
    // bounded window then catches anything they would still write ("nothing" cannot be waited for).
    for (const agent of ['knative-standin', 'kserve-standin']) assert.deepEqual(await writesWithin(ns, since, agent, 2_000), [], `${agent} wrote nothing`);
    assert.throws(() => standins!.knative.hold(ns, 'hello-00001'), /the real Knative Serving runs in this cluster/);
  });

  it('writes a LocalModelNamespaceCache\'s status as the CRD\'s schema takes it: copies, node status and the InferenceServices it covers', async () => {
    const since = new Date();
    await applyYaml(fixture('inference-service.yaml'), { namespace: ns });
    const cache = {
      apiVersion: 'serving.kserve.io/v1alpha1', kind: 'LocalModelNamespaceCache', metadata: { name: 'iris', namespace: ns },
      spec: { sourceModelUri: 'gs://kfserving-examples/models/sklearn/1.0', modelSize: '1Gi', nodeGroups: ['gpu-nodes'] },
    };
    await client.apply(resourcePath(LOCAL_MODEL_NAMESPACE_CACHE, ns, 'iris'), cache);
    const status = await waitFor(async () => {
      const c = await client.get(resourcePath(LOCAL_MODEL_NAMESPACE_CACHE, ns, 'iris')).catch(() => undefined);
      return c?.status?.copies?.available === 1 && c.status.inferenceServices?.length === 1 && c.status;
    }, { timeoutMs: 60_000, message: 'the cache downloaded on the simulated node, covering iris' });
    assert.deepEqual(status.copies, { total: 1, available: 1, failed: 0 });
    assert.deepEqual(status.nodeStatus, { [simulatedNode('gpu-nodes')]: 'NodeDownloaded' });
    assert.deepEqual(status.inferenceServices, [{ name: 'iris', namespace: ns }]);
    const writes = writesSince(since, 'kserve-standin').filter((w) => w.namespace === ns);
    assert.ok(writes.length > 0);
    assert.ok(writes.every((w) => w.resource === 'localmodelnamespacecaches' && w.subresource === 'status'), `only cache status: ${JSON.stringify(writes)}`);
  });
});
