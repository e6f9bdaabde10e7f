// The parent Gateway the demo's routes hang from under `--router gateway-api`:
// a Gateway API Gateway of istiod's own class `istio` with one Hostname
// address, as test/integration/gateway-api.test.ts creates it. With an address
// given, istiod treats the Gateway as deployed by hand and starts no gateway
// Deployment (istio pilot/pkg/config/kube/gatewaycommon/gateway_utils.go
// IsManaged): it judges the HTTPRoutes attached to it and writes their status
// (Accepted, ResolvedRefs). SIMULATED: no Envoy runs behind it, so no request
// is proxied; the routes are only validated and accepted.
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../src/runtime/client.ts';
import { Kinds, type ResourceKind } from '../src/util/kinds.ts';
import { gatewayRef } from '../src/api/v1alpha1/serverlessapp.ts';

/** The routers the demo can run the operator with (src/config.ts --router). */
export const DEMO_ROUTERS = ['istio', 'gateway-api'] as const;
export type DemoRouter = (typeof DEMO_ROUTERS)[number];

const GATEWAY: ResourceKind = { group: 'gateway.networking.k8s.io', version: 'v1', kind: 'Gateway', plural: 'gateways', namespaced: true };

/** Creates (or keeps) Gateway `namespace/name`, accepting HTTP routes from every namespace. */
export async function ensureParentGateway(kubeConfig: KubeConfig, gateway: string): Promise<void> {
  const { namespace, name } = gatewayRef(gateway);
  if (!namespace || !name) throw new Error(`the parent gateway must be "namespace/name", not "${gateway}"`);
  const client = new KubeClient(kubeConfig, { fieldManager: 'demo', userAgent: 'serverlessapp-demo' });
  try {
    await client.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, { kind: Kinds.Namespace });
    await client.apply({
      apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name, namespace },
      spec: {
        gatewayClassName: 'istio',
        addresses: [{ type: 'Hostname', value: `${name}.${namespace}.svc.cluster.local` }],
        listeners: [{ name: 'http', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } }],
      },
    }, { kind: GATEWAY });
  } finally {
    client.close();
  }
}
