// client-go's rate-limited delaying work queue, the buffer between informer
// events and reconcilers. A key is queued at most once however often it is
// added; a key being reconciled is never handed to a second worker, and if it
// changes meanwhile it is queued again when the first worker finishes. Retries
// back off per key (5 ms doubling to 1000 s) and, across all keys, through a
// token bucket (10 qps, burst 100): controller-runtime's default limiter.
// Keys are handed out round-robin over namespaces, as the API server's
// Priority and Fairness queues per flow: a burst in one namespace waits behind
// its own keys only, and another namespace's key is served within one round.

import { type Timer, type TimerClock, systemClock } from './clock.ts';
import { FairQueue } from './fair-queue.ts';
import { namespaceOf } from '../util/object-key.ts';

/** setTimeout fires at once beyond 2^31-1 ms; longer delays re-arm in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Plain callbacks, so the metrics module can feed prom-client's workqueue_* series. */
export interface QueueMetricsHooks {
  /** A key entered the queue (workqueue_adds_total). */
  onAdd?(): void;
  /** Keys waiting to be handed out (workqueue_depth). */
  onDepth?(depth: number): void;
  /** A failed key was re-added with backoff (workqueue_retries_total). */
  onRetry?(): void;
  /** Time a key waited between add and get (workqueue_queue_duration_seconds, and per namespace). */
  onQueued?(seconds: number, key: string): void;
  /** Time between get and done (workqueue_work_duration_seconds). */
  onWork?(seconds: number): void;
}

export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  qps?: number;
  burst?: number;
  hooks?: QueueMetricsHooks;
  /** Reads now and sets the delay timer (a test's manual clock steps both). */
  clock?: TimerClock;
  /**
   * Asked as a key is about to be handed out: how long it must still wait because its namespace is past
   * its share of the operator's time (NamespaceShare.waitMs: a namespace's answer, the same for each of its
   * keys). Told to wait, the namespace's keys are held back that long as one (FairQueue.hold), behind
   * nobody else's, and keep their places in the queue's wait metrics; after that the namespace runs one key at
   * a time until its keys run out or the gate answers below 0 (it owes nothing).
   */
  gate?: (key: string) => number;
}

export class WorkQueue {
  readonly name: string;
  readonly #hooks: QueueMetricsHooks;
  readonly #clock: TimerClock;
  readonly #limiter: RetryLimiter;
  readonly #gate: ((key: string) => number) | undefined;

  readonly #queue = new FairQueue();
  /** Keys that need processing: queued, or re-added while being processed. */
  readonly #dirty = new Set<string>();
  /** Keys handed to a worker, with the time they were handed out. */
  readonly #processing = new Map<string, number>();
  readonly #addedAt = new Map<string, number>();
  /** Delayed adds: key -> time it becomes ready. */
  readonly #waiting = new Map<string, number>();
  /**
   * Namespaces the gate held back -> when they take turns again. Their keys stay queued and dirty, so the
   * events that come for them meanwhile coalesce, and a held namespace costs one timer entry however many
   * keys it has (deferring each key on its own made a namespace of 5,000 keys past its share cost more to
   * defer, 5,000 deferrals per turn, than to reconcile).
   */
  readonly #heldUntil = new Map<string, number>();
  /**
   * Namespaces the gate held back since their keys last ran out or it said they owe nothing (an answer
   * below 0): they run one key at a time until then. A
   * namespace released from a wait would otherwise have a key on every idle worker before the first one's
   * CPU is charged, and overshoot its share by that many reconciles each time.
   */
  readonly #owing = new Set<string>();
  /** Namespaces of #owing held back until their key in flight is done (no timer). */
  readonly #behindOwnKey = new Set<string>();
  #getters: Array<(key: string | undefined) => void> = [];
  #drainers: Array<() => void> = [];
  #timer: Timer | undefined;
  /** When the timer fires (the earliest delayed key's time, when armed). */
  #timerAt: number | undefined;
  #shuttingDown = false;

  constructor(name: string, opts: WorkQueueOptions = {}) {
    this.name = name;
    this.#hooks = opts.hooks ?? {};
    this.#clock = opts.clock ?? systemClock;
    this.#limiter = new RetryLimiter(opts, this.#nowMs());
    this.#gate = opts.gate;
  }

  /** Keys ready to be handed out. */
  get length(): number {
    return this.#queue.length;
  }

  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#hooks.onAdd?.();
    // A key deferred by the gate keeps its first add time: the deferral is time it waited.
    if (!this.#addedAt.has(key)) this.#addedAt.set(key, this.#nowMs());
    this.#dirty.add(key);
    if (this.#processing.has(key)) return;
    this.#enqueue(key);
  }

  /** Adds the key once `delayMs` has passed; of several pending delays for one key the earliest wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    const readyAt = this.#nowMs() + delayMs;
    const pending = this.#waiting.get(key);
    if (pending !== undefined && pending <= readyAt) return;
    this.#waiting.set(key, readyAt);
    // Only a new earliest moves the timer: re-arming it for every delayed key was a scan of them all each time.
    if (this.#timerAt === undefined || readyAt < this.#timerAt) this.#armTimer();
  }

  /**
   * Re-adds a failed key after max(its exponential backoff, the shared token bucket's delay), or
   * after `plannedMs` (the look its reconcile planned) when that comes first (RetryLimiter.when).
   * `backoffBaseMs` replaces the queue's first delay for this failure (a refused write's is longer).
   */
  addRateLimited(key: string, plannedMs?: number, backoffBaseMs?: number): void {
    if (this.#shuttingDown) return;
    this.#hooks.onRetry?.();
    this.addAfter(key, this.#limiter.when(key, this.#nowMs(), plannedMs, backoffBaseMs));
  }

  /** The key succeeded: its next failure starts again from the base delay. */
  forget(key: string): void {
    this.#limiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.#limiter.numRequeues(key);
  }

  /** The next key to process; waits for one. Undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    const key = this.#queue.length > 0 ? this.#take() : undefined;
    if (key !== undefined) return Promise.resolve(key);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  /** The worker finished `key`; if it was added meanwhile it is queued again. */
  done(key: string): void {
    const startedAt = this.#processing.get(key);
    if (startedAt === undefined) return;
    this.#processing.delete(key);
    this.#hooks.onWork?.((this.#nowMs() - startedAt) / 1000);
    if (this.#dirty.has(key) && !this.#shuttingDown) this.#enqueue(key);
    if (this.#gate) this.#doneInNamespace(namespaceOf(key));
    if (this.#processing.size === 0) {
      const drainers = this.#drainers;
      this.#drainers = [];
      for (const resolve of drainers) resolve();
    }
  }

  /** Stops handing out work: waiting getters get undefined, queued and delayed keys are dropped. */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerAt = undefined;
    this.#waiting.clear();
    this.#heldUntil.clear();
    this.#owing.clear();
    this.#behindOwnKey.clear();
    this.#queue.clear();
    for (const key of this.#dirty) if (!this.#processing.has(key)) this.#dirty.delete(key);
    this.#hooks.onDepth?.(0);
    const getters = this.#getters;
    this.#getters = [];
    for (const resolve of getters) resolve(undefined);
  }

  /** Resolves once no key is being processed. */
  drain(): Promise<void> {
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainers.push(resolve));
  }

  /** Seconds of work in progress, summed over workers (workqueue_unfinished_work_seconds). */
  unfinishedWorkSeconds(): number {
    const now = this.#nowMs();
    let total = 0;
    for (const startedAt of this.#processing.values()) total += now - startedAt;
    return total / 1000;
  }

  /** How long the oldest running worker has been at it (workqueue_longest_running_processor_seconds). */
  longestRunningProcessorSeconds(): number {
    const now = this.#nowMs();
    let oldest = now;
    for (const startedAt of this.#processing.values()) oldest = Math.min(oldest, startedAt);
    return (now - oldest) / 1000;
  }

  #enqueue(key: string): void {
    this.#queue.push(key);
    this.#hooks.onDepth?.(this.#queue.length);
    this.#serveGetters();
  }

  /** Hands ready keys to the workers waiting in get(). */
  #serveGetters(): void {
    while (this.#getters.length > 0 && this.#queue.length > 0) {
      const key = this.#take();
      if (key === undefined) break;
      this.#getters.shift()!(key);
    }
  }

  /** The next key the gate lets through; a namespace it holds back waits as one (undefined: none left ready). */
  #take(): string | undefined {
    for (;;) {
      if (this.#queue.length === 0) {
        this.#hooks.onDepth?.(0);
        return undefined;
      }
      const key = this.#queue.shift();
      const waitMs = this.#gate?.(key) ?? 0;
      if (waitMs <= 0) {
        const ns = namespaceOf(key);
        if (waitMs < 0) this.#owing.delete(ns);
        if (!this.#owing.has(ns) || !this.#busy(ns)) return this.#handOut(key);
        this.#queue.hold(key);
        this.#behindOwnKey.add(ns);
        continue;
      }
      const readyAt = this.#nowMs() + waitMs;
      const ns = this.#queue.hold(key);
      this.#owing.add(ns);
      this.#heldUntil.set(ns, readyAt);
      if (this.#timerAt === undefined || readyAt < this.#timerAt) this.#armTimer();
    }
  }

  /** Whether a key of `ns` is in flight (a scan of at most one key per worker). */
  #busy(ns: string): boolean {
    for (const key of this.#processing.keys()) if (namespaceOf(key) === ns) return true;
    return false;
  }

  /** A key of `ns` is done: a namespace behind it takes turns again; one whose keys ran out owes nothing more. */
  #doneInNamespace(ns: string): void {
    if (this.#busy(ns)) return;
    if (this.#behindOwnKey.delete(ns)) this.#release([ns]);
    else if (!this.#heldUntil.has(ns) && !this.#queue.has(ns)) this.#owing.delete(ns);
  }

  /** Held namespaces take turns again, and waiting workers get their keys. */
  #release(namespaces: string[]): void {
    if (namespaces.length === 0) return;
    for (const ns of namespaces) this.#queue.release(ns);
    this.#hooks.onDepth?.(this.#queue.length);
    this.#serveGetters();
  }

  #handOut(key: string): string {
    const now = this.#nowMs();
    this.#dirty.delete(key);
    this.#processing.set(key, now);
    this.#hooks.onDepth?.(this.#queue.length);
    const addedAt = this.#addedAt.get(key);
    this.#addedAt.delete(key);
    if (addedAt !== undefined) this.#hooks.onQueued?.((now - addedAt) / 1000, key);
    return key;
  }

  /** One timer, for the earliest delayed key; it re-arms itself for the rest. */
  #armTimer(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerAt = undefined;
    if (this.#waiting.size === 0 && this.#heldUntil.size === 0) return;
    let earliest = Infinity;
    for (const readyAt of this.#waiting.values()) earliest = Math.min(earliest, readyAt);
    for (const readyAt of this.#heldUntil.values()) earliest = Math.min(earliest, readyAt);
    const delay = Math.min(Math.max(0, earliest - this.#nowMs()), MAX_TIMER_MS);
    this.#timerAt = this.#nowMs() + delay;
    this.#timer = this.#clock.setTimer(delay, () => this.#releaseDue());
    this.#timer.unref();
  }

  #releaseDue(): void {
    const now = this.#nowMs();
    const due = [...this.#waiting].filter(([, readyAt]) => readyAt <= now).sort((a, b) => a[1] - b[1]);
    for (const [key] of due) {
      this.#waiting.delete(key);
      this.add(key);
    }
    const released = [...this.#heldUntil].filter(([, readyAt]) => readyAt <= now).map(([ns]) => ns);
    for (const ns of released) this.#heldUntil.delete(ns);
    this.#release(released);
    this.#armTimer();
  }

  #nowMs(): number {
    return this.#clock.now().getTime();
  }
}

/**
 * controller-runtime's default rate limiter: the slower of a per-key
 * exponential backoff and a token bucket shared by all keys, so one failing
 * key backs off alone while a storm of failures is throttled as a whole.
 */
export class RetryLimiter {
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #bucket: TokenBucket;
  readonly #failures = new Map<string, number>();

  constructor(opts: { baseDelayMs?: number; maxDelayMs?: number; qps?: number; burst?: number }, nowMs: number) {
    this.#baseDelayMs = opts.baseDelayMs ?? 5;
    this.#maxDelayMs = opts.maxDelayMs ?? 1_000_000;
    this.#bucket = new TokenBucket(opts.qps ?? 10, opts.burst ?? 100, nowMs);
  }

  /**
   * Records one more failure of `key` and returns how long to wait before retrying it, in ms.
   * A planned look (`plannedMs`: a window transition, a rollout step) sooner than the backoff runs
   * instead and takes no token: the key comes back at its healthy cadence anyway, so an outage never
   * retries faster than healthy apps look, and a planned retry does not run up the bucket's debt that
   * other failing keys would wait behind. Its failure still counts, so the backoff keeps growing.
   */
  when(key: string, nowMs: number, plannedMs?: number, baseDelayMs = this.#baseDelayMs): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    const perKey = Math.min(baseDelayMs * 2 ** failures, this.#maxDelayMs);
    if (plannedMs !== undefined && plannedMs <= Math.max(perKey, this.#bucket.waitMs(nowMs))) return plannedMs;
    return Math.max(perKey, this.#bucket.reserve(nowMs));
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}

/**
 * golang.org/x/time/rate's reservation model: the bucket starts full, refills
 * at `qps`, and a reservation may drive it negative; the caller then waits
 * until the debt is paid back.
 */
class TokenBucket {
  readonly #qps: number;
  readonly #burst: number;
  #tokens: number;
  #lastMs: number;

  constructor(qps: number, burst: number, nowMs: number) {
    this.#qps = qps;
    this.#burst = burst;
    this.#tokens = burst;
    this.#lastMs = nowMs;
  }

  /** Takes one token; returns how long the caller must wait for it, in ms. */
  reserve(nowMs: number): number {
    const wait = this.waitMs(nowMs);
    this.#tokens -= 1;
    return wait;
  }

  /** How long a reservation now would wait, in ms, without taking a token. */
  waitMs(nowMs: number): number {
    const elapsedMs = Math.max(0, nowMs - this.#lastMs);
    this.#tokens = Math.min(this.#burst, this.#tokens + (elapsedMs / 1000) * this.#qps);
    this.#lastMs = nowMs;
    return this.#tokens >= 1 ? 0 : ((1 - this.#tokens) / this.#qps) * 1000;
  }
}
