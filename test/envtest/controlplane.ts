// A real kube-apiserver + etcd on loopback (and, on request, the data plane of
// dataplane.ts beside them) for integration tests, the demo and
// `npm run cluster`. Binaries come from build.sh (built once from pinned Go
// modules, then cached); each control plane gets its own directory, certificates,
// tokens, ports and audit log, and its processes die with the Node process that
// started it unless it was started detached.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { readAuditWrites, type AuditFilter, type AuditWrite } from './audit.ts';
import { startDataPlane, writeEgressSelector, type DataPlane, type DataPlaneOptions } from './dataplane.ts';
import { EnvtestError } from './errors.ts';
import { kubeconfigYaml, writeControlPlaneFiles } from './pki.ts';
import { killLeftovers, rigProcesses } from './processes.ts';
import { spawnDetached, supervise, waitHealthy, type RunningProcess } from './supervise.ts';

export interface ControlPlaneOptions {
  /** Directory to own (created, removed by stop()); default: a fresh `mktemp -d`. */
  dir?: string;
  /** Start the binaries in their own session so they outlive this process (`npm run cluster up`). */
  detached?: boolean;
  /** Progress lines; default: stderr. */
  log?: (line: string) => void;
  /** Use the binaries in this directory instead of running build.sh. */
  binDir?: string;
  /**
   * Also start the data plane (dataplane.ts): kube-controller-manager,
   * kube-scheduler, KWOK nodes and, unless `{ knative: false }`, the real
   * Knative Serving. Needs root (network namespaces). Default: off.
   */
  dataPlane?: boolean | DataPlaneOptions;
}

export interface ControlPlane {
  readonly dir: string;
  readonly binDir: string;
  readonly kubeconfigPath: string;
  readonly server: string;
  readonly adminToken: string;
  readonly nobodyToken: string;
  readonly caPem: string;
  /** The data plane, when started with `dataPlane`. */
  readonly dataPlane: DataPlane | undefined;
  /** Current process ids (the apiserver's changes on restart); supervisor pids unless detached. */
  readonly pids: { etcd: number; apiserver: number };
  /** A fresh client configuration for the admin user. */
  kubeConfig(): KubeConfig;
  /** Write requests recorded in the audit log, oldest first. */
  auditWrites(filter?: AuditFilter): AuditWrite[];
  /** Stops kube-apiserver and starts it again on the same port and certificates; resolves when ready. */
  restartApiServer(): Promise<void>;
  /** Stops both processes and removes the directory. */
  stop(): Promise<void>;
}

const here = dirname(fileURLToPath(import.meta.url));
const READY_TIMEOUT_MS = 90_000;

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`envtest: ${line}\n`));
  const started = performance.now();
  const binDir = opts.binDir ?? await buildBinaries();
  const dir = makeDir(opts.dir);
  const launch = (name: string, args: string[]): RunningProcess => {
    const binary = join(binDir, name);
    const logPath = join(dir, `${name}.log`);
    return (opts.detached ? spawnDetached : supervise)(name, binary, args, logPath, dir);
  };
  let etcd: RunningProcess | undefined;
  let apiserver: RunningProcess | undefined;
  let dataPlane: DataPlane | undefined;
  try {
    const creds = await writeControlPlaneFiles(dir);
    const [etcdPort, peerPort, apiPort] = await freePorts(3);
    const server = `https://127.0.0.1:${apiPort}`;
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    mkdirSync(join(dir, 'etcd'), { mode: 0o700 });
    etcd = launch('etcd', [
      '--name=envtest', `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`, `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=envtest=http://127.0.0.1:${peerPort}`, '--unsafe-no-fsync', '--log-level=warn',
    ]);
    await waitHealthy(etcd, dir, () => etcdHealthy(etcdUrl));
    const apiserverArgs = [
      `--etcd-servers=${etcdUrl}`, '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1', `--secure-port=${apiPort}`,
      `--tls-cert-file=${join(dir, 'serving.crt')}`, `--tls-private-key-file=${join(dir, 'serving.key')}`,
      `--client-ca-file=${join(dir, 'ca.crt')}`, `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      `--service-account-issuer=${server}`, `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      // Room for a whole run: every Knative revision adds two Services and every route one (a /24 ran out).
      '--service-cluster-ip-range=10.96.0.0/16', '--allow-privileged=true', '--disable-admission-plugins=ServiceAccount',
      `--cert-dir=${join(dir, 'pki')}`,
      `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`, `--audit-log-path=${join(dir, 'audit.log')}`,
      '--audit-log-format=json', '--audit-log-mode=blocking', '--audit-log-maxsize=100000', '--audit-log-maxbackup=1',
      ...(opts.dataPlane ? [writeEgressSelector(dir)] : []),
    ];
    const isReady = () => apiserverReady(server, creds.caPem, creds.adminToken);
    apiserver = launch('kube-apiserver', apiserverArgs);
    await waitHealthy(apiserver, dir, isReady, READY_TIMEOUT_MS);
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfigYaml(server, creds.caPem, creds.adminToken), { mode: 0o600 });
    log(`control plane ready at ${server} in ${((performance.now() - started) / 1000).toFixed(1)}s (${dir})`);
    const kubeConfig = () => {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath);
      return kc;
    };
    if (opts.dataPlane) {
      dataPlane = await startDataPlane({
        dir, binDir, apiPort: Number(apiPort), caPem: creds.caPem, adminToken: creds.adminToken, detached: opts.detached ?? false, log, kubeConfig,
      }, opts.dataPlane === true ? {} : opts.dataPlane);
    }

    let current = apiserver;
    const etcdProcess = etcd;
    return {
      dir, binDir, kubeconfigPath, server, ...creds, dataPlane,
      get pids() { return { etcd: etcdProcess.pid, apiserver: current.pid }; },
      kubeConfig,
      auditWrites: (filter) => readAuditWrites(join(dir, 'audit.log'), filter),
      async restartApiServer() {
        await current.stop();
        current = launch('kube-apiserver', apiserverArgs);
        await waitHealthy(current, dir, isReady, READY_TIMEOUT_MS);
      },
      async stop() {
        await dataPlane?.stop();
        await current.stop();
        await etcdProcess.stop();
        // Every process of this control plane names its directory: one still running now was not stopped.
        const left = opts.detached ? [] : killLeftovers(rigProcesses(dir, [binDir, here]));
        rmSync(dir, { recursive: true, force: true });
        if (left.length > 0) throw new EnvtestError(`${left.length} processes of the control plane in ${dir} were still running after it stopped (now killed):\n${left.join('\n')}`);
      },
    };
  } catch (err) {
    await dataPlane?.stop();
    await apiserver?.stop(5_000);
    await etcd?.stop(5_000);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Runs build.sh (a no-op once cached) and returns the directory with kube-apiserver, etcd and helm. */
export function buildBinaries(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(join(here, 'build.sh'), { maxBuffer: 1 << 20 }, (err, stdout) => {
      if (!err) return resolve(stdout.trim().split('\n').at(-1) ?? '');
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'ENOENT') return reject(new EnvtestError('bash is needed to run test/envtest/build.sh; install bash.'));
      reject(new EnvtestError('the control-plane binaries could not be built (see the message above).'));
    });
    child.stderr?.pipe(process.stderr, { end: false });
  });
}

function makeDir(dir: string | undefined): string {
  try {
    if (!dir) return mkdtempSync(join(tmpdir(), 'envtest-'));
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  } catch (err) {
    throw new EnvtestError(`cannot create the control-plane directory: ${(err as Error).message}. Free some disk space or set TMPDIR.`);
  }
}

/** `count` free loopback TCP ports (the control plane, the operator's listeners, benchmarks). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(servers.map((srv) => new Promise<number>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const address = srv.address();
        resolve(typeof address === 'object' && address ? address.port : 0);
      });
    })));
  } catch (err) {
    throw new EnvtestError(`no free TCP port on 127.0.0.1 (${(err as Error).message}); the loopback interface must be up.`);
  } finally {
    for (const srv of servers) srv.close();
  }
}

async function etcdHealthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) });
    return res.ok && ((await res.json()) as { health?: string }).health === 'true';
  } catch {
    return false;
  }
}

function apiserverReady(server: string, ca: string, token: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`${server}/readyz`, { ca, headers: { Authorization: `Bearer ${token}` }, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
