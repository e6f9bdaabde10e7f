// The peer comparison's output: a JSON record with each side's figures and
// the ratios ours/KServe, and a side-by-side table. Both say what ran, that
// the figures are from one run on a shared machine, and what each side's
// process did besides its controller work.
import { cpus, loadavg, totalmem } from 'node:os';
import { MiB } from './proc.ts';
import type { PeerResults } from './peer.ts';
import type { SideFigures } from './peer-measure.ts';
import { round } from './stats.ts';

/** The figures compared, per object where the work grows with N. */
function figures(s: SideFigures): Record<string, number> {
  return {
    childrenSeconds: round(s.childrenSeconds, 1),
    settledSeconds: round(s.settledSeconds, 1),
    cpuMsPerObject: round((s.cpuSeconds * 1000) / s.objects, 2),
    writesPerObject: round(s.writes / s.objects, 2),
    idleWrites: s.idleWrites,
    idleCpuSeconds: round(s.idleCpuSeconds, 2),
    rssZeroMiB: round(s.rssZeroBytes / MiB, 1),
    peakRssMiB: round(s.peakRssBytes / MiB, 1),
    settledRssMiB: round(s.settledRssBytes / MiB, 1),
  };
}

export function peerNotes(r: PeerResults): string[] {
  return [
    `one run, both sides back to back with the same N on the same API server, on a shared ${cpus().length}-CPU machine (load average ${loadavg().map((x) => x.toFixed(1)).join(' ')} at the end): timings move by +-30% between runs`,
    `ours: ${r.operatorCommand} --concurrency ${r.operatorConcurrency}, watching all namespaces; N model ServerlessApps -> N InferenceServices; no KServe runs then, so nothing reconciles the InferenceServices and each app's status reports, one minute after the app's creation, that its InferenceService has not reported on it (settled: every app has that status, then no write for 5 s)`,
    'KServe: the real KServe 0.20 manager as shipped (Knative mode, one InferenceService worker, its defaults), built from test/envtest/kserve/; the same N InferenceServices (the ones ours rendered, copied) -> N Knative Services',
    'no Knative runs: KServe needs only Knative\'s CRDs and its config-autoscaler ConfigMap, both installed; Knative\'s webhooks are not, so nothing admits or reconciles the Knative Services',
    'KServe\'s webhooks (defaulting and validating the InferenceService creates) run in its manager process, so its CPU and RSS include that admission work; ours has no webhook',
    'the rig\'s kube-controller-manager, kube-scheduler and KWOK run throughout (the API server reaches KServe\'s webhook through the rig\'s network namespace)',
    'writes: every write the controller\'s process made (audit log, by user agent), Events included; CPU: /proc utime+stime from the first create to settled (no write for 5 s); peak RSS: VmHWM',
  ];
}

export function peerRecord(r: PeerResults): Record<string, unknown> {
  const ours = figures(r.ours);
  const kserve = figures(r.kserve);
  const ratios = Object.fromEntries(Object.keys(ours).map((k) => [k, kserve[k] ? round(ours[k]! / kserve[k]!, 2) : null]));
  return {
    mode: 'peer-kserve',
    apps: r.apps,
    operatorCommand: r.operatorCommand,
    operatorBuiltFrom: r.operatorBuiltFrom,
    operatorConcurrency: r.operatorConcurrency,
    ours: { ...ours, createSeconds: round(r.ours.createSeconds, 1), writes: r.ours.writes, written: r.ours.written, idleSeconds: r.ours.idleSeconds, idleWritten: r.ours.idleWritten },
    kserve: { ...kserve, createSeconds: round(r.kserve.createSeconds, 1), writes: r.kserve.writes, written: r.kserve.written, idleSeconds: r.kserve.idleSeconds, idleWritten: r.kserve.idleWritten },
    ratiosOursToKServe: ratios,
    notes: peerNotes(r),
    environment: {
      node: process.version, cores: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', memoryGiB: round(totalmem() / 1024 ** 3, 1),
      loadAverageAtEnd: loadavg().map((x) => round(x, 2)), startedAt: r.startedAt.toISOString(), benchSeconds: round(r.seconds, 0),
    },
  };
}

const ROWS: Array<[string, string]> = [
  ['childrenSeconds', 'time to all N children (s)'],
  ['settledSeconds', 'time to its last write (s)'],
  ['cpuMsPerObject', 'CPU per object (ms)'],
  ['writesPerObject', 'API writes per object'],
  ['idleWrites', 'writes while idle'],
  ['idleCpuSeconds', 'CPU while idle (s)'],
  ['rssZeroMiB', 'RSS at zero objects (MiB)'],
  ['peakRssMiB', 'peak RSS (MiB)'],
  ['settledRssMiB', 'settled RSS, end of idle (MiB)'],
];

export function peerTable(record: Record<string, unknown>): string {
  type Side = Record<string, number | string>;
  const ours = record.ours as Side;
  const kserve = record.kserve as Side;
  const ratios = record.ratiosOursToKServe as Record<string, number | null>;
  const idle = `${String(ours.idleSeconds)} s`;
  const header = [`N = ${String(record.apps)}`, 'ours', 'KServe', 'ours/KServe'];
  const rows = [header, ...ROWS.map(([k, label]) => [label.replace('while idle', `while idle ${idle}`), String(ours[k]), String(kserve[k]), ratios[k] === null ? '-' : String(ratios[k])])];
  const widths = header.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [
    ...rows.map(line),
    '',
    `ours wrote:   ${String(ours.written)}`,
    `KServe wrote: ${String(kserve.written)}`,
    ...(ours.idleWritten || kserve.idleWritten ? [`idle: ours ${String(ours.idleWritten || 'nothing')}; KServe ${String(kserve.idleWritten || 'nothing')}`] : []),
    `operator: ${String(record.operatorCommand)}, built from ${String(record.operatorBuiltFrom)}`,
    ...(record.notes as string[]).map((n) => `- ${n}`),
  ].join('\n');
}
