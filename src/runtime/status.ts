// The one way status reaches the API server: through the status subresource
// (so spec and status never overwrite each other) and only when it changed,
// so a converged object costs no writes and triggers no watch events.
// "Changed" is judged against the cached object and against what this writer
// last wrote for the same object generation: a cache that has not yet seen our
// own write must not cause the same status (and its Events) twice. Progress
// that changes nothing a user waits for (a data plane's message while it works,
// a replica count) can be coalesced: written at most once per window.

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
  private readonly written = new Map<string, { uid?: string; generation?: number; hash: string; at: number }>();
  private readonly now: () => number;

  constructor(client: KubeClient, opts: { now?: () => number } = {}) {
    this.client = client;
    this.now = opts.now ?? Date.now;
  }

  /** Applies `status` to `live`'s status subresource unless it already reads the same; returns whether it wrote. */
  async write<T>(live: T, status: object): Promise<boolean> {
    return (await this.apply(live as T & Live, status)).wrote;
  }

  /**
   * Like write(), for a status that reports progress. A change that leaves `significant(status)`
   * as the live one reads is written at most once per `windowMs` after this writer's last write
   * of the object (`retryInMs` says when to look again), or, without a window, not on its own.
   * A significant change is written at once.
   */
  writeCoalesced<T>(live: T, status: object, significant: (status: unknown) => unknown, windowMs?: number): Promise<{ wrote: boolean; retryInMs?: number }> {
    return this.apply(live as T & Live, status, { significant, windowMs });
  }

  private async apply(obj: Live, status: object, coalesce?: { significant: (status: unknown) => unknown; windowMs: number | undefined }): Promise<{ wrote: boolean; retryInMs?: number }> {
    const text = canonicalJson(status);
    if (canonicalJson(obj.status ?? {}) === text) return { wrote: false };
    const { name, namespace, uid, generation } = obj.metadata;
    const key = keyOf(obj);
    const last = this.written.get(key);
    if (coalesce && last && canonicalJson(coalesce.significant(obj.status ?? {})) === canonicalJson(coalesce.significant(status))) {
      if (coalesce.windowMs === undefined) return { wrote: false };
      const wait = last.at + coalesce.windowMs - this.now();
      if (wait > 0) return { wrote: false, retryInMs: wait };
    }
    const hash = createHash('sha256').update(text).digest('base64url').slice(0, 22);
    if (last && last.hash === hash && last.uid === uid && last.generation === generation) return { wrote: false };
    try {
      await this.client.apply(
        { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name, ...(namespace ? { namespace } : {}) }, status },
        { subresource: 'status' },
      );
    } catch (err) {
      // Deleted since the cache showed it: nothing to report on, and not an error to retry.
      if (isNotFound(err)) return { wrote: false };
      throw err;
    }
    this.written.set(key, { ...(uid ? { uid } : {}), ...(generation !== undefined ? { generation } : {}), hash, at: this.now() });
    return { wrote: true };
  }

  /** Drops what is remembered about a deleted object. */
  forget(namespace: string | undefined, name: string): void {
    this.written.delete(`${namespace ?? ''}/${name}`);
  }
}

function keyOf(obj: Live): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}
