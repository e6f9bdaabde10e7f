// What reaches a pod is what the platform allows (issue 21): pod labels and
// annotations that control the pod, its sidecar or its network (Istio,
// Kubernetes, the selector labels app and version) only where the platform
// lists the key (--allowed-pod-metadata-keys); Secrets only where the platform
// turns references on (--allow-secret-references, off here as by default);
// model caches within each namespace's budget (--max-model-cache-bytes-per-namespace).
// Each attack is an edit of an app that serves: the edit is refused
// (Ready=False with a reason, naming the field), nothing of it reaches the
// Knative Service or the pods, the app keeps serving its last good version,
// and a victim app in another namespace keeps applying its edits.
import assert from 'node:assert/strict';
import type { ContainerSpec, ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { Kinds, type ResourceKind } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getKsvc, knativeReady, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { Victim } from '../support/victim.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';

const GiB = 2 ** 30;
const PodKind: ResourceKind = { group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true };
interface Pod { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: { volumes?: Array<{ name: string; secret?: unknown }>; containers: Array<{ env?: Array<{ name: string }>; envFrom?: unknown[] }> } }
interface Template { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: { containers: Array<{ image: string; env?: unknown[]; envFrom?: unknown[] }>; volumes?: unknown[] } }

const GOOD_IMAGE = 'ghcr.io/a/shop:1';
/** A key the platform allows by prefix (prometheus.istio.io/*): it must reach the pod. */
const ALLOWED = { 'prometheus.istio.io/merge-metrics': 'false' };
const good = (extra: Partial<ContainerSpec> = {}): AppSpec => ({ container: { image: GOOD_IMAGE, podAnnotations: ALLOWED, ...extra }, scaling: { minScale: 1, maxScale: 2 } });
const edit = (extra: Partial<ContainerSpec>): AppSpec => ({ ...good(extra), container: { ...good().container!, image: 'ghcr.io/a/shop:2', ...extra } });

async function template(ns: string, name: string): Promise<Template> {
  return (await getKsvc(ns, name))!.spec.template as unknown as Template;
}

async function pods(ns: string, name: string): Promise<Pod[]> {
  return waitFor(`pods of ${ns}/${name}`, async () => {
    const { items } = await userClient().list<Pod>(PodKind, ns, { labelSelector: `serving.knative.dev/service=${name}` });
    return items.length > 0 ? items : undefined;
  }, { timeoutMs: SETTLE_MS });
}

describe('a platform allow-list for what reaches the pod (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let victim: Victim;

  before(async () => {
    op = await startOperator({
      allowedPodMetadataKeys: ['prometheus.istio.io/*'],
      maxModelCacheBytesPerNamespace: 3 * GiB, modelCacheScope: 'cluster',
      // A cluster-scoped cache is written only of a model under the namespace's own path.
      allowedStorageUriPrefixes: ['gs://models/{namespace}/'],
    });
    victim = await new Victim(await freshNamespace('allow-victim')).start();
  });
  after(async () => { await op?.stop(); });

  /** An app that serves GOOD_IMAGE, with the allowed key on its pods. */
  async function serving(prefix: string): Promise<{ ns: string; before: ServerlessApp }> {
    const ns = await freshNamespace(prefix);
    await applyApp(app(ns, 'shop', good()));
    const before = await waitForApp(ns, 'shop', readyTrue, 'shop Ready', READY_MS);
    assert.equal((await template(ns, 'shop')).metadata.annotations?.['prometheus.istio.io/merge-metrics'], 'false', 'a key the platform allows reaches the template');
    return { ns, before };
  }

  /** The edit is refused with `reason`, naming `fields`; the app still serves GOOD_IMAGE. */
  async function refused(ns: string, before: ServerlessApp, spec: AppSpec, reason: string, fields: string[]): Promise<Template> {
    await applyApp(app(ns, 'shop', spec));
    const a = await waitForApp(ns, 'shop', (x) => condition(x, 'Ready')?.reason === reason, `Ready=False ${reason}`);
    const ready = condition(a, 'Ready')!;
    assert.equal(ready.status, 'False');
    for (const f of fields) assert.ok(ready.message.includes(f), `the condition names ${f}: ${ready.message}`);
    assert.equal(a.status?.versions?.stable?.version, before.status?.versions?.stable?.version, 'the stable version is the last good one');
    const ksvc = await getKsvc(ns, 'shop');
    assert.ok(knativeReady(ksvc), 'the Knative Service still serves');
    const t = ksvc!.spec.template as unknown as Template;
    assert.equal(t.spec.containers[0]!.image, GOOD_IMAGE, 'the Knative Service still runs the last good version');
    return t;
  }

  it('mesh controls in podAnnotations never reach the pod (attack: carry mesh controls into the pod)', async () => {
    const { ns, before } = await serving('allow-annotations');
    const attack = {
      'sidecar.istio.io/userVolume': '{"root":{"hostPath":{"path":"/"}}}',
      'sidecar.istio.io/userVolumeMount': '{"root":{"mountPath":"/host"}}',
      'sidecar.istio.io/proxyImage': 'ghcr.io/evil/proxy:1',
      'sidecar.istio.io/inject': 'false',
      'traffic.sidecar.istio.io/excludeOutboundIPRanges': '0.0.0.0/0',
      'container.apparmor.security.beta.kubernetes.io/user-container': 'unconfined',
      // Outside any mesh or Kubernetes domain: refused because the list allows only what it names.
      'cni.projectcalico.org/ipAddrs': '["10.0.0.7"]',
      'iam.amazonaws.com/role': 'arn:aws:iam::1:role/other-team',
    };
    const t = await refused(ns, before, edit({ podAnnotations: { ...ALLOWED, ...attack } }), 'PodMetadataNotAllowed',
      Object.keys(attack).map((k) => `spec.container.podAnnotations[${JSON.stringify(k)}]`));
    for (const k of Object.keys(attack)) assert.equal(t.metadata.annotations?.[k], undefined, `${k} is not on the template`);
    for (const pod of await pods(ns, 'shop')) for (const k of Object.keys(attack)) assert.equal(pod.metadata.annotations?.[k], undefined, `${k} is not on a pod`);
    await victim.servesAndAppliesItsNextEdit();
  });

  it('mesh and selector labels in podLabels never reach the pod (attack: put the pods under another team\'s mesh policies)', async () => {
    const { ns, before } = await serving('allow-labels');
    const attack = { 'istio.io/rev': 'canary', 'sidecar.istio.io/inject': 'false', app: 'payments', version: 'v1' };
    const t = await refused(ns, before, edit({ podLabels: attack }), 'PodMetadataNotAllowed',
      Object.keys(attack).map((k) => `spec.container.podLabels[${JSON.stringify(k)}]`));
    for (const k of ['istio.io/rev', 'sidecar.istio.io/inject']) assert.equal(t.metadata.labels?.[k], undefined, `${k} is not on the template`);
    for (const pod of await pods(ns, 'shop')) {
      assert.notEqual(pod.metadata.labels?.app, 'payments', 'the pod keeps the app label Knative gives it');
      assert.equal(pod.metadata.labels?.['istio.io/rev'], undefined);
    }
    await victim.servesAndAppliesItsNextEdit();
  });

  it('Secrets named in env, envFrom or volumes never reach the pod (attack: read every Secret of the namespace)', async () => {
    const { ns, before } = await serving('allow-secrets');
    const t = await refused(ns, before, edit({
      env: [{ name: 'DB', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }],
      envFrom: [{ secretRef: { name: 'platform-credentials' } }],
      volumes: [{ name: 'creds', secret: { secretName: 'platform-credentials' } }],
      volumeMounts: [{ name: 'creds', mountPath: '/creds' }],
    }), 'SecretReferenceNotAllowed', ['spec.container.env[0].valueFrom.secretKeyRef', 'spec.container.envFrom[0].secretRef', 'spec.container.volumes[0].secret']);
    assert.equal(t.spec.containers[0]!.env, undefined);
    assert.equal(t.spec.containers[0]!.envFrom, undefined);
    assert.equal(t.spec.volumes, undefined);
    await victim.servesAndAppliesItsNextEdit();
  });

  it('model caches past their namespace\'s budget are refused (attack: fill the shared cache disk)', async () => {
    const ns = await freshNamespace('allow-cache');
    const other = await freshNamespace('allow-cache-other');
    const model = (uri: string): AppSpec => ({ model: { format: { name: 'sklearn' }, storageUri: uri, size: '2Gi' }, scaling: { minScale: 0, maxScale: 1 }, prewarm: { cacheModel: true } });
    const cachesOf = async (namespace: string) => (await userClient().list<{ metadata: { labels?: Record<string, string> } }>(Kinds.LocalModelCache)).items
      .filter((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === namespace).map((c) => c.metadata.labels?.['serverlessapp.io/app']).sort();

    await applyApp(app(ns, 'first', model(`gs://models/${ns}/first`)));
    await waitFor('the first model\'s cache', async () => (await cachesOf(ns)).includes('first') || undefined, { timeoutMs: SETTLE_MS });
    await applyApp(app(ns, 'second', model(`gs://models/${ns}/second`)));
    const refusedApp = await waitForApp(ns, 'second', (x) => condition(x, 'Ready')?.reason === 'ModelCacheQuotaExceeded', 'Ready=False ModelCacheQuotaExceeded', SETTLE_MS);
    assert.match(condition(refusedApp, 'Ready')!.message, new RegExp(`spec\\.model\\.size: the model caches of namespace ${ns} may reserve 3Gi on each node in all; 2Gi is taken by earlier apps`));
    // Another namespace has its own budget.
    await applyApp(app(other, 'first', model(`gs://models/${other}/first`)));
    await waitFor('the other namespace\'s cache', async () => (await cachesOf(other)).includes('first') || undefined, { timeoutMs: SETTLE_MS });
    assert.deepEqual(await cachesOf(ns), ['first'], 'no cache for the app over the budget');
    await victim.servesAndAppliesItsNextEdit();

    // The budget freed, the refused app gets its cache.
    await userClient().delete(Kinds.ServerlessApp, ns, 'first');
    await waitFor('the second model\'s cache once the first app is gone', async () => { const c = await cachesOf(ns); return (c.length === 1 && c[0] === 'second') || undefined; }, { timeoutMs: 120_000 });
    await waitForApp(ns, 'second', (x) => condition(x, 'Ready')?.reason !== 'ModelCacheQuotaExceeded', 'the refusal lifted', SETTLE_MS);
  });
});
