// One controller: informer events become "namespace/name" keys on a work queue,
// and N workers reconcile them, never the same key twice at once. The result
// decides what happens next, as in controller-runtime: a requested delay is a
// requeue after that delay, a user's mistake (TerminalError) is reported and
// left alone until the object changes, any other failure is retried with
// backoff, a plan made from an outdated read is run again at once. A reconcile
// that throws never takes its worker down. Each leadership term has its own
// signal, which every API call and outbound request of a reconcile takes: a
// term that ends by losing the lease aborts what is in flight (controller-runtime
// cancels the reconcile context) instead of waiting for it.

import { randomUUID } from 'node:crypto';

import type { TimerClock } from './clock.ts';
import type { Informer, KubeObject } from './informer.ts';
import type { Logger } from './logging.ts';
import type { NamespaceShare } from './namespace-share.ts';
import type { OperatorMetrics, ReconcileObserver, ReconcileResult } from './metrics.ts';
import { WorkQueue, type WorkQueueOptions } from './workqueue.ts';
import { namespaceOf, objectKey, splitKey, type ObjectRef } from '../util/object-key.ts';

/** What a reconcile is asked to look at: controller-runtime's reconcile.Request, an object's namespace and name. */
export type Request = ObjectRef;

export interface Result {
  requeueAfterMs?: number;
  /**
   * The plan was made from a read the API server has moved past (the status write's precondition
   * failed, runtime/status.ts StaleRead): run again at once from the fresh object, with no backoff
   * and not as an error: nothing failed, and a burst of conflicts must not grow into minutes of backoff.
   */
  replan?: boolean;
}

/** A failure retrying cannot fix (a user's mistake): logged and counted, not retried. */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

/**
 * A failure retried with backoff that keeps the requeue its reconcile planned (a window transition,
 * a rollout step): the earlier of the two runs it, so a retry's growing backoff never delays it.
 */
export class RetryError extends Error {
  readonly requeueAfterMs: number | undefined;
  /** The backoff's first delay, doubled at each failure (default: the queue's, 5 ms). */
  readonly backoffBaseMs: number | undefined;
  constructor(message: string, requeueAfterMs: number | undefined, options?: ErrorOptions & { backoffBaseMs?: number }) {
    super(message, options);
    this.name = 'RetryError';
    this.requeueAfterMs = requeueAfterMs;
    this.backoffBaseMs = options?.backoffBaseMs;
  }
}

/**
 * The first retry of a write the API server refused (a webhook's denial, a schema error) waits a
 * second, then doubles: the refusal rarely goes away within milliseconds, and the queue's 5 ms
 * start would send it about nine times in two seconds. A webhook that refuses once in a race
 * (KServe's, just after another cache is deleted) is still retried within a second.
 */
export const REFUSED_WRITE_BACKOFF_MS = 1_000;

/** A retry of a write the API server refused: see REFUSED_WRITE_BACKOFF_MS. */
export function refusedWriteRetry(summary: string, requeueAfterMs?: number): RetryError {
  return new RetryError(summary, requeueAfterMs, { backoffBaseMs: REFUSED_WRITE_BACKOFF_MS });
}

/**
 * A `.catch` that keeps the requeue a reconcile planned when a step fails: the failure (a conflict, a
 * 429, a 5xx, a broken connection) becomes a RetryError carrying `requeueAfterMs`, so its growing
 * backoff never delays a planned look; a TerminalError or RetryError passes through as it is.
 */
export function keepingRequeue(requeueAfterMs: number | undefined): (err: unknown) => never {
  return (err) => {
    if (err instanceof TerminalError || err instanceof RetryError) throw err;
    throw new RetryError(err instanceof Error ? err.message : String(err), requeueAfterMs, { cause: err });
  };
}

export interface ReconcileContext {
  log: Logger;
  reconcileID: string;
  /** Aborted when this replica stops leading by losing the lease: every API call and outbound request takes it. */
  signal: AbortSignal;
}

export type Reconcile = (req: Request, ctx: ReconcileContext) => Promise<Result | void>;

export interface ControllerOptions {
  name: string;
  reconcile: Reconcile;
  concurrency?: number;
  logger: Logger;
  metrics: OperatorMetrics;
  queue?: Omit<WorkQueueOptions, 'hooks' | 'clock'>;
  /**
   * What requeue delays and retry backoff are measured on (default: real time); tests step a manual one. Not
   * a clock that jumps (OffsetClock, the operator's shifted clock): the queue records when each delayed key
   * is due on it, so after a jump forward a key re-added for the same moment stays behind its older, real timer.
   */
  clock?: TimerClock;
  /**
   * Runs when the workers have stopped (shutdown or lost leadership): work the reconciler started off
   * the workers (warmup requests, analysis rounds) stops with them, never after the last reconcile.
   */
  onStopped?: () => void;
  /**
   * Each namespace's share of the operator's time: a reconcile's CPU up to its first await (observation,
   * validation, planning, rendering) is charged to its namespace, and a namespace past its share has its
   * keys deferred by the queue (runtime/namespace-share.ts).
   */
  share?: NamespaceShare;
}

interface Primary {
  list(): unknown[];
  map: (obj: unknown) => Request[];
}

export class Controller {
  readonly name: string;
  private readonly reconcile: Reconcile;
  private readonly concurrency: number;
  private readonly logger: Logger;
  private readonly metrics: OperatorMetrics;
  private readonly observer: ReconcileObserver;
  private readonly queueOptions: Omit<WorkQueueOptions, 'hooks'>;
  private queue: WorkQueue;
  private primary: Primary | undefined;
  private workers: Promise<void>[] = [];
  private running = false;
  private inFlight = 0;
  /** This leadership term's: aborted by abandon(). */
  private term = new AbortController();
  private readonly onStopped: (() => void) | undefined;
  private readonly share: NamespaceShare | undefined;

  constructor(opts: ControllerOptions) {
    this.name = opts.name;
    this.reconcile = opts.reconcile;
    this.concurrency = Math.max(1, opts.concurrency ?? 4);
    this.logger = opts.logger.child({ controller: opts.name });
    this.metrics = opts.metrics;
    this.observer = opts.metrics.reconcileObserver(opts.name);
    this.observer.maxConcurrent(this.concurrency);
    const share = opts.share;
    this.share = share;
    this.queueOptions = { ...opts.queue, ...(opts.clock ? { clock: opts.clock } : {}), ...(share ? { gate: (key: string) => share.waitMs(key, namespaceOf(key)) } : {}) };
    this.queue = this.newQueue();
    this.onStopped = opts.onStopped;
  }

  /**
   * Reconciles the requests `map` derives from each added, updated or deleted
   * object: identity for the primary kind, the owner for children. The first
   * informer watched is the primary one, walked by `enqueueAll`.
   */
  /**
   * Reconciles what `map` names on each add, update and delete of `informer`'s objects. `updates`,
   * like controller-runtime's predicates, may ignore updates that change nothing this controller
   * reads (a forced resync, old === new, always passes).
   */
  watches<T extends KubeObject>(informer: Informer<T>, map: (obj: T) => Request[], updates?: (obj: T, old: T) => boolean): this {
    const enqueueMapped = (obj: T) => {
      for (const req of map(obj)) this.enqueue(req);
    };
    informer.on('add', enqueueMapped);
    // An update may move a child to another owner: both must hear about it.
    informer.on('update', (obj: T, old?: T) => {
      if (updates && old !== undefined && old !== obj && !updates(obj, old)) return;
      enqueueMapped(obj);
      if (old !== undefined) enqueueMapped(old);
    });
    informer.on('delete', enqueueMapped);
    this.primary ??= { list: () => informer.list(), map: map as (obj: unknown) => Request[] };
    return this;
  }

  enqueue(req: Request): void {
    this.queue.add(keyOf(req));
  }

  /**
   * Queues `req` now with its backoff forgotten: what its failures waited for has changed, so a
   * failure right after (another component still catching up) retries from the base delay, not
   * after the minutes its earlier failures had grown the backoff to.
   */
  retryNow(req: Request): void {
    const key = keyOf(req);
    this.queue.forget(key);
    this.queue.add(key);
  }

  /** Queues every object of the primary informer (after a leadership change or a clock jump). */
  enqueueAll(): void {
    if (!this.primary) return;
    for (const obj of this.primary.list()) for (const req of this.primary.map(obj)) this.enqueue(req);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.term = new AbortController();
    this.enqueueAll();
    this.logger.info('starting workers', { workerCount: this.concurrency });
    this.workers = Array.from({ length: this.concurrency }, () => this.work());
  }

  /**
   * Stops taking work and resolves once in-flight reconciles have finished. A later start() begins afresh:
   * it queues every object of the primary informer, so the requeue an in-flight reconcile asked for, which
   * went to the queue being shut down, is not lost.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    const workers = this.halt();
    await Promise.all(workers);
    this.onStopped?.();
    this.logger.info('stopped workers');
  }

  /**
   * Stops taking work and aborts the in-flight reconciles without waiting for them (the lease is lost:
   * another replica may be writing already, and a write still on its way must not land after it).
   * What they were doing ends with their requests; a later start() begins afresh, as after stop().
   */
  abandon(): void {
    if (!this.running) return;
    this.term.abort(new Error('leadership lost'));
    void this.halt();
    this.onStopped?.();
    this.logger.info('abandoned in-flight reconciles');
  }

  /** No new work; returns the workers still finishing theirs. */
  private halt(): Promise<void>[] {
    this.running = false;
    this.queue.shutDown();
    // Events that arrive while stopping or stopped wait on a fresh queue for the next start().
    this.queue = this.newQueue();
    const workers = this.workers;
    this.workers = [];
    return workers;
  }

  /** Nothing queued and nothing running (keys waiting on a delay do not count). */
  isIdle(): boolean {
    return this.queue.length === 0 && this.inFlight === 0;
  }

  private newQueue(): WorkQueue {
    const queue = new WorkQueue(this.name, { ...this.queueOptions, hooks: this.metrics.queueHooks(this.name) });
    this.metrics.watchQueue(queue);
    return queue;
  }

  private async work(): Promise<void> {
    const queue = this.queue;
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
      this.inFlight++;
      this.observer.workerStarted();
      try {
        await this.process(queue, key);
      } finally {
        this.observer.workerFinished();
        this.inFlight--;
        queue.done(key);
      }
    }
  }

  private async process(queue: WorkQueue, key: string): Promise<void> {
    const req = requestOf(key);
    const reconcileID = randomUUID();
    const log = this.logger.child({ namespace: req.namespace, name: req.name, reconcileID });
    const started = performance.now();
    let outcome: ReconcileResult = 'success';
    let terminal = false;
    const signal = this.term.signal;
    try {
      const ctx = { log, reconcileID, signal };
      const result = await (this.share ? this.share.measure(req.namespace, () => this.reconcile(req, ctx)) : this.reconcile(req, ctx));
      const after = result?.requeueAfterMs;
      queue.forget(key);
      if (result?.replan) {
        outcome = 'requeue';
        queue.add(key);
      } else if (after !== undefined && after > 0) {
        outcome = 'requeue_after';
        queue.addAfter(key, after);
      }
    } catch (err) {
      outcome = 'error';
      // Cut short because the lease was lost: nothing to retry here, and no error of the reconcile's.
      if (signal.aborted) log.info('reconcile cancelled: leadership lost', { err: errorFields(err) });
      else if (err instanceof TerminalError) {
        terminal = true;
        queue.forget(key);
        log.error('Reconciler error (terminal, not retried)', { err: errorFields(err) });
      } else {
        if (err instanceof RetryError) queue.addRateLimited(key, err.requeueAfterMs, err.backoffBaseMs);
        else queue.addRateLimited(key);
        log.error('Reconciler error', { err: errorFields(err), retries: queue.numRequeues(key) });
      }
    } finally {
      this.observer.reconciled(outcome, (performance.now() - started) / 1000, terminal, req.namespace);
    }
  }
}

/** client-go's key: "namespace/name", or just "name" for cluster-scoped objects. */
export function keyOf(req: Request): string {
  return objectKey(req.namespace, req.name);
}

/** The request a queue key stands for. */
export const requestOf: (key: string) => Request = splitKey;

/** An error as log fields, with its chain of causes (at most a few deep: a cause may point back). */
function errorFields(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause !== undefined && depth < 4 ? { cause: errorFields(err.cause, depth + 1) } : {};
  return { message: err.message, name: err.name, stack: err.stack, ...('code' in err ? { code: err.code } : {}), ...cause };
}
