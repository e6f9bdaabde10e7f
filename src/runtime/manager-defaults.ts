// What the Manager (manager.ts) uses where it is not told, and the operator's
// flags (config.ts) default to: one statement of each. Apart from manager.ts so
// that config.ts, which the kubectl plugin loads too, reads them without
// loading the runtime (its logger alone is winston).

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/** The operator's Lease, as the Helm chart names it and grants it (its Role's resourceNames). */
export const DEFAULT_LEASE_NAME = 'serverlessapp-operator-leader';

/** Where /metrics and the probes listen: kubebuilder's ports, and the chart's. */
export const DEFAULT_METRICS_ADDR = ':8080';
export const DEFAULT_PROBE_ADDR = ':8081';

/**
 * A replica's name in the Lease and its Events when none is given (the chart gives the pod's name):
 * client-go's hostname_uuid. Two live processes must never share a name: a replica that finds its
 * own name on the Lease renews it instead of waiting, so both would lead. A hostname repeats (pods
 * with hostNetwork share the node's), and so does hostname-pid (the pid is often 1 in a container);
 * a UUID drawn at each start does not. A restarted process, a stranger then, waits for its
 * predecessor's lease to be released or to expire.
 */
export function newReplicaIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}
