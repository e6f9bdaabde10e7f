// A field-level diff of two objects, as paths a person can find in the YAML:
// spec.template.spec.containers[0].image: "shop:1" -> "shop:2". Pure.

export interface FieldChange {
  path: string;
  /** Absent when the field is added. */
  from?: unknown;
  /** Absent when the field is removed. */
  to?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every leaf that differs between `before` and `after`, in path order. */
export function fieldDiff(before: unknown, after: unknown, path = ''): FieldChange[] {
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((k) => fieldDiff(before[k], after[k], path ? `${path}.${segment(k)}` : segment(k)));
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const n = Math.max(before.length, after.length);
    return Array.from({ length: n }, (_, i) => fieldDiff(before[i], after[i], `${path}[${i}]`)).flat();
  }
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  return [{ path, ...(before !== undefined ? { from: before } : {}), ...(after !== undefined ? { to: after } : {}) }];
}

/** Keys with dots or slashes (annotations) are quoted, as jq and yq spell them. */
function segment(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key) ? key : `"${key}"`;
}

/** Annotations the API server's admission sets from who wrote last: they change on every write by another user, the operator's too. */
const BOOKKEEPING = new Set(['serving.knative.dev/creator', 'serving.knative.dev/lastModifier', 'kubectl.kubernetes.io/last-applied-configuration']);

/** What of a Kubernetes object a person changes: labels, annotations, owner, spec (not status or server bookkeeping). */
export function comparable(obj: { metadata?: { labels?: unknown; annotations?: unknown; ownerReferences?: unknown }; spec?: unknown } | undefined): unknown {
  if (!obj) return undefined;
  const { labels } = obj.metadata ?? {};
  const kept = Object.entries((obj.metadata?.annotations ?? {}) as Record<string, string>).filter(([k]) => !BOOKKEEPING.has(k));
  const annotations = kept.length ? Object.fromEntries(kept) : undefined;
  return { metadata: { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) }, ...(obj.spec !== undefined ? { spec: obj.spec } : {}) };
}
