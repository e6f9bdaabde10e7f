// Labels, annotations and owner references shared by every rendered object, so
// that each child points back at its ServerlessApp (garbage collection, and the
// watch that maps a child's event to its app).

import { API_VERSION, KIND, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';

export const APP_LABEL = 'serverlessapp.io/app';
export const VERSION_LABEL = 'serverlessapp.io/version';
export const MANAGED_BY = 'serverlessapp-operator';
/** The label selector of every object the operator renders (its informers list only those). */
export const MANAGED_SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY}`;

export function appLabels(app: ServerlessApp): Record<string, string> {
  return {
    'app.kubernetes.io/name': app.metadata.name,
    'app.kubernetes.io/managed-by': MANAGED_BY,
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

/** metadata for a namespaced child named after its app. */
export function childMetadata(app: ServerlessApp, name = app.metadata.name) {
  return {
    name,
    namespace: app.metadata.namespace,
    labels: appLabels(app),
    ownerReferences: [ownerReference(app)],
  };
}
