// Restart: the operator is killed and a new one started with every app in
// place. Measured from the new process's start to its caches being synced
// (/readyz) and its queue drained (every app reconciled once and the count
// no longer moving), and the writes it made meanwhile: a restart must find
// nothing to change.
import type { OperatorProcess } from '../test/support/operator-process.ts';
import { PROGRESS_MS } from '../src/planner/status.ts';
import { OPERATOR_USER_AGENT, type BenchEnv } from './environment.ts';
import { waitIdle } from './operator-metrics.ts';
import { describeWrites } from './steady.ts';

export interface Restart {
  operator: OperatorProcess;
  readySeconds: number;
  syncSeconds: number;
  reconciles: number;
  writes: number;
  written: string;
}

/** `signal` SIGTERM lets a profiled operator (--cpu-prof) write its profile on the way out. */
export async function measureRestart(env: BenchEnv, old: OperatorProcess, apps: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<Restart> {
  // Whatever the old one was still doing is not the restart's to count, including status progress it
  // holds back for up to PROGRESS_MS (a restart writes that at once: it has not written it yet).
  await waitIdle(old, { quietMs: PROGRESS_MS + 1_000 });
  await old.kill(signal);
  const since = new Date();
  const operator = await env.startOperator();
  const readySeconds = (performance.now() - operator.startedAt) / 1000;
  const idle = await waitIdle(operator, { minReconciles: apps, quietMs: 1_000, pollMs: 100 });
  const syncSeconds = (idle.lastChangeAt - operator.startedAt) / 1000;
  const writes = env.cp.auditWrites({ since, userAgentPrefix: OPERATOR_USER_AGENT });
  return { operator, readySeconds, syncSeconds, reconciles: idle.reconciles, writes: writes.length, written: describeWrites(writes) };
}
