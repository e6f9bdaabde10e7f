// The real kubectl (built by test/envtest/build.sh at the control plane's pin),
// for tests that compare what `kubectl apply` does with what the operator's
// tools say it would do.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { buildBinaries } from '../envtest/controlplane.ts';
import type { Run } from './kubectl-sapp.ts';
import { scratchDir } from './scratch.ts';
import { SETTLE_MS } from './wait.ts';

let binary: Promise<string> | undefined;
let cacheDir: string | undefined;

/**
 * Runs `kubectl args...` with KUBECONFIG `kubeconfig`; resolves with its exit code and output, never rejects on a non-zero exit.
 * `timeoutMs` (default SETTLE_MS) kills it, a guard: a command that waits itself (`kubectl wait --timeout`) passes more than its own timeout.
 */
export async function kubectl(kubeconfig: string, args: string[], opts: { timeoutMs?: number } = {}): Promise<Run> {
  binary ??= buildBinaries().then((dir) => join(dir, 'kubectl'));
  const path = await binary;
  cacheDir ??= scratchDir('kubectl-cache-');
  // As a user's shell runs it, without a kuberc or a cache directory of the user's.
  const env = { PATH: process.env.PATH ?? '', HOME: '/nonexistent', KUBECONFIG: kubeconfig, KUBERC: 'off', KUBECACHEDIR: cacheDir };
  return new Promise((resolve, reject) => {
    execFile(path, args, { env, timeout: opts.timeoutMs ?? SETTLE_MS, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: typeof err?.code === 'number' ? err.code : 0, stdout, stderr });
    });
  });
}
