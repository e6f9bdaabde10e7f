// The write path against a real API server: server-side apply with our field
// manager, status through its subresource, events with aggregation, and the
// errors a caller sees.
import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiError, KubeClient } from '../../src/runtime/client.ts';
import { EventRecorder } from '../../src/runtime/events.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { OperatorMetrics } from '../../src/runtime/metrics.ts';
import { StatusWriter } from '../../src/runtime/status.ts';
import { freshNamespace, testEnv, writesSince } from '../support/cluster.ts';

interface ConfigMap {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; uid?: string; labels?: Record<string, string>; managedFields?: Array<{ manager: string }> };
  data?: Record<string, string>;
}

interface KnativeService {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; uid?: string; generation?: number };
  spec: { template: { spec: { containers: Array<{ image: string }> } } };
  status?: Record<string, unknown>;
}

const kubeConfig = (): KubeConfig => testEnv().kubeConfig();

const configMap = (namespace: string, name: string, data: Record<string, string>): ConfigMap => ({
  apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data,
});

const ksvc = (namespace: string, name: string, image: string): KnativeService => ({
  apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name, namespace },
  spec: { template: { spec: { containers: [{ image }] } } },
});

const sapp = (namespace: string, name: string) => ({
  apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name, namespace },
  spec: { container: { image: 'ghcr.io/acme/api:1' } },
});

describe('KubeClient against the API server', function () {
  this.timeout(30_000);
  let metrics: OperatorMetrics;
  let client: KubeClient;
  let ns: string;

  beforeEach(async () => {
    metrics = new OperatorMetrics({ processMetrics: false });
    client = new KubeClient(kubeConfig(), { metrics });
    ns = await freshNamespace('rt-client');
  });

  afterEach(() => client.close());

  it('creates a ConfigMap by server-side apply, then updates it and drops the keys it no longer states', async () => {
    const since = new Date(Date.now() - 1_000);
    const created = await client.apply(configMap(ns, 'settings', { a: '1', b: '2' }));
    assert.deepEqual(created.data, { a: '1', b: '2' });
    assert.equal(created.metadata.managedFields?.[0]?.manager, 'serverlessapp-operator');

    const updated = await client.apply(configMap(ns, 'settings', { a: '3' }));
    assert.deepEqual(updated.data, { a: '3' });
    assert.equal(updated.metadata.uid, created.metadata.uid);

    const writes = writesSince(since, 'serverlessapp-operator/').filter((w) => w.namespace === ns && w.name === 'settings');
    assert.deepEqual(writes.map((w) => w.verb), ['patch', 'patch'], 'both applies are PATCHes under the operator user agent');
  });

  it('leaves alone a field another field manager set', async () => {
    await client.apply(configMap(ns, 'shared', { ours: '1' }));
    const other = new KubeClient(kubeConfig(), { fieldManager: 'kubectl-edit' });
    await other.mergePatch(Kinds.ConfigMap, ns, 'shared', { data: { theirs: 'x' }, metadata: { labels: { team: 'ml' } } });
    other.close();

    const after = await client.apply(configMap(ns, 'shared', { ours: '2' }));
    assert.deepEqual(after.data, { ours: '2', theirs: 'x' });
    assert.deepEqual(after.metadata.labels, { team: 'ml' });
  });

  it('applies a custom resource (Knative Service) and updates it in place', async () => {
    const created = await client.apply(ksvc(ns, 'web', 'ghcr.io/acme/web:1'));
    assert.equal(created.metadata.generation, 1);
    const updated = await client.apply(ksvc(ns, 'web', 'ghcr.io/acme/web:2'));
    assert.equal(updated.spec.template.spec.containers[0]?.image, 'ghcr.io/acme/web:2');
    assert.equal(updated.metadata.generation, 2);
    const again = await client.apply(ksvc(ns, 'web', 'ghcr.io/acme/web:2'));
    assert.equal(again.metadata.resourceVersion, updated.metadata.resourceVersion, 'an identical apply is a no-op on the server');
  });

  it('does not persist a dry-run apply', async () => {
    await client.apply(configMap(ns, 'dry', { a: '1' }), { dryRun: true });
    assert.equal(await client.get(Kinds.ConfigMap, ns, 'dry'), undefined);
  });

  it('writes status through the status subresource, and skips a write that changes nothing', async () => {
    // A ServerlessApp: no controller runs for it in this test (the rig's real Knative would write a Knative Service's status too).
    const live = await client.apply(sapp(ns, 'api'));
    const writer = new StatusWriter(client);
    // With a phase, as the operator always writes: the CRD's default status (phase Pending) stays where a write leaves it out.
    const status = { observedGeneration: 1, phase: 'Stable', conditions: [{ type: 'Ready', status: 'True', reason: 'Serving', message: '', lastTransitionTime: '2026-03-01T10:00:00Z' }] };
    assert.equal(await writer.write(live, status), true);

    const after = (await client.get<KnativeService>(Kinds.ServerlessApp, ns, 'api'))!;
    assert.deepEqual(after.status, status);
    assert.equal(after.metadata.generation, 1, 'a status write does not touch the spec');

    const requestsBefore = await requestCount(metrics);
    assert.equal(await writer.write(after, structuredClone(status)), false);
    assert.equal(await requestCount(metrics), requestsBefore, 'no request for an unchanged status');
    assert.equal((await client.get<KnativeService>(Kinds.ServerlessApp, ns, 'api'))!.metadata.resourceVersion, after.metadata.resourceVersion);
  });

  it('ignores status in a main-resource apply (only the subresource writes it)', async () => {
    const svc = { ...ksvc(ns, 'mixed', 'img:1'), status: { observedGeneration: 7 } };
    const created = await client.apply(svc);
    assert.equal(created.status?.['observedGeneration'], undefined);
  });

  it('reads, lists by label, updates with optimistic concurrency and deletes', async () => {
    assert.equal(await client.get(Kinds.ConfigMap, ns, 'missing'), undefined);
    const a = await client.create<ConfigMap>(Kinds.ConfigMap, { ...configMap(ns, 'a', { k: 'v' }), metadata: { name: 'a', namespace: ns, labels: { app: 'x' } } });
    await client.create(Kinds.ConfigMap, configMap(ns, 'b', {}));

    const listed = await client.list<ConfigMap>(Kinds.ConfigMap, ns, { labelSelector: 'app=x' });
    assert.deepEqual(listed.items.map((c) => c.metadata.name), ['a']);
    assert.match(listed.metadata.resourceVersion, /^\d+$/);

    const updated = await client.update(Kinds.ConfigMap, { ...a, data: { k: 'w' } });
    const stale = client.update(Kinds.ConfigMap, { ...a, data: { k: 'stale' } });
    await assert.rejects(stale, (err: unknown) => err instanceof ApiError && err.code === 409 && err.reason === 'Conflict');
    assert.deepEqual(updated.data, { k: 'w' });

    assert.equal(await client.delete(Kinds.ConfigMap, ns, 'a', { uid: a.metadata.uid! }), true);
    assert.equal(await client.delete(Kinds.ConfigMap, ns, 'a'), false);
  });

  it('refuses to delete a successor that reuses the name (uid precondition)', async () => {
    const first = await client.create(Kinds.ConfigMap, configMap(ns, 'reborn', {}));
    await client.delete(Kinds.ConfigMap, ns, 'reborn');
    await client.create(Kinds.ConfigMap, configMap(ns, 'reborn', {}));
    await assert.rejects(client.delete(Kinds.ConfigMap, ns, 'reborn', { uid: first.metadata.uid! }), (err: unknown) => err instanceof ApiError && err.code === 409);
  });

  it('reports invalid objects with the server\'s message, which names the field', async () => {
    await assert.rejects(client.apply(configMap(ns, 'Not_A_Name', {})), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 422);
      assert.equal(err.reason, 'Invalid');
      assert.match(err.message, /metadata\.name/);
      return true;
    });
    // A type mismatch fails while building the apply patch (the server answers 500, not 422), still naming the field.
    const wrongType = { ...ksvc(ns, 'bad', 'img'), spec: { template: { spec: { containers: 'not-a-list' } } } };
    await assert.rejects(client.apply(wrongType), (err: unknown) => err instanceof ApiError && /\.spec\.template\.spec\.containers: expected list/.test(err.message));
  });

  it('counts every request in rest_client_requests_total by code and method', async () => {
    await client.get(Kinds.ConfigMap, ns, 'nope');
    await client.apply(configMap(ns, 'counted', {}));
    const text = await metrics.registry.metrics();
    assert.match(text, /rest_client_requests_total\{code="404",method="GET",host="127\.0\.0\.1:\d+"\} 1/);
    assert.match(text, /rest_client_requests_total\{code="201",method="PATCH",host="127\.0\.0\.1:\d+"\} 1/);
  });
});

describe('EventRecorder against the API server', function () {
  this.timeout(30_000);

  it('aggregates repeats into one Event with a series count, visible to kubectl describe', async () => {
    const ns = await freshNamespace('rt-events');
    const client = new KubeClient(kubeConfig());
    try {
      const cm = await client.apply(configMap(ns, 'subject', {}));
      const recorder = new EventRecorder(client, { identity: 'test-pod' });
      for (let i = 0; i < 3; i++) {
        recorder.record(cm, 'Warning', 'WarmupRetry', 'GET http://web/ returned 503');
        await recorder.flush();
      }
      recorder.record(cm, 'Normal', 'Promoted', 'version abc is stable');
      await recorder.flush();

      const events = (await client.list<{ reason: string; series?: { count: number }; regarding: { uid: string }; reportingController: string; reportingInstance: string }>(Kinds.Event, ns)).items;
      assert.equal(events.length, 2);
      const retry = events.find((e) => e.reason === 'WarmupRetry')!;
      assert.equal(retry.series?.count, 3);
      assert.equal(retry.regarding.uid, cm.metadata.uid);
      assert.equal(retry.reportingController, 'serverlessapp.io/operator');
      assert.equal(retry.reportingInstance, 'test-pod');

      // kubectl describe reads core/v1 Events by involvedObject.
      const coreEvent = { group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true };
      const seen = (await client.list<{ reason: string; involvedObject: { name: string; kind: string } }>(coreEvent, ns)).items;
      assert.deepEqual(seen.map((e) => `${e.involvedObject.kind}/${e.involvedObject.name}:${e.reason}`).sort(), ['ConfigMap/subject:Promoted', 'ConfigMap/subject:WarmupRetry']);
    } finally {
      client.close();
    }
  });
});

async function requestCount(metrics: OperatorMetrics): Promise<number> {
  const m = await metrics.registry.getSingleMetric('rest_client_requests_total')!.get();
  return m.values.reduce((sum, v) => sum + v.value, 0);
}
