// `npm run cluster -- up|down|status`: a long-lived local control plane with its
// data plane (dataplane.ts: controller-manager, scheduler, KWOK nodes, the real
// Knative Serving) and the upstream and project CRDs installed, for the demo and
// for poking at by hand.
// Unlike the per-test-run control plane it outlives this command: its processes
// run in their own session and are found again through a state file.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startControlPlane } from './controlplane.ts';
import { deleteDataPlaneNetns } from './dataplane.ts';
import { describeFailure } from './errors.ts';
import { killLeftovers, rigProcesses } from './processes.ts';
import { isRunning, releaseDetached, terminate } from './supervise.ts';
import { installAllCrds } from './upstream-crds.ts';

interface ClusterState {
  dir: string;
  server: string;
  kubeconfigPath: string;
  nobodyToken: string;
  processes: Array<{ name: string; pid: number; binary: string }>;
  /** The data plane's network namespaces, removed by `down`. */
  netns?: string[];
}

const cacheRoot = process.env.SERVERLESSAPP_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'serverlessapp-operator');
// SERVERLESSAPP_CLUSTER_DIR: another cluster beside the usual one (a test's, which must not touch a person's).
const clusterDir = process.env.SERVERLESSAPP_CLUSTER_DIR ?? join(cacheRoot, 'cluster');
const statePath = join(clusterDir, 'state.json');

async function up(): Promise<void> {
  const state = readState();
  if (state && isAlive(state)) {
    console.error(`cluster already running at ${state.server}`);
    console.log(`export KUBECONFIG=${state.kubeconfigPath}`);
    return;
  }
  await down(true);
  const cp = await startControlPlane({ dir: clusterDir, detached: true, dataPlane: true });
  const pids = cp.pids;
  writeState({
    dir: cp.dir, server: cp.server, kubeconfigPath: cp.kubeconfigPath, nobodyToken: cp.nobodyToken,
    processes: [
      ...[...(cp.dataPlane?.processes ?? [])].reverse(),
      { name: 'kube-apiserver', pid: pids.apiserver, binary: join(cp.binDir, 'kube-apiserver') },
      { name: 'etcd', pid: pids.etcd, binary: join(cp.binDir, 'etcd') },
    ],
    netns: cp.dataPlane ? [cp.dataPlane.netns.main, cp.dataPlane.netns.autoscaler, ...Object.values(cp.dataPlane.netns.nodes)] : [],
  });
  try {
    const crds = await installAllCrds(cp.kubeConfig());
    console.error(`installed ${crds.length} CRDs`);
  } catch (err) {
    await cp.stop();
    throw err;
  }
  releaseDetached();
  console.error(`cluster running at ${cp.server}; stop it with: npm run cluster -- down`);
  console.log(`export KUBECONFIG=${cp.kubeconfigPath}`);
}

async function down(quiet = false): Promise<void> {
  const state = readState();
  for (const proc of state?.processes ?? []) await terminate(proc.pid, proc.binary);
  // Every process of the cluster names its directory: one the state file did not lead to (an older state
  // file, a binary that exec'd into another) still goes.
  // The rig's binaries are where its kube-apiserver is (build.sh's cache); its Node scripts beside this file.
  const apiserver = state?.processes.find((p) => p.name === 'kube-apiserver');
  const left = killLeftovers(rigProcesses(clusterDir, [...(apiserver ? [dirname(apiserver.binary)] : []), dirname(fileURLToPath(import.meta.url))]));
  if (left.length > 0 && !quiet) console.error(`stopped ${left.length} processes of the cluster the state file did not lead to:\n${left.join('\n')}`);
  await deleteDataPlaneNetns(state?.netns ?? []);
  const existed = existsSync(clusterDir);
  rmSync(clusterDir, { recursive: true, force: true });
  if (!quiet) console.error(state || existed ? 'cluster stopped' : 'cluster was not running');
}

function status(): void {
  const state = readState();
  if (state && isAlive(state)) {
    console.log(`running at ${state.server} (pids ${state.processes.map((p) => `${p.name}=${p.pid}`).join(', ')})`);
    console.log(`export KUBECONFIG=${state.kubeconfigPath}`);
  } else {
    console.log(state ? 'not running (stale state; `npm run cluster -- down` cleans it up)' : 'not running');
  }
}

function isAlive(state: ClusterState): boolean {
  return state.processes.every((p) => isRunning(p.pid, p.binary));
}

function readState(): ClusterState | undefined {
  try {
    return JSON.parse(readFileSync(statePath, 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

function writeState(state: ClusterState): void {
  writeFileSync(statePath, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

const commands: Record<string, () => Promise<void> | void> = { up, down: () => down(), status };
const command = commands[process.argv[2] ?? ''];
if (!command) {
  console.error('usage: npm run cluster -- up|down|status');
  process.exit(2);
}
try {
  await command();
} catch (err) {
  console.error(describeFailure(err));
  process.exit(1);
}
