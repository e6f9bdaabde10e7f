// The floor the platform sets for a victim edit (issue 34): the same edit the
// operator made, applied straight to a bare Knative Service in the same
// namespace and the same phase, timed to the moment Knative reports the new
// split in the route's status, as the operator's path is. The bare Knative
// Service is `bare-<app>`: a copy of the app's Knative Service with its
// revision names renamed to its own (Knative requires a service's revision
// names to start with its name), which neither the operator nor any app owns.
// Both paths end when the bench's watch of Knative Routes sees status.traffic
// equal to the Knative Service's spec.traffic (revision and percent of each
// target); both start when the bench sends the edit.
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeClient } from '../src/runtime/client.ts';
import { Kinds, type ResourceKind } from '../src/util/kinds.ts';
import { SlimWatch } from './watch.ts';
import type { AppRef } from './workload.ts';

const KnativeRoute: ResourceKind = { group: 'serving.knative.dev', version: 'v1', kind: 'Route', plural: 'routes', namespaced: true };

interface Target { revisionName?: string; percent?: number; tag?: string }
interface Ksvc {
  metadata: { name: string; namespace: string; generation?: number };
  spec: { template: { metadata?: { name?: string; annotations?: Record<string, string>; labels?: Record<string, string> }; spec: unknown }; traffic?: Target[] };
}

/** A split as comparable text: "revision=percent" per target with a revision, sorted. */
export function splitText(targets: Target[] | undefined): string {
  return (targets ?? []).filter((t) => t.revisionName).map((t) => `${t.revisionName}=${t.percent ?? 0}`).sort().join(',');
}

export const bareName = (ref: AppRef) => `bare-${ref.name}`;

/** The app's Knative Service as a bare one: its template and traffic, revisions renamed to `bare-<app>-...`. */
export function bareCopy(ksvc: Ksvc, ref: AppRef): { object: unknown; split: string } {
  const rename = (s: string | undefined) => (s?.startsWith(`${ref.name}-`) ? `bare-${s}` : s);
  const traffic = (ksvc.spec.traffic ?? []).map((t) => ({ ...t, ...(t.revisionName ? { revisionName: rename(t.revisionName) } : {}) }));
  const object = {
    apiVersion: 'serving.knative.dev/v1', kind: 'Service',
    metadata: { name: bareName(ref), namespace: ref.namespace, labels: { 'app.kubernetes.io/managed-by': 'serverlessapp-bench' } },
    spec: {
      template: { metadata: { name: rename(ksvc.spec.template.metadata?.name), ...(ksvc.spec.template.metadata?.annotations ? { annotations: ksvc.spec.template.metadata.annotations } : {}) }, spec: ksvc.spec.template.spec },
      traffic,
    },
  };
  return { object, split: splitText(traffic) };
}

/** Every Knative Route's reported split in `namespaces`, with when each change arrived. */
export function routeSplits(kc: KubeConfig, namespaces: string[]): SlimWatch<string> {
  return new SlimWatch(kc, KnativeRoute, (o) => splitText((o as { status?: { traffic?: Target[] } }).status?.traffic), { namespaces });
}

/** The app's Knative Service as it is now (the split the operator wrote), or undefined. */
export async function operatorKsvc(client: KubeClient, ref: AppRef): Promise<Ksvc | undefined> {
  return client.get<Ksvc>(Kinds.KnativeService, ref.namespace, ref.name);
}

/** The epoch ms at which `routes` saw `name`'s route report `split`, or undefined after `timeoutMs`. */
export async function splitReported(routes: SlimWatch<string>, ref: AppRef, name: string, split: string, timeoutMs: number): Promise<number | undefined> {
  try {
    const seen = await routes.until(`${ref.namespace}/${name}`, (v) => v === split, timeoutMs);
    return performance.timeOrigin + seen.at;
  } catch {
    return undefined;
  }
}

/**
 * Applies `ksvc`'s edit to the bare Knative Service and returns the milliseconds from sending it to its
 * route reporting the split (undefined: not within `timeoutMs`).
 */
export async function bareEdit(client: KubeClient, routes: SlimWatch<string>, ksvc: Ksvc, ref: AppRef, timeoutMs: number): Promise<number | undefined> {
  const { object, split } = bareCopy(ksvc, ref);
  const sent = Date.now();
  await client.apply(object, { force: true, kind: Kinds.KnativeService });
  const reported = await splitReported(routes, ref, bareName(ref), split, timeoutMs);
  return reported === undefined ? undefined : Math.max(0, reported - sent);
}
