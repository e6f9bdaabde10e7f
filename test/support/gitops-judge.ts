// What the GitOps tools conclude from an object, asked of their own code:
// gitops-judge (built by test/envtest/build.sh from test/envtest/gitops) runs
// kstatus (sigs.k8s.io/cli-utils, what Flux's health checks and `kubectl
// wait`-style tools read) and Argo CD's health check for the kind (the chart's
// Lua script, in gopher-lua set up as Argo CD sets it up). Tests compare these
// verdicts with what each phase should read; nothing here re-implements a rule.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { buildBinaries } from '../envtest/controlplane.ts';
import { CHART_DIR } from './helm.ts';

/** The Argo CD health check the chart ships (one copy; the Argo CD fixtures link to it). */
export const ARGOCD_HEALTH_SCRIPT = join(CHART_DIR, 'files', 'argocd', 'health.lua');

export interface Verdict {
  status: string;
  message: string;
}

export interface Judgement {
  /** kstatus: Current, InProgress, Failed, Terminating, ... */
  kstatus: Verdict;
  /** Argo CD's health: Healthy, Progressing, Degraded, Suspended, ...; null when the script assesses none. */
  argocd: Verdict | null;
}

export interface JudgeOptions {
  /** The Lua health script (default: the chart's). */
  script?: string;
  /** Run it with Lua's standard libraries open, as Argo CD runs built-in scripts and their fixtures. Default: as an argocd-cm script (base, table, package only). */
  openLibs?: boolean;
  /**
   * The script's own verdict, as Argo CD's health_test.yaml states it, rather than the controller's
   * (which makes any object being deleted Progressing "Pending deletion" and a script error Unknown).
   */
  scriptOnly?: boolean;
}

interface RawVerdict { status?: string; message?: string; error?: string }

let binary: Promise<string> | undefined;

/** The verdicts on each object, in order. Throws when a tool fails on one (kstatus cannot read it, the script errs with scriptOnly). */
export async function judgeAll(objects: object[], opts: JudgeOptions = {}): Promise<Judgement[]> {
  binary ??= buildBinaries().then((dir) => join(dir, 'gitops-judge'));
  const args = ['-lua', opts.script ?? ARGOCD_HEALTH_SCRIPT, ...(opts.openLibs ? ['-open-libs'] : []), ...(opts.scriptOnly ? ['-script-only'] : [])];
  const path = await binary;
  const stdout = await new Promise<string>((resolve, reject) => {
    const run = execFile(path, args, { maxBuffer: 64 << 20, timeout: 60_000 }, (err, out, stderr) => (err ? reject(new Error(`gitops-judge: ${stderr.trim() || err.message}`)) : resolve(out)));
    run.stdin!.end(objects.map((o) => JSON.stringify(o)).join('\n') + '\n');
  });
  const lines = stdout.split('\n').filter((l) => l.trim());
  if (lines.length !== objects.length) throw new Error(`gitops-judge answered ${lines.length} verdicts for ${objects.length} objects`);
  return lines.map((line, i) => {
    const raw = JSON.parse(line) as { kstatus: RawVerdict; argocd: RawVerdict | null };
    const name = (objects[i] as { metadata?: { name?: string } }).metadata?.name ?? `object ${i}`;
    return { kstatus: verdict('kstatus', name, raw.kstatus), argocd: raw.argocd && verdict('the Argo CD health script', name, raw.argocd) };
  });
}

/** What kstatus and Argo CD conclude from `object` (as Argo CD's controller runs an argocd-cm script). */
export async function judge(object: object, opts: JudgeOptions = {}): Promise<Judgement> {
  return (await judgeAll([object], opts))[0]!;
}

function verdict(tool: string, name: string, raw: RawVerdict): Verdict {
  if (raw.error) throw new Error(`${tool} failed on ${name}: ${raw.error}`);
  return { status: raw.status ?? '', message: raw.message ?? '' };
}
