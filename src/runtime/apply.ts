// Decides whether a desired object has to be written at all (KServe's
// semanticEquals, adapted to server-side apply). Live objects carry defaults
// from the API server, webhooks and other field managers, so equality is a
// subset test: everything we want is there, whatever else is there too. What a
// subset test cannot see, a field we applied before and no longer want, is
// read from our own managedFields entry, exactly as the API server tracks it.
// (No marker annotation: KServe copies an InferenceService's annotations into
// its revision template, so a changing annotation would cut a new revision.)

import { canonicalJson } from '../util/canonical-json.ts';

export type FieldSet = { [key: string]: FieldSet };

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsV1?: FieldSet;
}

interface WithManagedFields {
  metadata?: { managedFields?: ManagedFieldsEntry[] };
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

interface Identified {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; annotations?: Record<string, string> };
}

/** The apply that sets `annotations` on a live object: its identity and the annotations, nothing else. */
export function annotationApply(live: Identified, annotations: Record<string, string>): Identified {
  const { name, namespace } = live.metadata;
  return { apiVersion: live.apiVersion, kind: live.kind, metadata: { name, ...(namespace ? { namespace } : {}), annotations } };
}

/** Whether `live` carries `annotations` already: setting them changes nothing. */
export function hasAnnotations(live: unknown, annotations: Record<string, string> | undefined): boolean {
  return isSemanticSubset({ metadata: { annotations } }, live);
}

/** A delete's precondition: the uid of the object meant, so a namesake made since is never hit. */
export function sameObject(live: Identified): { uid?: string } {
  return live.metadata.uid ? { uid: live.metadata.uid } : {};
}

const hasChildren = (set: FieldSet) => Object.keys(set).some((k) => k !== '.');

/**
 * Whether `owned` (a managedFields fieldsV1 set) holds a field that `desired`
 * no longer sets: applying again would remove it. Keys are "f:<field>",
 * "k:<json of list-map keys>", "v:<json set value>" and "i:<index>".
 */
export function dropsOwnedField(owned: FieldSet, desired: unknown): boolean {
  for (const [key, child] of Object.entries(owned)) {
    if (key === '.') continue;
    const tag = key.slice(0, 2);
    const rest = key.slice(2);
    let next: unknown;
    if (tag === 'f:') {
      if (desired === null || typeof desired !== 'object' || Array.isArray(desired)) return true;
      next = (desired as Record<string, unknown>)[rest];
    } else if (tag === 'k:') {
      if (!Array.isArray(desired)) return true;
      const keys = JSON.parse(rest) as Record<string, unknown>;
      next = desired.find((item) => item && typeof item === 'object' && Object.entries(keys).every(([k, v]) => (item as Record<string, unknown>)[k] === v));
    } else if (tag === 'v:') {
      if (!Array.isArray(desired)) return true;
      const value = canonicalJson(JSON.parse(rest));
      next = desired.find((item) => canonicalJson(item) === value);
    } else if (tag === 'i:') {
      next = Array.isArray(desired) ? desired[Number(rest)] : undefined;
    } else {
      continue;
    }
    if (next === undefined) return true;
    if (hasChildren(child) && dropsOwnedField(child, next)) return true;
  }
  return false;
}

/** The fields `manager` last applied to the object itself (not a subresource). */
export function appliedFields(live: unknown, manager: string): FieldSet | undefined {
  return (live as WithManagedFields).metadata?.managedFields
    ?.find((e) => e.manager === manager && e.operation === 'Apply' && !e.subresource)?.fieldsV1;
}

/**
 * Informer transform for children: keep only our own managers' applied field
 * sets (all the write path reads) and drop everyone else's, to keep caches small.
 */
export function keepAppliedFields(...managers: string[]) {
  return <T>(obj: T): T => {
    const meta = (obj as WithManagedFields).metadata;
    if (meta?.managedFields) meta.managedFields = meta.managedFields.filter((e) => managers.includes(e.manager ?? '') && e.operation === 'Apply' && !e.subresource);
    return obj;
  };
}

/**
 * Why `desired` would have to be applied over `live`: `missing`, `changed` (a
 * field we want differs: drift or a new value), `dropsOwned` (we own a field we
 * no longer render: one we dropped, or a webhook's default attributed to us),
 * or `none`. apiVersion and kind are not compared: list responses leave them
 * out of their items, and the caller already matched the object by kind.
 */
export function applyNeed(desired: unknown, live: unknown, manager: string): 'none' | 'missing' | 'changed' | 'dropsOwned' {
  if (live === undefined || live === null) return 'missing';
  const { apiVersion: _a, kind: _k, ...rest } = desired as Record<string, unknown>;
  if (!isSemanticSubset(rest, live)) return 'changed';
  const owned = appliedFields(live, manager);
  return owned !== undefined && dropsOwnedField(owned, desired) ? 'dropsOwned' : 'none';
}

/** Whether `desired` must be applied over `live` (see applyNeed). */
export function needsApply(desired: unknown, live: unknown, manager: string): boolean {
  return applyNeed(desired, live, manager) !== 'none';
}
