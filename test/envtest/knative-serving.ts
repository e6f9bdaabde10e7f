// The real Knative Serving 1.21 (knative.dev/serving v0.48.1: controller,
// webhook, autoscaler, built by build.sh) for the rig. Its namespace, config
// maps, webhook configurations and webhook secret are read at setup time from
// the pinned modules (nothing upstream is copied here), stamped with the
// release version as the release manifests are, and changed only where the rig
// must (see RIG_CONFIG); its Deployments are not installed (the processes run
// beside the API server; the activator not at all), only the webhook's and the
// activator's Services. The processes run in the data plane's network
// namespaces: the controller's health port and the autoscaler's stats port are
// both a fixed 8080 in their code, so the autoscaler gets a namespace of its own.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { downloadModule, installCrds, KNATIVE_RELEASE, UPSTREAM_CRD_SOURCES, upstreamCrds, withReleaseLabel } from './upstream-crds.ts';

export const KNATIVE_NAMESPACE = 'knative-serving';
/** The Service the webhook configurations name, and the port (its targetPort) its process listens on in the namespace. */
export const KNATIVE_WEBHOOK_SERVICE = 'webhook';
export const KNATIVE_WEBHOOK_PORT = 8443;

const SERVING = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'knative.dev/serving')!;
const NETWORKING = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'knative.dev/networking')!;

// Registries whose tags the revision reconciler must not resolve to digests:
// nothing here can reach a registry. Knative has no "skip all" setting
// (pkg/reconciler/revision/resolve.go matches the registry exactly), so these
// are the registries the repo's examples, fixtures and KServe's runtimes use.
const SKIP_TAG_RESOLVING = ['kind.local', 'ko.local', 'dev.local', 'ghcr.io', 'index.docker.io', 'docker.io', 'gcr.io',
  'quay.io', 'registry.k8s.io', 'nvcr.io', 'public.ecr.aws', 'example.com', 'registry.example.com'];

/** The Knative feature flags ServerlessApp's pod-template fields need, Disabled in Knative's defaults (pkg/apis/config/features.go). */
export const KNATIVE_PLATFORM_FEATURES: Record<string, string> = {
  'kubernetes.podspec-nodeselector': 'enabled',
  'kubernetes.podspec-tolerations': 'enabled',
  'kubernetes.podspec-affinity': 'enabled',
};

/** The only config-map values the rig changes, and why. */
const RIG_CONFIG: Record<string, Record<string, string>> = {
  // The installation docs' "Real DNS" step: URLs are http://NAME.NAMESPACE.example.com, not svc.cluster.local.
  'config-domain': { 'example.com': '' },
  // -1: the activator is never put in the path, so the autoscaler never probes *.svc.cluster.local names.
  'config-autoscaler': { 'target-burst-capacity': '-1' },
  // What a platform enables so apps may set spec.*.nodeSelector, tolerations and affinity (docs/install.md).
  'config-features': KNATIVE_PLATFORM_FEATURES,
  'config-deployment': {
    // Never pulled (KWOK runs no containers), but it must be set; the release's image name.
    'queue-sidecar-image': `gcr.io/knative-releases/knative.dev/serving/cmd/queue:v${KNATIVE_RELEASE}`,
    'registries-skipping-tag-resolving': SKIP_TAG_RESOLVING.join(','),
  },
};

/**
 * Installs Knative's CRDs, namespace, config maps, webhook configurations and webhook secret.
 * `ingressClass`: config-network's ingress-class, the network ingress that reconciles Knative's
 * KIngresses (net-gateway-api.ts, with ENVTEST_NETGW=on); unset, Knative's default (net-istio's
 * class, which the SIMULATED kingress-status.ts marks Ready: the rig's default).
 */
export async function installKnativeServing(kc: KubeConfig, ingressClass?: string): Promise<void> {
  await installCrds(kc, await upstreamCrds(UPSTREAM_CRD_SOURCES.filter((s) => s.module.startsWith('knative.dev/'))));
  const [serving, networking] = await Promise.all([
    downloadModule(SERVING.module, SERVING.version), downloadModule(NETWORKING.module, NETWORKING.version),
  ]);
  const files = [
    join(serving, 'config/core/100-namespace.yaml'),
    ...['autoscaler', 'certmanager', 'defaults', 'deployment', 'domain', 'features', 'gc', 'leader-election', 'logging', 'observability', 'tracing']
      .map((name) => join(serving, 'config/core/configmaps', `${name}.yaml`)),
    join(networking, 'config/config-network.yaml'),
    ...['secret', 'defaulting', 'resource-validation', 'configmap-validation'].map((name) => join(serving, 'config/core/webhooks', `${name}.yaml`)),
    // Only their Services. kube-apiserver resolves a webhook's Service to its ClusterIP before dialling;
    // the ServerlessService reconciler reads the activator's Endpoints, and with none (no activator runs)
    // puts every revision in Serve mode, straight to its pods.
    join(serving, 'config/core/deployments/webhook.yaml'),
    join(serving, 'config/core/deployments/activator.yaml'),
  ];
  const client = KubernetesObjectApi.makeApiClient(kc);
  for (const file of files) {
    for (const obj of objectsIn(file).filter((o) => !file.includes('/deployments/') || o.kind === 'Service')) {
      const rig = { ...RIG_CONFIG, ...(ingressClass ? { 'config-network': { 'ingress-class': ingressClass } } : {}) }[obj.metadata?.name ?? ''];
      const desired = rig && obj.kind === 'ConfigMap' ? { ...obj, data: { ...(obj as { data?: object }).data, ...rig } } : obj;
      await client.patch(withReleaseLabel(desired, KNATIVE_RELEASE), undefined, undefined, 'envtest', true, PatchStrategy.ServerSideApply);
    }
  }
}

/** Environment of each Knative process, as its Deployment in config/core/deployments sets it. */
export function knativeEnv(component: 'controller' | 'webhook' | 'autoscaler', podIp: string): Record<string, string> {
  const common = {
    SYSTEM_NAMESPACE: KNATIVE_NAMESPACE, POD_NAME: `${component}-rig`, POD_IP: podIp,
    CONFIG_LOGGING_NAME: 'config-logging', CONFIG_OBSERVABILITY_NAME: 'config-observability',
  };
  // The controller and the webhook share a namespace: distinct profiling ports (PROFILING_PORT, knative.dev/pkg).
  if (component === 'webhook') return { ...common, WEBHOOK_NAME: 'webhook', WEBHOOK_PORT: String(KNATIVE_WEBHOOK_PORT), PROFILING_PORT: '8009' };
  return { ...common, PROFILING_PORT: '8008' };
}

/** A Knative Service the webhook must admit (dry run): proves the API server reaches the webhook. Refusals go to `onRefusal`. */
export async function knativeWebhookAdmits(kc: KubeConfig, onRefusal: (message: string) => void = () => {}): Promise<boolean> {
  const client = KubernetesObjectApi.makeApiClient(kc);
  const probe = {
    apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'rig-webhook-probe', namespace: 'default' },
    spec: { template: { spec: { containers: [{ image: 'ghcr.io/example/hello:1.0.0' }] } } },
  };
  try {
    await client.create(probe, undefined, 'All');
    return true;
  } catch (err) {
    const e = err as { code?: number; body?: unknown; message?: string };
    if (e.code === 409) return true;
    onRefusal(typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? e.message));
    return false;
  }
}

function objectsIn(path: string): KubernetesObject[] {
  return parseAllDocuments(readFileSync(path, 'utf8'))
    .map((doc) => doc.toJS() as KubernetesObject | null)
    .filter((obj): obj is KubernetesObject => Boolean(obj?.kind));
}
