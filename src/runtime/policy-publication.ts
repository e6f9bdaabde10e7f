// The platform's policy as the running operator enforces it, published where
// `kubectl sapp plan` reads it: a ConfigMap in the operator's namespace (the
// Lease's), written by server-side apply with the operator's field manager each
// time a replica starts leading (a standby writes nothing). The plan then judges
// an edit by the flags this process was started with, however it was started
// (the chart, `npm start`, another manifest), not by a Deployment's flags that
// may not be the ones running.
//
// Whether the publisher still runs: with leader election, the Lease it names
// says (held and not expired); without, the publisher removes the ConfigMap
// when it stops gracefully, and the plan says it cannot tell a crash.

import type { ValidationPolicy } from '../api/v1alpha1/validation.ts';
import type { RouterName } from '../planner/route.ts';
import type { CacheScope } from '../render/local-model-cache.ts';
import { isNotFound, type KubeClient } from './client.ts';
import { Kinds } from '../util/kinds.ts';

/** The ConfigMap's name, in the operator's namespace (--leader-election-namespace / POD_NAMESPACE). */
export const POLICY_CONFIGMAP = 'serverlessapp-policy';
const KEY = 'policy.json';

/** What an app is judged by: the operator's settings that planReconcile reads. */
export interface EnforcedSettings {
  policy: Required<ValidationPolicy>;
  localGateway: string;
  /** What spec.ingress becomes (--router). */
  router: RouterName;
  inPlaceBounds: boolean;
  clusterLocal: boolean;
  cacheScope: CacheScope;
}

export interface PublishedPolicy {
  /** The publishing process (--identity). */
  identity: string;
  publishedAt: string;
  /** "namespace/name" of the Lease it competes for; absent: leader election is off. */
  lease?: string;
  settings: EnforcedSettings;
}

/** The ConfigMap that publishes `published` in `namespace`. Pure. */
export function policyConfigMap(namespace: string, published: PublishedPolicy) {
  return {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: { name: POLICY_CONFIGMAP, namespace, labels: { 'app.kubernetes.io/managed-by': 'serverlessapp-operator' } },
    data: { [KEY]: JSON.stringify(published) },
  };
}

/** The policy a ConfigMap publishes, or undefined when it holds none this version reads. Pure. */
export function readPolicyConfigMap(cm: { data?: Record<string, string> } | undefined): PublishedPolicy | undefined {
  const text = cm?.data?.[KEY];
  if (!text) return undefined;
  try {
    const p = JSON.parse(text) as Partial<PublishedPolicy>;
    return typeof p.identity === 'string' && p.settings?.policy ? (p as PublishedPolicy) : undefined;
  } catch {
    return undefined;
  }
}

/** Publishes (server-side apply; a failure is the caller's to log: the operator runs without it). */
export async function publishPolicy(client: KubeClient, namespace: string, published: PublishedPolicy): Promise<void> {
  await client.apply(policyConfigMap(namespace, published), { kind: Kinds.ConfigMap, force: true });
}

/** Withdraws this process's publication (leader election off, graceful stop): a later plan then says no operator runs. */
export async function withdrawPolicy(client: KubeClient, namespace: string, identity: string): Promise<void> {
  const cm = await client.get<{ metadata: { uid?: string }; data?: Record<string, string> }>(Kinds.ConfigMap, namespace, POLICY_CONFIGMAP);
  if (readPolicyConfigMap(cm)?.identity !== identity) return;
  try {
    await client.delete(Kinds.ConfigMap, namespace, POLICY_CONFIGMAP, { ...(cm?.metadata.uid ? { uid: cm.metadata.uid } : {}) });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
