// Throughput: N apps created at once until every one is Ready, against the
// ceiling of the same API server taking the same number of rendered Knative
// Services from a bare client with the same concurrency. The ratio says how
// much of the API server's capacity the operator's pipeline turns into apps.
// With the real Knative the ceiling's Services pass its webhooks as the
// operator's do, and Ready waits for real revisions (KWOK pods), so the ratio
// then includes the data plane's pace.
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import type { AuditWrite } from '../test/envtest/audit.ts';
import { Kinds } from '../src/util/kinds.ts';
import type { OperatorProcess } from '../test/support/operator-process.ts';
import { BENCH_USER_AGENT, OPERATOR_USER_AGENT, type BenchEnv } from './environment.ts';
import { cpuDuring } from './proc.ts';
import { describeWrites } from './steady.ts';
import { isConditionTrue } from '../src/util/conditions.ts';
import { secondsSince, sleep } from './stats.ts';
import { SlimWatch } from './watch.ts';
import { IN_FLIGHT, benchApp, deleteKnativeServices, forEachBounded, imageOf, renderedKnativeService, type AppRef } from './workload.ts';

export interface Ceiling {
  seconds: number;
  perSecond: number;
}

/** Writes N rendered Knative Services into `namespace` (nobody watches it), then deletes them. */
export async function measureCeiling(env: BenchEnv, refs: AppRef[], namespace: string): Promise<Ceiling> {
  const objects = refs.map((r) => renderedKnativeService({ ...benchApp(r, imageOf(r, 1)), metadata: { name: r.name, namespace } }));
  const start = performance.now();
  await forEachBounded(objects, IN_FLIGHT, (o) => env.client.apply(o, { kind: Kinds.KnativeService }));
  const seconds = secondsSince(start);
  await deleteKnativeServices(env.kc, namespace);
  return { seconds, perSecond: refs.length / seconds };
}

export interface AppState {
  ready: boolean;
  /** status.observedGeneration === metadata.generation */
  current: boolean;
}

export function watchApps(env: BenchEnv): SlimWatch<AppState> {
  return new SlimWatch<AppState>(env.kc, Kinds.ServerlessApp, (o) => {
    const a = o as unknown as ServerlessApp;
    return {
      ready: isConditionTrue(a.status?.conditions, 'Ready'),
      current: a.status?.observedGeneration === a.metadata.generation,
    };
  });
}

export interface Convergence {
  createSeconds: number;
  seconds: number;
  perSecond: number;
  /** CPU seconds used meanwhile by the operator, the API server, etcd, the data plane (the stand-in, or every rig process) and this benchmark. */
  cpuSeconds: Record<'operator' | 'apiServer' | 'etcd' | 'dataPlane' | 'bench', number>;
  /** API writes by who made them; the data plane's are everyone else's (Knative, KServe, kube-controller-manager, KWOK, or the stand-in). */
  writes: { operator: number; dataPlane: number; bench: number; total: number };
  /** The operator's writes by verb and resource, e.g. "1000 x patch services". */
  operatorWrites: string;
  /** The operator's writes for each app made before that app was first Ready (at its generation): creation to Ready. */
  operatorWritesUntilReady: number;
  /** Of those, the Events. */
  eventsUntilReady: number;
  /** The most writes one app took from creation to Ready. */
  mostWritesUntilReady: number;
  startedAt: Date;
  endedAt: Date;
}

const ready = (s: AppState) => s.ready && s.current;

export async function measureConvergence(env: BenchEnv, op: OperatorProcess, refs: AppRef[], apps: SlimWatch<AppState>, log: (l: string) => void): Promise<Convergence> {
  const dataPlane = Object.fromEntries(env.pids.dataPlane.map((pid, i) => [`dataPlane${i}`, pid]));
  const pids = { operator: op.pid, apiServer: env.pids.apiServer, etcd: env.pids.etcd, bench: process.pid, ...dataPlane };
  const { result, cpuSeconds } = await cpuDuring(pids, () => converge(env, refs, apps, log));
  const dataPlaneSeconds = Object.keys(dataPlane).reduce((sum, k) => sum + (cpuSeconds[k] ?? 0), 0);
  return { ...result, cpuSeconds: { operator: cpuSeconds.operator ?? 0, apiServer: cpuSeconds.apiServer ?? 0, etcd: cpuSeconds.etcd ?? 0, bench: cpuSeconds.bench ?? 0, dataPlane: dataPlaneSeconds } };
}

async function converge(env: BenchEnv, refs: AppRef[], apps: SlimWatch<AppState>, log: (l: string) => void): Promise<Omit<Convergence, 'cpuSeconds'>> {
  const startedAt = new Date();
  const start = performance.now();
  // When each app was first Ready at its generation, on the wall clock (the audit log's).
  const readyAt = new Map<string, number>();
  const off = apps.on((seen) => { if (ready(seen.value) && !readyAt.has(seen.key)) readyAt.set(seen.key, Date.now()); });
  const creating = forEachBounded(refs, IN_FLIGHT, (r) => env.client.apply(benchApp(r, imageOf(r, 1))));
  let createSeconds = 0;
  void creating.then(() => { createSeconds = secondsSince(start); });
  let lastLog = start;
  while (apps.count(ready) < refs.length) {
    await sleep(50);
    if (performance.now() - lastLog >= 5_000) {
      lastLog = performance.now();
      log(`  ${apps.count(ready)}/${refs.length} ready after ${secondsSince(start).toFixed(0)} s`);
    }
  }
  const seconds = secondsSince(start);
  off();
  await creating;
  const endedAt = new Date();
  const writes = env.cp.auditWrites({ since: startedAt }).filter((w) => w.timestamp <= endedAt);
  const by = (ua: string) => writes.filter((w) => w.userAgent.startsWith(ua)).length;
  const ours = writes.filter((w) => w.userAgent.startsWith(OPERATOR_USER_AGENT));
  const operatorWrites = describeWrites(ours);
  // An app became Ready with the operator's last status write before the watch saw it Ready: that
  // write's audit time is the moment, not the watch's, which lags it by up to a second under load.
  const appKey = (w: AuditWrite) => `${w.namespace}/${appOf(w.resource, w.name ?? '')}`;
  const readyWrite = new Map<string, number>();
  for (const w of ours) {
    const seen = readyAt.get(appKey(w));
    if (w.resource === 'serverlessapps' && w.subresource === 'status' && seen !== undefined && w.timestamp.getTime() <= seen) readyWrite.set(appKey(w), w.timestamp.getTime());
  }
  const beforeReady = ours.filter((w) => {
    const at = readyWrite.get(appKey(w));
    return at !== undefined && w.timestamp.getTime() <= at;
  });
  return {
    operatorWritesUntilReady: beforeReady.length, eventsUntilReady: beforeReady.filter((w) => w.resource === 'events').length,
    mostWritesUntilReady: Math.max(0, ...[...Map.groupBy(beforeReady, appKey).values()].map((ws) => ws.length)),
    createSeconds, seconds, perSecond: refs.length / seconds,
    writes: { operator: by(OPERATOR_USER_AGENT), dataPlane: writes.length - by(OPERATOR_USER_AGENT) - by(BENCH_USER_AGENT), bench: by(BENCH_USER_AGENT), total: writes.length }, operatorWrites,
    startedAt, endedAt,
  };
}

/** The bench app an operator write was about, from the object's name (apps are named app-N). */
function appOf(resource: string, name: string): string {
  if (resource === 'virtualservices') return name.replace(/-routes$/, '');
  if (resource === 'events') return name.split('.')[0]!;
  if (resource === 'revisions') return name.replace(/-[0-9a-f]{8}$/, '');
  return name;
}
