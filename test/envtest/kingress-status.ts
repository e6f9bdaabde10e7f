// SIMULATED NETWORK INGRESS: a stand-in for net-istio's status half, the rig's
// default. With ENVTEST_NETGW=on (and istiod) the rig runs Knative's real
// network ingress instead, net-gateway-api (net-gateway-api.ts), which needs a
// Gateway API implementation; net-istio itself is not served by the module
// proxy. For
// every KIngress (networking.internal.knative.dev/v1alpha1 Ingress, types in
// knative.dev/networking pkg/apis/networking/v1alpha1/ingress_{types,lifecycle}.go)
// of the Istio ingress class it writes what net-istio's reconciler writes once
// its prober has seen every gateway serve the new generation: NetworkConfigured,
// LoadBalancerReady and Ready True, observedGeneration, and the load balancers
// net-istio reports, the istio-ingressgateway Service for the public one and
// knative-local-gateway for the private one. It programs no proxy and probes
// nothing: no request is routed. With it, Routes (and so Services) become Ready.
// Run as a program: node kingress-status.ts KUBECONFIG
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { isConditionTrue } from '../../src/util/conditions.ts';
import { listAndWatch, type Listed } from './list-watch.ts';

const GROUP = 'networking.internal.knative.dev';
const VERSION = 'v1alpha1';
const CLASS_ANNOTATION = 'networking.knative.dev/ingress.class';
/** config-network's default ingress-class (knative.dev/networking pkg/config). */
const ISTIO_CLASS = 'istio.ingress.networking.knative.dev';
const PUBLIC_LB = 'istio-ingressgateway.istio-system.svc.cluster.local';
const PRIVATE_LB = 'knative-local-gateway.istio-system.svc.cluster.local';

interface KIngress {
  metadata: { name: string; namespace: string; generation?: number; annotations?: Record<string, string> };
  status?: { observedGeneration?: number; conditions?: Array<{ type: string; status: string }> };
}

/** The status net-istio writes for `ing` once it is programmed. */
export function readyStatus(ing: KIngress, now: Date): object {
  const at = now.toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    observedGeneration: ing.metadata.generation,
    conditions: ['LoadBalancerReady', 'NetworkConfigured', 'Ready'].map((type) => ({ type, status: 'True', lastTransitionTime: at })),
    publicLoadBalancer: { ingress: [{ domainInternal: PUBLIC_LB }] },
    privateLoadBalancer: { ingress: [{ domainInternal: PRIVATE_LB }] },
  };
}

function needsStatus(ing: KIngress): boolean {
  const cls = ing.metadata.annotations?.[CLASS_ANNOTATION] ?? ISTIO_CLASS;
  if (cls !== ISTIO_CLASS) return false;
  const ready = isConditionTrue(ing.status?.conditions, 'Ready');
  return !ready || ing.status?.observedGeneration !== ing.metadata.generation;
}

/** Watches all KIngresses until `signal` aborts, marking each ready as net-istio would. */
export async function runKIngressStatus(kc: KubeConfig, signal: AbortSignal): Promise<void> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const mark = async (ing: KIngress) => {
    if (!needsStatus(ing)) return;
    try {
      await api.patchNamespacedCustomObjectStatus({
        group: GROUP, version: VERSION, plural: 'ingresses', namespace: ing.metadata.namespace, name: ing.metadata.name,
        body: { status: readyStatus(ing, new Date()) }, fieldManager: 'net-istio-standin',
      }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    } catch (err) {
      if ((err as { code?: number }).code !== 404) console.error(`kingress-status: ${ing.metadata.namespace}/${ing.metadata.name}: ${(err as Error).message}`);
    }
  };
  const list = () => api.listCustomObjectForAllNamespaces({ group: GROUP, version: VERSION, resourcePlural: 'ingresses' }) as Promise<Listed<KIngress>>;
  await listAndWatch(kc, `/apis/${GROUP}/${VERSION}/ingresses`, list, (ing) => void mark(ing), signal);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const kc = new KubeConfig();
  kc.loadFromFile(process.argv[2] ?? '');
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => { stop.abort(); process.exit(0); });
  console.log('kingress-status: SIMULATED net-istio status writer running');
  await runKIngressStatus(kc, stop.signal);
}
