// The one way status reaches the API server: through the status subresource
// (so spec and status never overwrite each other) and only when it changed,
// so a converged object costs no writes and triggers no watch events.
// "Changed" is judged against the cached object and against what this writer
// last wrote for the same object generation: a cache that has not yet seen our
// own write must not cause the same status (and its Events) twice.

import { createHash } from 'node:crypto';
import { canonicalJson } from '../util/canonical-json.ts';
import { isNotFound, type KubeClient } from './client.ts';

interface Live {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; generation?: number };
  status?: unknown;
}

export class StatusWriter {
  private readonly client: KubeClient;
  /** namespace/name -> the object's uid and generation, and the hash of the status last written. */
  private readonly written = new Map<string, { uid?: string; generation?: number; hash: string }>();

  constructor(client: KubeClient) {
    this.client = client;
  }

  /** Applies `status` to `live`'s status subresource unless it already reads the same; returns whether it wrote. */
  async write<T>(live: T, status: object): Promise<boolean> {
    const obj = live as T & Live;
    const text = canonicalJson(status);
    if (canonicalJson(obj.status ?? {}) === text) return false;
    const hash = createHash('sha256').update(text).digest('base64url').slice(0, 22);
    const { name, namespace, uid, generation } = obj.metadata;
    const key = `${namespace ?? ''}/${name}`;
    const last = this.written.get(key);
    if (last && last.hash === hash && last.uid === uid && last.generation === generation) return false;
    try {
      await this.client.apply(
        { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name, ...(namespace ? { namespace } : {}) }, status },
        { subresource: 'status' },
      );
    } catch (err) {
      // Deleted since the cache showed it: nothing to report on, and not an error to retry.
      if (isNotFound(err)) return false;
      throw err;
    }
    this.written.set(key, { ...(uid ? { uid } : {}), ...(generation !== undefined ? { generation } : {}), hash });
    return true;
  }

  /** Drops what is remembered about a deleted object. */
  forget(namespace: string | undefined, name: string): void {
    this.written.delete(`${namespace ?? ''}/${name}`);
  }
}
