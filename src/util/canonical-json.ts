// JSON with object keys sorted, so equal content always compares (and hashes)
// the same whatever order it was written in: version hashes, apply decisions,
// status no-op checks.

export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

/**
 * Whether `a` and `b` have the same canonicalJson, without writing either: key order aside, equal
 * JSON values, a member JSON leaves out (undefined, a function) the same as a missing one, and as
 * null in an array, as JSON.stringify reads them. A value with a toJSON (a Date) is compared by its
 * canonicalJson. A status check runs on every reconcile, and two strings per check were most of its cost.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (hasToJson(a) || hasToJson(b)) return canonicalJson(a) === canonicalJson(b);
  if (!isObject(a) || !isObject(b)) return !isObject(a) && !isObject(b) && scalar(a) === scalar(b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bs = b as unknown[];
    if (a.length !== bs.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(omitted(a[i]) ? null : a[i], omitted(bs[i]) ? null : bs[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let members = 0;
  for (const k of Object.keys(ao)) {
    if (omitted(ao[k])) continue;
    members++;
    if (!Object.hasOwn(bo, k) || !sameJson(ao[k], bo[k])) return false;
  }
  for (const k of Object.keys(bo)) if (!omitted(bo[k])) members--;
  return members === 0;
}

function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}

function hasToJson(v: unknown): boolean {
  return isObject(v) && typeof (v as { toJSON?: unknown }).toJSON === 'function';
}

/** Members JSON.stringify leaves out of an object (and writes as null in an array). */
function omitted(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

/** What JSON.stringify writes of a scalar: NaN and the infinities as null, what it leaves out as nothing. */
function scalar(v: unknown): unknown {
  if (omitted(v)) return undefined;
  return typeof v === 'number' && !Number.isFinite(v) ? null : v;
}
