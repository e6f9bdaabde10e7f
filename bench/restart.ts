// Restart: the operator is killed and a new one started with every app in
// place. Measured from the new process's start to its caches being synced
// (/readyz) and its queue drained (every app reconciled once and the count
// no longer moving), and the writes it made meanwhile: a restart must find
// nothing to change.
import type { OperatorProcess } from '../test/support/operator-process.ts';
import { PROGRESS_MS } from '../src/planner/status.ts';
import { OPERATOR_USER_AGENT, type BenchEnv } from './environment.ts';
import { LIST_PAGE_SIZE } from '../src/runtime/informer.ts';
import { Kinds } from '../src/util/kinds.ts';
import { counters, waitIdle } from './operator-metrics.ts';
import { refusedModelApp } from './storms.ts';
import { forEachBounded, IN_FLIGHT } from './workload.ts';
import { describeWrites } from './steady.ts';

export interface Restart {
  operator: OperatorProcess;
  readySeconds: number;
  syncSeconds: number;
  reconciles: number;
  writes: number;
  written: string;
}

/** `signal` SIGTERM lets a profiled operator (--cpu-prof) write its profile on the way out; `nodeArgs` go to the new one (--cpu-prof). */
export async function measureRestart(env: BenchEnv, old: OperatorProcess, apps: number, o: { signal?: NodeJS.Signals; nodeArgs?: string[] } = {}): Promise<Restart> {
  const signal = o.signal ?? 'SIGKILL';
  // Whatever the old one was still doing is not the restart's to count, including status progress it
  // holds back for up to PROGRESS_MS (a restart writes that at once: it has not written it yet).
  await waitIdle(old, { quietMs: PROGRESS_MS + 1_000 });
  await old.kill(signal);
  const since = new Date();
  const operator = await env.startOperator(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {});
  const readySeconds = (performance.now() - operator.startedAt) / 1000;
  const idle = await waitIdle(operator, { minReconciles: apps, quietMs: 1_000, pollMs: 100 });
  const syncSeconds = (idle.lastChangeAt - operator.startedAt) / 1000;
  const writes = env.cp.auditWrites({ since, userAgentPrefix: OPERATOR_USER_AGENT });
  return { operator, readySeconds, syncSeconds, reconciles: idle.reconciles, writes: writes.length, written: describeWrites(writes) };
}

export interface RefusedRestart {
  operator: OperatorProcess;
  apps: number;
  emptySyncSeconds: number;
  listSeconds: number;
  syncSeconds: number;
  readySeconds: number;
  writes: number;
  ratio: number;
  goal: number;
}

/**
 * Issue 34's restart: the operator restarted with `count` refused model apps in one namespace, against the
 * floor it cannot beat: an empty namespace's restart plus one bare LIST of those apps (paged as the
 * operator's informer pages it). Goal: sync within 1.5 times that.
 */
export async function measureRefusedRestart(env: BenchEnv, op: OperatorProcess, namespace: string, count: number, log: (line: string) => void, nodeArgs?: string[]): Promise<RefusedRestart> {
  log(`restart of an empty namespace (${namespace})`);
  const empty = await measureRestart(env, op, 0);
  const emptySyncSeconds = Math.max(empty.readySeconds, empty.syncSeconds);
  log(`  synced in ${emptySyncSeconds.toFixed(2)} s; creating ${count} refused model apps`);
  const refs = Array.from({ length: count }, (_, i) => ({ namespace, name: `refused-${i}` }));
  const before = (await counters(empty.operator)).reconciles;
  await forEachBounded(refs, IN_FLIGHT, (r) => env.client.apply(refusedModelApp(r, 0)));
  await waitIdle(empty.operator, { minReconciles: before + count, quietMs: 2_000 });
  const listStarted = performance.now();
  let items = 0;
  for (let page: string | undefined = ''; page !== undefined;) {
    const list: { items: unknown[]; metadata?: { continue?: string } } = await env.client.list(Kinds.ServerlessApp, namespace, { limit: LIST_PAGE_SIZE, ...(page ? { continue: page } : {}) });
    items += list.items.length;
    page = list.metadata?.continue || undefined;
  }
  const listSeconds = (performance.now() - listStarted) / 1000;
  log(`  a bare LIST of ${items} apps took ${listSeconds.toFixed(2)} s; restarting with them`);
  const full = await measureRestart(env, empty.operator, count, nodeArgs ? { nodeArgs } : {});
  const syncSeconds = Math.max(full.readySeconds, full.syncSeconds);
  return {
    operator: full.operator, apps: count, emptySyncSeconds, listSeconds, syncSeconds, readySeconds: full.readySeconds, writes: full.writes,
    ratio: Math.round((syncSeconds / (emptySyncSeconds + listSeconds)) * 100) / 100, goal: 1.5,
  };
}

export function refusedRestartTable(r: RefusedRestart): string {
  return [
    `restart with ${r.apps} refused model apps: ready ${r.readySeconds.toFixed(2)} s, synced ${r.syncSeconds.toFixed(2)} s, ${r.writes} writes`,
    `floor: an empty namespace's restart ${r.emptySyncSeconds.toFixed(2)} s + a bare LIST of the apps ${r.listSeconds.toFixed(2)} s`,
    `ratio ${r.ratio}${r.ratio <= r.goal ? '' : '  > goal'} (goal <= ${r.goal})`,
  ].join('\n');
}
