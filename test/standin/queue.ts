// A per-key work queue in the client-go mould: a key waits at most once, is
// never handled by two workers at once (a key added while it is being handled
// runs once more afterwards), at most `concurrency` keys run together, and a
// failing key is retried with capped exponential backoff. Delays, such as
// "this revision becomes ready in 200 ms", are requeues rather than timers in
// the reconcilers.

export interface QueueOptions {
  concurrency: number;
  /** Handles one key; may ask to be called again after a delay. */
  handle: (key: string) => Promise<{ requeueAfterMs?: number } | void>;
  onError: (key: string, err: unknown) => void;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
}

export class WorkQueue {
  private readonly opts: QueueOptions;
  private readonly waiting = new Set<string>();
  private readonly running = new Set<string>();
  private readonly again = new Set<string>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  private started = false;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(opts: QueueOptions) {
    this.opts = opts;
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.running.has(key)) {
      this.again.add(key);
      return;
    }
    this.waiting.add(key);
    this.pump();
  }

  /** Adds `key` after `ms`; an earlier pending delay for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.delayed.set(key, { at, timer });
  }

  start(): void {
    this.started = true;
    this.pump();
  }

  /** Stops taking work and waits for the keys being handled. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.waiting.clear();
    this.again.clear();
    await this.idle();
  }

  /** Resolves when nothing is waiting or running (delayed keys do not count). */
  idle(): Promise<void> {
    if (this.waiting.size === 0 && this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  get length(): number {
    return this.waiting.size + this.running.size;
  }

  private pump(): void {
    if (!this.started) return;
    while (this.running.size < this.opts.concurrency && this.waiting.size > 0) {
      const key = this.waiting.values().next().value as string;
      this.waiting.delete(key);
      this.running.add(key);
      void this.run(key);
    }
    if (this.waiting.size === 0 && this.running.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private async run(key: string): Promise<void> {
    try {
      const result = await this.opts.handle(key);
      this.failures.delete(key);
      if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      this.opts.onError(key, err);
      const base = this.opts.baseBackoffMs ?? 50;
      this.addAfter(key, Math.min(base * 2 ** (n - 1), this.opts.maxBackoffMs ?? 10_000));
    } finally {
      this.running.delete(key);
      if (this.again.delete(key)) this.waiting.add(key);
      this.pump();
    }
  }
}
