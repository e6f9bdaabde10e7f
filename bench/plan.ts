// `npm run bench -- --scenario plan`: the latency of `kubectl sapp plan` with
// many apps in the cluster (10,000 by default). The apps are ServerlessApps
// only (no operator runs: a plan reads the app, its children and revisions
// by name and label, never a list of all apps; the measured app names a host,
// so it also lists its own namespace's 1,000 apps, as the operator's host and
// budget rules need).
// Each run is the built CLI as a user runs it, a fresh `node
// dist/cli/kubectl-sapp.js plan -f FILE` process, timed from spawn to exit;
// `--help` runs are timed too, so process start is told apart from the plan.
// `--plan-rounds N` measures N rounds on the same 10,000 apps (the figures
// are then medians over the rounds); `--plan-baseline DIR` also times another
// build (DIR/dist/cli/kubectl-sapp.js, e.g. a copy of dist/ built from an
// earlier commit beside a node_modules link), run by run interleaved with this
// one, so a before/after comparison sees the same cluster and the same load.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import type { BenchEnv } from './environment.ts';
import { median, percentile, round } from './stats.ts';
import { IN_FLIGHT, appRefs, benchApp, forEachBounded, imageOf } from './workload.ts';

const CLI = fileURLToPath(new URL('../dist/cli/kubectl-sapp.js', import.meta.url));

interface Figures {
  /** Wall time of `plan -f` (a canary edit of one app), spawn to exit. */
  planMs: { p50: number; p90: number; max: number };
  /** Wall time of `--help`: node's start and the CLI's imports, no request. */
  startMs: { p50: number };
}

export interface PlanResult extends Figures {
  apps: number;
  runs: number;
  /** Rounds of `runs` plans each; with more than one, each figure is the median over the rounds. */
  rounds: Figures[];
  /** Exit codes seen (2: changes planned). */
  exitCodes: number[];
  /** The other build timed beside this one (--plan-baseline), same shape. */
  baseline?: { cli: string; rounds: Figures[] } & Figures;
}

function timed(cli: string, args: string[]): Promise<{ ms: number; code: number; stderr: string }> {
  const started = performance.now();
  const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString('utf8'); });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ ms: performance.now() - started, code: code ?? -1, stderr }));
  });
}

export async function measurePlan(env: BenchEnv, apps: number, namespaces: string[], runs: number, log: (line: string) => void, opts: { rounds?: number; baseline?: string } = {}): Promise<PlanResult> {
  const refs = appRefs(apps, namespaces);
  log(`plan: creating ${apps} ServerlessApps`);
  await forEachBounded(refs, IN_FLIGHT, (ref) => env.client.apply(benchApp(ref, imageOf(ref, 1))));
  const target = refs[0]!;
  const file = join(mkdtempSync(join(tmpdir(), 'bench-plan-')), 'app.yaml');
  writeFileSync(file, stringify(benchApp(target, imageOf(target, 2), { rollout: { steps: [10, 50], interval: '5m' } })));
  const args = ['plan', '-f', file, '-n', target.namespace, '--kubeconfig', env.cp.kubeconfigPath];
  const clis = [CLI, ...(opts.baseline ? [resolve(opts.baseline, 'dist/cli/kubectl-sapp.js')] : [])];
  // One run of each first: the API server's caches, the page cache and each build's compile cache warm, as on a user's second plan.
  for (const cli of clis) {
    const first = await timed(cli, args);
    if (first.code !== 2) throw new Error(`${cli} plan exited ${first.code}, expected 2 (changes): ${first.stderr}`);
  }
  const codes = new Set<number>();
  const rounds: Figures[][] = clis.map(() => []);
  for (let round = 1; round <= (opts.rounds ?? 1); round++) {
    const plans: number[][] = clis.map(() => []);
    const starts: number[][] = clis.map(() => []);
    for (let i = 0; i < runs; i++) {
      for (const [c, cli] of clis.entries()) {
        const r = await timed(cli, args);
        plans[c]!.push(r.ms);
        codes.add(r.code);
      }
    }
    for (let i = 0; i < Math.min(runs, 5); i++) for (const [c, cli] of clis.entries()) starts[c]!.push((await timed(cli, ['--help'])).ms);
    for (const c of clis.keys()) rounds[c]!.push(figures(plans[c]!, starts[c]!));
    if (opts.rounds && opts.rounds > 1) log(`  round ${round}: ${clis.map((cli, c) => `${c ? 'baseline ' : ''}p50 ${rounds[c]!.at(-1)!.planMs.p50} ms`).join(', ')}`);
  }
  return {
    apps, runs, ...medianOf(rounds[0]!), rounds: rounds[0]!,
    exitCodes: [...codes].sort(),
    ...(opts.baseline ? { baseline: { cli: clis[1]!, ...medianOf(rounds[1]!), rounds: rounds[1]! } } : {}),
  };
}

function figures(plans: number[], starts: number[]): Figures {
  return {
    planMs: { p50: round(median(plans), 0), p90: round(percentile(plans, 90), 0), max: round(Math.max(...plans), 0) },
    startMs: { p50: round(median(starts), 0) },
  };
}

/** Each figure's median over the rounds (the figure itself with one round). */
function medianOf(rounds: Figures[]): Figures {
  const m = (pick: (f: Figures) => number) => median(rounds.map(pick));
  return {
    planMs: { p50: m((f) => f.planMs.p50), p90: m((f) => f.planMs.p90), max: m((f) => f.planMs.max) },
    startMs: { p50: m((f) => f.startMs.p50) },
  };
}

export function planTable(r: PlanResult): string {
  const each = (f: { rounds: Figures[] }) => (f.rounds.length > 1 ? ` (rounds: ${f.rounds.map((x) => `${x.planMs.p50}/${x.planMs.p90}/${x.planMs.max}`).join(', ')})` : '');
  return [
    `kubectl sapp plan with ${r.apps} apps in the cluster (${r.runs} runs of the built CLI${r.rounds.length > 1 ? `, ${r.rounds.length} rounds, medians over them` : ''}, spawn to exit)`,
    `  plan -f (canary edit)   p50 ${r.planMs.p50} ms, p90 ${r.planMs.p90} ms, max ${r.planMs.max} ms   (goal: < 500 ms)${each(r)}`,
    `  --help (process start)  p50 ${r.startMs.p50} ms`,
    ...(r.baseline ? [
      `  baseline ${r.baseline.cli}, interleaved run by run:`,
      `  plan -f (canary edit)   p50 ${r.baseline.planMs.p50} ms, p90 ${r.baseline.planMs.p90} ms, max ${r.baseline.planMs.max} ms${each(r.baseline)}`,
      `  --help (process start)  p50 ${r.baseline.startMs.p50} ms`,
    ] : []),
    `  exit codes              ${r.exitCodes.join(', ')} (2: changes planned)`,
  ].join('\n');
}
