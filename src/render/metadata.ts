// Labels, annotations and owner references shared by every rendered object, so
// that each child points back at its ServerlessApp (garbage collection, and the
// watch that maps a child's event to its app).

import { API_VERSION, KIND, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { isManaged, MANAGED_BY, MANAGED_BY_LABEL } from '../util/managed-by.ts';
import type { ObjectRef } from '../util/object-key.ts';

export const APP_LABEL = 'serverlessapp.io/app';
/** On a child that cannot live in its app's namespace (a cluster-scoped model cache): that namespace. */
export const APP_NAMESPACE_LABEL = 'serverlessapp.io/namespace';
export const VERSION_LABEL = 'serverlessapp.io/version';

/**
 * The recommended name label: one value for every app's children, never the app's name. A tenant chooses
 * the name, and app.kubernetes.io/name is where other stacks' selectors look (an app named `prometheus`
 * would carry the monitoring stack's); the app's own name is in APP_LABEL, under the operator's prefix.
 * Children are found by MANAGED_BY_LABEL, APP_LABEL and owner references, never by this label, so an
 * upgrade orphans nothing: a Knative Service's template (and so its pods) takes it with the app's next
 * version (write-rules.ts: a named template is written only under a new name).
 */
export const APP_NAME_LABEL_VALUE = 'serverlessapp';

export function appLabels(app: ServerlessApp): Record<string, string> {
  return {
    'app.kubernetes.io/name': APP_NAME_LABEL_VALUE,
    [MANAGED_BY_LABEL]: MANAGED_BY,
    // Not the CRDs' "serverlessapp-operator" (the operator's own objects): the children are part of the
    // apps. It is on the pod template too, so changing it would start a new revision of every app.
    'app.kubernetes.io/part-of': 'serverlessapp',
    [APP_LABEL]: app.metadata.name,
  };
}

export function ownerReference(app: ServerlessApp) {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: app.metadata.name,
    uid: app.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The name of the ServerlessApp that controls `obj` (its controller owner reference), if one does. */
export function controllingApp(obj: { metadata: { ownerReferences?: Array<{ kind: string; name?: string; controller?: boolean }> } }): string | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller && r.kind === KIND)?.name;
}

/** The app that controls `obj`, as a reference: its controller owner, in `obj`'s own namespace (an owner reference never leaves it). */
export function controllingAppRef(obj: { metadata: { namespace?: string; ownerReferences?: Array<{ kind: string; name?: string; controller?: boolean }> } }): ObjectRef | undefined {
  const name = controllingApp(obj);
  const namespace = obj.metadata.namespace;
  return name && namespace ? { namespace, name } : undefined;
}

/** Whether `app` controls `obj` by uid (its controller owner reference): only then may the app delete it. */
export function controlledBy(app: { metadata: { uid?: string } }, obj: { metadata: { ownerReferences?: Array<{ controller?: boolean; uid?: string }> } } | undefined): boolean {
  return !!obj?.metadata.ownerReferences?.some((r) => r.controller && r.uid === app.metadata.uid);
}

interface Labelled {
  metadata: { namespace?: string; labels?: Record<string, string>; ownerReferences?: Array<{ controller?: boolean }> };
}

/**
 * The app an object the operator made names by its labels: APP_LABEL, in the object's own namespace or,
 * for a cluster-scoped one, in the namespace APP_NAMESPACE_LABEL names.
 */
export function labelledApp(obj: Labelled): ObjectRef | undefined {
  if (!isManaged(obj)) return undefined;
  const name = obj.metadata.labels?.[APP_LABEL];
  const namespace = obj.metadata.namespace ?? obj.metadata.labels?.[APP_NAMESPACE_LABEL];
  return name && namespace ? { namespace, name } : undefined;
}

/** Whether `obj`'s labels name the app `ref`, whatever else may control it (a model cache of the app, of either scope). */
export function labelsName(obj: Labelled, ref: ObjectRef | undefined): boolean {
  const app = labelledApp(obj);
  return !!ref && app?.namespace === ref.namespace && app.name === ref.name;
}

/**
 * Whether `obj` is the child of the app `ref` names, for a child that cannot carry an owner reference (a
 * namespaced app's cluster-scoped cache): its labels name the app and nothing controls it. The one rule by
 * which such a child is written (controllers/children.ts notControlledBy) and removed (ChildWriter.remove).
 */
export function labelledFor(obj: Labelled, ref: ObjectRef | undefined): boolean {
  return !obj.metadata.ownerReferences?.some((r) => r.controller) && labelsName(obj, ref);
}

/**
 * Whether the app (or, for a child that cannot carry an owner reference, the app `owner` names) may
 * remove `live`: it controls it by uid, or its labels name the app and nothing controls it. An app
 * already gone (undefined) controls nothing.
 */
export function removableBy(live: Labelled & Parameters<typeof controlledBy>[1] | undefined, owner: { metadata: { uid?: string } } | ObjectRef | undefined): boolean {
  if (!live || !owner) return false;
  return 'metadata' in owner ? controlledBy(owner, live) : labelledFor(live, owner);
}

/** metadata for a namespaced child named after its app. */
export function childMetadata(app: ServerlessApp, name = app.metadata.name) {
  return {
    name,
    namespace: app.metadata.namespace,
    labels: appLabels(app),
    ownerReferences: [ownerReference(app)],
  };
}
