// Steady state: with every app converged and nothing changing, the operator
// should neither write nor burn CPU. Measured over a quiet window after it has
// gone idle; memory is read at the same point (RSS from /proc, heap from its
// own metrics).
import { writeLabel, type AuditWrite } from '../test/envtest/audit.ts';
import type { OperatorProcess } from '../test/support/operator-process.ts';
import { OPERATOR_USER_AGENT, type BenchEnv } from './environment.ts';
import { counters, waitIdle } from './operator-metrics.ts';
import { sampleProcess } from './proc.ts';
import { sleep } from './stats.ts';

export interface Steady {
  windowSeconds: number;
  writes: number;
  /** What was written, e.g. "3 x create events" (empty when nothing). */
  written: string;
  cpuSeconds: number;
  reconciles: number;
  rssBytes: number;
  /** The operator's peak RSS so far (VmHWM), i.e. over convergence and the steady window. */
  peakRssBytes: number;
  heapUsedBytes: number;
}

export async function measureSteady(env: BenchEnv, op: OperatorProcess, windowMs: number): Promise<Steady> {
  await waitIdle(op, { quietMs: 2_000 });
  const since = new Date();
  const cpu = sampleProcess(op.pid).cpuSeconds;
  const reconciles = (await counters(op)).reconciles;
  await sleep(windowMs);
  const until = new Date();
  const after = sampleProcess(op.pid);
  const c = await counters(op);
  const writes = env.cp.auditWrites({ since, userAgentPrefix: OPERATOR_USER_AGENT }).filter((w) => w.timestamp <= until);
  return {
    windowSeconds: windowMs / 1000, writes: writes.length, written: describeWrites(writes), cpuSeconds: after.cpuSeconds - cpu,
    reconciles: c.reconciles - reconciles, rssBytes: after.rssBytes, peakRssBytes: after.peakRssBytes, heapUsedBytes: c.heapUsedBytes,
  };
}

export function describeWrites(writes: AuditWrite[]): string {
  const counts = new Map<string, number>();
  for (const w of writes) {
    const key = writeLabel(w);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${n} x ${k}`).join(', ');
}
