// The chart's ValidatingAdmissionPolicy: the API server itself refuses a
// ServerlessApp whose pod labels or annotations carry a control key the
// platform does not allow (allowedPodMetadataKeys), or whose tolerations, node
// pinning or cross-namespace pod (anti-)affinity the platform does not allow
// (scheduling.*), naming the field. Rendered
// with helm and applied to the rig, bound only to this file's own namespaces
// (the rig is shared: no other test's apps are judged by it). Each key is
// judged as the operator's own rule (controlKey, keyAllowed) judges it, and
// each scheduling case as schedulingProblems does: the CEL is generated from
// those rules, and this is where the two are compared.
import assert from 'node:assert/strict';
import { ApiException, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { controlKey, keyAllowed } from '../../src/api/v1alpha1/pod-metadata.ts';
import { schedulingProblems, type SchedulingPolicy } from '../../src/api/v1alpha1/scheduling-policy.ts';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { renderChart, type RenderedObject } from '../support/helm.ts';
import { waitFor } from '../support/wait.ts';

const POLICY_KINDS = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
/** The API server loads policies asynchronously: this long at most before one is in force. */
const IN_FORCE_MS = 60_000;

type Kind = 'label' | 'annotation';
type Workload = 'container' | 'model';
const FIELD = { label: 'podLabels', annotation: 'podAnnotations' } as const;

function serverlessApp(namespace: string, workload: Workload, kind: Kind, key: string): KubernetesObject {
  const metadata = { [FIELD[kind]]: { [key]: 'x' } };
  const spec = workload === 'container'
    ? { container: { image: 'ghcr.io/acme/shop:1', ...metadata } }
    : { model: { format: { name: 'sklearn' }, storageUri: 'gs://models/iris/v1', ...metadata } };
  return { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { namespace, name: 'probe' }, spec } as KubernetesObject;
}

/** A dry-run create: undefined when admitted, else the API server's message. */
async function refusal(obj: KubernetesObject): Promise<string | undefined> {
  try {
    await KubernetesObjectApi.makeApiClient(testEnv().kubeConfig()).create(obj, undefined, 'All');
    return undefined;
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    const body = typeof err.body === 'string' ? JSON.parse(err.body) as { message?: string } : err.body as { message?: string };
    return body?.message ?? String(err.body);
  }
}

describe('Helm chart: the ValidatingAdmissionPolicy refuses control keys of pod metadata and scheduling the platform does not allow, at admission', function () {
  this.timeout(600_000);
  const client = () => KubernetesObjectApi.makeApiClient(testEnv().kubeConfig());
  const applied: RenderedObject[] = [];
  /** The namespace judged with an empty allow-list (no prefixed key at all), and one with sidecar.istio.io/* allowed. */
  const ns = { none: '', istio: '' };
  const allowedIn = { none: [] as string[], istio: ['sidecar.istio.io/*'] };
  /** The chart's default scheduling settings in the first, everything allowed in the second. */
  const schedulingIn: Record<keyof typeof ns, SchedulingPolicy> = {
    none: { allowedTolerationKeys: ['nvidia.com/gpu'], allowNodePinning: false, allowCrossNamespacePodAffinity: false },
    istio: { allowedTolerationKeys: ['*'], allowNodePinning: true, allowCrossNamespacePodAffinity: true },
  };

  /** Renders the chart (a release of its own) bound to `namespace`, and applies only the policy and its binding. */
  async function install(release: string, namespace: string, allowed: string[], scheduling: SchedulingPolicy) {
    const objects = await renderChart({
      allowedPodMetadataKeys: allowed,
      scheduling,
      admissionPolicy: { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }] } },
    }, { release });
    const policy = objects.filter((o) => POLICY_KINDS.includes(o.kind));
    assert.deepEqual(policy.map((o) => o.kind), POLICY_KINDS);
    for (const o of policy) {
      await client().create(o as KubernetesObject);
      applied.push(o);
    }
    // In force once a known-bad app is refused: the `app` label is a control key whatever is allowed here.
    await waitFor(`the policy of release ${release} refuses an app label in ${namespace}`, async () => (await refusal(serverlessApp(namespace, 'container', 'label', 'app')))?.includes('spec.container.podLabels["app"]'), { timeoutMs: IN_FORCE_MS });
  }

  before(async () => {
    ns.none = await freshNamespace('vap-none');
    ns.istio = await freshNamespace('vap-istio');
    const suffix = ns.none.slice(-8);
    await install(`vap-none-${suffix}`, ns.none, allowedIn.none, schedulingIn.none);
    await install(`vap-istio-${suffix}`, ns.istio, allowedIn.istio, schedulingIn.istio);
  });

  after(async () => {
    for (const o of applied.reverse()) await client().delete(o as KubernetesObject).catch(() => undefined);
  });

  it('renders failurePolicy Fail, Deny, on serverlessapps.serverlessapp.io CREATE and UPDATE', async () => {
    const [policy, binding] = applied as Array<RenderedObject & { spec: Record<string, any> }>;
    assert.equal(policy!.spec.failurePolicy, 'Fail');
    assert.deepEqual(policy!.spec.matchConstraints.resourceRules, [{ apiGroups: ['serverlessapp.io'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['serverlessapps'] }]);
    assert.deepEqual(binding!.spec.validationActions, ['Deny']);
  });

  const table: Array<[Workload, Kind, string]> = [
    ['container', 'annotation', 'sidecar.istio.io/proxyImage'],
    ['container', 'label', 'istio.io/rev'],
    ['container', 'label', 'app'],
    ['container', 'label', 'version'],
    ['container', 'annotation', 'version'],
    ['container', 'annotation', 'container.apparmor.security.beta.kubernetes.io/x'],
    ['container', 'annotation', 'traffic.sidecar.istio.io/excludeOutboundIPRanges'],
    ['container', 'annotation', 'k8s.v1.cncf.io/networks'],
    ['container', 'annotation', 'kubernetes.io/egress-bandwidth'],
    ['container', 'annotation', 'notk8s.io/x'],
    ['container', 'label', 'app.kubernetes.io/component'],
    ['container', 'label', 'team'],
    ['container', 'annotation', 'prometheus.io/scrape'],
    ['container', 'annotation', 'cni.projectcalico.org/ipAddrs'],
    ['container', 'annotation', 'iam.amazonaws.com/role'],
    ['model', 'label', 'sidecar.istio.io/inject'],
    ['model', 'annotation', 'sidecar.istio.io/userVolume'],
    ['model', 'label', 'team'],
  ];

  for (const [which, allowed] of Object.entries(allowedIn) as Array<[keyof typeof ns, string[]]>) {
    for (const [workload, kind, key] of table) {
      const refused = controlKey(key, kind) !== undefined && !keyAllowed(key, allowed);
      const field = `spec.${workload}.${FIELD[kind]}["${key}"]`;
      it(`${refused ? 'refuses' : 'admits'} ${field} with allowedPodMetadataKeys ${JSON.stringify(allowed)}, as the operator's rule does`, async () => {
        const message = await refusal(serverlessApp(ns[which], workload, kind, key));
        if (!refused) return assert.equal(message, undefined, `admitted, as the operator's rule says; refused with: ${message}`);
        assert.ok(message, 'refused, as the operator\'s rule says');
        assert.match(message, /ValidatingAdmissionPolicy/);
        assert.ok(message.includes(`${field} is not allowed on this platform`), message);
        assert.ok(message.includes(`allowed control keys (the chart's allowedPodMetadataKeys): ${allowed.length ? allowed.join(', ') : '(none)'}`), message);
      });
    }
  }

  type Scheduling = Partial<Pick<NonNullable<ServerlessApp['spec']['container']>, 'tolerations' | 'nodeSelector' | 'affinity'>>;
  const term = (extra: object) => ({ topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { tier: 'db' } }, ...extra });
  const schedulingTable: Array<[what: string, Workload, (namespace: string) => Scheduling]> = [
    ['a toleration of every taint', 'container', () => ({ tolerations: [{ operator: 'Exists' }] })],
    ['a toleration of every taint on a model', 'model', () => ({ tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists' }, { operator: 'Exists' }] })],
    ['a toleration of the GPU taint', 'container', () => ({ tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }] })],
    ['a toleration of the control plane\'s taint', 'container', () => ({ tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists' }, { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] })],
    ['a nodeSelector on kubernetes.io/hostname', 'container', () => ({ nodeSelector: { 'kubernetes.io/hostname': 'node-1' } })],
    ['a nodeSelector on a zone', 'container', () => ({ nodeSelector: { 'topology.kubernetes.io/zone': 'z1' } })],
    ['a required node term on metadata.name', 'container', () => ({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }] } } } })],
    ['a preferred node term on kubernetes.io/hostname', 'model', () => ({ affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-1'] }] } }] } } })],
    ['a required anti-affinity term over every namespace ({})', 'container', () => ({ affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term({ namespaceSelector: {} })] } } })],
    ['a preferred affinity term naming another namespace', 'container', () => ({ affinity: { podAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 5, podAffinityTerm: term({ namespaces: ['other'] }) }] } } })],
    ['an anti-affinity term selecting namespaces by a label', 'model', (n) => ({ affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': n, team: 'x' } } })] } } })],
    ['an anti-affinity term naming its own namespace by selector', 'container', (n) => ({ affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': n } } })] } } })],
    ['an affinity term naming its own namespace', 'container', (n) => ({ affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term({ namespaces: [n] })] } } })],
    ['an affinity term with no namespaces', 'container', () => ({ affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term({})] } } })],
  ];

  for (const which of Object.keys(ns) as Array<keyof typeof ns>) {
    for (const [what, workload, scheduling] of schedulingTable) {
      const settings = schedulingIn[which];
      it(`judges ${what} (${workload}) as the operator's rule does, with scheduling ${JSON.stringify(settings)}`, async () => {
        const obj = serverlessApp(ns[which], workload, 'label', 'team');
        const spec = (obj as unknown as ServerlessApp).spec;
        Object.assign(spec[workload]!, scheduling(ns[which]));
        const problems = schedulingProblems(obj as unknown as ServerlessApp, settings);
        const message = await refusal(obj);
        if (problems.length === 0) return assert.equal(message, undefined, `admitted, as the operator's rule says; refused with: ${message}`);
        assert.ok(message, `refused, as the operator's rule says: ${problems.map((p) => p.field).join(', ')}`);
        assert.match(message, /ValidatingAdmissionPolicy/);
        // The policy names the toleration or term; the operator may name a key within it.
        for (const p of problems) assert.ok(message.includes(p.field.replace(/\.match(Expressions|Fields)\[\d+\]\.key$/, '')), `names ${p.field}: ${message}`);
        assert.match(message, /not allowed on this platform/);
      });
    }
  }

  it('leaves namespaces outside its binding alone', async () => {
    const other = await freshNamespace('vap-outside');
    assert.equal(await refusal(serverlessApp(other, 'container', 'annotation', 'sidecar.istio.io/proxyImage')), undefined);
  });
});
