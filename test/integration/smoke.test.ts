// Proves the test control plane is the real thing the operator will meet: the
// upstream Knative, KServe and Istio CRDs are installed with their schemas,
// Knative's and KServe's own webhooks admit what is stored, RBAC is enforced,
// and the audit log attributes writes to the client that made them.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ApiException, CustomObjectsApi, KubeConfig, setHeaderOptions } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { isSemanticSubset } from '../../src/runtime/apply.ts';
import { applyYaml, fixture, freshNamespace, testEnv, writesSince } from '../support/cluster.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

interface Obj {
  metadata: { name: string; namespace?: string };
  spec: Record<string, any>;
}

const knative = { group: 'serving.knative.dev', version: 'v1', plural: 'services' };
const kserve = { group: 'serving.kserve.io', version: 'v1beta1', plural: 'inferenceservices' };
const istio = { group: 'networking.istio.io', version: 'v1', plural: 'virtualservices' };

describe('the integration-test control plane', () => {
  let namespace: string;
  let objects: CustomObjectsApi;

  before(async () => {
    namespace = await freshNamespace('smoke');
    objects = testEnv().kubeConfig().makeApiClient(CustomObjectsApi);
  });

  it('stores a Knative Service through Knative\'s webhooks, keeping every field it was given', async () => {
    await applyYaml(fixture('knative-service.yaml'), { namespace });
    const stored = (await objects.getNamespacedCustomObject({ ...knative, namespace, name: 'hello' })) as Obj;
    assert.ok(isSemanticSubset((parse(fixture('knative-service.yaml')) as Obj).spec, stored.spec), `every field given is stored: ${JSON.stringify(stored.spec)}`);
    // Knative's defaulting webhook ran: it adds a readiness probe to the container.
    assert.equal(stored.spec.template.spec.containers[0].readinessProbe?.successThreshold, 1);
    assert.equal(stored.spec.template.spec.containers[0].image, 'ghcr.io/example/hello:1.0.0');
    assert.equal(stored.spec.template.metadata.annotations['autoscaling.knative.dev/min-scale'], '1');
    assert.deepEqual(stored.spec.traffic, [{ latestRevision: true, percent: 100 }]);
  });

  it('stores a KServe InferenceService through KServe\'s webhooks, keeping every field it was given', async () => {
    await applyYaml(fixture('inference-service.yaml'), { namespace });
    const stored = (await objects.getNamespacedCustomObject({ ...kserve, namespace, name: 'iris' })) as Obj & { metadata: { annotations?: Record<string, string> } };
    assert.ok(isSemanticSubset((parse(fixture('inference-service.yaml')) as Obj).spec, stored.spec), `every field given is stored: ${JSON.stringify(stored.spec)}`);
    // KServe's defaulting webhook ran: it records the model format as an annotation.
    assert.equal(stored.metadata.annotations?.modelFormat, 'sklearn');
    assert.deepEqual(stored.spec.predictor.model.modelFormat, { name: 'sklearn' });
    assert.equal(stored.spec.predictor.model.storageUri, 'gs://kfserving-examples/models/sklearn/1.0/model');
    assert.equal(stored.spec.predictor.minReplicas, 0);
  });

  it('stores an Istio networking.istio.io/v1 VirtualService and reads it back unchanged (no Istio webhook runs)', async () => {
    await applyYaml(fixture('virtual-service.yaml'), { namespace });
    const stored = (await objects.getNamespacedCustomObject({ ...istio, namespace, name: 'hello' })) as Obj;
    assert.deepEqual(stored.spec, (parse(fixture('virtual-service.yaml')) as Obj).spec);
    assert.deepEqual(stored.spec.http[0].route.map((r: { weight: number }) => r.weight), [90, 10]);
    assert.equal(stored.spec.http[0].retries.attempts, 3);
  });

  it('rejects a VirtualService whose retries.attempts is a string, naming the field', async () => {
    const body = parse(fixture('virtual-service-invalid.yaml')) as Obj;
    await assert.rejects(objects.createNamespacedCustomObject({ ...istio, namespace, body }), (err: unknown) => {
      assert.ok(err instanceof ApiException, `expected an ApiException, got ${String(err)}`);
      assert.equal(err.code, 422);
      const { message } = JSON.parse(err.body as string) as { message: string };
      assert.match(message, /spec\.http\[0\]\.retries\.attempts/);
      assert.match(message, /integer/);
      return true;
    });
  });

  it('forbids a user without RBAC grants from listing Knative Services', async () => {
    const nobody = new KubeConfig();
    nobody.loadFromOptions({
      clusters: [{ name: 'envtest', server: testEnv().server, caData: Buffer.from(testEnv().caPem).toString('base64') }],
      users: [{ name: 'nobody', token: testEnv().nobodyToken }],
      contexts: [{ name: 'nobody', cluster: 'envtest', user: 'nobody' }],
      currentContext: 'nobody',
    });
    await objects.listNamespacedCustomObject({ ...knative, namespace }); // the admin may
    await assert.rejects(
      nobody.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ ...knative, namespace }),
      (err: unknown) => err instanceof ApiException && err.code === 403,
    );
  });

  it('records each write in the audit log under the user agent of the client that made it', async () => {
    const since = new Date();
    const userAgent = `smoke-test/${randomBytes(4).toString('hex')}`;
    const body = { ...(parse(fixture('knative-service.yaml')) as Obj), metadata: { name: 'audited' } };
    await objects.createNamespacedCustomObject({ ...knative, namespace, body }, setHeaderOptions('User-Agent', userAgent));
    await objects.createNamespacedCustomObject({ ...knative, namespace, body: { ...body, metadata: { name: 'other-agent' } } });

    const writes = await waitFor(`an audited write from ${userAgent}`, () => writesSince(since, userAgent).length > 0 && writesSince(since, userAgent), { timeoutMs: SETTLE_MS });
    assert.deepEqual(
      writes.map((w) => [w.verb, w.apiGroup, w.resource, w.namespace, w.name, w.code]),
      [['create', 'serving.knative.dev', 'services', namespace, 'audited', 201]],
    );
  });
});
