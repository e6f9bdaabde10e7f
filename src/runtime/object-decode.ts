// One object of a LIST page or a watch event, from its bytes to what the
// informer keeps, parsing no more than it must: an object whose
// resourceVersion the cache already holds (a relist) is not parsed beyond its
// metadata, and under a projection the metadata fields nobody reads
// (managedFields, annotations) are skipped unparsed and a spec whose
// generation did not move is the cached one, unparsed. So a label, annotation
// or status edit of a large object costs a scan of its bytes (strings skipped
// natively), not a parse of its spec: what a storm of such edits costs the
// event loop every namespace shares.

import { servedJsonBytes } from '../util/served-json.ts';
import { objectMembers, parseBytes } from './json-scan.ts';

/** What an informer keeps of each object beyond its spec and status (see InformerOptions.projection). */
export interface Projection {
  /** The metadata fields kept; every other one is skipped without being parsed. */
  metadata: readonly string[];
  /**
   * A spec of more bytes (of JSON) is never parsed: the object is kept with an empty spec and
   * `specTooLarge`, which its controller reports as a refusal. What the cache holds of an object is
   * then bounded whatever a tenant submits.
   */
  maxSpecBytes?: number;
}

/** Set on an object whose spec was past Projection.maxSpecBytes (its spec is then empty): what its refusal reports. */
export interface SpecTooLarge {
  bytes: number;
  limit: number;
}

interface Meta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
}

export interface Decoded<T> {
  obj: T;
  /** The cache's own object: the bytes carried the resourceVersion it holds. */
  unchanged: boolean;
}

/**
 * Decodes one object. `cachedOf(metadata)` is the cache's copy of the object the metadata names.
 * Under a projection the cached spec is kept while uid and generation are unchanged: the API server
 * moves a custom resource's generation on every change outside metadata and status, so the spec is
 * then the same (the informer's transform must leave spec as it is).
 */
export function decodeObject<T extends { metadata?: Meta }>(bytes: Buffer, cachedOf: (meta: Meta) => T | undefined, projection?: Projection): Decoded<T> {
  // A spec past the limit is never parsed, so an object that may hold one takes the member path.
  // Parsed whole below that; its spec needs no measure, as the whole object is within maxSpecBytes.
  if (bytes.length <= Math.min(WHOLE_PARSE_BYTES, projection?.maxSpecBytes ?? Infinity)) return keptWhole(JSON.parse(bytes.toString('utf8')), cachedOf, projection, false);
  const members = objectMembers(bytes);
  const metaBytes = members.get('metadata');
  if (metaBytes === undefined) return { obj: parseBytes(bytes) as T, unchanged: false };
  const meta = (projection ? projectMetadata(metaBytes, projection) : parseBytes(metaBytes)) as Meta;
  const cached = cachedOf(meta);
  if (cached !== undefined && holdsVersion(cached, meta)) return { obj: cached, unchanged: true };
  const sameSpec = projection !== undefined && cached !== undefined && meta.generation !== undefined
    && cached.metadata?.uid === meta.uid && cached.metadata?.generation === meta.generation && 'spec' in cached && !('specTooLarge' in cached);
  const obj: Record<string, unknown> = {};
  const limit = projection?.maxSpecBytes;
  for (const [key, value] of members) {
    if (key === 'metadata') obj[key] = meta;
    else if (key === 'spec' && limit !== undefined && value.length > limit) {
      obj[key] = {};
      obj.specTooLarge = { bytes: value.length, limit } satisfies SpecTooLarge;
    }
    else if (key === 'spec' && sameSpec) obj[key] = (cached as { spec?: unknown }).spec;
    else obj[key] = parseBytes(value);
  }
  return { obj: obj as T, unchanged: false };
}

/**
 * Below this size one JSON.parse is cheaper than finding the members and parsing them one by one
 * (about 8 against 30 µs for a typical 1 KiB app).
 */
const WHOLE_PARSE_BYTES = 16 * 1024;

/**
 * What decodeObject makes of `obj`, an object already parsed (a LIST page small enough to parse whole):
 * the cache's copy when it holds that version, else `obj` under the projection, its spec dropped and
 * marked `specTooLarge` past the projection's limit (measured as the API server serves it, as the bytes
 * path measures it).
 */
export function decodeParsed<T extends { metadata?: Meta }>(parsed: unknown, cachedOf: (meta: Meta) => T | undefined, projection?: Projection): Decoded<T> {
  return keptWhole(parsed, cachedOf, projection, true);
}

/** What the cache keeps of an object parsed whole: the cached copy of its version, or the object projected (its spec measured when `measureSpec`). */
function keptWhole<T extends { metadata?: Meta }>(parsed: unknown, cachedOf: (meta: Meta) => T | undefined, projection: Projection | undefined, measureSpec: boolean): Decoded<T> {
  const obj = parsed as T & { metadata?: Record<string, unknown>; spec?: unknown; specTooLarge?: SpecTooLarge };
  const meta = obj.metadata;
  if (meta === undefined) return { obj, unchanged: false };
  const cached = cachedOf(meta);
  if (cached !== undefined && holdsVersion(cached, meta)) return { obj: cached, unchanged: true };
  if (!projection) return { obj, unchanged: false };
  const limit = projection.maxSpecBytes;
  if (measureSpec && limit !== undefined && obj.spec !== undefined) {
    const bytes = servedJsonBytes(JSON.stringify(obj.spec));
    if (bytes > limit) {
      obj.spec = {};
      obj.specTooLarge = { bytes, limit };
    }
  }
  obj.metadata = Object.fromEntries(projection.metadata.filter((k) => k in meta).map((k) => [k, meta[k]]));
  return { obj, unchanged: false };
}

/** Whether the cache's copy is the version `meta` names: a relist or a repeated event, nothing to parse. */
function holdsVersion(cached: { metadata?: Meta }, meta: Meta): boolean {
  return meta.resourceVersion !== undefined && cached.metadata?.resourceVersion === meta.resourceVersion;
}

function projectMetadata(bytes: Buffer, projection: Projection): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  const members = objectMembers(bytes);
  for (const key of projection.metadata) {
    const value = members.get(key);
    if (value !== undefined) meta[key] = parseBytes(value);
  }
  return meta;
}
