// Reading Knative Revisions (the data plane's report of each version): which
// app and version a revision serves (our labels, propagated from the template by
// Knative and KServe), whether it is ready, and how many replicas it runs.

import { APP_LABEL, VERSION_LABEL } from '../render/metadata.ts';
import type { ObservedRevision } from '../rollout/canary.ts';
import { findCondition } from '../util/conditions.ts';
import type { ObjectRef } from '../util/object-key.ts';

export interface KnativeCondition { type: string; status: string; reason?: string; message?: string }

export interface Revision {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string>; creationTimestamp?: string; uid?: string; resourceVersion?: string };
  status?: { conditions?: KnativeCondition[]; actualReplicas?: number; desiredReplicas?: number };
}

/**
 * The app a revision belongs to: the one its APP_LABEL names, in the revision's namespace. Not
 * labelledApp (render/metadata.ts): a Revision is Knative's object, selected by APP_LABEL alone
 * (revisionsSelector), and the managed-by label reaches it only through the template.
 */
export function revisionApp(r: Revision): ObjectRef | undefined {
  const name = r.metadata.labels?.[APP_LABEL];
  return name ? { namespace: r.metadata.namespace, name } : undefined;
}

export function isRevisionOf(r: Revision, app: { metadata: { namespace?: string; name: string } }): boolean {
  const owner = revisionApp(r);
  return owner?.name === app.metadata.name && owner.namespace === app.metadata.namespace;
}

/** The label selector of the revisions of the app named `appName` (listed in its namespace), or with none, of every app. */
export function revisionsSelector(appName?: string): string {
  return appName === undefined ? APP_LABEL : `${APP_LABEL}=${appName}`;
}

/**
 * Ready=False reasons Knative sets while it still tries (pkg/reconciler/revision/reconcile_resources.go,
 * revision.go): a pod not scheduled yet (a node may still come: a cluster autoscaler adding a GPU node),
 * an image digest not resolved yet (retried), a container that exited (restarted), a Deployment or
 * PodAutoscaler of its name it does not own (NotOwned, reconcile_resources.go: marked and returned as an
 * error, so retried; seen when a kind switch back re-creates a revision name whose last PodAutoscaler the
 * garbage collector has not removed yet). The rollout's own
 * progress deadline decides about those; any other Ready=False (Knative's progress deadline passed,
 * an image that cannot be pulled past it) means Knative gave up.
 */
function stillTrying(reason: string | undefined): boolean {
  return reason === 'Unschedulable' || reason === 'ContainerMissing' || reason === 'NotOwned' || !!reason?.startsWith('ExitCode');
}

export function observeRevision(r: Revision): ObservedRevision {
  const ready = findCondition(r.status?.conditions, 'Ready');
  const said = ready?.status === 'False' ? `${ready.reason ?? 'NotReady'}: ${ready.message ?? 'no message'}` : undefined;
  return {
    name: r.metadata.name,
    version: r.metadata.labels?.[VERSION_LABEL] ?? '',
    ready: ready?.status === 'True',
    replicas: r.status?.actualReplicas ?? 0,
    ...(said ? (stillTrying(ready?.reason) ? { waiting: said } : { failed: said }) : {}),
  };
}

/** Newest first: by the configuration generation Knative stamps, then creation time, then name. */
export function newestFirst(revisions: Revision[]): Revision[] {
  const gen = (r: Revision) => Number(r.metadata.labels?.['serving.knative.dev/configurationGeneration'] ?? 0);
  return [...revisions].sort((a, b) => gen(b) - gen(a)
    || (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '')
    || b.metadata.name.localeCompare(a.metadata.name));
}

/** Keep only what the operator reads: informer caches stay small at 10,000 apps. */
export function slimRevision(r: Revision): Revision {
  const { name, namespace, labels, annotations, creationTimestamp, uid, resourceVersion } = r.metadata;
  return {
    apiVersion: r.apiVersion, kind: r.kind,
    metadata: { name, namespace, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}), ...(creationTimestamp ? { creationTimestamp } : {}), ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) },
    ...(r.status ? { status: { ...(r.status.conditions ? { conditions: r.status.conditions.map(({ type, status, reason, message }) => ({ type, status, ...(reason ? { reason } : {}), ...(message ? { message } : {}) })) } : {}), ...(r.status.actualReplicas !== undefined ? { actualReplicas: r.status.actualReplicas } : {}) } } : {}),
  };
}
