// The benchmark's output: one flat JSON record (stable keys, for CI to
// compare runs) and a table for people. Figures are rounded; the run's
// environment is recorded with them because the machine is shared and noisy.
import { cpus, loadavg, totalmem } from 'node:os';
import type { Convergence, Ceiling } from './convergence.ts';
import type { EditLatency } from './edits.ts';
import { DATA_PLANE_LABEL, type DataPlaneKind } from './environment.ts';
import { MiB } from './proc.ts';
import type { Restart } from './restart.ts';
import { median, percentile, round } from './stats.ts';
import type { Steady } from './steady.ts';

export interface Results {
  apps: number;
  dataPlane: DataPlaneKind;
  /** Why this data plane (the default for this many apps, or --data-plane). */
  dataPlaneReason: string;
  /** The operator's command, e.g. "node dist/main.js", and the source it was built from. */
  operator: { command: string; builtFrom: string; buildSeconds: number };
  operatorConcurrency: number;
  /** With the real data plane: how long Knative and the garbage collector took to clear the ceiling's namespace before convergence began. */
  ceilingDrainSeconds: number;
  ceiling: Ceiling;
  convergence: Convergence;
  steady: Steady;
  edits: EditLatency;
  restart: Restart;
  /** Lags (ms) behind a window's opening, one per app. */
  windowLag: number[];
  realClockWindowLag?: number[];
  /** What the first operator warned about while converging and serving edits (counted by message). */
  operatorWarnings: string;
  startedAt: Date;
  seconds: number;
}

export function toRecord(r: Results): Record<string, unknown> {
  const c = r.convergence;
  return {
    apps: r.apps,
    dataPlane: r.dataPlane,
    dataPlaneDescription: `${DATA_PLANE_LABEL[r.dataPlane]} (${r.dataPlaneReason})`,
    operatorCommand: r.operator.command,
    operatorBuiltFrom: r.operator.builtFrom,
    buildSeconds: round(r.operator.buildSeconds, 1),
    convergeSeconds: round(c.seconds),
    appsPerSecond: round(c.perSecond, 1),
    ceilingAppsPerSecond: round(r.ceiling.perSecond, 1),
    ceilingRatio: round(c.perSecond / r.ceiling.perSecond, 3),
    ceilingDrainSeconds: round(r.ceilingDrainSeconds, 1),
    writesPerApp: round(c.writes.operator / r.apps),
    writesUntilReadyPerApp: round(c.operatorWritesUntilReady / r.apps),
    eventsUntilReadyPerApp: round(c.eventsUntilReady / r.apps),
    mostWritesUntilReady: c.mostWritesUntilReady,
    operatorWrites: c.operatorWrites,
    operatorWriteShare: round(c.writes.operator / c.writes.total, 3),
    dataPlaneWritesPerApp: round(c.writes.dataPlane / r.apps),
    apiServerWritesPerApp: round(c.writes.total / r.apps),
    apiServerWritesPerSecond: round(c.writes.total / c.seconds, 1),
    writeRateCeilingRatio: round(c.writes.total / c.seconds / r.ceiling.perSecond, 3),
    createSeconds: round(c.createSeconds),
    convergeCpuSeconds: round(c.cpuSeconds.operator),
    convergeApiServerCpuSeconds: round(c.cpuSeconds.apiServer),
    convergeEtcdCpuSeconds: round(c.cpuSeconds.etcd),
    convergeDataPlaneCpuSeconds: round(c.cpuSeconds.dataPlane),
    convergeBenchCpuSeconds: round(c.cpuSeconds.bench),
    steadyStateWindowSeconds: r.steady.windowSeconds,
    steadyStateWrites: r.steady.writes,
    steadyStateCpuSeconds: round(r.steady.cpuSeconds, 3),
    steadyStateReconciles: r.steady.reconciles,
    editLatencyP50Ms: round(median(r.edits.samplesMs), 0),
    editLatencyP99Ms: round(percentile(r.edits.samplesMs, 99), 0),
    reportedEditLatencyP50Ms: round(median(r.edits.reportedSamplesMs), 0),
    reportedEditLatencyP99Ms: round(percentile(r.edits.reportedSamplesMs, 99), 0),
    editSamples: r.edits.samplesMs.length,
    rssMiB: round(r.steady.rssBytes / MiB, 1),
    heapMiB: round(r.steady.heapUsedBytes / MiB, 1),
    peakRssMiB: round(r.steady.peakRssBytes / MiB, 1),
    restartReadySeconds: round(r.restart.readySeconds),
    restartSyncSeconds: round(r.restart.syncSeconds),
    restartReconciles: r.restart.reconciles,
    restartWrites: r.restart.writes,
    windowApps: r.windowLag.length,
    windowLagP50Ms: round(median(r.windowLag), 0),
    windowLagMaxMs: round(Math.max(...r.windowLag), 0),
    ...(r.realClockWindowLag ? {
      realClockWindowApps: r.realClockWindowLag.length,
      realClockWindowLagP50Ms: round(median(r.realClockWindowLag), 0),
      realClockWindowLagMaxMs: round(Math.max(...r.realClockWindowLag), 0),
    } : {}),
    operatorWarnings: r.operatorWarnings,
    operatorConcurrency: r.operatorConcurrency,
    environment: {
      node: process.version, cores: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', memoryGiB: round(totalmem() / 1024 ** 3, 1),
      loadAverageAtEnd: loadavg().map((x) => round(x, 2)), startedAt: r.startedAt.toISOString(), benchSeconds: round(r.seconds, 0),
    },
  };
}

const ROWS: Array<[string, string, string]> = [
  ['apps', 'apps', ''],
  ['convergeSeconds', 'all Ready after', 's'],
  ['appsPerSecond', 'throughput', 'apps/s'],
  ['ceilingAppsPerSecond', 'ceiling (bare client, same ksvcs)', 'objects/s'],
  ['ceilingRatio', 'throughput / ceiling', ''],
  ['writesPerApp', 'operator writes per app', ''],
  ['writesUntilReadyPerApp', 'operator writes per app until it is Ready', ''],
  ['eventsUntilReadyPerApp', '  of which Events', ''],
  ['mostWritesUntilReady', '  most for one app', ''],
  ['operatorWriteShare', 'operator share of API writes', ''],
  ['writeRateCeilingRatio', 'API write rate / ceiling', ''],
  ['convergeCpuSeconds', 'operator CPU while converging', 's'],
  ['convergeApiServerCpuSeconds', 'API server CPU while converging', 's'],
  ['convergeDataPlaneCpuSeconds', 'data plane CPU while converging', 's'],
  ['dataPlaneWritesPerApp', 'data plane writes per app', ''],
  ['steadyStateWrites', 'steady-state writes (window)', ''],
  ['steadyStateCpuSeconds', 'steady-state operator CPU (window)', 's'],
  ['editLatencyP50Ms', 'edit -> ksvc traffic p50', 'ms'],
  ['editLatencyP99Ms', 'edit -> ksvc traffic p99', 'ms'],
  ['reportedEditLatencyP50Ms', 'edit -> traffic reported by the data plane p50', 'ms'],
  ['reportedEditLatencyP99Ms', 'edit -> traffic reported by the data plane p99', 'ms'],
  ['rssMiB', 'operator RSS', 'MiB'],
  ['heapMiB', 'operator heap used', 'MiB'],
  ['peakRssMiB', 'operator peak RSS', 'MiB'],
  ['restartReadySeconds', 'restart: caches synced', 's'],
  ['restartSyncSeconds', 'restart: queue drained', 's'],
  ['restartWrites', 'restart: writes', ''],
  ['windowLagP50Ms', 'window lag p50 (controlled clock)', 'ms'],
  ['windowLagMaxMs', 'window lag max (controlled clock)', 'ms'],
  ['realClockWindowLagP50Ms', 'window lag p50 (real clock)', 'ms'],
  ['realClockWindowLagMaxMs', 'window lag max (real clock)', 'ms'],
];

export function table(record: Record<string, unknown>): string {
  const rows = ROWS.filter(([k]) => record[k] !== undefined).map(([k, label, unit]) => [label, `${String(record[k])}${unit ? ` ${unit}` : ''}`] as const);
  const width = Math.max(...rows.map(([l]) => l.length));
  const env = record.environment as { node: string; cores: number; loadAverageAtEnd: number[] };
  return [
    `${'data plane'.padEnd(width)}  ${String(record.dataPlaneDescription)}`,
    `${'operator'.padEnd(width)}  ${String(record.operatorCommand)}, built from ${String(record.operatorBuiltFrom)}`,
    ...rows.map(([l, v]) => `${l.padEnd(width)}  ${v}`),
    `${'environment'.padEnd(width)}  node ${env.node}, ${env.cores} cores, operator --concurrency ${String(record.operatorConcurrency)}, load ${env.loadAverageAtEnd.join(' ')}`,
  ].join('\n');
}
