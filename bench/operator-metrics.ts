// Reading the operator child's own account of its work from /metrics: how
// many reconciles it has run, whether its queue is empty, its heap. "Idle"
// means the queue is empty, no worker is busy and neither the reconcile count
// nor the count of write requests (Events are written after the reconcile
// that recorded them) has moved for a while, the way controller-runtime's
// metrics would tell an operator engineer that a controller has caught up.
import { metricValue, type OperatorProcess } from '../test/support/operator-process.ts';
import { waitFor } from '../test/support/wait.ts';

export interface OperatorCounters {
  reconciles: number;
  /** Write requests sent (POST, PUT, PATCH, DELETE), Events included. */
  writes: number;
  queueDepth: number;
  activeWorkers: number;
  heapUsedBytes: number;
}

export async function counters(op: OperatorProcess): Promise<OperatorCounters> {
  const samples = await op.metrics();
  return {
    reconciles: metricValue(samples, 'controller_runtime_reconcile_total'),
    writes: ['POST', 'PUT', 'PATCH', 'DELETE'].reduce((n, method) => n + metricValue(samples, 'rest_client_requests_total', { method }), 0),
    queueDepth: metricValue(samples, 'workqueue_depth'),
    activeWorkers: metricValue(samples, 'controller_runtime_active_workers'),
    heapUsedBytes: metricValue(samples, 'nodejs_heap_size_used_bytes'),
  };
}

/**
 * Waits until the operator has run at least `minReconciles` reconciles, its
 * queues are empty and no reconcile has finished nor write gone out for
 * `quietMs`. Returns when the last of those happened (performance.now(), to
 * within the poll period) and the reconcile count by then.
 */
export async function waitIdle(op: OperatorProcess, opts: { minReconciles?: number; quietMs?: number; pollMs?: number; timeoutMs?: number } = {}): Promise<{ lastChangeAt: number; reconciles: number }> {
  const { minReconciles = 0, quietMs = 1_000, pollMs = 100, timeoutMs = 900_000 } = opts;
  let last = await counters(op);
  let lastChangeAt = performance.now();
  return waitFor(`the operator to be idle (${minReconciles} reconciles at least, queues empty, nothing for ${quietMs} ms)`, async () => {
    const now = await counters(op);
    if (now.reconciles !== last.reconciles || now.writes !== last.writes) lastChangeAt = performance.now();
    last = now;
    const quiet = performance.now() - lastChangeAt >= quietMs;
    return quiet && now.reconciles >= minReconciles && now.queueDepth === 0 && now.activeWorkers === 0 ? { lastChangeAt, reconciles: now.reconciles } : undefined;
  }, { timeoutMs, intervalMs: pollMs }).catch((e: Error) => { throw new Error(`${e.message}: ${JSON.stringify(last)}`); });
}

/** The operator's warnings and errors so far, counted by message, for the log. */
export function logSummary(op: OperatorProcess): string {
  return [...op.problems()].map(([message, n]) => `${n} x ${message}`).join('; ');
}
