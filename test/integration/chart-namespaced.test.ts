// The Helm chart's namespace-scoped shape (watchNamespaces set): Roles in the
// watched namespaces, a ClusterRole for what is cluster-scoped by nature only
// (host claims, and the reads some settings need), and a pod that opts out of
// sidecar injection. Installed
// into the test control plane, the operator runs in-process as the chart's
// ServiceAccount through a scenario that uses every grant, and the audit log
// shows it was refused nothing, used every permission, and sent no request
// outside the watched namespaces and its own.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api, type V1EnvVar } from '@kubernetes/client-node';
import { hostClaimName, type HostClaim } from '../../src/api/v1alpha1/hostclaim.ts';
import { parseConfig } from '../../src/config.ts';
import { detectInPlaceScaling } from '../../src/operator.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { startStandins } from '../standin/standin.ts';
import { app, applyApp, condition, getKsvc, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import {
  auditGrants, describeRequest, grantedPermissions, helm, installChart, renderChart, type PolicyRule, type RenderedObject,
} from '../support/helm.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

interface PodTemplate { metadata: { labels: Record<string, string> }; spec: { serviceAccountName: string; containers: Array<{ env: V1EnvVar[] }> } }

const ofKind = (objects: RenderedObject[], kind: string) => objects.filter((o) => o.kind === kind);
const rules = (o: RenderedObject) => o.rules as PolicyRule[];
const podTemplate = (objects: RenderedObject[]) => (ofKind(objects, 'Deployment')[0]!.spec as { template: PodTemplate }).template;
const NAMESPACED_WRITES = ['services', 'inferenceservices', 'virtualservices', 'localmodelnamespacecaches', 'revisions', 'serverlessapps', 'serverlessapps/status', 'events'];

/** The environment a pod of this Deployment sees, with the downward API filled in. */
function podEnv(env: V1EnvVar[], pod: { namespace: string; name: string }): Record<string, string> {
  const fields: Record<string, string> = { 'metadata.namespace': pod.namespace, 'metadata.name': pod.name };
  return Object.fromEntries(env.map((e) => [e.name, e.value ?? fields[e.valueFrom?.fieldRef?.fieldPath ?? ''] ?? '']));
}

const explicit = { knativeInPlaceScaling: 'true', modelCache: { scope: 'namespace' } };

describe('Helm chart, namespace-scoped: rendering', function () {
  this.timeout(600_000);

  it('renders Roles in each watched namespace, and a ClusterRole with host claims only when no setting needs a cluster-scoped read', async () => {
    const objects = await renderChart({ watchNamespaces: ['team-a', 'team-b'], ...explicit }, { namespace: 'ops' });
    assert.deepEqual(ofKind(objects, 'ClusterRole').flatMap(rules), [{ apiGroups: ['serverlessapp.io'], resources: ['hostclaims'], verbs: ['list', 'watch', 'create', 'delete'] }]);
    const roles = ofKind(objects, 'Role');
    assert.deepEqual(roles.map((r) => `${r.metadata.namespace}/${r.metadata.name}`).sort(),
      ['ops/sapp-serverlessapp-operator-leader-election', 'ops/sapp-serverlessapp-operator-policy', 'team-a/sapp-serverlessapp-operator', 'team-b/sapp-serverlessapp-operator']);
    const [a, b] = roles.filter((r) => r.metadata.namespace !== 'ops');
    assert.deepEqual(rules(a!), rules(b!), 'every watched namespace gets the same grants');
    const bindings = ofKind(objects, 'RoleBinding').filter((r) => r.metadata.namespace !== 'ops');
    for (const binding of bindings) {
      assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'sapp-serverlessapp-operator', namespace: 'ops' }]);
      assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'sapp-serverlessapp-operator' });
    }
    const granted = grantedPermissions(rules(a!));
    assert.ok(!granted.has('patch serverlessapps.serverlessapp.io'), 'no finalizer to set with namespace-scoped caches');
    assert.ok(!granted.has('create localmodelcaches.serving.kserve.io'));
  });

  it('keeps only cluster-scoped rules in the ClusterRole when watchNamespaces is set: never writes to workloads in every namespace', async () => {
    const objects = await renderChart({ watchNamespaces: ['team-a'], modelCache: { scope: 'auto' } });
    const [clusterRole, ...more] = ofKind(objects, 'ClusterRole');
    assert.deepEqual(more, []);
    const resources = rules(clusterRole!).flatMap((r) => r.resources ?? []).sort();
    assert.deepEqual(resources, ['customresourcedefinitions', 'hostclaims', 'localmodelcaches']);
    for (const r of rules(clusterRole!)) for (const res of r.resources ?? []) assert.ok(!NAMESPACED_WRITES.includes(res), `${res} in the ClusterRole`);
  });

  it('opts the operator pod out of Istio sidecar injection, in either shape', async () => {
    for (const values of [{}, { watchNamespaces: ['team-a'], ...explicit }]) {
      assert.equal(podTemplate(await renderChart(values)).metadata.labels['sidecar.istio.io/inject'], 'false');
    }
  });
});

describe('Helm chart, namespace-scoped: installed, with the operator running as its ServiceAccount', function () {
  this.timeout(600_000);
  const release = 'sapp-ns';
  let releaseNs: string;
  let watched: string[];
  let username: string;
  let sa: KubeConfig;
  let op: RunningOperator | undefined;
  let standins: Awaited<ReturnType<typeof startStandins>> | undefined;

  before(async () => {
    const env = testEnv();
    releaseNs = await freshNamespace('sapp-ns-system');
    watched = [await freshNamespace('tenant-one'), await freshNamespace('tenant-two')];
    // The shortest release grace: the host the first scenario stops naming is released while the run lasts (delete hostclaims).
    const values = { watchNamespaces: watched, ...explicit, allowedGateways: ['istio-system/public'], hostClaims: { releaseAfter: '1m' } };
    await installChart(release, releaseNs, values, { kubeconfig: env.kubeconfigPath, extraArgs: ['--skip-crds'] });

    const admin = env.kubeConfig();
    const deployment = await admin.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: releaseNs, name: `${release}-serverlessapp-operator` });
    const name = deployment.spec!.template.spec!.serviceAccountName!;
    username = `system:serviceaccount:${releaseNs}:${name}`;
    const token = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({ namespace: releaseNs, name, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
    sa = new KubeConfig();
    sa.loadFromOptions({
      clusters: [{ name: 'envtest', server: env.server, caData: Buffer.from(env.caPem).toString('base64') }],
      users: [{ name, token: token.status!.token }],
      contexts: [{ name, cluster: 'envtest', user: name }],
      currentContext: name,
    });
    const { help: _help, ...config } = parseConfig([], podEnv(deployment.spec!.template.spec!.containers[0]!.env ?? [], { namespace: releaseNs, name: `${name}-5c7d9-q8x2z` }));
    assert.deepEqual(config.namespaces, watched);
    standins = await startStandins({ kubeConfig: admin, readyDelayMs: 100 });
    op = await startOperator({ ...config, metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0', logLevel: process.env.OPERATOR_LOG_LEVEL ?? 'error' }, { kubeConfig: sa });
  });
  after(async () => {
    await op?.stop();
    await standins?.stop();
  });

  it('creates no cluster-scoped RBAC but for host claims', async () => {
    // A Role in each watched namespace, and in the release's: leader election and the published policy.
    const manifest = await helm(['get', 'manifest', release, '--namespace', releaseNs], { kubeconfig: testEnv().kubeconfigPath });
    const kinds = manifest.stdout.match(/^kind: \S+/gm)?.map((k) => k.slice(6)).sort();
    assert.deepEqual(kinds, ['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'PodDisruptionBudget', 'Role', 'Role', 'Role', 'Role', 'RoleBinding', 'RoleBinding', 'RoleBinding', 'RoleBinding', 'Service', 'ServiceAccount', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    const clusterRole = await testEnv().kubeConfig().makeApiClient(RbacAuthorizationV1Api).readClusterRole({ name: `${release}-serverlessapp-operator` });
    assert.deepEqual(clusterRole.rules?.flatMap((r) => r.resources ?? []), ['hostclaims']);
  });

  it('serves a container app through in-place scaling and a route that is added, changed and removed', async () => {
    const [ns] = watched as [string];
    const spec = (extra: Partial<AppSpec> = {}): AppSpec => ({ container: { image: 'shop:1' }, scaling: { minScale: 0, maxScale: 5 }, ...extra });
    await applyApp(app(ns, 'shop', spec()));
    const v1 = await waitForApp(ns, 'shop', readyTrue, 'shop Ready', 120_000);
    await applyApp(app(ns, 'shop', spec({ scaling: { minScale: 1, maxScale: 5 } })));
    await waitFor('min-scale set on the live revision', async () => {
      const rev = await userClient().get<{ metadata: { annotations?: Record<string, string> } }>(Kinds.KnativeRevision, ns, v1.status!.versions!.stable!.revision!);
      return rev?.metadata.annotations?.['autoscaling.knative.dev/min-scale'] === '1';
    }, { timeoutMs: SETTLE_MS });
    const routes = async () => userClient().get<{ spec: { hosts: string[] } }>(Kinds.VirtualService, ns, 'shop-routes');
    await applyApp(app(ns, 'shop', spec({ ingress: { hosts: [`shop.${ns}.example.com`], gateways: ['istio-system/public'] } })));
    await waitFor('VirtualService created', async () => (await routes())?.spec.hosts.includes(`shop.${ns}.example.com`), { timeoutMs: SETTLE_MS });
    await applyApp(app(ns, 'shop', spec({ ingress: { hosts: [`shop.${ns}.example.com`, `www.shop.${ns}.example.com`], gateways: ['istio-system/public'] } })));
    await waitFor('VirtualService changed', async () => (await routes())?.spec.hosts.includes(`www.shop.${ns}.example.com`), { timeoutMs: SETTLE_MS });
    await applyApp(app(ns, 'shop', spec()));
    await waitFor('VirtualService removed with ingress', async () => (await routes()) === undefined, { timeoutMs: SETTLE_MS });
  });

  it('reports a refused gateway with one Event whose series counts the repeat', async () => {
    const [, ns] = watched as [string, string];
    const spec = (gateway: string): AppSpec => ({ container: { image: 'gw:1' }, ingress: { hosts: [`gw.${ns}.example.com`], gateways: [gateway] } });
    const refused = (a: Parameters<typeof readyTrue>[0]) => condition(a, 'Ready')?.reason === 'GatewayNotAllowed';
    await applyApp(app(ns, 'gw', spec('elsewhere/public')));
    await waitForApp(ns, 'gw', refused, 'GatewayNotAllowed');
    await applyApp(app(ns, 'gw', spec('istio-system/public')));
    await waitForApp(ns, 'gw', readyTrue, 'Ready on an allowed gateway', 120_000);
    await applyApp(app(ns, 'gw', spec('elsewhere/public')));
    await waitForApp(ns, 'gw', refused, 'GatewayNotAllowed again');
    await waitFor('one Event with a series of 2', async () => (await userClient().list<{ reason?: string; series?: { count: number } }>(Kinds.Event, ns)).items
      .some((e) => e.reason === 'GatewayNotAllowed' && (e.series?.count ?? 0) >= 2), { timeoutMs: SETTLE_MS });
  });

  it('switches an app to a model with a namespace-scoped cache, changes the model, and switches back', async () => {
    const [, ns] = watched as [string, string];
    const caches = async () => (await userClient().list<{ spec: { sourceModelUri: string } }>(Kinds.LocalModelNamespaceCache, ns)).items.map((c) => c.spec.sourceModelUri);
    const model = (uri: string): AppSpec => ({ model: { format: { name: 'sklearn' }, storageUri: uri, size: '1Gi' }, prewarm: { cacheModel: true } });
    await applyApp(app(ns, 'flip', { container: { image: 'flip:1' } }));
    await waitForApp(ns, 'flip', readyTrue, 'container Ready', 120_000);
    await applyApp(app(ns, 'flip', model('gs://models/flip/v1')));
    await waitFor('Knative Service replaced by an InferenceService', async () => (await getKsvc(ns, 'flip')) === undefined && (await userClient().get(Kinds.InferenceService, ns, 'flip')) !== undefined, { timeoutMs: 120_000 });
    await waitFor('model cached', async () => (await caches()).join() === 'gs://models/flip/v1', { timeoutMs: SETTLE_MS });
    await applyApp(app(ns, 'flip', model('gs://models/flip/v2')));
    await waitFor('old cache removed, new one made', async () => (await caches()).join() === 'gs://models/flip/v2', { timeoutMs: SETTLE_MS });
    await applyApp(app(ns, 'flip', { container: { image: 'flip:1' } }));
    await waitFor('InferenceService replaced by a Knative Service', async () => (await userClient().get(Kinds.InferenceService, ns, 'flip')) === undefined && (await getKsvc(ns, 'flip')) !== undefined, { timeoutMs: 120_000 });
  });

  it('releases the claims of the hosts a watched namespace no longer names once the grace is over', async () => {
    const [ns] = watched as [string];
    const claim = (host: string) => userClient().get<HostClaim>(Kinds.HostClaim, undefined, hostClaimName(host)!);
    await waitFor(`the HostClaims of shop.${ns}.example.com and www.shop.${ns}.example.com released (grace 1m)`,
      async () => (await claim(`shop.${ns}.example.com`)) === undefined && (await claim(`www.shop.${ns}.example.com`)) === undefined, { timeoutMs: 240_000 });
  });

  it('was refused nothing, used every permission granted, and stayed in its namespaces', async () => {
    await op?.stop();
    op = undefined;
    const rbac = testEnv().kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    const name = `${release}-serverlessapp-operator`;
    const installed = await Promise.all([
      ...watched.map((namespace) => rbac.readNamespacedRole({ namespace, name })),
      rbac.readNamespacedRole({ namespace: releaseNs, name: `${name}-leader-election` }),
      rbac.readClusterRole({ name }),
    ]);
    const granted = grantedPermissions(installed.flatMap((r) => r.rules as PolicyRule[]));
    const { requests, refused, unused } = await auditGrants(join(testEnv().dir, 'audit.log'), username, granted);
    assert.deepEqual(refused, [], 'refused: the chart grants too little');
    assert.deepEqual(unused, [], 'granted but never used: the chart grants too much');
    const allowed = new Set([...watched, releaseNs]);
    // Host claims are cluster-scoped: which namespace owns a host is decided across all of them.
    const outside = requests.filter((r) => (!r.namespace || !allowed.has(r.namespace)) && r.resource !== 'hostclaims');
    assert.deepEqual(outside.map(describeRequest), [], 'requests outside the watched namespaces and its own');
  });

  it('falls back to the flags, saying so, when an auto setting would need a CRD read it may not make', async () => {
    const warnings: string[] = [];
    assert.equal(await detectInPlaceScaling(new KubeClient(sa), 'auto', { warn: (m: string) => warnings.push(m) }), false);
    assert.match(warnings.join('\n'), /cannot read CustomResourceDefinition services\.serving\.knative\.dev for auto-detection \(HTTP 403.*--knative-inplace-scaling/);
  });
});
