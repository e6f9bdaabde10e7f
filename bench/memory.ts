// Memory per app: the operator's RSS against the number of the largest apps a
// tenant can submit, each count measured on a fresh operator (the built dist/
// with the image's node flags, and the heap V8 gives a process held to the
// chart's memory limit) once it has synced and reconciled every app. Two
// series: the largest app the operator reads (a spec just under
// MAX_APP_SPEC_BYTES, served) and the largest the CRD admits (about 1.3 MiB,
// refused for its size without being parsed). The chart's limit and the
// headroom left are reported beside them.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { MAX_APP_SPEC_BYTES } from '../src/api/v1alpha1/serverlessapp.ts';
import { parseQuantity } from '../src/api/v1alpha1/quantity.ts';
import { Kinds } from '../src/util/kinds.ts';
import { largestAdmittedApp, largestReadApp } from '../test/support/large-apps.ts';
import type { BenchEnv } from './environment.ts';
import { counters, waitIdle } from './operator-metrics.ts';
import { MiB, sampleProcess } from './proc.ts';
import { forEachBounded } from './workload.ts';

export const MEMORY_NAMESPACES = { read: 'bench-memory-read', refused: 'bench-memory-refused' } as const;
export type MemorySeries = keyof typeof MEMORY_NAMESPACES;

export interface MemoryPoint {
  series: MemorySeries;
  apps: number;
  /** Bytes of JSON of each app as created. */
  appBytes: number;
  rssMiB: number;
  peakRssMiB: number;
  heapUsedMiB: number;
  /** From the process's start until every app was reconciled and the queue quiet. */
  syncSeconds: number;
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The chart's memory limit (values.yaml resources.limits.memory), in bytes. */
export function chartMemoryLimitBytes(values = readFileSync(join(root, 'charts/serverlessapp-operator/values.yaml'), 'utf8')): number {
  const limits = /^resources:\n(?:[ \t]+.*\n)*?[ \t]+limits:\n(?:[ \t]+.*\n)*?[ \t]+memory:\s*(\S+)/m.exec(values);
  if (!limits) throw new Error('charts/serverlessapp-operator/values.yaml sets no resources.limits.memory');
  return parseQuantity(limits[1]!);
}

/**
 * The old-space limit V8 picks in a pod held to `limitBytes`: node hands V8 the cgroup's limit and V8
 * takes a quarter of it, twice that with 64-bit pointers (Heap::HeapSizeFromPhysicalMemory). Passed
 * as --max-old-space-size, so the process outside a pod runs out of heap where the pod would.
 */
export function podHeapMiB(limitBytes: number): number {
  return Math.floor(limitBytes / 2 / MiB);
}

const MAKE: Record<MemorySeries, (namespace: string, name: string) => ServerlessApp> = { read: largestReadApp, refused: largestAdmittedApp };

export async function measureMemory(env: BenchEnv, o: { counts: Record<MemorySeries, number[]>; log: (line: string) => void }): Promise<MemoryPoint[]> {
  const points: MemoryPoint[] = [];
  const heapMiB = podHeapMiB(chartMemoryLimitBytes());
  for (const series of ['read', 'refused'] as const) {
    const namespace = MEMORY_NAMESPACES[series];
    let created = 0;
    for (const apps of [...o.counts[series]].sort((a, b) => a - b)) {
      const more = Array.from({ length: apps - created }, (_, i) => MAKE[series](namespace, `app-${created + i}`));
      o.log(`memory ${series}: creating ${more.length} apps (${apps} in all)`);
      // Few at once: each is up to 1.3 MiB, and etcd writes them one by one.
      await forEachBounded(more, 8, (a) => env.client.create(Kinds.ServerlessApp, a));
      created = apps;
      const op = await env.startOperator({ args: ['--namespaces', namespace], nodeArgs: [`--max-old-space-size=${heapMiB}`] });
      try {
        const idle = await waitIdle(op, { minReconciles: apps, quietMs: 1_000, pollMs: 100, timeoutMs: 900_000 });
        const heap = (await counters(op)).heapUsedBytes;
        const s = sampleProcess(op.pid);
        const point: MemoryPoint = {
          series, apps, appBytes: Buffer.byteLength(JSON.stringify(MAKE[series](namespace, 'app-0'))),
          rssMiB: round(s.rssBytes / MiB), peakRssMiB: round(s.peakRssBytes / MiB), heapUsedMiB: round(heap / MiB),
          syncSeconds: round((idle.lastChangeAt - op.startedAt) / 1000),
        };
        o.log(`  ${JSON.stringify(point)}`);
        points.push(point);
      } finally {
        await op.kill();
      }
    }
  }
  return points;
}

export function memoryTable(points: MemoryPoint[], limitBytes = chartMemoryLimitBytes()): string {
  const limit = limitBytes / MiB;
  const rows = points.map((p) => `| ${p.series === 'read' ? `largest read (${(p.appBytes / 1024).toFixed(0)} KiB)` : `largest admitted, refused (${(p.appBytes / MiB).toFixed(2)} MiB)`} | ${p.apps} | ${p.rssMiB} | ${p.peakRssMiB} | ${p.heapUsedMiB} | ${(limit / p.peakRssMiB).toFixed(1)}x | ${p.syncSeconds} |`);
  return [
    `chart memory limit ${limit} MiB, node --max-old-space-size=${podHeapMiB(limitBytes)}; MAX_APP_SPEC_BYTES ${MAX_APP_SPEC_BYTES}`,
    '| apps | count | RSS MiB | peak RSS MiB | heap used MiB | limit ÷ peak | sync s |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}
