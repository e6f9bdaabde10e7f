// The real KServe 0.20 controller and webhooks on the real Knative Serving 1.21
// in the rig (KWOK pods: scheduled and Ready, but no model is served). What the
// operator renders must pass KServe's webhooks and become Ready the way it would
// on a cluster.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { CoreV1Api, CustomObjectsApi, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { findCondition } from '../../src/util/conditions.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

interface Condition { type: string; status: string; reason?: string; message?: string }
interface TrafficTarget { revisionName?: string; latestRevision?: boolean; percent?: number; tag?: string; url?: string }
interface InferenceService extends KubernetesObject {
  spec: { predictor: Record<string, unknown> & { model: Record<string, unknown> } };
  status?: {
    conditions?: Condition[];
    url?: string;
    deploymentMode?: string;
    components?: { predictor?: { latestCreatedRevision?: string; latestReadyRevision?: string; latestRolledoutRevision?: string; previousRolledoutRevision?: string; traffic?: TrafficTarget[] } };
  };
}

const testdata = new URL('../../src/render/testdata/', import.meta.url).pathname;
const goldens = readdirSync(testdata).filter((file) => file.endsWith('.golden.yaml'))
  .map((file) => ({ file, obj: parse(readFileSync(testdata + file, 'utf8')) as KubernetesObject }))
  .filter(({ obj }) => obj.kind === 'InferenceService') as Array<{ file: string; obj: InferenceService }>;
const golden = (file: string) => goldens.find((g) => g.file === file)?.obj ?? assert.fail(`no golden ${file}`);
const group = { group: 'serving.kserve.io', version: 'v1beta1', plural: 'inferenceservices' };

/** `isvc` in `namespace`, without the owner reference: its owner does not exist here, and the real garbage collector would delete it. */
function inNamespace(isvc: InferenceService, namespace: string): InferenceService {
  const { ownerReferences: _owner, ...metadata } = isvc.metadata ?? {};
  return structuredClone({ ...isvc, metadata: { ...metadata, namespace } });
}

/** `spec` as the API server stores it: resource quantities are strings (`nvidia.com/gpu: 1` reads back as "1"). */
function quantitiesAsStrings<T>(spec: T): T {
  return JSON.parse(JSON.stringify(spec), (key, value: unknown) => (key === 'limits' || key === 'requests') && value && typeof value === 'object'
    ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)]))
    : value) as T;
}

function condition(isvc: InferenceService | undefined, type: string): Condition | undefined {
  return findCondition(isvc?.status?.conditions, type);
}

describe('KServe 0.20 on Knative 1.21 in the rig (integration)', function () {
  this.timeout(600_000);
  const objects = () => KubernetesObjectApi.makeApiClient(testEnv().kubeConfig());
  const custom = () => testEnv().kubeConfig().makeApiClient(CustomObjectsApi);
  const get = (namespace: string, name: string) => custom().getNamespacedCustomObject({ ...group, namespace, name }) as Promise<InferenceService>;

  // Each predictor pod holds a simulated GPU until it scales to zero: give them back.
  const created: Array<{ namespace: string; name: string }> = [];
  afterEach(async () => {
    await Promise.all(created.splice(0).map(({ namespace, name }) => custom().deleteNamespacedCustomObject({ ...group, namespace, name })));
  });

  before(async () => {
    const core = testEnv().kubeConfig().makeApiClient(CoreV1Api);
    await core.readNamespacedConfigMap({ namespace: 'kserve', name: 'inferenceservice-config' }).catch(() => {
      assert.fail('KServe is not running in this rig (no kserve/inferenceservice-config): start the data plane with KServe');
    });
  });

  for (const { file } of goldens) {
    it(`admits ${file}, defaulting only the modelFormat annotation and an empty model container name`, async () => {
      const ns = await freshNamespace('kserve');
      const sent = inNamespace(golden(file), ns);
      const stored = await objects().create(sent, undefined, 'All') as InferenceService;
      const model = sent.spec.predictor.model as { modelFormat: { name: string } };
      assert.deepEqual(stored.metadata?.annotations, { ...sent.metadata?.annotations, modelFormat: model.modelFormat.name });
      // The model spec embeds a corev1.Container, whose name has no omitempty in KServe's Go types.
      const expected = quantitiesAsStrings(sent.spec);
      expected.predictor.model = { ...expected.predictor.model, name: '' };
      assert.deepEqual(stored.spec, expected);
    });
  }

  it('refuses an InferenceService whose minReplicas is above maxReplicas', async () => {
    const ns = await freshNamespace('kserve');
    const isvc = inNamespace(golden('inference-service.golden.yaml'), ns);
    isvc.spec.predictor = { ...isvc.spec.predictor, minReplicas: 5, maxReplicas: 4 };
    await assert.rejects(objects().create(isvc), (err: { code?: number; body?: string }) => {
      assert.equal(err.code, 403);
      assert.match((JSON.parse(String(err.body)) as { message: string }).message, /^admission webhook "inferenceservice.kserve-webhook-server.validator" denied the request: 'MinReplicas' cannot be greater than MaxReplicas/);
      return true;
    });
  });

  it('makes the golden InferenceService Ready through KServe and Knative, then splits traffic for a canary', async () => {
    const ns = await freshNamespace('kserve');
    const isvc = inNamespace(golden('inference-service.golden.yaml'), ns);
    const name = isvc.metadata?.name ?? '';
    await objects().create(isvc);
    created.push({ namespace: ns, name });

    const ready = await waitFor(`InferenceService ${ns}/${name} Ready`, async () => {
      const live = await get(ns, name);
      return condition(live, 'Ready')?.status === 'True' && live;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    assert.equal(ready.status?.deploymentMode, 'Knative');
    const first = `${name}-predictor-00001`;
    // Tag URLs are under the rig's config-domain (example.com), as on a cluster with real DNS.
    assert.deepEqual(ready.status?.components?.predictor?.traffic,
      [{ revisionName: first, latestRevision: true, percent: 100, tag: 'latest', url: `http://latest-${name}-predictor.${ns}.example.com` }]);
    assert.equal(ready.status?.components?.predictor?.latestRolledoutRevision, first);

    // A new model with canaryTrafficPercent: KServe sends 20% to the latest revision and keeps 80% on the last one rolled out, tagged prev.
    // KServe writes the object too (it went 409 here once it was Ready): read and replace again on a conflict.
    await waitFor('the canary edit, retried on conflict', async () => {
      const live = await get(ns, name);
      live.spec.predictor = { ...live.spec.predictor, canaryTrafficPercent: 20, model: { ...live.spec.predictor.model, storageUri: 'gs://models/fraud/v8' } };
      return custom().replaceNamespacedCustomObject({ ...group, namespace: ns, name, body: live });
    }, { timeoutMs: SETTLE_MS, intervalMs: 200 });
    // Until the new revision is Ready, Knative resolves `latestRevision: true` to the old one: both targets name revision 1.
    const second = `${name}-predictor-00002`;
    const split = await waitFor('a 20/80 split between the new and the previous revision', async () => {
      const traffic = (await get(ns, name)).status?.components?.predictor?.traffic ?? [];
      return traffic.some((t) => t.revisionName === second) && traffic;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    assert.deepEqual(split.map(({ revisionName, latestRevision, percent, tag }) => ({ revisionName, latestRevision, percent, tag })), [
      { revisionName: second, latestRevision: true, percent: 20, tag: 'latest' },
      { revisionName: first, latestRevision: false, percent: 80, tag: 'prev' },
    ]);
  });
});
