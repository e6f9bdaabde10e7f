// The Helm chart. Rendered: it lints, maps every operator setting onto the
// Deployment, runs restricted, and its values schema refuses bad input by name.
// Installed into the test rig (real Knative and KServe): the operator runs in-process as the
// chart's ServiceAccount through a full scenario, and the audit log shows it
// was refused nothing and used every permission the chart grants.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api, type V1EnvVar } from '@kubernetes/client-node';
import { parseConfig, usage } from '../../src/config.ts';
import { CACHE_FINALIZER } from '../../src/controllers/model-cache.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getApp, getKsvc, getRevision, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import {
  CHART_DIR, auditGrants, grantedPermissions, helm, installChart, podEnv, renderChart, templateChart,
  type PolicyRule, type RenderedObject,
} from '../support/helm.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { hostClaimName, type HostClaim } from '../../src/api/v1alpha1/hostclaim.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';

interface Container {
  env: V1EnvVar[];
  securityContext: Record<string, unknown>;
  ports: Array<{ name: string; containerPort: number }>;
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
}
interface PodSpec { containers: Container[]; securityContext: Record<string, unknown>; terminationGracePeriodSeconds: number; serviceAccountName: string }
interface Deployment { spec: { replicas: number; template: { spec: PodSpec } } }

const find = <T>(objects: RenderedObject[], kind: string, name?: string): T & RenderedObject => {
  const o = objects.find((x) => x.kind === kind && (!name || x.metadata.name === name));
  assert.ok(o, `the chart renders a ${kind}${name ? ` ${name}` : ''}`);
  return o as T & RenderedObject;
};
const operatorContainer = (objects: RenderedObject[]) => find<Deployment>(objects, 'Deployment').spec.template.spec.containers[0]!;
/**
 * The chart's ConfigMap grants to the operator, in the release namespace: the policy ConfigMap (src/runtime/policy-publication.ts),
 * by name but for create (which cannot be named), and the read of the node cache usage reports (src/render/model-cache-usage.ts).
 */
const isPolicyRule = (rule: PolicyRule) => rule.resources?.length === 1 && (rule.resourceNames?.join() === 'serverlessapp-policy' || rule.verbs.join() === 'create' || rule.verbs.join() === 'list,watch');
const rulesOf = (objects: RenderedObject[], kind: 'ClusterRole' | 'Role') => objects.filter((o) => o.kind === kind).flatMap((o) => o.rules as PolicyRule[]);

describe('Helm chart: rendering', function () {
  this.timeout(600_000);

  it('passes helm lint --strict', async () => {
    const r = await helm(['lint', CHART_DIR, '--strict']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

  it('renders with plain `helm template`, no --kube-version: the rig\'s helm assumes its client-go\'s Kubernetes, as a released helm does, and the chart still refuses clusters older than 1.29', async () => {
    const plain = await helm(['template', 'sapp', CHART_DIR, '--namespace', 'serverlessapp-system']);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /^kind: Deployment$/m);
    const old = await helm(['template', 'sapp', CHART_DIR, '--namespace', 'serverlessapp-system', '--kube-version', '1.28.0']);
    assert.notEqual(old.code, 0);
    assert.match(old.stderr, /chart requires kubeVersion: >=1\.29\.0-0 which is incompatible with Kubernetes v1\.28\.0/);
  });

  it('runs two replicas with leader election on, identity and Lease namespace from the downward API', async () => {
    const objects = await renderChart();
    assert.equal(find<Deployment>(objects, 'Deployment').spec.replicas, 2);
    const env = operatorContainer(objects).env;
    assert.equal(env.find((e) => e.name === 'LEADER_ELECT')?.value, 'true');
    assert.deepEqual(env.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom, { fieldRef: { fieldPath: 'metadata.namespace' } });
    assert.deepEqual(env.find((e) => e.name === 'POD_NAME')?.valueFrom, { fieldRef: { fieldPath: 'metadata.name' } });
    assert.equal(find<{ spec: { minAvailable: number } }>(objects, 'PodDisruptionBudget').spec.minAvailable, 1);
  });

  it('sets every environment variable the operator reads, except the kubeconfig and the demo clock', async () => {
    const read = new Set([...usage().matchAll(/\[\$([A-Z_]+)\]/g)].map((m) => m[1]!));
    const set = new Set(operatorContainer(await renderChart()).env.map((e) => e.name));
    assert.deepEqual([...read].filter((v) => !set.has(v)).sort(), ['CLOCK_START', 'KUBECONFIG']);
  });

  it('hands each value to the operator as its own parser reads it', async () => {
    const values = {
      watchNamespaces: ['team-a', 'team-b'], allowedGateways: ['istio-system/public', '{namespace}/*'],
      warmupUrlTemplate: 'http://{revision}.{namespace}.svc:8012{path}', llmWarmupUrlTemplate: 'https://{service}.{namespace}.svc:8443{path}', modelCache: { nodeGroup: 'gpu-a100', scope: 'cluster', maxModelSize: '20Gi', maxBytesPerNamespace: '50Gi', maxCachesPerNamespace: 7, minChargePerCache: '2Gi', allowedStorageUriPrefixes: ['s3://models/{namespace}/'] },
      knativeInPlaceScaling: 'false', knativeVisibility: 'external', localGateway: 'local-gw.istio-system.svc.cluster.local', router: 'gateway-api', logLevel: 'debug', concurrency: 12,
      metrics: { port: 9090 }, healthProbePort: 9091, leaderElection: { leaseName: 'my-lease' },
      allowedHostSuffixes: ['{namespace}.apps.example.com'], allowWildcardHosts: true,
      analysis: { providers: { main: 'http://prometheus.monitoring:9090', team: 'http://thanos.monitoring:9090' }, allowAddress: true, scopedProviders: ['team'], releaseFreezeBelow: { payments: 50, '*': 12.5 } },
      allowedServiceAccounts: ['model-reader', 'shop-runner'],
      allowedPodMetadataKeys: ['sidecar.istio.io/inject', 'proxy.istio.io/*'], allowSecretReferences: true,
      scheduling: { allowedTolerationKeys: ['nvidia.com/gpu', 'dedicated'], allowCrossNamespacePodAffinity: true, allowNodePinning: true },
      budgets: { warmupsPerNamespace: 3, concurrentWarmups: 30, analysesPerNamespace: 1, concurrentAnalyses: 6, analysisQueriesPerNamespace: 7.5, pendingEventsPerNamespace: 200, namespaceCpuShare: '250m', namespaceCpuBurst: '8s' },
      hostClaims: { maxPerNamespace: 10, releaseAfter: '2h' },
    };
    const env = podEnv(operatorContainer(await renderChart(values, { namespace: 'ops' })).env, { namespace: 'ops', name: 'pod-1' });
    const { help: _help, ...config } = parseConfig([], env);
    assert.deepEqual(config, {
      namespaces: ['team-a', 'team-b'], concurrency: 12, logLevel: 'debug', metricsAddr: ':9090', probeAddr: ':9091',
      leaderElect: true, leaderElectionNamespace: 'ops', leaderElectionId: 'my-lease', identity: 'pod-1',
      allowedGateways: ['istio-system/public', '{namespace}/*'], warmupUrlTemplate: 'http://{revision}.{namespace}.svc:8012{path}',
      llmWarmupUrlTemplate: 'https://{service}.{namespace}.svc:8443{path}',
      modelCacheNodeGroup: 'gpu-a100', modelCacheScope: 'cluster', knativeInPlaceScaling: 'false', knativeVisibility: 'external',
      localGateway: 'local-gw.istio-system.svc.cluster.local', router: 'gateway-api',
      allowedHostSuffixes: ['{namespace}.apps.example.com'], allowWildcardHosts: true,
      analysisProviders: [{ name: 'main', url: 'http://prometheus.monitoring:9090' }, { name: 'team', url: 'http://thanos.monitoring:9090', scoped: true }], allowAnalysisAddress: true,
      releaseFreezeBelow: { payments: 50, '*': 12.5 },
      maxModelSizeBytes: 20 * 2 ** 30, maxModelCacheBytesPerNamespace: 50 * 2 ** 30, maxModelCachesPerNamespace: 7, modelCacheMinChargeBytes: 2 * 2 ** 30, allowedStorageUriPrefixes: ['s3://models/{namespace}/'],
      allowedServiceAccounts: ['model-reader', 'shop-runner'],
      allowedPodMetadataKeys: ['sidecar.istio.io/inject', 'proxy.istio.io/*'], allowSecretReferences: true,
      allowedTolerationKeys: ['nvidia.com/gpu', 'dedicated'], allowCrossNamespacePodAffinity: true, allowNodePinning: true,
      maxHostClaimsPerNamespace: 10, hostClaimReleaseAfterMs: 2 * 3_600_000,
      budgets: { warmupsPerNamespace: 3, concurrentWarmups: 30, analysesPerNamespace: 1, concurrentAnalyses: 6, analysisQueriesPerNamespace: 7.5, pendingEventsPerNamespace: 200, namespaceShare: { cpuMsPerSecond: 250, burstMs: 8000 } },
    });
  });

  it('runs restricted: non-root 65532, read-only root, no privilege escalation, no capabilities, RuntimeDefault seccomp', async () => {
    const objects = await renderChart();
    const pod = find<Deployment>(objects, 'Deployment').spec.template.spec;
    const c = pod.containers[0]!.securityContext;
    assert.equal(c.runAsNonRoot, true);
    assert.equal(c.runAsUser, 65532);
    assert.equal(c.readOnlyRootFilesystem, true);
    assert.equal(c.allowPrivilegeEscalation, false);
    assert.deepEqual(c.capabilities, { drop: ['ALL'] });
    assert.deepEqual(c.seccompProfile, { type: 'RuntimeDefault' });
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.terminationGracePeriodSeconds, 30);
  });

  it('probes /healthz and /readyz on 8081 and serves metrics on 8080 behind a Service port named http-metrics', async () => {
    const objects = await renderChart();
    const c = operatorContainer(objects);
    assert.deepEqual(c.ports.map((p) => [p.name, p.containerPort]), [['http-metrics', 8080], ['http-probes', 8081]]);
    assert.deepEqual(c.livenessProbe.httpGet, { path: '/healthz', port: 'http-probes' });
    assert.deepEqual(c.readinessProbe.httpGet, { path: '/readyz', port: 'http-probes' });
    const svc = find<{ spec: { ports: Array<{ name: string; port: number }> } }>(objects, 'Service');
    assert.deepEqual(svc.spec.ports.map((p) => [p.name, p.port]), [['http-metrics', 8080]]);
    assert.equal(objects.some((o) => o.kind === 'ServiceMonitor'), false, 'no ServiceMonitor unless asked');
    const monitored = await renderChart({ metrics: { serviceMonitor: { enabled: true, labels: { release: 'prom' } } } });
    const sm = find<{ spec: { endpoints: Array<{ port: string; path: string }> } }>(monitored, 'ServiceMonitor');
    assert.equal(sm.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(sm.metadata.labels?.release, 'prom');
    assert.deepEqual(sm.spec.endpoints.map((e) => [e.port, e.path]), [['http-metrics', '/metrics']]);
  });

  it('grants no wildcard and nothing on Secrets, ConfigMaps or Pods, whatever the settings', async () => {
    for (const values of [{}, { modelCache: { scope: 'cluster' } }, { knativeInPlaceScaling: 'false', modelCache: { scope: 'namespace' } }, { watchNamespaces: ['a'] }]) {
      const objects = await renderChart(values);
      for (const rule of [...rulesOf(objects, 'ClusterRole'), ...rulesOf(objects, 'Role')]) {
        for (const field of [rule.apiGroups, rule.resources, rule.verbs, rule.resourceNames]) assert.ok(!field?.includes('*'), `wildcard in ${JSON.stringify(rule)}`);
        assert.equal(rule.nonResourceURLs, undefined);
        for (const r of ['secrets', 'configmaps', 'pods']) assert.ok(!rule.resources?.includes(r) || isPolicyRule(rule), `${r} granted with ${JSON.stringify(values)}`);
      }
      // The one exception: the ConfigMap that publishes the operator's policy for kubectl sapp plan, in the release namespace only.
      const policyRoles = objects.filter((o) => o.kind === 'Role' && (o.rules as PolicyRule[]).some((r) => r.resources?.includes('configmaps')));
      assert.deepEqual(policyRoles.map((o) => o.metadata.namespace), ['serverlessapp-system']);
    }
  });

  it('runs the cache usage reporter only when asked: a DaemonSet on the chosen nodes, the models volume read-only, restricted, writing only ConfigMaps in the release namespace', async () => {
    assert.equal((await renderChart()).some((o) => o.kind === 'DaemonSet'), false, 'off by default');
    const objects = await renderChart({ modelCache: { usageReporter: { enabled: true, hostPath: '/var/lib/models', intervalSeconds: 15, nodeSelector: { 'nvidia.com/gpu.present': 'true' }, tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }] } } });
    interface DaemonSet { spec: { template: { spec: PodSpec & { nodeSelector?: Record<string, string>; tolerations?: unknown[]; volumes: Array<{ name: string; hostPath?: { path: string } }>; containers: Array<Container & { command: string[]; args: string[]; volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }> }> } } } }
    const ds = find<DaemonSet>(objects, 'DaemonSet');
    const pod = ds.spec.template.spec;
    const c = pod.containers[0]!;
    assert.deepEqual(c.command, ['/nodejs/bin/node', '--lite-mode', 'dist/cache-reporter/main.js']);
    assert.deepEqual(c.args, ['--models-dir=/mnt/models', '--interval-seconds=15', '--max-entries=100000']);
    assert.deepEqual(c.env.map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath]), [['NODE_NAME', 'spec.nodeName'], ['POD_NAMESPACE', 'metadata.namespace']]);
    assert.deepEqual(c.volumeMounts, [{ name: 'models', mountPath: '/mnt/models', readOnly: true }]);
    assert.equal(pod.volumes.find((v) => v.name === 'models')?.hostPath?.path, '/var/lib/models');
    assert.deepEqual(pod.nodeSelector, { 'nvidia.com/gpu.present': 'true' });
    assert.equal(pod.tolerations?.length, 1);
    assert.deepEqual([c.securityContext.readOnlyRootFilesystem, c.securityContext.allowPrivilegeEscalation, c.securityContext.capabilities], [true, false, { drop: ['ALL'] }]);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.serviceAccountName, 'sapp-serverlessapp-operator-cache-reporter');
    const role = objects.find((o) => o.kind === 'Role' && o.metadata.name === 'sapp-serverlessapp-operator-cache-reporter');
    assert.equal(role?.metadata.namespace, 'serverlessapp-system');
    assert.deepEqual(role?.rules, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'patch'] }]);
    assert.equal(objects.some((o) => o.kind === 'ClusterRole' && o.metadata.name.includes('cache-reporter')), false, 'nothing cluster-wide');
  });

  it('reads only the named CRDs, and grants only the cache kinds and revision writes the settings can use', async () => {
    const granted = async (values: object) => grantedPermissions(rulesOf(await renderChart(values), 'ClusterRole'));
    const crdRule = rulesOf(await renderChart(), 'ClusterRole').find((r) => r.resources?.includes('customresourcedefinitions'));
    assert.deepEqual(crdRule?.verbs, ['get']);
    assert.deepEqual(crdRule?.resourceNames, ['services.serving.knative.dev'], 'the default cache scope (namespace) needs no detection');
    const autoRule = rulesOf(await renderChart({ modelCache: { scope: 'auto' } }), 'ClusterRole').find((r) => r.resources?.includes('customresourcedefinitions'));
    assert.deepEqual(autoRule?.resourceNames, ['services.serving.knative.dev', 'localmodelnamespacecaches.serving.kserve.io']);
    const cluster = await granted({ modelCache: { scope: 'cluster' } });
    assert.ok(cluster.has('create localmodelcaches.serving.kserve.io') && !cluster.has('create localmodelnamespacecaches.serving.kserve.io'));
    const fixed = await granted({ modelCache: { scope: 'namespace' }, knativeInPlaceScaling: 'false' });
    assert.ok(fixed.has('create localmodelnamespacecaches.serving.kserve.io') && !fixed.has('create localmodelcaches.serving.kserve.io'));
    assert.ok(!fixed.has('patch revisions.serving.knative.dev'), 'no revision writes without in-place scaling');
    assert.ok(!fixed.has('get customresourcedefinitions.apiextensions.k8s.io'), 'nothing to detect when no setting is auto');
    const role = rulesOf(await renderChart({}, { namespace: 'ops' }), 'Role');
    assert.deepEqual(role, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['serverlessapp-operator-leader'], verbs: ['get', 'update'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['serverlessapp-policy'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] },
    ]);
  });

  it('grants each router\'s route kind only under that router, and under gateway-api only the removal of the istio router\'s VirtualServices', async () => {
    const granted = async (values: object) => grantedPermissions(rulesOf(await renderChart(values), 'ClusterRole'));
    const verbs = (g: Set<string>, resource: string) => ['get', 'list', 'watch', 'create', 'patch', 'delete'].filter((v) => g.has(`${v} ${resource}`));
    const istio = await granted({});
    assert.deepEqual([verbs(istio, 'virtualservices.networking.istio.io'), verbs(istio, 'httproutes.gateway.networking.k8s.io')], [['get', 'list', 'watch', 'create', 'patch', 'delete'], []]);
    const gatewayApi = await granted({ router: 'gateway-api' });
    assert.deepEqual([verbs(gatewayApi, 'httproutes.gateway.networking.k8s.io'), verbs(gatewayApi, 'virtualservices.networking.istio.io')], [['get', 'list', 'watch', 'create', 'patch', 'delete'], ['list', 'watch', 'delete']]);
  });

  it('the chart ships no NetworkPolicy for the metrics port: asked, it admits the metrics port only from the listed peers, the probes from anywhere, nothing else', async () => {
    type Policy = RenderedObject & { spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: Array<{ ports: Array<{ port: string; protocol: string }>; from?: unknown[] }> } };
    assert.equal((await renderChart()).some((o) => o.kind === 'NetworkPolicy'), false, 'opt-in: only the platform knows where its Prometheus runs');
    const monitoring = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } }];
    const objects = await renderChart({ metrics: { networkPolicy: { enabled: true, from: monitoring } } });
    const np = find<Policy>(objects, 'NetworkPolicy');
    const pods = find<{ spec: { template: { metadata: { labels: Record<string, string> } } } }>(objects, 'Deployment').spec.template.metadata.labels;
    for (const [k, v] of Object.entries(np.spec.podSelector.matchLabels)) assert.equal(pods[k], v, `selects the operator's pods by ${k}`);
    assert.deepEqual(np.spec.policyTypes, ['Ingress']);
    assert.deepEqual(np.spec.ingress, [
      { ports: [{ port: 'http-metrics', protocol: 'TCP' }], from: monitoring },
      { ports: [{ port: 'http-probes', protocol: 'TCP' }] },
    ]);
    // No peer: no rule for the metrics port at all (a rule without `from` would admit everyone).
    const none = find<Policy>(await renderChart({ metrics: { networkPolicy: { enabled: true } } }), 'NetworkPolicy');
    assert.deepEqual(none.spec.ingress, [{ ports: [{ port: 'http-probes', protocol: 'TCP' }] }]);
    await refuses({ metrics: { serviceMonitor: { enabled: true }, networkPolicy: { enabled: true } } }, /needs metrics.networkPolicy.from/);
    await refuses({ metrics: { networkPolicy: { enabled: true, from: [{}] } } }, /networkPolicy\/from\/0/);
    await refuses({ metrics: { networkPolicy: { enabled: true, from: [{ namespace: 'monitoring' }] } } }, /additional properties 'namespace' not allowed/);
  });

  it('renders no PodDisruptionBudget for a single replica, which may run without leader election', async () => {
    const objects = await renderChart({ replicaCount: 1, leaderElection: { enabled: false } });
    assert.equal(objects.some((o) => o.kind === 'PodDisruptionBudget'), false);
    // No Lease to compete for; the policy ConfigMap it withdraws when it stops, as no Lease says whether it runs.
    assert.deepEqual(rulesOf(objects, 'Role'), [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['serverlessapp-policy'], verbs: ['patch', 'get', 'delete'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] },
    ]);
    assert.equal(operatorContainer(objects).env.find((e) => e.name === 'LEADER_ELECT')?.value, 'false');
  });

  it('renders the admission policy of pod metadata with the allow-list as a CEL list, bound where the operator acts, or not at all when off', async () => {
    type Policy = RenderedObject & { spec: { variables: Array<{ name: string; expression: string }>; matchResources?: { namespaceSelector: unknown } } };
    const policy = (objects: RenderedObject[]) => find<Policy>(objects, 'ValidatingAdmissionPolicy');
    const binding = (objects: RenderedObject[]) => find<Policy>(objects, 'ValidatingAdmissionPolicyBinding');
    const everywhere = await renderChart({ allowedPodMetadataKeys: ['sidecar.istio.io/*', 'app'] });
    assert.equal(policy(everywhere).spec.variables[0]!.expression, '["sidecar.istio.io/*", "app"]');
    assert.equal(policy(everywhere).spec.variables.find((v) => v.name === 'selectorLabels')?.expression, '["app", "version"]', 'the generated rule follows');
    assert.equal(binding(everywhere).spec.matchResources, undefined, 'every namespace when the operator watches all');
    assert.deepEqual(binding(await renderChart({ watchNamespaces: ['team-a', 'team-b'] })).spec.matchResources?.namespaceSelector,
      { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a', 'team-b'] }] });
    assert.deepEqual(binding(await renderChart({ watchNamespaces: ['team-a'], admissionPolicy: { namespaceSelector: { matchLabels: { tenant: 'yes' } } } })).spec.matchResources?.namespaceSelector,
      { matchLabels: { tenant: 'yes' } });
    assert.equal(policy(await renderChart()).spec.variables[0]!.expression, '["app.kubernetes.io/version"]', 'the default allow-list');
    assert.equal(policy(await renderChart({ allowedPodMetadataKeys: [] })).spec.variables[0]!.expression, '[]');
    const off = await renderChart({ admissionPolicy: { enabled: false } });
    assert.deepEqual(off.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy')), []);
  });

  it('refuses the admission policy on Kubernetes older than 1.30, saying how to turn it off', async () => {
    const old = await helm(['template', 'sapp', CHART_DIR, '--kube-version', '1.29.0']);
    assert.notEqual(old.code, 0);
    assert.match(old.stderr, /admissionPolicy.enabled needs Kubernetes >= 1.30 .*set admissionPolicy.enabled=false/);
    const off = await helm(['template', 'sapp', CHART_DIR, '--kube-version', '1.29.0', '--set', 'admissionPolicy.enabled=false']);
    assert.equal(off.code, 0, off.stderr);
  });

  const refuses = async (values: object, message: RegExp) => {
    const r = await templateChart(values);
    assert.notEqual(r.code, 0, `helm template accepted ${JSON.stringify(values)}`);
    assert.match(r.stderr, message);
  };

  it('refuses invalid values with a message naming the value', async () => {
    await refuses({ replicaCount: -1 }, /at '\/replicaCount': minimum: got -1, want 0/);
    await refuses({ logLevel: 'loud' }, /at '\/logLevel': value must be one of 'error', 'warn', 'info', 'debug'/);
    await refuses({ replicas: 3 }, /additional properties 'replicas' not allowed/);
    await refuses({ image: { repo: 'x' } }, /at '\/image': additional properties 'repo' not allowed/);
    await refuses({ concurrency: 0 }, /at '\/concurrency': minimum: got 0, want 1/);
    await refuses({ modelCache: { scope: 'global' } }, /at '\/modelCache\/scope': value must be one of 'auto', 'cluster', 'namespace'/);
    await refuses({ allowedGateways: ['istio-system/public,evil/gw'] }, /at '\/allowedGateways\/0'/);
  });

  it('refuses settings that cannot work together, saying why', async () => {
    await refuses({ leaderElection: { enabled: false } }, /replicaCount > 1 needs leaderElection.enabled=true/);
    await refuses({ metrics: { port: 8081 } }, /metrics.port and healthProbePort must differ/);
    await refuses({ replicaCount: 2, podDisruptionBudget: { minAvailable: 2 } }, /minAvailable must be below replicaCount/);
  });
});

describe('Helm chart: installed, with the operator running as its ServiceAccount, on the real Knative and KServe', function () {
  this.timeout(600_000);
  const release = 'sapp';
  // The shortest release grace the operator takes, so the claim of the host the canary test drops is released while the run lasts.
  // Cluster-scoped caches need each namespace's models under its own path (else ModelCacheNotIsolated, no cache).
  const values = { modelCache: { scope: 'cluster', allowedStorageUriPrefixes: ['gs://models/{namespace}/'] }, allowedGateways: ['istio-system/public', '{namespace}/*'], hostClaims: { releaseAfter: '1m' } };
  let releaseNs: string;
  let appsNs: string;
  let username: string;
  let op: RunningOperator | undefined;
  let identity: string;

  before(async () => {
    const env = testEnv();
    releaseNs = await freshNamespace('sapp-system');
    appsNs = await freshNamespace('chart-apps');
    // The global setup installed the CRD already, from the same generated file.
    // The admission policy (failurePolicy Fail) bound to this file's apps only: the rig is shared with every test file.
    const admissionPolicy = { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [appsNs] }] } };
    await installChart(release, releaseNs, { ...values, admissionPolicy }, { kubeconfig: env.kubeconfigPath, extraArgs: ['--skip-crds'] });

    // What the kubelet would mount: a token for the chart's ServiceAccount.
    const admin = env.kubeConfig();
    const deployment = await admin.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: releaseNs, name: `${release}-serverlessapp-operator` });
    const sa = deployment.spec!.template.spec!.serviceAccountName!;
    username = `system:serviceaccount:${releaseNs}:${sa}`;
    const token = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({ namespace: releaseNs, name: sa, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'envtest', server: env.server, caData: Buffer.from(env.caPem).toString('base64') }],
      users: [{ name: sa, token: token.status!.token }],
      contexts: [{ name: sa, cluster: 'envtest', user: sa }],
      currentContext: sa,
    });

    // The operator configured exactly as the installed Deployment configures it; only the listeners move to loopback.
    identity = `${deployment.metadata!.name}-7d9f8-x2k4q`;
    const { help: _help, ...config } = parseConfig([], podEnv(deployment.spec!.template.spec!.containers[0]!.env ?? [], { namespace: releaseNs, name: identity }));
    op = await startOperator({ ...config, metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0', logLevel: process.env.OPERATOR_LOG_LEVEL ?? 'error' }, { kubeConfig: kc });
  });
  after(async () => { await op?.stop(); });

  it('creates every object the chart renders', async () => {
    const manifest = await helm(['get', 'manifest', release, '--namespace', releaseNs], { kubeconfig: testEnv().kubeconfigPath });
    const kinds = manifest.stdout.match(/^kind: \S+/gm)?.map((k) => k.slice(6)).sort();
    // Two Roles and their bindings: leader election, and the published policy (kubectl sapp plan reads it).
    assert.deepEqual(kinds, ['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'PodDisruptionBudget', 'Role', 'Role', 'RoleBinding', 'RoleBinding', 'Service', 'ServiceAccount', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    const kc = testEnv().kubeConfig();
    const name = `${release}-serverlessapp-operator`;
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.readClusterRole({ name });
    await rbac.readClusterRoleBinding({ name });
    await rbac.readNamespacedRole({ namespace: releaseNs, name: `${name}-leader-election` });
    await rbac.readNamespacedRoleBinding({ namespace: releaseNs, name: `${name}-leader-election` });
    await kc.makeApiClient(CoreV1Api).readNamespacedService({ namespace: releaseNs, name: `${name}-metrics` });
    assert.equal((await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: releaseNs, name })).spec?.replicas, 2);
  });

  it('takes the lead through a Lease in the release namespace', async () => {
    const lease = await waitFor('the operator holds the Lease', async () => {
      const l = await userClient().get<{ spec?: { holderIdentity?: string } }>(Kinds.Lease, releaseNs, 'serverlessapp-operator-leader');
      return l?.spec?.holderIdentity === identity ? l : undefined;
    }, { timeoutMs: SETTLE_MS });
    assert.ok(lease);
  });

  it('serves a container app through scaling, a 20% canary with header routing, promotion and removal of ingress', async () => {
    // A host of its own: a host belongs to the first app that claims it, in any namespace, and other tests' apps stay behind.
    const ingress = { hosts: [`shop.${appsNs}.example.com`], gateways: ['istio-system/public'] };
    const shop = (tag: string, extra: Partial<AppSpec> = {}): AppSpec => ({ container: { image: `ghcr.io/acme/shop:${tag}`, port: 8080 }, scaling: { minScale: 0, maxScale: 5 }, ...extra });
    const split = async () => Object.fromEntries(((await getKsvc(appsNs, 'shop'))?.status?.traffic ?? []).map((t) => [t.tag, t.percent]));
    await applyApp(app(appsNs, 'shop', shop('1')));
    const v1 = await waitForApp(appsNs, 'shop', readyTrue, 'v1 Ready', READY_MS);
    const revision = v1.status!.versions!.stable!.revision!;

    // Knative >= 1.21 (detected from its CRD): bounds change on the live revision, and Knative follows.
    assert.equal(op!.settings.inPlaceBounds, true);
    await applyApp(app(appsNs, 'shop', shop('1', { scaling: { minScale: 1, maxScale: 5 } })));
    await waitFor('min-scale 1 set in place, Knative runs 1 replica', async () => {
      const rev = await getRevision(appsNs, revision);
      return rev?.metadata.annotations?.['autoscaling.knative.dev/min-scale'] === '1' && rev.status?.actualReplicas === 1;
    }, { timeoutMs: 90_000 });

    const canary = { canaryPercent: 20, match: [{ header: 'x-canary', exact: 'yes' }] };
    await applyApp(app(appsNs, 'shop', shop('2', { rollout: canary, ingress })));
    await waitForApp(appsNs, 'shop', (a) => a.status?.canary?.trafficPercent === 20 && a.status.phase === 'Canary', 'Knative serves the canary 20%', READY_MS);
    await waitFor('Knative reports 80/20', async () => JSON.stringify(await split()) === '{"stable":80,"candidate":20}', { timeoutMs: SETTLE_MS });
    await waitFor('VirtualService with the header route', async () => {
      const vs = await userClient().get<{ spec: { http: Array<{ name: string }> } }>(Kinds.VirtualService, appsNs, 'shop-routes');
      return vs?.spec.http.some((h) => h.name === 'candidate-by-header');
    }, { timeoutMs: SETTLE_MS });

    await applyApp(app(appsNs, 'shop', shop('2', { rollout: { canaryPercent: 100 }, ingress })));
    const promoted = await waitForApp(appsNs, 'shop', (a) => a.status?.phase === 'Stable' && a.status.versions?.stable?.image === 'ghcr.io/acme/shop:2' && readyTrue(a), 'promoted', READY_MS);
    assert.equal(condition(promoted, 'Promoted')?.status, 'True');
    await waitFor('Knative routes all traffic to v2', async () => JSON.stringify(await split()) === '{"stable":100}', { timeoutMs: SETTLE_MS });

    await applyApp(app(appsNs, 'shop', shop('2')));
    await waitFor('VirtualService removed with ingress', async () => (await userClient().get(Kinds.VirtualService, appsNs, 'shop-routes')) === undefined, { timeoutMs: SETTLE_MS });
  });

  it('reports a gateway the chart does not allow as an Event, and counts its repeat on the same Event', async () => {
    const spec = (gateway: string): AppSpec => ({ container: { image: 'ghcr.io/acme/gw:1', port: 8080 }, ingress: { hosts: [`gw.${appsNs}.example.com`], gateways: [gateway] } });
    const rejected = (a: Parameters<typeof readyTrue>[0]) => condition(a, 'Ready')?.reason === 'GatewayNotAllowed';
    await applyApp(app(appsNs, 'gw', spec('elsewhere/public')));
    await waitForApp(appsNs, 'gw', rejected, 'GatewayNotAllowed', SETTLE_MS);
    await applyApp(app(appsNs, 'gw', spec('istio-system/public')));
    await waitForApp(appsNs, 'gw', readyTrue, 'Ready on an allowed gateway', READY_MS);
    await applyApp(app(appsNs, 'gw', spec('elsewhere/public')));
    await waitForApp(appsNs, 'gw', rejected, 'GatewayNotAllowed again', SETTLE_MS);
    await waitFor('one Event with a series of 2', async () => (await userClient().list<{ reason?: string; series?: { count: number } }>(Kinds.Event, appsNs)).items
      .some((e) => e.reason === 'GatewayNotAllowed' && (e.series?.count ?? 0) >= 2), { timeoutMs: SETTLE_MS });
  });

  it('switches an app from container to model and back, the old kind removed once the new one serves', async () => {
    const container: AppSpec = { container: { image: 'ghcr.io/acme/flip:1', port: 8080 } };
    const model: AppSpec = { model: { format: { name: 'sklearn' }, storageUri: `gs://models/${appsNs}/flip/v1` } };
    const isvc = () => userClient().get(Kinds.InferenceService, appsNs, 'flip');
    await applyApp(app(appsNs, 'flip', container));
    await waitForApp(appsNs, 'flip', readyTrue, 'container Ready', READY_MS);
    await applyApp(app(appsNs, 'flip', model));
    await waitForApp(appsNs, 'flip', (a) => readyTrue(a) && a.status?.versions?.stable?.storageUri === `gs://models/${appsNs}/flip/v1`, 'the model serves', 240_000);
    await waitFor('Knative Service replaced by an InferenceService', async () => (await getKsvc(appsNs, 'flip')) === undefined && (await isvc()) !== undefined, { timeoutMs: SETTLE_MS });
    await applyApp(app(appsNs, 'flip', container));
    await waitForApp(appsNs, 'flip', (a) => readyTrue(a) && a.status?.versions?.stable?.image === 'ghcr.io/acme/flip:1', 'the container serves', 240_000);
    await waitFor('InferenceService replaced by a Knative Service', async () => (await isvc()) === undefined && (await getKsvc(appsNs, 'flip')) !== undefined, { timeoutMs: SETTLE_MS });
  });

  it('caches a model app on the nodes and removes the cache and the finalizer when the app is deleted', async () => {
    const caches = async () => (await userClient().list<{ metadata: { labels?: Record<string, string> } }>(Kinds.LocalModelCache)).items
      .filter((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === appsNs);
    await applyApp(app(appsNs, 'iris', { model: { format: { name: 'sklearn' }, storageUri: `gs://models/${appsNs}/iris/v1`, size: '1Gi' }, prewarm: { cacheModel: true } }));
    await waitForApp(appsNs, 'iris', readyTrue, 'model app Ready', READY_MS);
    await waitFor('LocalModelCache created', async () => (await caches()).length === 1, { timeoutMs: SETTLE_MS });
    assert.ok((await getApp(appsNs, 'iris')).metadata.finalizers?.includes(CACHE_FINALIZER));
    await userClient().delete(Kinds.ServerlessApp, appsNs, 'iris');
    await waitFor('app gone: finalizer cleared', async () => (await userClient().get(Kinds.ServerlessApp, appsNs, 'iris')) === undefined, { timeoutMs: SETTLE_MS });
    // Deleted by the operator, the cache goes once KServe's controller has taken the model off the nodes (its own finalizer).
    await waitFor('the cache gone', async () => (await caches()).length === 0, { timeoutMs: SETTLE_MS });
  });

  it('releases the claim of a host no app names any more once the grace is over', async () => {
    // The canary test above removed shop's ingress minutes ago; the grace is 1m.
    const claim = () => userClient().get<HostClaim>(Kinds.HostClaim, undefined, hostClaimName(`shop.${appsNs}.example.com`)!);
    await waitFor(`the HostClaim of shop.${appsNs}.example.com released (grace 1m)`, async () => (await claim()) === undefined, { timeoutMs: 240_000 });
  });

  it('was refused nothing, and used every permission the chart grants', async () => {
    await op?.stop();
    op = undefined;
    const kc = testEnv().kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    const name = `${release}-serverlessapp-operator`;
    const granted = grantedPermissions([
      ...(await kc.readClusterRole({ name })).rules as PolicyRule[],
      ...(await kc.readNamespacedRole({ namespace: releaseNs, name: `${name}-leader-election` })).rules as PolicyRule[],
      ...(await kc.readNamespacedRole({ namespace: releaseNs, name: `${name}-policy` })).rules as PolicyRule[],
    ]);
    const { requests, refused, unused } = await auditGrants(join(testEnv().dir, 'audit.log'), username, granted);
    assert.deepEqual(refused, [], 'the operator was refused these requests: the chart grants too little');
    assert.deepEqual(unused, [], 'the chart grants these permissions the operator never used: it grants too much');
    assert.ok(requests.filter((r) => r.resource === 'leases').every((r) => r.namespace === releaseNs), 'the Lease lives in the release namespace');
  });
});
