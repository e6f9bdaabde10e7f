// Each namespace's share of the operator's time. The work the operator does
// for a namespace's objects on its one event loop (a reconcile's validation,
// planning and rendering, the model-cache bookkeeping of its apps' events,
// decoding its watch events, writing its objects and decoding the answers)
// is charged, in CPU milliseconds, to a token bucket per namespace that
// refills at the share's rate up to a burst. A namespace in debt waits: the work queue defers its
// keys until the debt is paid, so a tenant storming expensive edits spaces
// out its own reconciles (its repeated edits of one app coalesce on the queue
// meanwhile) and costs every other namespace at most its share. A burst lets
// ordinary work, a GitOps sync or a restart's first pass, run at full speed.
// Time is the injected clock's; CPU is the main thread's, read around each
// charged piece of work (runtime/thread-cpu.ts: a wall clock would charge a
// namespace for the time the machine's other processes took the core).

import type { Clock } from './clock.ts';
import { estimatedThreadCpuMs } from './thread-cpu.ts';

export interface ShareSettings {
  /** CPU milliseconds per second a namespace may use in the long run (100 = a tenth of a core). */
  cpuMsPerSecond: number;
  /** CPU milliseconds a namespace may use at once before it waits (its bucket's size). */
  burstMs: number;
}

/**
 * 30m of a core per namespace, after two seconds of CPU at once (config.ts --namespace-cpu-share,
 * --namespace-cpu-burst): a storm of a hundred seconds then costs the operator at most about 5 CPU-s,
 * under 0.05 of what the API server spends serving it (docs/benchmarks.md, the three storms), while the
 * burst covers a restart's first pass over 5,000 apps of one namespace (about 1 CPU-s) and a GitOps sync
 * of a few hundred. A platform whose single namespace holds thousands of apps that change at once raises it.
 */
export const DEFAULT_SHARE: ShareSettings = { cpuMsPerSecond: 30, burstMs: 2_000 };

export interface ShareHooks {
  /** CPU charged to `namespace` (serverlessapp_namespace_cpu_seconds_total). */
  onCharge?(namespace: string, cpuMs: number): void;
  /** A key of `namespace` was deferred `waitMs` because the namespace is past its share. */
  onDeferred?(namespace: string, key: string, waitMs: number): void;
  /** The namespace went past its share (once per episode, not per deferred key): the Event's moment. */
  onOverShare?(namespace: string, key: string, waitMs: number): void;
}

/** Buckets kept before the refilled ones are swept out (a namespace charged once and never again asked about). */
const SWEEP_AT = 1_024;

interface Bucket { tokensMs: number; atMs: number; over: boolean }

export class NamespaceShare {
  readonly settings: ShareSettings;
  readonly #clock: Clock;
  readonly #cpuMs: () => number;
  readonly #hooks: ShareHooks;
  /** Only namespaces that spent something and have not refilled: a full bucket is the same as none. */
  readonly #buckets = new Map<string, Bucket>();

  constructor(settings: ShareSettings, clock: Clock, opts: { cpuMs?: () => number; hooks?: ShareHooks } = {}) {
    this.settings = settings;
    this.#clock = clock;
    this.#cpuMs = opts.cpuMs ?? estimatedThreadCpuMs;
    this.#hooks = opts.hooks ?? {};
  }

  /** Runs `fn` and charges its CPU to `namespace`. For an async `fn`, only the part before its first await. */
  measure<T>(namespace: string, fn: () => T): T {
    const start = this.#cpuMs();
    try {
      return fn();
    } finally {
      this.charge(namespace, this.#cpuMs() - start);
    }
  }

  charge(namespace: string, cpuMs: number): void {
    if (!(cpuMs > 0)) return;
    const bucket = this.#bucket(namespace);
    bucket.tokensMs -= cpuMs;
    if (!this.#buckets.has(namespace) && this.#buckets.size >= SWEEP_AT) this.#sweep();
    this.#buckets.set(namespace, bucket);
    this.#hooks.onCharge?.(namespace, cpuMs);
  }

  /**
   * How long a key of `namespace` must wait before it runs: until the bucket's debt is paid back when it is
   * in debt, else 0, or -1 when at least half its burst is in hand again (it owes nothing: the work queue
   * stops running it one key at a time). The work queue asks before it hands the key out (WorkQueueOptions.gate).
   */
  waitMs(key: string, namespace: string): number {
    const bucket = this.#buckets.get(namespace);
    if (!bucket) return -1;
    this.#refill(bucket);
    if (bucket.tokensMs >= 0) {
      bucket.over = false;
      if (bucket.tokensMs >= this.settings.burstMs) this.#buckets.delete(namespace);
      return bucket.tokensMs * 2 >= this.settings.burstMs ? -1 : 0;
    }
    const wait = Math.ceil((-bucket.tokensMs / this.settings.cpuMsPerSecond) * 1000);
    if (!bucket.over) {
      bucket.over = true;
      this.#hooks.onOverShare?.(namespace, key, wait);
    }
    this.#hooks.onDeferred?.(namespace, key, wait);
    return wait;
  }

  /** Namespaces whose spending is remembered (they spent lately); bounded by the sweep. */
  get tracked(): number {
    return this.#buckets.size;
  }

  /** Namespaces past their share now (for a gauge and tests). */
  overShare(): string[] {
    return [...this.#buckets].filter(([, b]) => (this.#refill(b), b.tokensMs < 0)).map(([ns]) => ns);
  }

  /** Drops the buckets that have refilled (the same as none): what is kept is the namespaces that spent lately. */
  #sweep(): void {
    for (const [ns, b] of this.#buckets) {
      this.#refill(b);
      if (b.tokensMs >= this.settings.burstMs) this.#buckets.delete(ns);
    }
  }

  #bucket(namespace: string): Bucket {
    const bucket = this.#buckets.get(namespace) ?? { tokensMs: this.settings.burstMs, atMs: this.#nowMs(), over: false };
    this.#refill(bucket);
    return bucket;
  }

  #refill(bucket: Bucket): void {
    const now = this.#nowMs();
    const elapsed = Math.max(0, now - bucket.atMs);
    bucket.tokensMs = Math.min(this.settings.burstMs, bucket.tokensMs + (elapsed / 1000) * this.settings.cpuMsPerSecond);
    bucket.atMs = now;
  }

  #nowMs(): number {
    return this.#clock.now().getTime();
  }
}
