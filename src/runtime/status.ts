// The one way status reaches the API server: through the status subresource
// (so spec and status never overwrite each other) and only when it changed,
// so a converged object costs no writes and triggers no watch events.
// A status is the record of what a plan decided from one read of the object,
// so it is written only over that read: the apply carries the read's
// resourceVersion, a precondition the API server enforces, and a plan made
// from a copy the server has moved past (a cache that has not yet seen our own
// last write, another writer's status) is refused with 409 (StaleRead): the
// caller plans again from the fresh object, and the transition it would have
// written, announced and counted a second time is not. The writer remembers the
// read each object's server has moved past (behind()), so a caller waits for its
// cache to move on instead of planning from it again and again.
// Progress that changes nothing a user waits for (a data plane's message while
// it works, a replica count) can be coalesced: written at most once per window.
// Conditions another controller owns (under its own field manager, in a list
// keyed by type) are neither written nor compared: applying them here would take
// them over, and a stale copy would overwrite that controller's newer one;
// so are the status fields another controller owns (othersFields).

import { sameJson } from '../util/canonical-json.ts';
import { ApiError, isNotFound, type KubeClient } from './client.ts';
import { systemClock, type Clock } from './clock.ts';
import { objectKey } from '../util/object-key.ts';

interface Live {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
  status?: unknown;
}

/**
 * The status write was refused because the object changed since the read its plan was made from
 * (409 Conflict on the read's resourceVersion): plan again from the fresh object, at once.
 */
export class StaleRead extends Error {
  constructor(object: string, options?: ErrorOptions) {
    super(`${object} changed since the read its status was planned from`, options);
    this.name = 'StaleRead';
  }
}

/**
 * What this writer knows of an object: when it last wrote it (coalescing windows), and a version the API
 * server has moved past (the read its last write replaced, or one it refused a write over).
 */
interface LastWrite {
  at?: number;
  outdated?: string;
}

export class StatusWriter {
  private readonly client: KubeClient;
  /** namespace/name -> this writer's last write of the object. */
  private readonly written = new Map<string, LastWrite>();
  /** Coalescing windows are real time, as the queue delay they turn into (runtime/controller.ts ControllerOptions.clock). */
  private readonly clock: Clock;
  private readonly othersConditions: ReadonlySet<string>;
  private readonly othersFields: readonly string[];
  private readonly fieldManager: string | undefined;

  /** `othersConditions`: condition types other writers own; `othersFields`: status fields they own. `fieldManager`: this writer's own (default: the client's). */
  constructor(client: KubeClient, opts: { clock?: Clock; othersConditions?: readonly string[]; othersFields?: readonly string[]; fieldManager?: string } = {}) {
    this.client = client;
    this.clock = opts.clock ?? systemClock;
    this.othersConditions = new Set(opts.othersConditions ?? []);
    this.othersFields = opts.othersFields ?? [];
    this.fieldManager = opts.fieldManager;
  }

  /**
   * Applies `part`, everything of the status this writer owns (one condition, say; `{}` gives up
   * what it owned), under its own field manager, leaving the rest to its writers. The caller has
   * judged that `part` changes the live status. Returns whether it wrote. Without the read's
   * precondition: a condition of its own is no record of a plan over the rest of the status.
   */
  async writePart<T>(live: T, part: object, signal?: AbortSignal): Promise<boolean> {
    return (await this.send(live as T & Live, part, { signal })) !== undefined;
  }

  /**
   * Applies `status` to `live`'s status subresource unless it already reads the same; returns whether
   * it wrote. Throws StaleRead when the object changed since `live` was read.
   */
  async write<T>(live: T, status: object, signal?: AbortSignal): Promise<boolean> {
    return (await this.apply(live as T & Live, status, undefined, signal)).wrote;
  }

  /**
   * Like write(), for a status that reports progress. A change that leaves `significant(status)`
   * as the live one reads is written at most once per `windowMs` after this writer's last write
   * of the object (`retryInMs` says when to look again), or, without a window, not on its own.
   * A significant change is written at once.
   */
  writeCoalesced<T>(live: T, status: object, significant: (status: unknown) => unknown, windowMs?: number, signal?: AbortSignal): Promise<{ wrote: boolean; retryInMs?: number }> {
    return this.apply(live as T & Live, status, { significant, windowMs }, signal);
  }

  /**
   * Whether `live` is a read the API server has moved past, as this writer knows: the one its last
   * write replaced, or one a write was refused over (StaleRead). A plan made from it would be refused,
   * or would make again what that write recorded; a reconcile waits for the cache to move on instead.
   */
  behind(live: { metadata: { name: string; namespace?: string; resourceVersion?: string } }): boolean {
    const outdated = this.written.get(keyOf(live))?.outdated;
    return outdated !== undefined && live.metadata.resourceVersion === outdated;
  }

  private async apply(obj: Live, desired: object, coalesce?: { significant: (status: unknown) => unknown; windowMs: number | undefined }, signal?: AbortSignal): Promise<{ wrote: boolean; retryInMs?: number }> {
    const status = this.ours(desired);
    const live = this.ours(obj.status ?? {});
    if (sameJson(live, status)) return { wrote: false };
    const key = keyOf(obj);
    const last = this.written.get(key);
    const lastAt = last?.at;
    if (coalesce && lastAt !== undefined && sameJson(coalesce.significant(live), coalesce.significant(status))) {
      if (coalesce.windowMs === undefined) return { wrote: false };
      const wait = lastAt + coalesce.windowMs - this.clock.now().getTime();
      if (wait > 0) return { wrote: false, retryInMs: wait };
    }
    const read = obj.metadata.resourceVersion;
    let written: Partial<Live> | undefined;
    try {
      written = await this.send(obj, status, { signal, ...(read ? { read } : {}) });
    } catch (err) {
      if (err instanceof StaleRead) this.written.set(key, { ...last, outdated: read! });
      throw err;
    }
    if (written === undefined) return { wrote: false };
    // A write that made a new version leaves the read outdated; one that changed nothing (or says nothing of it) does not.
    const made = written.metadata?.resourceVersion;
    this.written.set(key, { at: this.clock.now().getTime(), ...(read && made && made !== read ? { outdated: read } : {}) });
    return { wrote: true };
  }

  /** The object as the API server stored it, or undefined when it is gone. `read`: the resourceVersion the write is bound to. */
  private async send(obj: Live, status: object, o: { read?: string; signal?: AbortSignal | undefined }): Promise<Partial<Live> | undefined> {
    const { name, namespace } = obj.metadata;
    const metadata = { name, ...(namespace ? { namespace } : {}), ...(o.read ? { resourceVersion: o.read } : {}) };
    try {
      const stored = await this.client.apply(
        { apiVersion: obj.apiVersion, kind: obj.kind, metadata, status },
        { subresource: 'status', ...(this.fieldManager ? { fieldManager: this.fieldManager } : {}), ...(o.signal ? { signal: o.signal } : {}) },
      );
      return (stored ?? {}) as Partial<Live>;
    } catch (err) {
      // Deleted since the cache showed it: nothing to report on, and not an error to retry.
      if (isNotFound(err)) return undefined;
      if (o.read && err instanceof ApiError && err.code === 409) throw new StaleRead(keyOf(obj), { cause: err });
      throw err;
    }
  }

  /** `status` without the conditions and fields other writers own. */
  private ours<S extends object>(whole: S): S {
    let status = whole;
    if (this.othersFields.some((f) => f in status)) {
      status = { ...status };
      for (const f of this.othersFields) delete (status as Record<string, unknown>)[f];
    }
    const conditions = (status as { conditions?: Array<{ type: string }> }).conditions;
    if (!this.othersConditions.size || !conditions?.some((c) => this.othersConditions.has(c.type))) return status;
    return { ...status, conditions: conditions.filter((c) => !this.othersConditions.has(c.type)) };
  }

  /** Drops what is remembered about a deleted object. */
  forget(namespace: string | undefined, name: string): void {
    this.written.delete(objectKey(namespace, name));
  }
}

function keyOf(obj: { metadata: { name: string; namespace?: string } }): string {
  return objectKey(obj.metadata.namespace, obj.metadata.name);
}
