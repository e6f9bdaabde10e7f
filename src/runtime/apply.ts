// Decides whether a desired object has to be written at all (KServe's
// semanticEquals, adapted to server-side apply). Live objects carry defaults
// from the API server, webhooks and other field managers, so equality is a
// subset test: everything we want is there, whatever else is there too. The
// hash of what we last applied catches changes the subset test cannot see,
// such as a field we stopped setting.

import { createHash } from 'node:crypto';

export const APPLIED_HASH_ANNOTATION = 'serverlessapp.io/applied-hash';

interface WithMetadata {
  metadata?: { annotations?: Record<string, string> };
}

/** A copy of `desired` annotated with the hash of its own content (the annotation itself excluded). */
export function stampAppliedHash<T>(desired: T): T {
  const obj = desired as T & WithMetadata;
  const { [APPLIED_HASH_ANNOTATION]: _previous, ...annotations } = obj.metadata?.annotations ?? {};
  const unstamped = { ...obj, metadata: { ...obj.metadata, annotations } };
  if (Object.keys(annotations).length === 0) delete (unstamped.metadata as { annotations?: unknown }).annotations;
  const hash = createHash('sha256').update(canonicalJson(unstamped)).digest('hex').slice(0, 16);
  return { ...obj, metadata: { ...obj.metadata, annotations: { ...annotations, [APPLIED_HASH_ANNOTATION]: hash } } };
}

/**
 * True when every field set in `desired` has the same value in `live`. Objects
 * compare key by key (extra live keys are ignored), arrays by length and then
 * element by element, scalars exactly. An undefined desired field is not set.
 */
export function isSemanticSubset(desired: unknown, live: unknown): boolean {
  if (desired === undefined) return true;
  if (desired === null) return live === null || live === undefined;
  if (Array.isArray(desired)) {
    return Array.isArray(live) && live.length === desired.length && desired.every((d, i) => isSemanticSubset(d, live[i]));
  }
  if (typeof desired === 'object') {
    if (typeof live !== 'object' || live === null || Array.isArray(live)) return false;
    const l = live as Record<string, unknown>;
    return Object.entries(desired as Record<string, unknown>).every(([k, v]) => isSemanticSubset(v, l[k]));
  }
  return desired === live;
}

/**
 * Whether `desired` (stamped) must be applied over `live`: it is missing, the
 * last applied content differs, or someone edited a field we own. apiVersion
 * and kind are not compared: list responses leave them out of their items, and
 * the caller already matched the object by kind.
 */
export function needsApply(desired: unknown, live: unknown): boolean {
  if (live === undefined || live === null) return true;
  const want = (desired as WithMetadata).metadata?.annotations?.[APPLIED_HASH_ANNOTATION];
  const have = (live as WithMetadata).metadata?.annotations?.[APPLIED_HASH_ANNOTATION];
  if (want !== undefined && want !== have) return true;
  const { apiVersion: _a, kind: _k, ...rest } = desired as Record<string, unknown>;
  return !isSemanticSubset(rest, live);
}

/** JSON with object keys sorted, so equal content always hashes the same. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}
