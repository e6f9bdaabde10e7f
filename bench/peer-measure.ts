// One side of the peer comparison: a controller process, alone with nothing
// to do, is handed N parent objects at once and makes one child for each.
// The same measures for either side: its RSS at zero objects, the time until
// the N children exist, the CPU time and API writes it spent until its writes
// stopped (settled), its peak RSS, and then, with nothing changing, the writes
// and CPU of an idle window and the RSS at its end.
import type { AuditWrite } from '../test/envtest/audit.ts';
import type { AuditTail } from './audit-tail.ts';
import { sampleProcess } from './proc.ts';
import { secondsSince, sleep } from './stats.ts';

export interface PeerSide {
  /** What the report calls it, e.g. "serverlessapp-operator (node dist/main.js)". */
  label: string;
  /** The controller's own process (not a wrapper): /proc is read for it. */
  pid: number;
  /** Its writes are the audit log's entries whose user agent starts with this. */
  userAgent: string;
  /** How many of its children exist now (a watch over its namespaces). */
  children(): number;
  /** Writes the N parent objects (the benchmark's client, 32 in flight). */
  createParents(): Promise<void>;
  /** How many parents carry a status the controller wrote, when it may write one later than its children. */
  reported?(): number;
}

export interface PeerTiming {
  /** Zero-object RSS is read this long after the controller was ready. */
  startQuietMs: number;
  /** Settled: no write from the controller for this long once its children exist. */
  quietMs: number;
  idleMs: number;
  timeoutMs: number;
}

export interface SideFigures {
  label: string;
  objects: number;
  /** Until the benchmark's last parent create was answered. */
  createSeconds: number;
  /** Until all N children existed (the watch saw the last). */
  childrenSeconds: number;
  /** Until the controller's last write of the burst. */
  settledSeconds: number;
  /** Controller CPU (user + system) from the first create to settled. */
  cpuSeconds: number;
  writes: number;
  /** e.g. "1000 x patch inferenceservices.serving.kserve.io, 1000 x patch serverlessapps.serverlessapp.io/status" */
  written: string;
  idleSeconds: number;
  idleWrites: number;
  idleWritten: string;
  idleCpuSeconds: number;
  rssZeroBytes: number;
  /** VmHWM at settled: the process's peak since it started, through the burst. */
  peakRssBytes: number;
  /** RSS at the end of the idle window. */
  settledRssBytes: number;
}

export async function measureSide(side: PeerSide, objects: number, audit: AuditTail, t: PeerTiming, log: (l: string) => void): Promise<SideFigures> {
  await sleep(t.startQuietMs);
  const zero = sampleProcess(side.pid);
  const mine = (w: AuditWrite) => w.userAgent.startsWith(side.userAgent);
  const burstStart = new Date();
  const start = performance.now();
  let createSeconds = 0;
  let createError: unknown;
  const creating = side.createParents().then(() => { createSeconds = secondsSince(start); }, (err: unknown) => { createError = err; });
  let lastLog = start;
  while (side.children() < objects) {
    if (createError) throw createError;
    if (secondsSince(start) * 1000 > t.timeoutMs) throw new Error(`${side.label}: ${side.children()}/${objects} children after ${t.timeoutMs / 1000} s`);
    await sleep(50);
    if (performance.now() - lastLog >= 5_000) {
      lastLog = performance.now();
      log(`  ${side.children()}/${objects} children after ${secondsSince(start).toFixed(0)} s`);
    }
  }
  const childrenSeconds = secondsSince(start);
  await creating;
  if (createError) throw createError;

  // Settled: every parent reported on (when the side says), then no write for quietMs.
  const lastWrite = async () => {
    for (;;) {
      if (side.reported && side.reported() < objects) {
        if (secondsSince(start) * 1000 > t.timeoutMs) throw new Error(`${side.label}: ${side.reported()}/${objects} parents reported on after ${t.timeoutMs / 1000} s`);
        await sleep(500);
        continue;
      }
      const last = audit.writes().filter((w) => w.timestamp >= burstStart && mine(w)).at(-1)?.timestamp ?? burstStart;
      if (Date.now() - last.getTime() >= t.quietMs) return last;
      if (secondsSince(start) * 1000 > t.timeoutMs) throw new Error(`${side.label} was still writing after ${t.timeoutMs / 1000} s`);
      await sleep(500);
    }
  };
  const settledAt = await lastWrite();
  const settled = sampleProcess(side.pid);
  const idleStart = new Date();
  const burstWrites = audit.writes().filter((w) => w.timestamp >= burstStart && w.timestamp < idleStart && mine(w));
  log(`  settled ${((settledAt.getTime() - burstStart.getTime()) / 1000).toFixed(1)} s after the first create; ${burstWrites.length} writes; idle for ${t.idleMs / 1000} s`);

  await sleep(t.idleMs);
  const idleEnd = new Date();
  const end = sampleProcess(side.pid);
  const idleWrites = audit.writes().filter((w) => w.timestamp >= idleStart && w.timestamp < idleEnd && mine(w));
  return {
    label: side.label, objects, createSeconds, childrenSeconds,
    settledSeconds: (settledAt.getTime() - burstStart.getTime()) / 1000,
    cpuSeconds: settled.cpuSeconds - zero.cpuSeconds,
    writes: burstWrites.length, written: describeWrites(burstWrites),
    idleSeconds: t.idleMs / 1000, idleWrites: idleWrites.length, idleWritten: describeWrites(idleWrites), idleCpuSeconds: end.cpuSeconds - settled.cpuSeconds,
    rssZeroBytes: zero.rssBytes, peakRssBytes: settled.peakRssBytes, settledRssBytes: end.rssBytes,
  };
}

/** Writes counted by verb and group-qualified resource ("services" is both Knative's and core's), refusals noted by code. */
export function describeWrites(writes: AuditWrite[]): string {
  const counts = new Map<string, { n: number; refused: Map<number, number> }>();
  for (const w of writes) {
    const key = `${w.verb} ${w.resource}${w.apiGroup ? `.${w.apiGroup}` : ''}${w.subresource ? `/${w.subresource}` : ''}`;
    const entry = counts.get(key) ?? { n: 0, refused: new Map<number, number>() };
    entry.n++;
    if (w.code !== undefined && w.code >= 300) entry.refused.set(w.code, (entry.refused.get(w.code) ?? 0) + 1);
    counts.set(key, entry);
  }
  return [...counts].map(([k, { n, refused }]) => `${n} x ${k}${refused.size ? ` (${[...refused].map(([code, m]) => `${m} answered ${code}`).join(', ')})` : ''}`).join(', ');
}
