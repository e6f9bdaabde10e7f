// `npm run bench -- --scenario plan`: the latency of `kubectl sapp plan` with
// many apps in the cluster (10,000 by default). The apps are ServerlessApps
// only (no operator runs: a plan reads the app, its children and revisions
// by name and label, never a list of all apps; the measured app names a host,
// so it also lists its own namespace's 1,000 apps, as the operator's host and
// budget rules need).
// Each run is the built CLI as a user runs it, a fresh `node
// dist/cli/kubectl-sapp.js plan -f FILE` process, timed from spawn to exit;
// `--help` runs are timed too, so process start is told apart from the plan.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import type { BenchEnv } from './environment.ts';
import { median, percentile, round } from './stats.ts';
import { IN_FLIGHT, appRefs, benchApp, forEachBounded, imageOf } from './workload.ts';

const CLI = fileURLToPath(new URL('../dist/cli/kubectl-sapp.js', import.meta.url));

export interface PlanResult {
  apps: number;
  runs: number;
  /** Wall time of `plan -f` (a canary edit of one app), spawn to exit. */
  planMs: { p50: number; p90: number; max: number };
  /** Wall time of `--help`: node's start and the CLI's imports, no request. */
  startMs: { p50: number };
  /** Exit codes seen (2: changes planned). */
  exitCodes: number[];
}

function timed(args: string[]): Promise<{ ms: number; code: number; stderr: string }> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString('utf8'); });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ ms: performance.now() - started, code: code ?? -1, stderr }));
  });
}

export async function measurePlan(env: BenchEnv, apps: number, namespaces: string[], runs: number, log: (line: string) => void): Promise<PlanResult> {
  const refs = appRefs(apps, namespaces);
  log(`plan: creating ${apps} ServerlessApps`);
  await forEachBounded(refs, IN_FLIGHT, (ref) => env.client.apply(benchApp(ref, imageOf(ref, 1))));
  const target = refs[0]!;
  const file = join(mkdtempSync(join(tmpdir(), 'bench-plan-')), 'app.yaml');
  writeFileSync(file, stringify(benchApp(target, imageOf(target, 2), { rollout: { steps: [10, 50], interval: '5m' } })));
  const args = ['plan', '-f', file, '-n', target.namespace, '--kubeconfig', env.cp.kubeconfigPath];
  // One run first: the API server's caches and the page cache warm, as on a user's second plan.
  const first = await timed(args);
  if (first.code !== 2) throw new Error(`kubectl sapp plan exited ${first.code}, expected 2 (changes): ${first.stderr}`);
  const plans: number[] = [];
  const codes = new Set<number>();
  for (let i = 0; i < runs; i++) {
    const r = await timed(args);
    plans.push(r.ms);
    codes.add(r.code);
  }
  const starts: number[] = [];
  for (let i = 0; i < Math.min(runs, 5); i++) starts.push((await timed(['--help'])).ms);
  return {
    apps, runs,
    planMs: { p50: round(median(plans), 0), p90: round(percentile(plans, 90), 0), max: round(Math.max(...plans), 0) },
    startMs: { p50: round(median(starts), 0) },
    exitCodes: [...codes].sort(),
  };
}

export function planTable(r: PlanResult): string {
  return [
    `kubectl sapp plan with ${r.apps} apps in the cluster (${r.runs} runs of the built CLI, spawn to exit)`,
    `  plan -f (canary edit)   p50 ${r.planMs.p50} ms, p90 ${r.planMs.p90} ms, max ${r.planMs.max} ms   (goal: < 500 ms)`,
    `  --help (process start)  p50 ${r.startMs.p50} ms`,
    `  exit codes              ${r.exitCodes.join(', ')} (2: changes planned)`,
  ].join('\n');
}
