// The SIMULATED Knative/KServe stand-ins beside the rig's real Knative Serving
// and KServe: all their halves switch themselves off (Knative, InferenceService
// and LocalModelCache), since the real controllers own those objects. They
// stay for the benchmarks' stand-in data plane.
import assert from 'node:assert/strict';
import { NODE_GROUPS } from '../envtest/kserve-localmodel.ts';
import { KubeClient, resourcePath } from '../standin/kube.ts';
import { LOCAL_MODEL_NAMESPACE_CACHE } from '../standin/kserve.ts';
import { STANDIN_AGENTS, startStandins, type Standins } from '../standin/standin.ts';
import { getKsvc, knativeReady } from '../support/apps.ts';
import { applyYaml, assertNoWrites, fixture, freshNamespace, testEnv, writesSince, type NoWrites } from '../support/cluster.ts';
import { waitFor } from '../support/wait.ts';

/** No write by the stand-in `agent` in `namespace` since `since`; the control's marker is written with the stand-ins' own client under that agent. */
async function assertStandinWritesNothing(agent: string, namespace: string, since: Date): Promise<void> {
  const client = new KubeClient(testEnv().kubeConfig(), agent);
  const control: NoWrites['control'] = (marker) => client.create(`/api/v1/namespaces/${namespace}/configmaps`, marker);
  try {
    await assertNoWrites({ what: `${agent} wrote nothing`, namespace, userAgentPrefix: agent, since, windowMs: 2_000, control });
  } finally {
    client.close();
  }
}

describe('Knative and KServe stand-ins beside the real Knative and KServe (integration)', function () {
  this.timeout(600_000);
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
    await waitFor('the real Knative makes the Service Ready', async () => knativeReady(await getKsvc(ns, 'hello')), { timeoutMs: 120_000 });
    await waitFor('the real KServe makes its predictor Ready', async () => knativeReady(await getKsvc(ns, 'iris-predictor')), { timeoutMs: 120_000 });
    // The stand-ins saw every one of those objects' events while the real controllers worked; a
    // bounded window then catches anything they would still write ("nothing" cannot be waited for).
    for (const agent of [STANDIN_AGENTS.knative, STANDIN_AGENTS.kserve]) await assertStandinWritesNothing(agent, ns, since);
    assert.throws(() => standins!.knative.hold(ns, 'hello-00001'), /the real Knative Serving runs in this cluster/);
  });

  it('leaves LocalModelNamespaceCaches to KServe\'s real local model controller, which reports the copy on the node group\'s node', async () => {
    const since = new Date();
    await applyYaml(fixture('inference-service.yaml'), { namespace: ns });
    const cache = {
      apiVersion: 'serving.kserve.io/v1alpha1', kind: 'LocalModelNamespaceCache', metadata: { name: 'iris', namespace: ns },
      spec: { sourceModelUri: 'gs://kfserving-examples/models/sklearn/1.0', modelSize: '1Gi', nodeGroups: [NODE_GROUPS.default] },
    };
    await client.apply(resourcePath(LOCAL_MODEL_NAMESPACE_CACHE, ns, 'iris'), cache);
    const status = await waitFor('the cache downloaded on the node group\'s node', async () => {
      const c = await client.get(resourcePath(LOCAL_MODEL_NAMESPACE_CACHE, ns, 'iris')).catch(() => undefined);
      return c?.status?.copies?.available === 1 && c.status;
    }, { timeoutMs: 120_000 });
    assert.deepEqual(status.copies, { total: 1, available: 1 });
    assert.deepEqual(status.nodeStatus, { 'rig-node-1': 'NodeDownloaded' });
    // The shipped inferenceservice-config leaves localModel disabled: KServe points no InferenceService at the cache.
    assert.deepEqual(status.inferenceServices ?? [], []);
    await assertStandinWritesNothing(STANDIN_AGENTS.kserve, ns, since);
    assert.ok(writesSince(since, 'kserve-localmodel').some((w) => w.namespace === ns && w.resource === 'localmodelnamespacecaches' && w.subresource === 'status'));
  });
});
