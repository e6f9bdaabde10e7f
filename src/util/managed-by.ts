// What marks an object as the operator's own: the app's children and the
// HostClaims it makes carry app.kubernetes.io/managed-by=serverlessapp-operator.
// Its informers list by it, and only what carries it is ever released.

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'serverlessapp-operator';
/** The label selector of every object the operator makes (its informers list only those). */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;

/** Whether the operator made `obj` (a HostClaim the platform made with kubectl is not). */
export function isManaged(obj: { metadata: { labels?: Record<string, string> } }): boolean {
  return obj.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY;
}
