// Every kind the operator reads or writes, with the group, version and plural
// needed to address it. The list is static on purpose: the operator knows what
// it manages, so it never pays for (or depends on) API discovery at runtime.

export interface ResourceKind {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

export const Kinds = {
  ServerlessApp: { group: 'serverlessapp.io', version: 'v1alpha1', kind: 'ServerlessApp', plural: 'serverlessapps', namespaced: true },
  HostClaim: { group: 'serverlessapp.io', version: 'v1alpha1', kind: 'HostClaim', plural: 'hostclaims', namespaced: false },
  KnativeService: { group: 'serving.knative.dev', version: 'v1', kind: 'Service', plural: 'services', namespaced: true },
  KnativeRevision: { group: 'serving.knative.dev', version: 'v1', kind: 'Revision', plural: 'revisions', namespaced: true },
  InferenceService: { group: 'serving.kserve.io', version: 'v1beta1', kind: 'InferenceService', plural: 'inferenceservices', namespaced: true },
  /** KServe's LLM serving (its llmisvc manager); v1alpha2 is the storage version in 0.20. */
  LLMInferenceService: { group: 'serving.kserve.io', version: 'v1alpha2', kind: 'LLMInferenceService', plural: 'llminferenceservices', namespaced: true },
  VirtualService: { group: 'networking.istio.io', version: 'v1', kind: 'VirtualService', plural: 'virtualservices', namespaced: true },
  HTTPRoute: { group: 'gateway.networking.k8s.io', version: 'v1', kind: 'HTTPRoute', plural: 'httproutes', namespaced: true },
  LocalModelCache: { group: 'serving.kserve.io', version: 'v1alpha1', kind: 'LocalModelCache', plural: 'localmodelcaches', namespaced: false },
  LocalModelNamespaceCache: {
    group: 'serving.kserve.io',
    version: 'v1alpha1',
    kind: 'LocalModelNamespaceCache',
    plural: 'localmodelnamespacecaches',
    namespaced: true,
  },
  Lease: { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true },
  Event: { group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', namespaced: true },
  Namespace: { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
  ConfigMap: { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
  CustomResourceDefinition: { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', namespaced: false },
} as const satisfies Record<string, ResourceKind>;

/** The name of the CustomResourceDefinition that serves `k`: `<plural>.<group>`. */
export function crdName(k: ResourceKind): string {
  return `${k.plural}.${k.group}`;
}

/** A kind's apiVersion, as a literal type for the kinds above (a plain string for any ResourceKind). */
export type ApiVersion<K extends ResourceKind> = K extends K
  ? string extends K['group'] ? string : K['group'] extends '' ? K['version'] : `${K['group']}/${K['version']}`
  : never;

/** "serving.knative.dev/v1", or just "v1" for the core group. */
export function apiVersionOf<K extends ResourceKind>(k: K): ApiVersion<K> {
  return (k.group ? `${k.group}/${k.version}` : k.version) as ApiVersion<K>;
}

/**
 * The REST path of a collection or one object, e.g.
 * /apis/serverlessapp.io/v1alpha1/namespaces/demo/serverlessapps/web/status.
 * Without a namespace a namespaced kind addresses all namespaces (list/watch);
 * a cluster-scoped kind ignores the namespace, as the API server does.
 */
export function resourcePath(k: ResourceKind, namespace?: string, name?: string, subresource?: string): string {
  const base = k.group ? `/apis/${k.group}/${k.version}` : `/api/${k.version}`;
  const scope = k.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const object = name ? `/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ''}` : '';
  return `${base}${scope}/${k.plural}${object}`;
}
