// When the ServerlessApp controller looks at an app again, pure: which updates
// of an app are worth a reconcile (the update predicate of Controller.watches;
// model-cache-triggers.ts is the model-cache controller's). controller-runtime's
// GenerationChangedPredicate drops status-only updates too; a reconciler that
// reads its own status (to write only what changed) must see those, so only
// label and annotation edits are dropped here.

interface Meta {
  metadata: { generation?: number; deletionTimestamp?: string; finalizers?: string[]; ownerReferences?: unknown[] };
  status?: unknown;
}

/**
 * False when `obj` differs from `old` at most in labels, annotations and bookkeeping (resourceVersion,
 * managedFields): the spec (generation), deletion, finalizers, owners and status are what a reconcile
 * that reads neither labels nor annotations of its object depends on. Why it matters: a tenant's storm
 * of label edits (GitOps tooling stamps labels freely) would otherwise cost a full reconcile each, on
 * the event loop every namespace shares.
 */
export function changedBeyondLabels(obj: Meta, old: Meta): boolean {
  const m = obj.metadata, o = old.metadata;
  return specOrDeletionChanged(obj, old)
    || JSON.stringify(m.finalizers) !== JSON.stringify(o.finalizers)
    || JSON.stringify(m.ownerReferences) !== JSON.stringify(o.ownerReferences)
    || JSON.stringify(obj.status) !== JSON.stringify(old.status);
}

/** The spec (generation) changed or deletion began: what every controller that reads an app's spec looks again for. */
export function specOrDeletionChanged(obj: Pick<Meta, 'metadata'>, old: Pick<Meta, 'metadata'>): boolean {
  return obj.metadata.generation !== old.metadata.generation || obj.metadata.deletionTimestamp !== old.metadata.deletionTimestamp;
}
