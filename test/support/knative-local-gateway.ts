// Knative's local gateway Service, which Knative's network ingress installs
// (net-istio's or net-gateway-api's `knative-local-gateway` Service in
// istio-system, in front of the ingress gateway pods) and every route the
// operator writes goes to. The rig installs net-gateway-api's only with
// ENVTEST_NETGW=on (test/envtest/net-gateway-api.ts); istiod makes a cluster only for a host it
// knows as a Service, and istioctl analyze reports a destination host it does
// not know, so tests that read what Istio makes of the operator's routes make
// sure it is there.
import { KubernetesObjectApi } from '@kubernetes/client-node';
import { testEnv } from './cluster.ts';

/** Creates the Service unless present; left in place (other tests of the run may rely on it). */
export async function ensureKnativeLocalGateway(): Promise<void> {
  await KubernetesObjectApi.makeApiClient(testEnv().kubeConfig()).create({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'knative-local-gateway', namespace: 'istio-system' },
    spec: { selector: { istio: 'ingressgateway' }, ports: [{ name: 'http2', port: 80, targetPort: 8081 }] },
  } as never).catch((err: { code?: number }) => {
    if (err.code !== 409) throw err;
  });
}
