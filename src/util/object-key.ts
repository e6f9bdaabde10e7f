// The "namespace/name" key that identifies an object in caches, work queues and
// budgets, written and read in one place. A cluster-scoped object's key is its
// bare name (namespace "").

export interface ObjectRef { namespace: string; name: string }

/** "namespace/name", or the bare name of a cluster-scoped object. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** The namespace and name a key stands for. */
export function splitKey(key: string): ObjectRef {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** The namespace part of a key ("" for a cluster-scoped object). */
export function namespaceOf(key: string): string {
  return splitKey(key).namespace;
}
