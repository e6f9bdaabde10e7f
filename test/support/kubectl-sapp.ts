// `kubectl sapp` as kubectl runs it, for integration tests: a child process
// (the .ts entry, type-stripped) with a KUBECONFIG whose context names the
// namespace, as `kubectl config set-context --current --namespace` leaves it.
import { execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { testEnv } from './cluster.ts';
import { scratchDir } from './scratch.ts';
import { SETTLE_MS } from './wait.ts';

/** The plugin's source entry; a test of the built plugin passes its own (`entry` below). */
const ENTRY = new URL('../../src/cli/kubectl-sapp.ts', import.meta.url).pathname;

export interface Run { code: number | null; stdout: string; stderr: string }

/** A copy of the rig's kubeconfig whose context works in `namespace`. */
export function kubeconfigIn(namespace: string): string {
  const doc = parse(readFileSync(testEnv().kubeconfigPath, 'utf8')) as { contexts: Array<{ context: { namespace?: string } }> };
  for (const c of doc.contexts) c.context.namespace = namespace;
  const path = join(scratchDir('kubectl-sapp-'), 'kubeconfig');
  writeFileSync(path, stringify(doc), { mode: 0o600 });
  return path;
}

/**
 * Runs `kubectl-sapp args...` (killed after SETTLE_MS, a guard); with `until`,
 * stops it with SIGINT once its output satisfies `until` (for --watch).
 * `output()` is what it printed so far.
 */
export function sapp(kubeconfig: string, args: string[], until?: (stdout: string) => boolean, entry = ENTRY): Promise<Run> & { output: () => string } {
  const child = spawn(process.execPath, [entry, ...args], { env: { ...process.env, KUBECONFIG: kubeconfig }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString('utf8');
    if (until?.(stdout)) child.kill('SIGINT');
  });
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString('utf8'); });
  const done = new Promise<Run>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), SETTLE_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  return Object.assign(done, { output: () => stdout });
}

/** The exit status of `kubectl-sapp args...` as a shell sees it (`$?`), as a CI step would test it. */
export function exitStatusInShell(kubeconfig: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile('/bin/sh', ['-c', '"$@" >/dev/null 2>&1; echo "$?"', 'sh', process.execPath, ENTRY, ...args], { env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: SETTLE_MS }, (err, stdout) => {
      if (err) reject(err);
      else resolve(Number(stdout.trim()));
    });
  });
}
