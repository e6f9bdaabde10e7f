// Labels, annotations and owner references shared by every rendered object, so
// that each child points back at its ServerlessApp (garbage collection, and the
// watch that maps a child's event to its app).

import { API_VERSION, KIND, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../util/managed-by.ts';

export const APP_LABEL = 'serverlessapp.io/app';
export const VERSION_LABEL = 'serverlessapp.io/version';

export function appLabels(app: ServerlessApp): Record<string, string> {
  return {
    'app.kubernetes.io/name': app.metadata.name,
    [MANAGED_BY_LABEL]: MANAGED_BY,
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

/** Whether `app` controls `obj` by uid (its controller owner reference): only then may the app delete it. */
export function controlledBy(app: ServerlessApp, obj: { metadata: { ownerReferences?: Array<{ controller?: boolean; uid?: string }> } } | undefined): boolean {
  return !!obj?.metadata.ownerReferences?.some((r) => r.controller && r.uid === app.metadata.uid);
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
