// A shared informer: one cache per kind, kept current by list + watch, that
// never silently stops. client-node's makeInformer gives up on the first
// non-410 error and trusts a TCP connection that may be dead (#364, #958), so
// this one owns its loop: it lists, watches from the list's resourceVersion
// with bookmarks and a server-side timeout (so a healthy watch always carries
// traffic and connections are recycled), aborts a watch that goes quiet, backs
// off and relists after any failure, and relists periodically anyway. A relist
// is diffed against the cache, so handlers only hear about real changes, in
// order per object. An optional kind (a CRD that may not be installed: KServe,
// Istio) that the API server does not serve counts as synced and empty, so it
// never holds back the rest of the operator, and is listed again with backoff
// until it is served. Lists and watches go through KubeClient, like every
// other request.

import { ApiError, KubeClient, isNotFound } from './client.ts';
import { type TimerClock, sleep, systemClock } from './clock.ts';
import { apiVersionOf, crdName, type ResourceKind } from '../util/kinds.ts';
import type { KubeConfigSource } from './kubeconfig.ts';
import { createLogger, type Logger } from './logging.ts';
import { objectKey } from '../util/object-key.ts';
import { byteLines, objectMembers, parseBytes, type ListItems } from './json-scan.ts';
import { decodeObject, decodeParsed, type Decoded, type Projection } from './object-decode.ts';

/** One page of a relist, and the next one when it was asked for before this one's items were decoded. */
interface ListedPage {
  metadata: { resourceVersion: string; continue?: string };
  ahead: Promise<ListedPage | undefined> | undefined;
}

/**
 * What the informer needs of an object. Objects stay the API server's plain
 * JSON (timestamps are strings), so this is looser than client-node's
 * KubernetesObject, whose typed models claim Date fields.
 */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; generation?: number; managedFields?: unknown };
}

export interface InformerHooks {
  /** The watch was restarted after an error, a stall (watchdog) or an expired resourceVersion. */
  onRestart?(reason: string): void;
  /** A watch event arrived: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR. */
  onEvent?(type: string): void;
  /** An object of a list or a watch event was decoded, costing `ms` of this thread: whose namespace's reading costs what. */
  onParse?(namespace: string | undefined, ms: number): void;
}

export interface InformerOptions<T> {
  /** Empty or undefined = all namespaces; otherwise one list/watch per namespace. */
  namespaces?: string[];
  labelSelector?: string;
  /** Applied before caching; the default drops metadata.managedFields. */
  transform?: (obj: T) => T;
  /**
   * Keep only these metadata fields (the others are skipped unparsed) and the cached spec while the
   * object's generation stands (see object-decode.ts): for kinds whose objects a tenant may make large.
   */
  projection?: Projection;
  relistPeriodMs?: number;
  watchdogMs?: number;
  backoff?: { initialMs: number; maxMs: number };
  logger?: Logger;
  hooks?: InformerHooks;
  /** Stamps events and times the watchdog, the relist period and the backoff (tests step a manual one). */
  clock?: TimerClock;
  /** The kind's CRD may be missing: a 404 on list counts as synced and empty (see served()), and the list is retried with backoff. */
  optional?: boolean;
  /** An index key per object (e.g. its app): byIndex() finds objects without scanning the cache. */
  indexBy?: (obj: T) => string | undefined;
}

type EventName = 'add' | 'update' | 'delete';
type Handler<T> = (obj: T, old?: T) => void;

/** Why a watch ended without throwing. */
type WatchEnd = 'closed' | 'relist' | 'expired' | 'watchdog' | 'stopped';

/** What a watch ERROR event carries: a Status. */
interface WatchError {
  code?: number;
  message?: string;
  reason?: string;
}

/** Objects per LIST page. */
export const LIST_PAGE_SIZE = 500;
/**
 * A LIST page that ends within this many bytes is parsed whole, natively (a page of 500 typical apps is
 * about 300 KiB); a larger one is read as a stream, an object at a time. What a relist holds at once is
 * bounded by this or by one object, whatever the page.
 */
const WHOLE_PAGE_BYTES = 4 * 1024 * 1024;
/** A watch that ends this soon without a single event is a failure, not a normal close (client-go's "very short watch"). */
const SHORT_WATCH_MS = 1_000;
const noopLogger: Logger = createLogger({ silent: true });

export class Informer<T extends KubeObject> {
  readonly kind: ResourceKind;
  readonly stats: { restarts: number; lastEventAt?: Date } = { restarts: 0 };

  readonly #client: KubeClient;
  /** A client made from a kubeconfig here (not shared), closed on stop. */
  readonly #ownsClient: boolean;
  readonly #scopes: Array<string | undefined>;
  readonly #labelSelector: string | undefined;
  readonly #transform: (obj: T) => T;
  readonly #projection: Projection | undefined;
  readonly #relistPeriodMs: number;
  readonly #watchdogMs: number;
  readonly #backoff: { initialMs: number; maxMs: number };
  readonly #log: Logger;
  readonly #hooks: InformerHooks;
  readonly #clock: TimerClock;
  readonly #cache = new Map<string, T>();
  readonly #index = new Map<string, Map<string, T>>();
  readonly #indexBy: ((obj: T) => string | undefined) | undefined;
  readonly #handlers: Record<EventName, Array<Handler<T>>> = { add: [], update: [], delete: [] };
  readonly #stop = new AbortController();
  readonly #syncedScopes = new Set<string | undefined>();
  readonly #optional: boolean;
  /** Scopes whose last list was a 404: the API server does not serve the kind (optional informers only). */
  readonly #unservedScopes = new Set<string | undefined>();
  readonly #servedHandlers: Array<(served: boolean) => void> = [];
  #synced: Promise<void> | undefined;

  /** `client`: the manager's KubeClient; a kubeconfig (tests, benchmarks) gets a client of its own. */
  constructor(client: KubeClient | KubeConfigSource, kind: ResourceKind, opts: InformerOptions<T> = {}) {
    this.#ownsClient = !(client instanceof KubeClient);
    this.#client = client instanceof KubeClient ? client : new KubeClient(client);
    this.kind = kind;
    const namespaces = [...new Set(opts.namespaces ?? [])];
    this.#scopes = kind.namespaced && namespaces.length > 0 ? namespaces : [undefined];
    this.#labelSelector = opts.labelSelector;
    this.#transform = opts.transform ?? stripManagedFields;
    this.#projection = opts.projection;
    this.#relistPeriodMs = opts.relistPeriodMs ?? 10 * 60_000;
    this.#watchdogMs = opts.watchdogMs ?? 60_000;
    this.#backoff = opts.backoff ?? { initialMs: 500, maxMs: 30_000 };
    this.#log = opts.logger ?? noopLogger;
    this.#hooks = opts.hooks ?? {};
    this.#clock = opts.clock ?? systemClock;
    this.#optional = opts.optional ?? false;
    this.#indexBy = opts.indexBy;
  }

  /** Handlers run synchronously, in event order; the objects are the cache's own, so handlers must not mutate them. */
  on(event: EventName, handler: Handler<T>): void {
    this.#handlers[event].push(handler);
  }

  /** Resolves once every namespace has been listed into the cache; rejects if stopped before that. */
  start(): Promise<void> {
    this.#synced ??= new Promise((resolve, reject) => {
      let pending = this.#scopes.length;
      const synced = () => {
        if (--pending === 0) resolve();
      };
      const stopped = () => reject(new Error(`informer for ${this.kind.plural} stopped before it synced`));
      if (this.#stop.signal.aborted) return stopped();
      this.#stop.signal.addEventListener('abort', stopped);
      for (const ns of this.#scopes) void this.#run(ns, synced);
    });
    return this.#synced;
  }

  stop(): void {
    this.#stop.abort();
    if (this.#ownsClient) this.#client.close();
  }

  hasSynced(): boolean {
    return this.#syncedScopes.size === this.#scopes.length;
  }

  /** False while the API server does not serve the kind (an optional informer whose CRD is not installed). */
  served(): boolean {
    return this.#unservedScopes.size === 0;
  }

  /** Runs when served() changes: the kind's CRD was installed or removed. */
  onServedChange(handler: (served: boolean) => void): void {
    this.#servedHandlers.push(handler);
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.#cache.get(objectKey(this.kind.namespaced ? namespace : undefined, name));
  }

  /** The cached objects whose index key (opts.indexBy) is `key`. */
  byIndex(key: string): T[] {
    return [...(this.#index.get(key)?.values() ?? [])];
  }

  list(namespace?: string): T[] {
    const all = [...this.#cache.values()];
    return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
  }

  /** Emits 'update' (old === new) for every cached object, to force a full reconcile. */
  resync(): void {
    for (const obj of this.#cache.values()) this.#emit('update', obj, obj);
  }

  /** The list/watch loop of one namespace (or of all): runs until stop(), whatever fails. */
  async #run(ns: string | undefined, onFirstSync: () => void): Promise<void> {
    const signal = this.#stop.signal;
    let resourceVersion: string | undefined;
    let listedAt = 0;
    let failures = 0;
    let unservedLists = 0;
    while (!signal.aborted) {
      let failure: { reason: 'error' | 'watchdog'; detail: string } | undefined;
      try {
        if (resourceVersion === undefined) {
          const listed = await this.#relist(ns);
          listedAt = this.#nowMs();
          if (!this.#syncedScopes.has(ns)) {
            this.#syncedScopes.add(ns);
            onFirstSync();
          }
          if (listed === undefined) {
            // Not served (yet): look again later, as a CRD may be installed at any time.
            await sleep(backoffMs(++unservedLists, this.#backoff), signal, this.#clock);
            continue;
          }
          unservedLists = 0;
          resourceVersion = listed;
        }
        const started = performance.now();
        const watch = await this.#watch(ns, resourceVersion, listedAt + this.#relistPeriodMs - this.#nowMs());
        resourceVersion = watch.resourceVersion;
        // Real time: a watch that closed at once is the server's doing, whatever a test's clock says.
        const short = watch.events === 0 && performance.now() - started < SHORT_WATCH_MS;
        if (watch.events > 0 || (watch.end === 'closed' && !short)) failures = 0;
        if (watch.end === 'closed' && short) failure = { reason: 'error', detail: 'the watch closed at once without any event' };
        if (watch.end === 'watchdog') {
          failure = { reason: 'watchdog', detail: `no traffic on the watch for ${this.#watchdogMs} ms` };
          // Whatever silenced the watch may have silenced the idle kept-alive connections too: relist on a fresh one.
          this.#client.closeIdleConnections();
        }
        if (watch.end === 'expired') this.#restarted('expired', ns, 'resourceVersion too old');
        if (watch.end === 'expired' || watch.end === 'relist') resourceVersion = undefined;
      } catch (err) {
        if (err instanceof ApiError && err.code === 410) {
          this.#restarted('expired', ns, 'resourceVersion too old');
          resourceVersion = undefined;
        } else {
          failure = { reason: 'error', detail: err instanceof ApiError ? `HTTP ${err.code}: ${err.message}` : String(err) };
        }
      }
      if (failure && !signal.aborted) {
        resourceVersion = undefined;
        const delay = backoffMs(++failures, this.#backoff);
        this.#restarted(failure.reason, ns, `${failure.detail}; relisting in ${delay} ms`);
        await sleep(delay, signal, this.#clock);
      }
    }
  }

  /**
   * Lists the scope page by page, replaces its part of the cache and emits the
   * differences. Returns undefined when an optional kind is not served (the scope is then empty).
   */
  async #relist(ns: string | undefined): Promise<string | undefined> {
    // Each object is filed as its page is read (its handlers run while the API server reads the next page);
    // what the list no longer holds is removed once every page is in.
    const fresh = new Set<string>();
    // This list's own: when it fails or the informer stops, the pages it asked for ahead stop with it
    // and file nothing (a later list, or the watch after it, may already hold newer versions).
    const listing = new AbortController();
    const over = () => listing.signal.aborted || this.#stop.signal.aborted;
    const keep = (decoded: Decoded<T>) => {
      if (over()) return;
      const key = keyOf(decoded.obj);
      fresh.add(key);
      this.#upsert(key, decoded.unchanged ? decoded.obj : this.#kept(decoded.obj));
    };
    // A page parsed whole asks for the next one before its items are decoded, so the API server reads the
    // next page while this thread decodes this one (a page read as a stream is followed by the next one).
    // The pages of one list are one snapshot, disjoint: in which order they fill `fresh` does not matter.
    const listPage = (cont: string | undefined): Promise<ListedPage | undefined> => {
      let ahead: Promise<ListedPage | undefined> | undefined;
      const signal = AbortSignal.any([this.#stop.signal, listing.signal, AbortSignal.timeout(Math.ceil(Math.max(this.#watchdogMs, 30_000)))]);
      const onItem: ListItems = {
        bytes: (bytes) => keep(this.#decode(bytes)), parsed: (obj, parseMs) => keep(this.#decodeParsed(obj, parseMs)), wholeBelowBytes: WHOLE_PAGE_BYTES,
        head: (metadata) => {
          if (!metadata.continue || over()) return;
          ahead = listPage(metadata.continue);
          // Handled where it is awaited; a list that fails first leaves it unawaited, and it must not crash the process.
          ahead.catch(() => {});
          return new Promise<void>((resolve) => setImmediate(resolve));
        },
      };
      return this.#client.listEach(this.kind, ns, { limit: LIST_PAGE_SIZE, labelSelector: this.#labelSelector, continue: cont, signal }, onItem).then(
        (metadata) => ({ metadata, ahead }),
        (err: unknown) => {
          if (this.#optional && isNotFound(err)) return undefined;
          throw err;
        },
      );
    };
    let resourceVersion: string | undefined;
    try {
      for (let page = await listPage(undefined); ; ) {
        if (page === undefined) {
          fresh.clear();
          resourceVersion = undefined;
          break;
        }
        resourceVersion = page.metadata.resourceVersion;
        const cont = page.metadata.continue || undefined;
        if (cont === undefined) break;
        page = await (page.ahead ?? listPage(cont));
      }
    } finally {
      listing.abort();
    }
    if (this.#stop.signal.aborted) return resourceVersion;
    for (const [key, old] of this.#cache) {
      if (!fresh.has(key) && (ns === undefined || old.metadata?.namespace === ns)) {
        this.#remove(key, old);
        this.#emit('delete', old);
      }
    }
    this.#log.debug('listed', { kind: this.kind.plural, namespace: ns, count: fresh.size, resourceVersion });
    this.#setServed(ns, resourceVersion !== undefined);
    return resourceVersion;
  }

  #setServed(ns: string | undefined, served: boolean): void {
    const before = this.served();
    if (served) this.#unservedScopes.delete(ns);
    else this.#unservedScopes.add(ns);
    if (this.served() === before) return;
    const resource = `${crdName(this.kind)}/${this.kind.version}`;
    if (served) this.#log.info(`${resource} is served now: its controller starts`, { kind: this.kind.plural });
    else this.#log.warn(`${resource} is not served by the API server (its CRD is not installed): apps that need it report so; looking again with backoff`, { kind: this.kind.plural });
    for (const handler of this.#servedHandlers) {
      try {
        handler(served);
      } catch (err) {
        this.#log.error('informer handler failed', { kind: this.kind.plural, event: 'served', error: String(err) });
      }
    }
  }

  /**
   * Watches from `resourceVersion` until the server closes the stream, the
   * resourceVersion expires, the stream goes quiet for watchdogMs, it is time
   * to relist, or the informer stops. Returns the last resourceVersion seen.
   */
  async #watch(ns: string | undefined, resourceVersion: string, relistInMs: number): Promise<{ resourceVersion: string; end: WatchEnd; events: number }> {
    const conn = new AbortController();
    let end: WatchEnd | undefined;
    let events = 0;
    const finish = (why: WatchEnd) => {
      end ??= why;
      conn.abort();
    };
    const onStop = () => finish('stopped');
    this.#stop.signal.addEventListener('abort', onStop);
    if (this.#stop.signal.aborted) onStop();
    let watchdog = this.#clock.setTimer(this.#watchdogMs, () => finish('watchdog'));
    const relist = this.#clock.setTimer(Math.max(0, relistInMs), () => finish('relist'));
    const feed = () => {
      watchdog.cancel();
      watchdog = this.#clock.setTimer(this.#watchdogMs, () => finish('watchdog'));
    };
    try {
      const stream = await this.#client.watch(this.kind, ns, {
        resourceVersion,
        timeoutSeconds: watchTimeoutSeconds(this.#watchdogMs),
        labelSelector: this.#labelSelector,
        signal: conn.signal,
      });
      for await (const line of byteLines(stream, feed)) {
        const event = objectMembers(line);
        const type = parseBytes(event.get('type') ?? Buffer.from('""')) as string;
        const object = event.get('object') ?? Buffer.from('{}');
        events++;
        this.stats.lastEventAt = this.#clock.now();
        this.#hooks.onEvent?.(type);
        if (type === 'ERROR') {
          const status = parseBytes(object) as WatchError;
          if (status.code === 410) {
            finish('expired');
            break;
          }
          throw new ApiError(status.code ?? 500, status.message ?? 'watch error', status.reason);
        }
        if (type === 'BOOKMARK') {
          resourceVersion = (parseBytes(objectMembers(object).get('metadata') ?? Buffer.from('{}')) as { resourceVersion?: string }).resourceVersion ?? resourceVersion;
          continue;
        }
        const decoded = this.#decode(object);
        resourceVersion = decoded.obj.metadata?.resourceVersion ?? resourceVersion;
        this.#apply(type, decoded);
      }
      end ??= 'closed';
    } catch (err) {
      if (end === undefined) throw err;
    } finally {
      watchdog.cancel();
      relist.cancel();
      this.#stop.signal.removeEventListener('abort', onStop);
      conn.abort();
    }
    return { resourceVersion, end, events };
  }

  #nowMs(): number {
    return this.#clock.now().getTime();
  }

  /** One object of a page parsed whole, as #decode would keep it; `parseMs`, its share of the page's parse, is charged with it. */
  #decodeParsed(parsed: object, parseMs: number): Decoded<T> {
    return this.#charged(() => decodeParsed<T>(parsed, this.#cachedOf, this.#projection), parseMs);
  }

  /** One object's bytes, decoded as little as the cache allows (object-decode.ts). */
  #decode(bytes: Buffer): Decoded<T> {
    return this.#charged(() => decodeObject<T>(bytes, this.#cachedOf, this.#projection));
  }

  readonly #cachedOf = (meta: { name?: string; namespace?: string }) => this.#cache.get(keyOf({ metadata: meta }));

  /** Runs a decode; its cost, and `alreadyMs` spent on it before, goes to onParse under the object's namespace. */
  #charged(decode: () => Decoded<T>, alreadyMs = 0): Decoded<T> {
    const started = performance.now();
    const decoded = decode();
    this.#hooks.onParse?.(decoded.obj.metadata?.namespace, alreadyMs + performance.now() - started);
    return decoded;
  }

  /** What the cache keeps of a freshly decoded object. */
  #kept(obj: T): T {
    obj.apiVersion ??= apiVersionOf(this.kind);
    obj.kind ??= this.kind.kind;
    return this.#transform(obj);
  }

  #apply(type: string, decoded: Decoded<T>): void {
    // The cache holds this resourceVersion already: nothing changed.
    if (decoded.unchanged && type !== 'DELETED') return;
    const obj = decoded.unchanged ? decoded.obj : this.#kept(decoded.obj);
    const key = keyOf(obj);
    if (type === 'DELETED') {
      const old = this.#cache.get(key);
      if (old === undefined) return;
      this.#remove(key, old);
      this.#emit('delete', obj);
    } else {
      this.#upsert(key, obj);
    }
  }

  #upsert(key: string, obj: T): void {
    const old = this.#cache.get(key);
    if (old !== undefined && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
    this.#cache.set(key, obj);
    if (this.#indexBy) {
      if (old !== undefined) this.#unindex(key, old);
      const k = this.#indexBy(obj);
      if (k !== undefined) {
        let bucket = this.#index.get(k);
        if (!bucket) this.#index.set(k, bucket = new Map());
        bucket.set(key, obj);
      }
    }
    if (old === undefined) this.#emit('add', obj);
    else this.#emit('update', obj, old);
  }

  #remove(key: string, old: T): void {
    this.#cache.delete(key);
    if (this.#indexBy) this.#unindex(key, old);
  }

  #unindex(key: string, old: T): void {
    const k = this.#indexBy!(old);
    if (k === undefined) return;
    const bucket = this.#index.get(k);
    bucket?.delete(key);
    if (bucket?.size === 0) this.#index.delete(k);
  }

  #emit(event: EventName, obj: T, old?: T): void {
    for (const handler of this.#handlers[event]) {
      try {
        handler(obj, old);
      } catch (err) {
        this.#log.error('informer handler failed', { kind: this.kind.plural, event, name: obj.metadata?.name, error: String(err) });
      }
    }
  }

  #restarted(reason: string, ns: string | undefined, detail: string): void {
    this.stats.restarts++;
    this.#hooks.onRestart?.(reason);
    this.#log.warn(`${this.kind.plural} watch restarted: ${detail}`, { kind: this.kind.plural, namespace: ns, reason });
  }
}

function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata?.managedFields !== undefined) delete obj.metadata.managedFields;
  return obj;
}

function keyOf(obj: KubeObject): string {
  return objectKey(obj.metadata?.namespace, obj.metadata?.name ?? '');
}

/**
 * The server-side timeout of one watch, randomised so watches do not expire
 * together. An idle resource gets no bookmarks for minutes (the API server
 * only sends them when its resourceVersion moves on), so the timeout is kept
 * inside the watchdog: a healthy watch always ends, or speaks, before the
 * watchdog would call it stalled. At most ~5 minutes, as client-go recycles them.
 */
function watchTimeoutSeconds(watchdogMs: number): number {
  const ceiling = Math.min(watchdogMs * 0.75, 5 * 60_000);
  return Math.max(2, Math.round((ceiling * (0.7 + Math.random() * 0.3)) / 1000));
}

/** Exponential from initialMs to maxMs, each delay drawn from its upper half so restarts of many informers spread out. */
function backoffMs(failures: number, b: { initialMs: number; maxMs: number }): number {
  const ceiling = Math.min(b.maxMs, b.initialMs * 2 ** (failures - 1));
  return Math.round(ceiling * (0.5 + Math.random() / 2));
}
