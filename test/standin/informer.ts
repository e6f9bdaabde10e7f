// A minimal informer: list (paged) then watch from the list's resourceVersion,
// keeping a cache by "namespace/name" and telling handlers what changed. It
// relists on 410 Gone and restarts after any error, so a stand-in survives an
// API server restart. Managed fields are dropped to keep 10,000 objects small.

import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, isNotFound, resourcePath } from './kube.ts';
import type { KubeClient, KubeObject, Resource, WatchEvent } from './kube.ts';

export type Handler<T> = (key: string, obj: T | undefined, old: T | undefined) => void;

export function keyOf(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}

export class Informer<T extends KubeObject = KubeObject> {
  readonly resource: Resource;
  private readonly client: KubeClient;
  private readonly namespaces: (string | undefined)[];
  private readonly cache = new Map<string, T>();
  private readonly handlers: Handler<T>[] = [];
  private readonly abort = new AbortController();
  private readonly onError: (err: unknown) => void;
  private loops: Promise<void>[] = [];

  /** `namespaces` undefined = all namespaces (one watch); otherwise one watch per namespace. */
  constructor(client: KubeClient, resource: Resource, namespaces: string[] | undefined, onError: (err: unknown) => void) {
    this.client = client;
    this.resource = resource;
    this.namespaces = resource.namespaced && namespaces ? namespaces : [undefined];
    this.onError = onError;
  }

  on(handler: Handler<T>): void {
    this.handlers.push(handler);
  }

  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  list(): IterableIterator<T> {
    return this.cache.values();
  }

  /**
   * Records the response to our own write, as if its watch event had arrived,
   * so the next reconcile does not act on the stale copy.
   */
  store(obj: T): void {
    this.upsert(obj);
  }

  /** Records our own delete, as if its watch event had arrived. */
  forget(key: string): void {
    const old = this.cache.get(key);
    if (!old) return;
    this.cache.delete(key);
    this.emit(key, undefined, old);
  }

  /** Starts every watch; resolves once each has listed once. */
  async start(): Promise<void> {
    const synced = this.namespaces.map((ns) => {
      let markSynced!: () => void;
      const done = new Promise<void>((resolve) => { markSynced = resolve; });
      this.loops.push(this.run(ns, markSynced));
      return done;
    });
    await Promise.all(synced);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.loops);
  }

  private async run(namespace: string | undefined, markSynced: () => void): Promise<void> {
    const path = resourcePath(this.resource, namespace);
    let failures = 0;
    while (!this.abort.signal.aborted) {
      try {
        let rv = await this.relist(path, namespace);
        markSynced();
        while (!this.abort.signal.aborted) {
          rv = await this.watchOnce(path, rv);
          failures = 0;
        }
      } catch (err) {
        if (this.abort.signal.aborted) break;
        if (isNotFound(err)) {
          // The CRD is not installed (yet): nothing to wait for, but keep looking.
          markSynced();
          if (failures === 0) this.onError(new Error(`${this.resource.plural}.${this.resource.group} is not served; will retry`));
        } else if (!(err instanceof GoneError)) {
          this.onError(err);
        }
        failures++;
        await sleep(Math.min(100 * 2 ** failures, 5_000), undefined, { signal: this.abort.signal }).catch(() => {});
      }
    }
  }

  private async relist(path: string, namespace: string | undefined): Promise<string> {
    const seen = new Set<string>();
    let cont = '';
    let rv = '';
    do {
      const page = await this.client.get(`${path}?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      rv = page.metadata.resourceVersion;
      cont = page.metadata.continue ?? '';
      for (const item of page.items as T[]) {
        seen.add(keyOf(item));
        this.upsert(item);
      }
    } while (cont);
    for (const [key, obj] of this.cache) {
      if (seen.has(key) || (namespace !== undefined && obj.metadata.namespace !== namespace)) continue;
      this.cache.delete(key);
      this.emit(key, undefined, obj);
    }
    return rv;
  }

  /** One watch request; returns the resourceVersion to resume from. */
  private async watchOnce(path: string, from: string): Promise<string> {
    let rv = from;
    const onEvent = (e: WatchEvent) => {
      if (e.type === 'ERROR') {
        if (e.object?.code === 410) throw new GoneError();
        throw new ApiError(e.object?.code ?? 500, `watch ${path}: ${e.object?.message ?? 'error event'}`);
      }
      rv = e.object?.metadata?.resourceVersion ?? rv;
      if (e.type === 'BOOKMARK') return;
      if (e.type === 'DELETED') {
        const key = keyOf(e.object);
        const old = this.cache.get(key);
        this.cache.delete(key);
        this.emit(key, undefined, old ?? e.object);
      } else {
        this.upsert(e.object);
      }
    };
    try {
      await this.client.watch(path, rv, onEvent, this.abort.signal);
    } catch (err) {
      if (err instanceof ApiError && err.status === 410) throw new GoneError();
      throw err;
    }
    return rv;
  }

  private upsert(raw: T): void {
    const obj = slim(raw);
    const key = keyOf(obj);
    const old = this.cache.get(key);
    if (old && (old.metadata.resourceVersion === obj.metadata.resourceVersion || olderThan(obj, old))) return;
    this.cache.set(key, obj);
    this.emit(key, obj, old);
  }

  private emit(key: string, obj: T | undefined, old: T | undefined): void {
    for (const h of this.handlers) {
      try {
        h(key, obj, old);
      } catch (err) {
        this.onError(err);
      }
    }
  }
}

class GoneError extends Error {}

function slim<T extends KubeObject>(obj: T): T {
  if (obj.metadata.managedFields === undefined) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/** Resource versions are opaque, but etcd's are integers; compare them when both are. */
function olderThan(a: KubeObject, b: KubeObject): boolean {
  const x = a.metadata.resourceVersion;
  const y = b.metadata.resourceVersion;
  if (!x || !y || !/^\d+$/.test(x) || !/^\d+$/.test(y)) return false;
  return BigInt(x) < BigInt(y);
}
