// The benchmark's cluster: its own control plane with every CRD and the
// namespaces, a data plane, and the operator as a child process running the
// built dist/main.js (what ships, not type-stripped sources), started on
// demand so its memory and CPU can be measured alone.
// Two data planes:
//  - real: the rig's kube-controller-manager, kube-scheduler, KWOK nodes and
//    the REAL Knative Serving 1.21 and KServe 0.20 (simulated network and
//    ingress, see test/envtest/dataplane.ts). Every app is a Deployment and a
//    KWOK pod, so the figures include the data plane's pace.
//  - standin: the API server alone with the SIMULATED Knative/KServe
//    stand-ins (test/standin/) as a child process: the controller half alone.
//    For 1,000+ apps, where the real Knative creating thousands of
//    Deployments and pods would measure KWOK and the rig, not the operator.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { bundleCli } from '../scripts/bundle-cli.ts';
import { KubeClient } from '../src/runtime/client.ts';
import { Kinds } from '../src/util/kinds.ts';
import { startControlPlane, type ControlPlane } from '../test/envtest/controlplane.ts';
import { installAllCrds } from '../test/envtest/upstream-crds.ts';
import { imageLaunch } from '../test/support/image-launch.ts';
import { OperatorProcess } from '../test/support/operator-process.ts';
import { childNamed } from './proc.ts';
import { sleep } from './stats.ts';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const OPERATOR_SCRIPT = join(root, 'dist', 'main.js');
/** How the benchmarks run the operator, as the image does (OperatorProcess applies the Dockerfile's node flags and NODE_OPTIONS). */
export function operatorCommand(): string {
  const { nodeArgs, nodeOptions } = imageLaunch();
  return `${nodeOptions ? `NODE_OPTIONS=${nodeOptions} ` : ''}node ${[...nodeArgs, relative(process.cwd(), OPERATOR_SCRIPT)].join(' ')}`;
}
export const BENCH_USER_AGENT = 'serverlessapp-bench';
export const OPERATOR_USER_AGENT = 'serverlessapp-operator';

export type DataPlaneKind = 'real' | 'standin';

/** What the report says about each data plane. */
export const DATA_PLANE_LABEL: Record<DataPlaneKind, string> = {
  real: 'REAL Knative Serving 1.21 + KServe 0.20, kube-controller-manager, kube-scheduler on KWOK nodes (SIMULATED nodes, network and ingress)',
  standin: 'SIMULATED Knative/KServe stand-in (test/standin/), no pods: the controller half alone',
};

export interface BenchEnvOptions {
  dataPlane: DataPlaneKind;
  /** The apps' namespaces (the stand-in simulates Knative only there). */
  namespaces: string[];
  /** Namespaces the stand-in must leave alone (the ceiling's). */
  otherNamespaces: string[];
  operatorConcurrency: number;
  /** How long the stand-in takes to make a revision Ready. */
  readyDelayMs: number;
  log: (line: string) => void;
}

export interface BenchEnv {
  cp: ControlPlane;
  kc: KubeConfig;
  dataPlane: DataPlaneKind;
  /** The benchmark's own client, with its own user agent and field manager. */
  client: KubeClient;
  /** The other processes whose CPU the benchmark reports: the data plane is the stand-in or every rig process. */
  pids: { apiServer?: number; etcd?: number; dataPlane: number[] };
  startOperator(opts?: { clockStart?: string; nodeArgs?: string[]; logLevel?: string; args?: string[] }): Promise<OperatorProcess>;
  /** After the ceiling's Knative Services are deleted: with the real Knative, waits until what it made for them is gone. */
  drained(namespace: string, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

/** What `npm run build` runs: `tsc -p tsconfig.build.json`, then the kubectl plugin's bundle; returns the seconds it took. */
export async function buildDist(): Promise<number> {
  const started = performance.now();
  await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { cwd: root })
    .catch((err: { stdout?: string; message: string }) => {
      throw new Error(`npm run build failed: ${err.stdout?.trim() || err.message}`);
    });
  if (statSync(OPERATOR_SCRIPT).mtimeMs < Date.now() - 5 * 60_000) throw new Error(`${OPERATOR_SCRIPT} was not rebuilt`);
  await bundleCli(join(root, 'dist/cli'));
  return (performance.now() - started) / 1000;
}

/** The commit the operator was built from, and whether src/ had uncommitted changes (a shared working tree). */
export async function sourceRevision(): Promise<string> {
  try {
    const commit = (await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: root })).stdout.trim();
    const dirty = (await run('git', ['status', '--porcelain', '--', 'src'], { cwd: root })).stdout.trim() !== '';
    return dirty ? `${commit} + uncommitted src/ changes` : commit;
  } catch {
    return 'unknown';
  }
}

export async function startBenchEnv(o: BenchEnvOptions): Promise<BenchEnv> {
  const cp = await startControlPlane({ log: o.log, dataPlane: o.dataPlane === 'real' });
  let standins: ChildProcess | undefined;
  const operators: OperatorProcess[] = [];
  try {
    const kc = cp.kubeConfig();
    await installAllCrds(kc);
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of [...o.namespaces, ...o.otherNamespaces]) await core.createNamespace({ body: { metadata: { name } } });
    if (o.dataPlane === 'standin') standins = await startStandins(cp.kubeconfigPath, o.namespaces, o.readyDelayMs);
    const client = new KubeClient(kc, { fieldManager: 'bench', userAgent: BENCH_USER_AGENT });
    const rigPids = (cp.dataPlane?.processes ?? []).map((p) => childNamed(p.pid, p.binary)).filter((pid): pid is number => pid !== undefined);
    return {
      cp, kc, client, dataPlane: o.dataPlane,
      pids: { apiServer: childNamed(cp.pids.apiserver, 'kube-apiserver'), etcd: childNamed(cp.pids.etcd, 'etcd'), dataPlane: standins?.pid ? [standins.pid] : rigPids },
      async startOperator(opts = {}) {
        const op = await OperatorProcess.start({
          kubeconfigPath: cp.kubeconfigPath, script: OPERATOR_SCRIPT, concurrency: o.operatorConcurrency, logLevel: opts.logLevel ?? 'warn',
          ...(opts.clockStart ? { clockStart: opts.clockStart } : {}), ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}),
          ...(opts.args ? { args: opts.args } : {}),
        });
        operators.push(op);
        await op.waitReady(600_000);
        return op;
      },
      async drained(namespace, timeoutMs = 300_000) {
        const started = performance.now();
        if (o.dataPlane !== 'real') return 0;
        const apps = kc.makeApiClient(AppsV1Api);
        for (;;) {
          const [revisions, deployments, pods] = await Promise.all([
            client.list(Kinds.KnativeRevision, namespace, { limit: 1 }), apps.listNamespacedDeployment({ namespace, limit: 1 }), core.listNamespacedPod({ namespace, limit: 1 }),
          ]);
          if (revisions.items.length + deployments.items.length + pods.items.length === 0) return (performance.now() - started) / 1000;
          if (performance.now() - started > timeoutMs) throw new Error(`Knative and the garbage collector had not removed the ceiling's revisions, deployments and pods from ${namespace} after ${timeoutMs / 1000} s`);
          await sleep(1_000);
        }
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
