// Kubernetes Events about the objects the operator manages, like client-go's
// recorder: `kubectl describe` shows them. Recording is fire-and-forget: the
// caller only enqueues, a single background writer talks to the API server,
// and a failure is logged, never thrown into a reconcile. A repeat of the same
// event within ten minutes bumps the existing Event's series count instead of
// creating another object, and a per-object token bucket stops a hot loop from
// flooding etcd. Pending writes are queued per namespace and written
// round-robin (fair-queue.ts), with a cap per namespace beside the global one:
// one tenant's flood of Events neither delays nor crowds out another's.
// Events belong to a leadership term: when it ends (the lease is lost), those
// not yet written are dropped and those in flight cut, as the reconciles that
// recorded them are; the new leader records its own.

import type { KubeClient } from './client.ts';
import { isNamespaceTerminating, isNotFound } from './client.ts';
import { systemClock, type Clock } from './clock.ts';
import { apiVersionOf, Kinds } from '../util/kinds.ts';
import { FairQueue } from './fair-queue.ts';
import type { Logger } from './logging.ts';
import { microTime } from '../util/micro-time.ts';
import { splitKey } from '../util/object-key.ts';
import { DEFAULT_MAX_PENDING_EVENTS_PER_NAMESPACE, MAX_PENDING_EVENTS } from '../util/budget-defaults.ts';

export const REPORTING_CONTROLLER = 'serverlessapp.io/operator';

/** What an event is about; objects read from the caches satisfy it. */
export interface KubernetesObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export type EventType = 'Normal' | 'Warning';

/** Repeats within this window join the existing Event's series. */
const AGGREGATION_WINDOW_MS = 10 * 60_000;
/** client-go's spam filter: 25 events per object and type at once, then one per five minutes. */
const SPAM_BURST = 25;
const SPAM_REFILL_MS = 5 * 60_000;
const DROP_LOG_EVERY_MS = 60_000;
/** Writers draining the queue at once: a burst of thousands of apps is written, not dropped. */
const WRITERS = 4;

/** Why an event was not written: the per-object spam filter, the pending queue was full, the namespace's share of it, or the leadership term that recorded it ended. */
export type DropReason = 'spam' | 'queue_full' | 'namespace_full' | 'term_ended';

interface Series {
  namespace: string;
  /** Set once the Event exists. */
  name?: string;
  regardingName: string;
  body: Record<string, unknown>;
  count: number;
  written: number;
  lastSeen: Date;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class EventRecorder {
  private readonly client: KubeClient;
  private readonly identity: string;
  private readonly clock: Clock;
  private readonly logger: Logger | undefined;
  private readonly series = new Map<string, Series>();
  private readonly buckets = new Map<string, Bucket>();
  private readonly pending = new Set<string>();
  /** The pending keys as "namespace/key", in the order they are written: round-robin over namespaces. */
  private readonly order = new FairQueue();
  private readonly pendingIn = new Map<string, number>();
  private draining: Promise<void> | undefined;
  private lastSweep = 0;
  private sequence = 0;

  private readonly onDrop: ((why: DropReason, namespace: string) => void) | undefined;
  private readonly maxPending: number;
  private readonly maxPendingPerNamespace: number;
  /** Drops since the last log line about them, and when that was. */
  private dropped = { count: 0, loggedAt: -Infinity };
  /** The leadership term's: aborted by endTerm(), which cuts the writes in flight; undefined between terms (nothing is recorded). */
  private term: AbortController | undefined = new AbortController();

  constructor(client: KubeClient, opts: { identity: string; clock?: Clock; logger?: Logger; onDrop?: (why: DropReason, namespace: string) => void; maxPending?: number; maxPendingPerNamespace?: number }) {
    this.client = client;
    this.onDrop = opts.onDrop;
    this.maxPending = opts.maxPending ?? MAX_PENDING_EVENTS;
    this.maxPendingPerNamespace = opts.maxPendingPerNamespace ?? DEFAULT_MAX_PENDING_EVENTS_PER_NAMESPACE;
    this.identity = opts.identity;
    this.clock = opts.clock ?? systemClock;
    this.logger = opts.logger;
  }

  record(obj: KubernetesObject, type: EventType, reason: string, note: string, action?: string): void {
    try {
      this.enqueue(obj, type, reason, note, action ?? reason);
    } catch (err) {
      this.logger?.warn('event not recorded', { reason, err });
    }
  }

  /**
   * The leadership term ends (the lease is lost): the Events not yet written are dropped and the writes in
   * flight cut, and none is recorded until beginTerm(): the new leader records its own, and an Event
   * posted after it took over would tell of a reconcile whose writes were cut.
   */
  endTerm(): void {
    if (!this.term) return;
    this.term.abort(new Error('leadership lost'));
    this.term = undefined;
    while (this.order.length > 0) {
      const { namespace, name: key } = splitKey(this.order.shift());
      const s = this.series.get(key);
      // A series whose Event exists keeps it for a later repeat to join; one never written goes.
      if (s?.name) s.written = s.count;
      else this.series.delete(key);
      this.onDrop?.('term_ended', namespace);
    }
    this.pending.clear();
    this.pendingIn.clear();
  }

  /** A leadership term begins: Events are recorded again (a recorder starts in one). */
  beginTerm(): void {
    this.term ??= new AbortController();
  }

  /** Resolves when every event recorded so far has been written (or given up on). */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private enqueue(obj: KubernetesObject, type: EventType, reason: string, note: string, action: string): void {
    if (!this.term) {
      this.onDrop?.('term_ended', obj.metadata.namespace || 'default');
      return;
    }
    const now = this.clock.now();
    this.sweep(now);
    const namespace = obj.metadata.namespace || 'default';
    const objectKey = `${obj.apiVersion}/${obj.kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}/${obj.metadata.uid ?? ''}`;
    // client-go's spam key (tools/record/events_cache.go getSpamKey) is the object and the type: an
    // object's flood of Normal events does not silence its Warnings.
    if (!this.admit(`${objectKey}\0${type}`, now.getTime())) {
      this.onDrop?.('spam', namespace);
      return;
    }

    // The API server caps a note at 1 kB; keep the tail that fits.
    const text = note.length > 1024 ? `${note.slice(0, 1021)}...` : note;
    const key = `${objectKey}\0${type}\0${reason}\0${text}`;
    const existing = this.series.get(key);
    if (existing && now.getTime() - existing.lastSeen.getTime() < AGGREGATION_WINDOW_MS) {
      existing.count++;
      existing.lastSeen = now;
    } else {
      const full = this.pending.has(key) ? undefined
        : this.pending.size >= this.maxPending ? 'queue_full' as const
        : (this.pendingIn.get(namespace) ?? 0) >= this.maxPendingPerNamespace ? 'namespace_full' as const : undefined;
      if (full) {
        this.onDrop?.(full, namespace);
        this.dropped.count++;
        if (now.getTime() - this.dropped.loggedAt >= DROP_LOG_EVERY_MS) {
          this.logger?.warn('events dropped: too many pending (serverlessapp_events_dropped_total counts them)', { dropped: this.dropped.count, pending: this.pending.size, namespace, why: full, reason });
          this.dropped = { count: 0, loggedAt: now.getTime() };
        }
        return;
      }
      this.series.set(key, {
        namespace,
        regardingName: obj.metadata.name,
        body: this.eventBody(obj, type, reason, text, action, now),
        count: 1,
        written: 0,
        lastSeen: now,
      });
    }
    if (!this.pending.has(key)) {
      this.pending.add(key);
      this.order.push(`${namespace}/${key}`); // split again by splitKey: the first slash ends the namespace
      this.pendingIn.set(namespace, (this.pendingIn.get(namespace) ?? 0) + 1);
    }
    this.drain();
  }

  /** The next pending key, round-robin over namespaces. */
  private next(): string | undefined {
    if (this.order.length === 0) return undefined;
    const entry = this.order.shift();
    const { namespace, name: key } = splitKey(entry);
    this.pending.delete(key);
    const left = (this.pendingIn.get(namespace) ?? 1) - 1;
    if (left > 0) this.pendingIn.set(namespace, left);
    else this.pendingIn.delete(namespace);
    return key;
  }

  /** Token bucket per object; refills with the injected clock. */
  private admit(spamKey: string, nowMs: number): boolean {
    const b = this.buckets.get(spamKey) ?? { tokens: SPAM_BURST, at: nowMs };
    const refill = Math.floor((nowMs - b.at) / SPAM_REFILL_MS);
    if (refill > 0) {
      b.tokens = Math.min(SPAM_BURST, b.tokens + refill);
      b.at += refill * SPAM_REFILL_MS;
    }
    if (b.tokens === SPAM_BURST) b.at = nowMs;
    this.buckets.set(spamKey, b);
    if (b.tokens <= 0) return false;
    b.tokens--;
    return true;
  }

  private eventBody(obj: KubernetesObject, type: EventType, reason: string, note: string, action: string, now: Date): Record<string, unknown> {
    const m = obj.metadata;
    return {
      apiVersion: apiVersionOf(Kinds.Event),
      kind: Kinds.Event.kind,
      eventTime: microTime(now),
      type,
      reason,
      action,
      note,
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: this.identity,
      regarding: {
        ...(obj.apiVersion ? { apiVersion: obj.apiVersion } : {}),
        ...(obj.kind ? { kind: obj.kind } : {}),
        name: m.name,
        ...(m.namespace ? { namespace: m.namespace } : {}),
        ...(m.uid ? { uid: m.uid } : {}),
        ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
      },
    };
  }

  private drain(): void {
    if (this.draining) return;
    const writer = async () => {
      for (let key = this.next(); key !== undefined; key = this.next()) {
        const s = this.series.get(key);
        if (s && s.count > s.written) await this.write(s);
      }
    };
    this.draining = Promise.all(Array.from({ length: WRITERS }, writer)).then(() => { this.draining = undefined; });
  }

  private async write(s: Series): Promise<void> {
    const count = s.count;
    const series = count > 1 ? { series: { count, lastObservedTime: microTime(s.lastSeen) } } : {};
    const signal = this.term?.signal;
    if (!signal) return;
    try {
      if (s.name) {
        try {
          await this.client.mergePatch(Kinds.Event, s.namespace, s.name, series, { signal });
          s.written = count;
          return;
        } catch (err) {
          // Events expire (the server's event TTL); start a fresh one.
          if (!isNotFound(err)) throw err;
        }
      }
      const name = `${s.regardingName.slice(0, 200)}.${this.uniqueSuffix()}`;
      await this.client.create(Kinds.Event, { ...s.body, metadata: { name, namespace: s.namespace }, ...series }, { signal });
      s.name = name;
      s.written = count;
    } catch (err) {
      // Best effort: a later repeat tries again; nothing propagates to the reconcile.
      s.written = count;
      if (signal.aborted) this.logger?.debug('event not written: leadership lost', { reason: s.body['reason'] });
      else if (isNamespaceTerminating(err)) this.logger?.debug('event not written: namespace terminating', { reason: s.body['reason'] });
      else this.logger?.warn('event not written', { reason: s.body['reason'], err });
    }
  }

  /** client-go names events "<object>.<hex nanoseconds>"; a counter keeps same-millisecond events apart. */
  private uniqueSuffix(): string {
    return (BigInt(this.clock.now().getTime()) * 1_000_000n + BigInt(this.sequence++ % 1_000_000)).toString(16);
  }

  /** Forgets series and buckets nobody has touched for longer than they matter. */
  private sweep(now: Date): void {
    const t = now.getTime();
    if (t - this.lastSweep < 60_000) return;
    this.lastSweep = t;
    for (const [k, s] of this.series) if (t - s.lastSeen.getTime() >= AGGREGATION_WINDOW_MS && !this.pending.has(k)) this.series.delete(k);
    for (const [k, b] of this.buckets) if (t - b.at >= SPAM_BURST * SPAM_REFILL_MS) this.buckets.delete(k);
  }
}
