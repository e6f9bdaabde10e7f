// `npm run bench -- --scenario analysis`: what continuous analysis costs. N
// apps (default 1,000, over 10 namespaces) held in a canary step with an SLO
// gated on the SRE workbook's four windows at the shortest cadence (10 s), so
// that each asks for 4 queries every 10 s. A loopback Prometheus (answering a
// healthy error ratio; SIMULATED) counts what reaches it per namespace; the
// operator's CPU is read from /proc. Measured twice over the same apps: with
// the per-namespace query budget as the chart sets it, and with it off, so the
// budget is shown biting (queries per second held at namespaces x budget,
// rounds waiting with their Events and the budget metric) and what it saves.
import { LoopbackServer, promVector } from '../test/support/http-server.ts';
import { metricValue, type OperatorProcess } from '../test/support/operator-process.ts';
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { DEFAULT_ANALYSIS_QUERIES_PER_NAMESPACE } from '../src/util/budget-defaults.ts';
import { roundQueries } from '../src/rollout/analysis.ts';
import { Kinds } from '../src/util/kinds.ts';
import { OPERATOR_USER_AGENT, type BenchEnv } from './environment.ts';
import { sampleProcess } from './proc.ts';
import { sleep } from './stats.ts';
import { appRefs, benchApp, forEachBounded, imageOf, IN_FLIGHT, type AppRef } from './workload.ts';
import { waitFor } from '../test/support/wait.ts';

const CADENCE_S = 10;
const ERROR_RATIO = '(sum(increase(requests_total{app="{{app}}",version="{{version}}",code=~"5.."}[{{window}}])) or vector(0)) / sum(increase(requests_total{app="{{app}}",version="{{version}}"}[{{window}}]))';

/** The canary every app is held in: one step of 50% for a day, gated on an SLO read every 10 s. */
const gated = (ref: AppRef): ServerlessApp => benchApp(ref, imageOf(ref, 2), {
  rollout: { steps: [50], interval: '24h', analysis: { prometheus: { provider: 'main' }, cadence: `${CADENCE_S}s`, slo: { objective: 99.9, errorRatio: ERROR_RATIO } } },
});

export interface AnalysisRun {
  /** Queries a second one namespace may send (0: no budget). */
  budgetPerNamespace: number;
  windowSeconds: number;
  queriesPerSecond: number;
  /** The busiest namespace's queries a second. */
  busiestNamespaceQps: number;
  /** Operator CPU seconds per second of the window. */
  operatorCpu: number;
  /** Rounds that waited for their namespace's budget or a slot (serverlessapp_budget_refusals_total{budget="analysis"}), per second. */
  budgetWaitsPerSecond: number;
  /** Status writes and Events the operator sent, per second. */
  writesPerSecond: number;
}

export interface AnalysisCost {
  apps: number;
  namespaces: number;
  cadenceSeconds: number;
  queriesPerRound: number;
  /** What the apps ask for: apps x queries per round / cadence. */
  demandQps: number;
  runs: AnalysisRun[];
}

export async function measureAnalysisCost(env: BenchEnv, namespaces: string[], count: number, windowMs: number, log: (line: string) => void): Promise<AnalysisCost> {
  const prom = await new LoopbackServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(promVector(0.0001));
    void req;
  }).start();
  const refs = appRefs(count, namespaces);
  const queriesPerRound = roundQueries(gated(refs[0]!).spec.rollout!.analysis!);
  try {
    const start = (budget: number) => env.startOperator({ args: ['--analysis-providers', `main=${prom.url}`, '--analysis-queries-per-namespace', String(budget)] });
    let op = await start(DEFAULT_ANALYSIS_QUERIES_PER_NAMESPACE);
    log(`${count} apps over ${namespaces.length} namespaces: first versions`);
    await forEachBounded(refs, IN_FLIGHT, (r) => env.client.apply(benchApp(r, imageOf(r, 1))));
    await untilEvery(env, namespaces, count, (a) => a.status?.phase === 'Stable', 'every first version Stable');
    log('every app into a canary step gated on its SLO (4 queries every 10 s each)');
    await forEachBounded(refs, IN_FLIGHT, (r) => env.client.apply(gated(r)));
    await untilEvery(env, namespaces, count, (a) => a.status?.phase === 'Canary' && a.status.canary?.weight === 50, 'every app at its 50% step');
    const runs: AnalysisRun[] = [];
    for (const budget of [DEFAULT_ANALYSIS_QUERIES_PER_NAMESPACE, 0]) {
      if (runs.length) {
        await op.stop();
        op = await start(budget);
      }
      // A minute to settle into the cadence (rounds waiting for the budget included), then the window.
      await sleep(30_000);
      const run = await measureWindow(env, op, prom, budget, windowMs);
      log(`  budget ${budget || 'off'}: ${run.queriesPerSecond.toFixed(1)} queries/s (busiest namespace ${run.busiestNamespaceQps.toFixed(1)}), operator CPU ${(run.operatorCpu * 100).toFixed(1)}%, ${run.budgetWaitsPerSecond.toFixed(1)} budget waits/s, ${run.writesPerSecond.toFixed(1)} writes/s`);
      runs.push(run);
    }
    await op.stop();
    return { apps: count, namespaces: namespaces.length, cadenceSeconds: CADENCE_S, queriesPerRound, demandQps: (count * queriesPerRound) / CADENCE_S, runs };
  } finally {
    await prom.stop();
  }
}

async function measureWindow(env: BenchEnv, op: OperatorProcess, prom: LoopbackServer, budget: number, windowMs: number): Promise<AnalysisRun> {
  const waits = async () => metricValue(await op.metrics(), 'serverlessapp_budget_refusals_total', { budget: 'analysis' });
  const since = new Date();
  const before = { queries: prom.requests.length, cpu: sampleProcess(op.pid).cpuSeconds, waits: await waits() };
  await sleep(windowMs);
  const until = new Date();
  const queries = prom.requests.slice(before.queries);
  const perNamespace = new Map<string, number>();
  for (const q of queries) {
    const ns = new URL(q.url, 'http://x').searchParams.get('namespace') ?? '';
    perNamespace.set(ns, (perNamespace.get(ns) ?? 0) + 1);
  }
  const seconds = windowMs / 1000;
  const writes = env.cp.auditWrites({ since, userAgentPrefix: OPERATOR_USER_AGENT }).filter((w) => w.timestamp <= until).length;
  // The server keeps every request: drop them once counted, the next window counts from here.
  prom.requests.length = 0;
  return {
    budgetPerNamespace: budget, windowSeconds: seconds,
    queriesPerSecond: queries.length / seconds,
    busiestNamespaceQps: Math.max(0, ...perNamespace.values()) / seconds,
    operatorCpu: (sampleProcess(op.pid).cpuSeconds - before.cpu) / seconds,
    budgetWaitsPerSecond: ((await waits()) - before.waits) / seconds,
    writesPerSecond: writes / seconds,
  };
}

async function untilEvery(env: BenchEnv, namespaces: string[], count: number, ok: (a: ServerlessApp) => boolean, what: string): Promise<void> {
  let last = 0;
  await waitFor(what, async () => {
    let n = 0;
    for (const ns of namespaces) n += (await env.client.list<ServerlessApp>(Kinds.ServerlessApp, ns)).items.filter(ok).length;
    last = n;
    return n >= count;
  }, { timeoutMs: 900_000, intervalMs: 2_000 }).catch((e: Error) => { throw new Error(`${e.message}: ${last} of ${count}`); });
}

export function analysisTable(r: AnalysisCost): string {
  const rows = r.runs.map((x) => `| ${x.budgetPerNamespace ? `${x.budgetPerNamespace}/s per namespace` : 'off'} | ${x.queriesPerSecond.toFixed(1)} | ${x.busiestNamespaceQps.toFixed(1)} | ${(x.operatorCpu * 100).toFixed(1)}% | ${x.budgetWaitsPerSecond.toFixed(1)} | ${x.writesPerSecond.toFixed(1)} |`);
  return [
    `continuous analysis: ${r.apps} apps over ${r.namespaces} namespaces in a gated step, ${r.queriesPerRound} queries a round every ${r.cadenceSeconds} s: they ask for ${r.demandQps.toFixed(0)} queries/s`,
    '| budget | queries/s sent | busiest namespace | operator CPU (of a core) | budget waits/s | writes/s |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
