// The one way status reaches the API server: through the status subresource
// (so spec and status never overwrite each other) and only when it changed,
// so a converged object costs no writes and triggers no watch events.
// "Changed" is judged against the cached object and against what this writer
// last wrote for the same object generation: a cache that has not yet seen our
// own write must not cause the same status (and its Events) twice. Progress
// that changes nothing a user waits for (a data plane's message while it works,
// a replica count) can be coalesced: written at most once per window.
// Conditions another controller owns (under its own field manager, in a list
// keyed by type) are neither written nor compared: applying them here would take
// them over, and a stale copy would overwrite that controller's newer one.

import { createHash } from 'node:crypto';
import { canonicalJson } from '../util/canonical-json.ts';
import { isNotFound, type KubeClient } from './client.ts';
import { systemClock, type Clock } from './clock.ts';
import { objectKey } from '../util/object-key.ts';

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
  /** Coalescing windows are real time, as the queue delay they turn into (runtime/controller.ts ControllerOptions.clock). */
  private readonly clock: Clock;
  private readonly othersConditions: ReadonlySet<string>;
  private readonly fieldManager: string | undefined;

  /** `othersConditions`: condition types other writers own. `fieldManager`: this writer's own (default: the client's). */
  constructor(client: KubeClient, opts: { clock?: Clock; othersConditions?: readonly string[]; fieldManager?: string } = {}) {
    this.client = client;
    this.clock = opts.clock ?? systemClock;
    this.othersConditions = new Set(opts.othersConditions ?? []);
    this.fieldManager = opts.fieldManager;
  }

  /**
   * Applies `part`, everything of the status this writer owns (one condition, say; `{}` gives up
   * what it owned), under its own field manager, leaving the rest to its writers. The caller has
   * judged that `part` changes the live status. Returns whether it wrote.
   */
  async writePart<T>(live: T, part: object): Promise<boolean> {
    return this.send(live as T & Live, part);
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

  private async apply(obj: Live, desired: object, coalesce?: { significant: (status: unknown) => unknown; windowMs: number | undefined }): Promise<{ wrote: boolean; retryInMs?: number }> {
    const status = this.ours(desired);
    const live = this.ours(obj.status ?? {});
    const text = canonicalJson(status);
    if (canonicalJson(live) === text) return { wrote: false };
    const { uid, generation } = obj.metadata;
    const key = keyOf(obj);
    const last = this.written.get(key);
    if (coalesce && last && canonicalJson(coalesce.significant(live)) === canonicalJson(coalesce.significant(status))) {
      if (coalesce.windowMs === undefined) return { wrote: false };
      const wait = last.at + coalesce.windowMs - this.clock.now().getTime();
      if (wait > 0) return { wrote: false, retryInMs: wait };
    }
    const hash = createHash('sha256').update(text).digest('base64url').slice(0, 22);
    if (last && last.hash === hash && last.uid === uid && last.generation === generation) return { wrote: false };
    if (!await this.send(obj, status)) return { wrote: false };
    this.written.set(key, { ...(uid ? { uid } : {}), ...(generation !== undefined ? { generation } : {}), hash, at: this.clock.now().getTime() });
    return { wrote: true };
  }

  private async send(obj: Live, status: object): Promise<boolean> {
    const { name, namespace } = obj.metadata;
    try {
      await this.client.apply(
        { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name, ...(namespace ? { namespace } : {}) }, status },
        { subresource: 'status', ...(this.fieldManager ? { fieldManager: this.fieldManager } : {}) },
      );
      return true;
    } catch (err) {
      // Deleted since the cache showed it: nothing to report on, and not an error to retry.
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** `status` without the conditions other writers own. */
  private ours<S extends object>(status: S): S {
    const conditions = (status as { conditions?: Array<{ type: string }> }).conditions;
    if (!this.othersConditions.size || !conditions?.some((c) => this.othersConditions.has(c.type))) return status;
    return { ...status, conditions: conditions.filter((c) => !this.othersConditions.has(c.type)) };
  }

  /** Drops what is remembered about a deleted object. */
  forget(namespace: string | undefined, name: string): void {
    this.written.delete(objectKey(namespace, name));
  }
}

function keyOf(obj: Live): string {
  return objectKey(obj.metadata.namespace, obj.metadata.name);
}
