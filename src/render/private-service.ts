// A Knative revision's private Service: `<revision>-private`, port 80, which
// selects the revision's pods and reaches their queue-proxy whatever the Host
// (knative.dev/serving pkg/reconciler/serverlessservice/resources/services.go,
// MakePrivateService, names.PrivateService). Mirrored requests and warmup
// probes go there (render/virtual-service.ts says why not the gateway).

import { clusterLocalHost } from '../util/cluster-local-host.ts';

export const PRIVATE_SERVICE_PORT = 80;

/** The name of a revision's private Service. */
export function privateServiceName(revision: string): string {
  return `${revision}-private`;
}

/** Its cluster-local host in the revision's namespace. */
export function privateServiceHost(revision: string, namespace: string): string {
  return clusterLocalHost(privateServiceName(revision), namespace);
}
