// The pod-template fields (nodeSelector, tolerations, affinity, service account,
// pull secrets, volumes, concurrency, timeout, pod labels and annotations) on the
// rig's real Knative 1.21 and KServe 0.20 webhooks, with the Knative features a
// platform enables for them (test/envtest/knative-serving.ts): a container app
// and a model app carrying them become Ready=True and their pods land on the
// tainted GPU node; bad values are refused at admission naming the field; a
// service account the platform does not allow, and a Knative feature the
// platform turned off, show as Ready=False with a reason naming the field.
import assert from 'node:assert/strict';
import type { ContainerSpec } from '../../src/api/v1alpha1/serverlessapp.ts';
import { Kinds, type ResourceKind } from '../../src/util/kinds.ts';
import { KNATIVE_NAMESPACE, KNATIVE_PLATFORM_FEATURES } from '../envtest/knative-serving.ts';
import { app, applyApp, condition, getKsvc, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';

const GPU_NODE = 'rig-gpu-node-1';
const Secret: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
const ServiceAccount: ResourceKind = { group: '', version: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true };
const PodKind: ResourceKind = { group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true };
interface Pod { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: { nodeName?: string; serviceAccountName?: string; volumes?: Array<{ name: string }> } }

/** The fields as an app on the rig sets them: its pods must land on the tainted GPU node. */
const podTemplate = (): Partial<ContainerSpec> => ({
  nodeSelector: { 'nvidia.com/gpu.present': 'true' },
  tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
  affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 10, preference: { matchExpressions: [{ key: 'nvidia.com/gpu.product', operator: 'Exists' }] } }] } },
  serviceAccountName: 'model-reader',
  imagePullSecrets: ['registry-creds'],
  volumes: [
    { name: 'config', configMap: { name: 'app-config' } },
    { name: 'tls', secret: { secretName: 'app-tls' } },
    { name: 'scratch', emptyDir: {} },
  ],
  volumeMounts: [{ name: 'config', mountPath: '/etc/app' }, { name: 'tls', mountPath: '/etc/tls' }, { name: 'scratch', mountPath: '/tmp/scratch' }],
  containerConcurrency: 4,
  timeoutSeconds: 90,
  podLabels: { team: 'a' },
  podAnnotations: { 'prometheus.io/scrape': 'true' },
});

const containerSpec = (extra: Partial<ContainerSpec> = podTemplate()): AppSpec => ({
  container: { image: 'ghcr.io/acme/shop:1.4.0', port: 8080, ...extra }, scaling: { minScale: 1, maxScale: 3 },
});
const modelSpec = (): AppSpec => ({
  model: { format: { name: 'sklearn' }, storageUri: 'gs://models/fraud/v7', resources: { limits: { 'nvidia.com/gpu': 1, memory: '2Gi' } }, ...podTemplate() },
  scaling: { minScale: 1, maxScale: 3 },
});

/** What the pods need in the namespace: the service account, ConfigMap and Secrets they name. */
async function prepare(ns: string): Promise<void> {
  const c = userClient();
  await c.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'model-reader', namespace: ns } }, { kind: ServiceAccount });
  await c.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: ns }, data: { 'app.yaml': 'mode: prod' } }, { kind: Kinds.ConfigMap });
  await c.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'app-tls', namespace: ns }, stringData: { 'tls.key': 'k' } }, { kind: Secret });
  await c.apply({ apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/dockerconfigjson', metadata: { name: 'registry-creds', namespace: ns }, stringData: { '.dockerconfigjson': '{"auths":{}}' } }, { kind: Secret });
}

/** The running pods of `selector`, once there are some. */
async function podsOf(ns: string, selector: string): Promise<Pod[]> {
  return waitFor(`scheduled pods of ${selector}`, async () => {
    const { items } = await userClient().list<Pod>(PodKind, ns, { labelSelector: selector });
    return items.length > 0 && items.every((p) => p.spec.nodeName) ? items : undefined;
  }, { timeoutMs: SETTLE_MS });
}

function assertPodTemplate(pod: Pod): void {
  assert.equal(pod.spec.nodeName, GPU_NODE, 'nodeSelector and the toleration put it on the tainted GPU node');
  assert.equal(pod.spec.serviceAccountName, 'model-reader');
  assert.equal(pod.metadata.labels?.team, 'a');
  assert.equal(pod.metadata.annotations?.['prometheus.io/scrape'], 'true');
  for (const v of ['config', 'tls', 'scratch']) assert.ok(pod.spec.volumes?.some((x) => x.name === v), `volume ${v} on the pod`);
}

describe('pod-template fields on the real Knative and KServe webhooks (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let ns: string;

  // A platform that lets apps mount Secrets (--allow-secret-references): the tls volume is one.
  // And lists prometheus.io/*, which the default allow-list leaves out (docs/install.md says why).
  before(async () => { op = await startOperator({ allowedServiceAccounts: ['model-reader'], allowSecretReferences: true, allowedPodMetadataKeys: ['app.kubernetes.io/version', 'prometheus.io/*'] }); });
  after(async () => { await op?.stop(); });
  beforeEach(async () => {
    ns = await freshNamespace('podtpl');
    await prepare(ns);
  });

  it('a container app with every field becomes Ready=True; its Knative Service carries them and its pod runs on the GPU node', async () => {
    await applyApp(app(ns, 'shop', containerSpec()));
    await waitForApp(ns, 'shop', readyTrue, 'app Ready', READY_MS);
    const t = (await getKsvc(ns, 'shop'))!.spec.template as unknown as { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> & { containers: Array<{ volumeMounts: unknown }> } };
    assert.equal(t.spec.containerConcurrency, 4);
    assert.equal(t.spec.timeoutSeconds, 90);
    assert.deepEqual(t.spec.tolerations, podTemplate().tolerations);
    assert.deepEqual(t.spec.nodeSelector, podTemplate().nodeSelector);
    assert.deepEqual(t.spec.imagePullSecrets, [{ name: 'registry-creds' }]);
    assert.deepEqual(t.spec.containers[0]!.volumeMounts, [
      { name: 'config', mountPath: '/etc/app', readOnly: true }, { name: 'tls', mountPath: '/etc/tls', readOnly: true }, { name: 'scratch', mountPath: '/tmp/scratch' },
    ]);
    const [pod] = await podsOf(ns, 'serving.knative.dev/service=shop');
    assertPodTemplate(pod!);
  });

  it('a model app with every field becomes Ready=True; its InferenceService carries them and its predictor pod runs on the GPU node', async () => {
    await applyApp(app(ns, 'fraud', modelSpec()));
    await waitForApp(ns, 'fraud', readyTrue, 'app Ready', READY_MS);
    const isvc = await userClient().get<{ spec: { predictor: Record<string, unknown> & { model: { volumeMounts?: unknown } } } }>(Kinds.InferenceService, ns, 'fraud');
    const p = isvc!.spec.predictor;
    assert.equal(p.containerConcurrency, 4);
    assert.equal(p.timeout, 90);
    assert.equal(p.serviceAccountName, 'model-reader');
    assert.deepEqual(p.tolerations, podTemplate().tolerations);
    assert.equal((p.model.volumeMounts as unknown[]).length, 3);
    const [pod] = await podsOf(ns, 'serving.kserve.io/inferenceservice=fraud');
    assertPodTemplate(pod!);
  });

  it('shows a service account the platform does not allow as Ready=False ServiceAccountNotAllowed, naming the field, and renders nothing', async () => {
    await applyApp(app(ns, 'shop', containerSpec({ serviceAccountName: 'deployer' })));
    const a = await waitForApp(ns, 'shop', (x) => condition(x, 'Ready')?.reason === 'ServiceAccountNotAllowed', 'ServiceAccountNotAllowed');
    assert.match(condition(a, 'Ready')!.message, /spec\.container\.serviceAccountName.*"deployer" is not allowed on this platform; allowed: model-reader/s);
    assert.equal(await getKsvc(ns, 'shop'), undefined);
  });

  const refused: Array<{ what: string; extra: Partial<ContainerSpec>; message: RegExp }> = [
    { what: 'a mount of an undeclared volume', extra: { volumeMounts: [{ name: 'nope', mountPath: '/x' }] }, message: /spec\.container\.volumeMounts: Invalid value: .*every volumeMounts\[\]\.name must name a volume in volumes/ },
    { what: 'a volume nothing mounts', extra: { volumes: [{ name: 'scratch', emptyDir: {} }] }, message: /spec\.container\.volumes: Invalid value: .*every volume must be mounted/ },
    { what: 'a volume with two sources', extra: { volumes: [{ name: 'v', emptyDir: {}, configMap: { name: 'c' } }], volumeMounts: [{ name: 'v', mountPath: '/v' }] }, message: /spec\.container\.volumes\[0\]: Invalid value: .*exactly one of configMap, secret or emptyDir/ },
    { what: 'a hostPath volume', extra: { volumes: [{ name: 'v', hostPath: { path: '/' } } as never], volumeMounts: [{ name: 'v', mountPath: '/v' }] }, message: /\.spec\.container\.volumes\[name="v"\]\.hostPath: field not declared in schema/ },
    { what: 'a writable ConfigMap mount', extra: { volumes: [{ name: 'c', configMap: { name: 'c' } }], volumeMounts: [{ name: 'c', mountPath: '/c', readOnly: false }] }, message: /readOnly: false is allowed on emptyDir volumes only/ },
    { what: 'a mount on /dev', extra: { volumes: [{ name: 's', emptyDir: {} }], volumeMounts: [{ name: 's', mountPath: '/dev/' }] }, message: /spec\.container\.volumeMounts\[0\]\.mountPath: .*Knative reserves them/ },
    { what: 'a Knative pod label', extra: { podLabels: { 'serving.knative.dev/service': 'other' } }, message: /spec\.container\.podLabels: .*may not use keys under knative\.dev/ },
    { what: 'an autoscaling pod annotation', extra: { podAnnotations: { 'autoscaling.knative.dev/min-scale': '9' } }, message: /spec\.container\.podAnnotations: .*autoscaling is set in spec\.scaling/ },
    { what: 'an operator label', extra: { podLabels: { 'serverlessapp.io/version': 'x' } }, message: /spec\.container\.podLabels: .*serverlessapp\.io/ },
    { what: 'containerConcurrency over Knative\'s limit', extra: { containerConcurrency: 1001 }, message: /spec\.container\.containerConcurrency: Invalid value: 1001: .*less than or equal to 1000/ },
    { what: 'timeoutSeconds over Knative\'s limit', extra: { timeoutSeconds: 601 }, message: /spec\.container\.timeoutSeconds: Invalid value: 601: .*less than or equal to 600/ },
    { what: 'a toleration with a value and operator Exists', extra: { tolerations: [{ key: 'k', operator: 'Exists', value: 'v' }] }, message: /spec\.container\.tolerations\[0\]\.value: .*value must be empty with operator Exists/ },
  ];
  for (const r of refused) {
    it(`refuses ${r.what} at admission, naming the field`, async () => {
      await assert.rejects(applyApp(app(ns, 'bad', containerSpec(r.extra))), (err: Error) => {
        assert.match(err.message, r.message);
        return true;
      });
    });
  }

  it('refuses a model app\'s mount under /mnt/models, where KServe puts the model', async () => {
    const spec = modelSpec();
    spec.model!.volumeMounts = [{ name: 'scratch', mountPath: '/mnt/models/extra' }];
    spec.model!.volumes = [{ name: 'scratch', emptyDir: {} }];
    await assert.rejects(applyApp(app(ns, 'bad', spec)), /spec\.model\.volumeMounts: Invalid value: .*mountPath must not be under \/mnt\/models: KServe puts the model there/);
  });

  describe('with a Knative feature the platform has not enabled', () => {
    const FLAG = 'kubernetes.podspec-tolerations';
    const features = (value: string) => userClient().apply(
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'config-features', namespace: KNATIVE_NAMESPACE }, data: { [FLAG]: value } },
      { kind: Kinds.ConfigMap, fieldManager: 'workload-fields-test' },
    );
    const probe = (namespace: string) => userClient().apply({
      apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'feature-probe', namespace },
      spec: { template: { spec: { tolerations: [{ key: 'k', operator: 'Exists' }], containers: [{ image: 'ghcr.io/acme/shop:1.4.0' }] } } },
    }, { kind: Kinds.KnativeService, dryRun: true }).then(() => true, () => false);

    after(async () => {
      await features(KNATIVE_PLATFORM_FEATURES[FLAG]!);
      await waitFor('Knative\'s webhook admits tolerations again', () => probe('default'), { timeoutMs: SETTLE_MS, intervalMs: 200 });
    });

    it('shows Knative\'s refusal as Ready=False ApplyRejected naming the field', async () => {
      await features('disabled');
      await waitFor('Knative\'s webhook reads the disabled feature', async () => !(await probe(ns)), { timeoutMs: SETTLE_MS, intervalMs: 200 });
      await applyApp(app(ns, 'shop', containerSpec({ tolerations: podTemplate().tolerations! })));
      const a = await waitForApp(ns, 'shop', (x) => condition(x, 'Ready')?.reason === 'ApplyRejected', 'ApplyRejected', SETTLE_MS);
      assert.equal(condition(a, 'Ready')!.status, 'False');
      assert.match(condition(a, 'Ready')!.message, /must not set the field\(s\): spec\.template\.spec\.tolerations/);
    });
  });
});
