// A Service's cluster-local DNS name, `<service>.<namespace>.svc.cluster.local`
// (Kubernetes DNS for Services, under the default cluster domain that Knative's
// cluster-local routes also use): the hosts the VirtualService rewrites to, and
// the private Services that mirrored requests and warmup probes go to.

export function clusterLocalHost(service: string, namespace: string): string {
  return `${service}.${namespace}.svc.cluster.local`;
}
