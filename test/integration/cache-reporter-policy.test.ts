// The chart's node cache usage reporter may write its own node's report and
// nothing else of the release namespace, held by the API server: its Role
// grants create/patch of any ConfigMap there (RBAC cannot name one per node),
// and the chart's ValidatingAdmissionPolicy narrows it to the ConfigMap named
// after the node its token is bound to. Judged by the real kube-apiserver, with
// tokens of the chart's ServiceAccount as the kubelet would mount them.
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { usageReportName } from '../../src/render/model-cache-usage.ts';
import { POLICY_CONFIGMAP } from '../../src/runtime/policy-publication.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { installChart, uninstallChart } from '../support/helm.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

describe('Helm chart: the cache usage reporter writes its own node\'s report only (integration)', function () {
  this.timeout(600_000);
  const release = 'sapp-rep';
  const reporter = `${release}-serverlessapp-operator-cache-reporter`;
  let ns: string;
  let core: CoreV1Api;

  before(async () => {
    const env = testEnv();
    ns = await freshNamespace('reporter-system');
    core = env.kubeConfig().makeApiClient(CoreV1Api);
    // The pod policy is another test's (chart.test.ts); only the reporter's objects matter here.
    await installChart(release, ns, { modelCache: { usageReporter: { enabled: true, tolerations: [{ operator: 'Exists' }] } }, admissionPolicy: { enabled: false } }, { kubeconfig: env.kubeconfigPath, extraArgs: ['--skip-crds'] });
  });
  after(async () => {
    if (ns) await uninstallChart(release, ns, { kubeconfig: testEnv().kubeconfigPath });
  });

  /** A client with a token of the reporter's ServiceAccount, bound to `pod` (the kubelet's token names its node) or to nothing. */
  async function reporterClient(pod?: V1Pod): Promise<KubeClient> {
    const env = testEnv();
    const boundObjectRef = pod ? { apiVersion: 'v1', kind: 'Pod', name: pod.metadata!.name!, uid: pod.metadata!.uid! } : undefined;
    const token = await core.createNamespacedServiceAccountToken({ namespace: ns, name: reporter, body: { spec: { audiences: [], expirationSeconds: 3600, ...(boundObjectRef ? { boundObjectRef } : {}) } } });
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'envtest', server: env.server, caData: Buffer.from(env.caPem).toString('base64') }],
      users: [{ name: reporter, token: token.status!.token }],
      contexts: [{ name: reporter, cluster: 'envtest', user: reporter }],
      currentContext: reporter,
    });
    return new KubeClient(kc);
  }

  const report = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { 'serverlessapp.io/model-cache-usage': 'true' } }, data: { '0123456789abcdef': '1024' } });

  it('lets the DaemonSet\'s pod write its node\'s report, and refuses another node\'s, the policy ConfigMap and a token bound to no pod', async () => {
    const pods = await waitFor('the reporter DaemonSet\'s pods scheduled on the rig\'s nodes', async () => {
      const list = (await core.listNamespacedPod({ namespace: ns })).items.filter((p) => p.spec?.serviceAccountName === reporter && p.spec.nodeName);
      return list.length ? list : undefined;
    }, { timeoutMs: SETTLE_MS });
    const pod = pods[0]!;
    const node = pod.spec!.nodeName!;
    const client = await reporterClient(pod);

    // The API server loads a policy created a moment ago within seconds (its admission plugin's informer):
    // in effect once a dry run of another node's report is refused.
    await waitFor('the chart\'s admission policy in effect: a dry run of another node\'s report refused', () =>
      client.apply(report(usageReportName(`${node}-other`)), { fieldManager: 'cache-reporter', dryRun: true }).then(() => false, (err: { code?: number }) => err.code === 403), { timeoutMs: SETTLE_MS });
    await client.apply(report(usageReportName(node)), { fieldManager: 'cache-reporter' });
    assert.ok(await testEnv().kubeConfig().makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: ns, name: usageReportName(node) }), 'its own node\'s report is written');

    const refused = async (write: Promise<unknown>, what: string, message: RegExp) => {
      const err = await write.then(() => undefined, (e: unknown) => e as { code?: number; message?: string });
      assert.ok(err, `${what}: refused`);
      assert.equal(err.code, 403, `${what}: ${err.message}`);
      assert.match(err.message ?? '', message, what);
    };
    await refused(client.apply(report(usageReportName(`${node}-other`)), { fieldManager: 'cache-reporter' }), 'another node\'s report',
      new RegExp(`the cache usage reporter on node ${node} may write ConfigMap model-cache-usage\\.${node} only, not model-cache-usage\\.${node}-other`));
    await refused(client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: POLICY_CONFIGMAP, namespace: ns }, data: { policy: '{}' } }, { fieldManager: 'cache-reporter' }), 'the policy ConfigMap kubectl sapp plan reads',
      /may write ConfigMap model-cache-usage\.\S+ only, not serverlessapp-policy/);
    await refused((await reporterClient()).apply(report(usageReportName(node)), { fieldManager: 'cache-reporter' }), 'a token bound to no pod',
      /writes with the bound token of its pod only/);
  });
});
