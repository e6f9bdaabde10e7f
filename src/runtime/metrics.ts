// The operator's Prometheus metrics, under the names controller-runtime and
// client-go use, so existing dashboards and alerts work unchanged. Each
// operator process (each Manager, in tests) owns its own Registry rather than
// prom-client's global one. Labels stay low-cardinality: never an object's
// name; a namespace only on the few per-tenant series of the fair share
// (reconcile time, budget refusals), bounded by the number of namespaces.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerProcessMetrics } from './process-metrics.ts';
import type { DropReason } from './events.ts';
import { namespaceOf } from '../util/object-key.ts';
import type { QueueMetricsHooks, WorkQueue } from './workqueue.ts';
import type { ShareHooks } from './namespace-share.ts';

export type ReconcileResult = 'success' | 'error' | 'requeue' | 'requeue_after';

/** What a controller reports about its reconciles. */
export interface ReconcileObserver {
  maxConcurrent(n: number): void;
  workerStarted(): void;
  workerFinished(): void;
  /** One finished reconcile of an object in `namespace`; `terminal` marks an error that will not be retried. */
  reconciled(result: ReconcileResult, seconds: number, terminal?: boolean, namespace?: string): void;
}

/** controller-runtime's reconcile_time buckets. */
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5,
  6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
/** client-go's workqueue buckets: 10ns to 1000s, exponential. */
const QUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

export class OperatorMetrics {
  readonly registry: Registry;
  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly terminalErrors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;
  private readonly activeWorkers: Gauge<'controller'>;
  private readonly maxConcurrentReconciles: Gauge<'controller'>;
  private readonly depth: Gauge<'name'>;
  private readonly adds: Counter<'name'>;
  private readonly retries: Counter<'name'>;
  private readonly queueDuration: Histogram<'name'>;
  private readonly workDuration: Histogram<'name'>;
  private readonly leader: Gauge<'name'>;
  private readonly restRequests: Counter<'code' | 'method' | 'host'>;
  private readonly eventsDropped: Counter<'reason'>;
  private readonly reconcileSecondsByNamespace: Counter<'controller' | 'namespace'>;
  private readonly reconcilesByNamespace: Counter<'controller' | 'namespace'>;
  private readonly queueWaitByNamespace: Counter<'name' | 'namespace'>;
  private readonly budgetRefusals: Counter<'namespace' | 'budget'>;
  private readonly namespaceCpu: Counter<'namespace'>;
  private readonly namespaceDeferrals: Counter<'namespace'>;
  private readonly namespaceOverShare: Counter<'namespace'>;
  private readonly unhandledRejections: Counter;
  private readonly queues = new Map<string, WorkQueue>();

  constructor(opts: { processMetrics?: boolean } = {}) {
    this.registry = new Registry();
    const registers = [this.registry];
    if (opts.processMetrics ?? true) registerProcessMetrics(this.registry);

    this.reconcileTotal = new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller', labelNames: ['controller', 'result'], registers });
    this.reconcileErrors = new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller', labelNames: ['controller'], registers });
    this.terminalErrors = new Counter({ name: 'controller_runtime_terminal_reconcile_errors_total', help: 'Total number of terminal reconciliation errors per controller', labelNames: ['controller'], registers });
    this.reconcileTime = new Histogram({ name: 'controller_runtime_reconcile_time_seconds', help: 'Length of time per reconciliation per controller', labelNames: ['controller'], buckets: RECONCILE_BUCKETS, registers });
    this.activeWorkers = new Gauge({ name: 'controller_runtime_active_workers', help: 'Number of currently used workers per controller', labelNames: ['controller'], registers });
    this.maxConcurrentReconciles = new Gauge({ name: 'controller_runtime_max_concurrent_reconciles', help: 'Maximum number of concurrent reconciles per controller', labelNames: ['controller'], registers });

    this.depth = new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: ['name'], registers });
    this.adds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name'], registers });
    this.retries = new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: ['name'], registers });
    this.queueDuration = new Histogram({ name: 'workqueue_queue_duration_seconds', help: 'How long in seconds an item stays in workqueue before being requested', labelNames: ['name'], buckets: QUEUE_BUCKETS, registers });
    this.workDuration = new Histogram({ name: 'workqueue_work_duration_seconds', help: 'How long in seconds processing an item from workqueue takes', labelNames: ['name'], buckets: QUEUE_BUCKETS, registers });
    // Sampled at scrape time from the queues themselves.
    const queues = this.queues;
    new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: 'How many seconds of work has been done that is in progress and hasn\'t been observed by work_duration',
      labelNames: ['name'], registers,
      collect() {
        for (const [name, q] of queues) this.set({ name }, q.unfinishedWorkSeconds());
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running',
      labelNames: ['name'], registers,
      collect() {
        for (const [name, q] of queues) this.set({ name }, q.longestRunningProcessorSeconds());
      },
    });

    this.leader = new Gauge({ name: 'leader_election_master_status', help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master', labelNames: ['name'], registers });
    this.restRequests = new Counter({ name: 'rest_client_requests_total', help: 'Number of HTTP requests, partitioned by status code, method, and host', labelNames: ['code', 'method', 'host'], registers });
    this.eventsDropped = new Counter({ name: 'serverlessapp_events_dropped_total', help: 'Events not written: reason spam (more than 25 for one object, then one per 5 minutes, as client-go), queue_full (10,000 waiting), namespace_full (the namespace\'s share waiting, --max-pending-events-per-namespace) or term_ended (recorded in a leadership term that ended before they were written: the new leader records its own)', labelNames: ['reason'], registers });
    for (const reason of ['spam', 'queue_full', 'namespace_full', 'term_ended']) this.eventsDropped.inc({ reason }, 0);
    this.reconcileSecondsByNamespace = new Counter({ name: 'serverlessapp_reconcile_seconds_total', help: 'Time spent reconciling objects of each namespace (the operator\'s share per tenant)', labelNames: ['controller', 'namespace'], registers });
    // With the reconcile time above: where a tenant's latency goes, waiting for a worker or in its reconciles.
    this.reconcilesByNamespace = new Counter({ name: 'serverlessapp_reconciles_total', help: 'Reconciles of objects of each namespace', labelNames: ['controller', 'namespace'], registers });
    this.queueWaitByNamespace = new Counter({ name: 'serverlessapp_queue_wait_seconds_total', help: 'Time the keys of each namespace waited in the work queue between add and get', labelNames: ['name', 'namespace'], registers });
    this.budgetRefusals = new Counter({ name: 'serverlessapp_budget_refusals_total', help: 'Background work refused because a namespace\'s budget or the global cap was reached (warmup, analysis, event)', labelNames: ['namespace', 'budget'], registers });
    this.namespaceCpu = new Counter({ name: 'serverlessapp_namespace_cpu_seconds_total', help: 'Main-thread CPU charged to each namespace\'s share of the operator (reconcile up to its first await: validation, planning, rendering; model-cache bookkeeping of its apps\' events)', labelNames: ['namespace'], registers });
    this.namespaceDeferrals = new Counter({ name: 'serverlessapp_namespace_deferrals_total', help: 'Times a namespace\'s keys were held back because it was past its share of the operator\'s CPU (--namespace-cpu-share, --namespace-cpu-burst): once per wait, however many keys it has queued', labelNames: ['namespace'], registers });
    this.namespaceOverShare = new Counter({ name: 'serverlessapp_namespace_over_share_total', help: 'Times a namespace went past its share of the operator\'s CPU (each then has its keys deferred until its debt is paid)', labelNames: ['namespace'], registers });
    this.unhandledRejections = new Counter({ name: 'serverlessapp_unhandled_rejections_total', help: 'Promise rejections no code handled (logged; the process keeps running): each one is a bug to report', registers });
  }

  /** Background work of `namespace` refused by its budget or the global cap. */
  budgetRefused(namespace: string, budget: string): void {
    this.budgetRefusals.inc({ namespace, budget });
  }

  /** Callbacks for the namespaces' share of the operator's time (runtime/namespace-share.ts). */
  shareHooks(): Required<ShareHooks> {
    return {
      onCharge: (namespace, cpuMs) => this.namespaceCpu.inc({ namespace }, cpuMs / 1000),
      onDeferred: (namespace) => this.namespaceDeferrals.inc({ namespace }),
      onOverShare: (namespace) => this.namespaceOverShare.inc({ namespace }),
    };
  }

  /** A promise rejection nothing handled (process-errors.ts). */
  unhandledRejection(): void {
    this.unhandledRejections.inc();
  }

  /** An Event the recorder did not write. */
  eventDropped(reason: DropReason): void {
    this.eventsDropped.inc({ reason });
  }

  /** Callbacks for a WorkQueue named `name`; pass the queue to `watchQueue` too for the sampled gauges. */
  queueHooks(name: string): QueueMetricsHooks {
    const labels = { name };
    this.depth.set(labels, 0);
    this.adds.inc(labels, 0);
    this.retries.inc(labels, 0);
    return {
      onAdd: () => this.adds.inc(labels),
      onDepth: (n) => this.depth.set(labels, n),
      onRetry: () => this.retries.inc(labels),
      onQueued: (s, key) => {
        this.queueDuration.observe(labels, s);
        this.queueWaitByNamespace.inc({ name, namespace: namespaceOf(key) }, s);
      },
      onWork: (s) => this.workDuration.observe(labels, s),
    };
  }

  watchQueue(queue: WorkQueue): void {
    this.queues.set(queue.name, queue);
  }

  reconcileObserver(controller: string): ReconcileObserver {
    const labels = { controller };
    // Zero series up front, as controller-runtime does, so rate() works from the first scrape.
    for (const result of ['success', 'error', 'requeue', 'requeue_after'] as const) this.reconcileTotal.inc({ controller, result }, 0);
    this.reconcileErrors.inc(labels, 0);
    this.terminalErrors.inc(labels, 0);
    this.activeWorkers.set(labels, 0);
    return {
      maxConcurrent: (n) => this.maxConcurrentReconciles.set(labels, n),
      workerStarted: () => this.activeWorkers.inc(labels),
      workerFinished: () => this.activeWorkers.dec(labels),
      reconciled: (result, seconds, terminal = false, namespace) => {
        this.reconcileTotal.inc({ controller, result });
        this.reconcileTime.observe(labels, seconds);
        if (namespace !== undefined) {
          this.reconcileSecondsByNamespace.inc({ controller, namespace }, seconds);
          this.reconcilesByNamespace.inc({ controller, namespace });
        }
        if (result === 'error') this.reconcileErrors.inc(labels);
        if (terminal) this.terminalErrors.inc(labels);
      },
    };
  }

  leaderStatus(name: string, isLeader: boolean): void {
    this.leader.set({ name }, isLeader ? 1 : 0);
  }

  restRequest(code: string, method: string, host: string): void {
    this.restRequests.inc({ code, method, host });
  }
}
