// The benchmark's cluster: its own control plane with every CRD, the
// namespaces, the Knative/KServe stand-ins as a child process (so their CPU is
// not the benchmark's, nor the operator's), and the operator as a child
// process started on demand, so its memory and CPU can be measured alone.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../src/runtime/client.ts';
import { startControlPlane, type ControlPlane } from '../test/envtest/controlplane.ts';
import { installAllCrds } from '../test/envtest/upstream-crds.ts';
import { OperatorProcess } from '../test/support/operator-process.ts';
import { childNamed } from './proc.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const BENCH_USER_AGENT = 'serverlessapp-bench';
export const OPERATOR_USER_AGENT = 'serverlessapp-operator';
export const STANDIN_USER_AGENT = 'knative-standin';

export interface BenchEnvOptions {
  /** Namespaces the stand-ins simulate Knative in (the apps' namespaces). */
  namespaces: string[];
  /** Namespaces the stand-ins must leave alone (the ceiling's). */
  otherNamespaces: string[];
  operatorConcurrency: number;
  readyDelayMs: number;
  log: (line: string) => void;
}

export interface BenchEnv {
  cp: ControlPlane;
  kc: KubeConfig;
  /** The benchmark's own client, with its own user agent and field manager. */
  client: KubeClient;
  /** The other processes whose CPU the benchmark reports. */
  pids: { apiServer?: number; etcd?: number; standins?: number };
  startOperator(opts?: { clockStart?: string; nodeArgs?: string[]; logLevel?: string; args?: string[] }): Promise<OperatorProcess>;
  stop(): Promise<void>;
}

export async function startBenchEnv(o: BenchEnvOptions): Promise<BenchEnv> {
  const cp = await startControlPlane({ log: o.log, dataPlane: true });
  let standins: ChildProcess | undefined;
  const operators: OperatorProcess[] = [];
  try {
    const kc = cp.kubeConfig();
    await installAllCrds(kc);
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of [...o.namespaces, ...o.otherNamespaces]) await core.createNamespace({ body: { metadata: { name } } });
    standins = await startStandins(cp.kubeconfigPath, o.namespaces, o.readyDelayMs);
    const client = new KubeClient(kc, { fieldManager: 'bench', userAgent: BENCH_USER_AGENT });
    return {
      cp, kc, client,
      pids: { apiServer: childNamed(cp.pids.apiserver, 'kube-apiserver'), etcd: childNamed(cp.pids.etcd, 'etcd'), standins: standins.pid },
      async startOperator(opts = {}) {
        const op = await OperatorProcess.start({
          kubeconfigPath: cp.kubeconfigPath, concurrency: o.operatorConcurrency, logLevel: opts.logLevel ?? 'warn',
          ...(opts.clockStart ? { clockStart: opts.clockStart } : {}), ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}),
          ...(opts.args ? { args: opts.args } : {}),
        });
        operators.push(op);
        await op.waitReady(600_000);
        return op;
      },
      async stop() {
        await Promise.all(operators.map((op) => op.kill()));
        standins?.kill('SIGKILL');
        client.close();
        await cp.stop();
      },
    };
  } catch (err) {
    standins?.kill('SIGKILL');
    await cp.stop();
    throw err;
  }
}

/** `npm run simulate` as a child process; resolves once its watches have synced. */
function startStandins(kubeconfigPath: string, namespaces: string[], readyDelayMs: number): Promise<ChildProcess> {
  const args = [join(root, 'test/standin/main.ts'), '--quiet', '--ready-delay-ms', String(readyDelayMs), '--concurrency', '16', ...namespaces.flatMap((n) => ['--namespace', n])];
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, KUBECONFIG: kubeconfigPath }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('stand-ins running')) {
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve(child);
      }
    });
    child.once('exit', (code) => reject(new Error(`the stand-ins exited (${code}) before they were running:\n${out}`)));
  });
}
