// The operator as a person runs it: `npm start` in a terminal, stopped with a
// signal, started with a kubeconfig whose credential the server refuses.
// Against the rig's real API server, the operator a child process.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { kubeconfigYaml } from '../envtest/pki.ts';
import { DEFAULT_LEASE_NAME } from '../../src/runtime/manager-defaults.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { freePorts, OperatorProcess } from '../support/operator-process.ts';
import { descendants, processes, stillRunning } from '../envtest/processes.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Resolves true when `port` on 127.0.0.1 can be bound (nothing listens there any more). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** npm start and npm run cluster first run scripts/ensure-deps.sh, which would reinstall node_modules (npm ci) under every other test now running. */
function assertDepsInstalled(): void {
  const check = spawnSync('sh', [join(root, 'scripts/ensure-deps.sh'), '--check'], { cwd: root });
  assert.equal(check.status, 0, 'node_modules was not installed from this package-lock.json: run `npm ci` (or `npm test`) before this test, which runs npm scripts');
}

async function readyz(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) });
    await res.text();
    return res.status === 200;
  } catch {
    return false;
  }
}

describe('the operator as a person runs it', function () {
  this.timeout(600_000);
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'sapp-lifecycle-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('`npm start` stopped with SIGTERM takes the operator with it: no orphan, its ports free for the next start', async () => {
    assertDepsInstalled();
    const ns = await freshNamespace('npmstart');
    const [metrics = 0, probe = 0] = await freePorts(2);
    const output: string[] = [];
    // As a person types it; the environment as a terminal's, without settings the flags do not override.
    const npm = spawn('npm', ['start', '--', '--kubeconfig', testEnv().kubeconfigPath, '--namespaces', ns, '--leader-elect', 'false',
      '--metrics-bind-address', `127.0.0.1:${metrics}`, '--health-probe-bind-address', `127.0.0.1:${probe}`, '--log-level', 'warn'], {
      cwd: root, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', npm_config_update_notifier: 'false' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const s of [npm.stdout, npm.stderr]) s.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
    const npmExited = new Promise<number | string>((resolve) => npm.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
    let started: ReturnType<typeof descendants> = [];
    try {
      await waitFor(`the operator under npm start answering /readyz on ${probe}`, () => readyz(probe), { timeoutMs: 90_000, intervalMs: 100 })
        .catch((err: Error) => { throw new Error(`${err.message}; npm's output:\n${output.join('')}`); });
      started = descendants(npm.pid!);
      const operator = started.filter((p) => p.argv.includes('src/main.ts'));
      assert.equal(operator.length, 1, `one operator process under npm: ${JSON.stringify(started.map((p) => p.argv))}`);

      npm.kill('SIGTERM');
      await npmExited;
      // The operator's graceful stop (in-flight work, the lease, the listeners) takes a moment after npm's exit.
      await waitFor('every process npm started to have exited', () => !started.some(stillRunning), { timeoutMs: 30_000 })
        .catch((err: Error) => { throw new Error(`${err.message}: still running ${JSON.stringify(started.filter(stillRunning).map((p) => [p.pid, p.argv.join(' ')]))}`); });
      assert.ok(await portFree(metrics), `metrics port ${metrics} is still taken`);
      assert.ok(await portFree(probe), `probe port ${probe} is still taken`);
    } finally {
      // Only what this test started: npm and the processes under it.
      for (const p of [...started].reverse()) if (stillRunning(p)) process.kill(p.pid, 'SIGKILL');
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
    }
  });

  it('one Ctrl-C of `npm start` (SIGINT to its process group: the terminal\'s and npm\'s forwarded one, moments apart) drains, releases the Lease and exits 0', async () => {
    assertDepsInstalled();
    const ns = await freshNamespace('ctrlc');
    const [metrics = 0, probe = 0] = await freePorts(2);
    const output: string[] = [];
    // Its own process group (detached), as a terminal's foreground job: the signal goes to npm and the operator alike.
    const npm = spawn('npm', ['start', '--', '--kubeconfig', testEnv().kubeconfigPath, '--namespaces', ns, '--leader-elect', 'true', '--leader-election-namespace', ns,
      '--identity', 'ctrl-c', '--metrics-bind-address', `127.0.0.1:${metrics}`, '--health-probe-bind-address', `127.0.0.1:${probe}`, '--log-level', 'info'], {
      cwd: root, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', npm_config_update_notifier: 'false' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
    });
    for (const s of [npm.stdout, npm.stderr]) s.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
    const npmExited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => npm.once('exit', (code, signal) => resolve({ code, signal })));
    const lease = () => testEnv().kubeConfig().makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: ns, name: DEFAULT_LEASE_NAME }).catch(() => undefined);
    let started: ReturnType<typeof descendants> = [];
    try {
      await waitFor('the operator under npm start holding its Lease', async () => (await lease())?.spec?.holderIdentity === 'ctrl-c', { timeoutMs: 90_000, intervalMs: 100 })
        .catch((err: Error) => { throw new Error(`${err.message}; npm's output:\n${output.join('')}`); });
      started = descendants(npm.pid!);
      // One keypress: the terminal signals the group, npm forwards it to the operator.
      process.kill(-npm.pid!, 'SIGINT');
      process.kill(-npm.pid!, 'SIGINT');
      const exit = await npmExited;
      await waitFor('every process npm started to have exited', () => !started.some(stillRunning), { timeoutMs: 30_000 });
      const said = output.join('');
      assert.deepEqual(exit, { code: 0, signal: null }, `npm start did not exit 0 after one Ctrl-C; it said:\n${said}`);
      assert.match(said, /released the leader lease/, said);
      assert.doesNotMatch(said, /a second stop signal/, said);
      const released = await lease();
      assert.equal(released?.spec?.holderIdentity ?? '', '', `the Lease is still held: ${JSON.stringify(released?.spec)}`);
    } finally {
      for (const p of [...started].reverse()) if (stillRunning(p)) process.kill(p.pid, 'SIGKILL');
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
    }
  });

  it('ends at start, non-zero, when the API server refuses its credential, saying so as kubectl does with the user and the server', async () => {
    const env = testEnv();
    const kubeconfigPath = join(dir, 'bad-token.kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfigYaml(env.server, env.caPem, 'not-a-token-the-server-knows'), { mode: 0o600 });
    const op = await OperatorProcess.start({ kubeconfigPath });
    const deadline = setTimeout(() => void op.kill('SIGKILL'), SETTLE_MS);
    const exit = await op.exited;
    clearTimeout(deadline);
    const said = op.output().join('\n');
    assert.deepEqual(exit, { code: 1, signal: null }, `it did not end by itself with 1; it said:\n${said}`);
    assert.ok(
      said.includes(`You must be logged in to the server (Unauthorized): ${env.server} refused the credentials of user \\"envtest-admin\\" of kubeconfig ${kubeconfigPath}`),
      `no message naming the user and the server; it said:\n${said}`,
    );
    assert.doesNotMatch(said, /assuming Knative < 1\.21/);
  });

  it('`npm run cluster -- down` stops every process `up` started: none is left of its control plane, data plane or node agents', async function () {
    this.timeout(600_000);
    assertDepsInstalled();
    // A cluster of this test's own: SERVERLESSAPP_CLUSTER_DIR keeps it away from one a person may have up.
    const clusterDir = join(dir, 'cluster');
    const env = { ...process.env, SERVERLESSAPP_CLUSTER_DIR: clusterDir, npm_config_update_notifier: 'false' };
    const before = new Set(processes().map((p) => p.pid));
    // Found independently of cli.ts's own search: every process started since, that names the cluster's directory.
    const ofCluster = () => processes().filter((p) => !before.has(p.pid) && p.pid !== process.pid && namesDir(p.pid, clusterDir));
    const npm = (command: string) => new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn('npm', ['run', '--silent', 'cluster', '--', command], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      for (const s of [child.stdout, child.stderr]) s.on('data', (c: Buffer) => { output += c.toString('utf8'); });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, output }));
    });
    let started: ReturnType<typeof processes> = [];
    try {
      const up = await npm('up');
      assert.equal(up.code, 0, `npm run cluster -- up failed:\n${up.output}`);
      started = ofCluster();
      const names = started.map((p) => p.argv.join(' ')).join('\n');
      for (const program of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok', 'localmodelnode']) {
        assert.ok(started.some((p) => p.argv.some((a) => a.includes(program))), `no ${program} among the cluster's processes:\n${names}`);
      }
      const down = await npm('down');
      assert.equal(down.code, 0, `npm run cluster -- down failed:\n${down.output}`);
      assert.match(down.output, /cluster stopped/);
      assert.doesNotMatch(down.output, /did not lead to/, 'down had to hunt for processes its state file did not name');
      await waitFor('every process of the cluster to have exited', () => !started.some(stillRunning), { timeoutMs: 30_000 })
        .catch((err: Error) => { throw new Error(`${err.message}: still running ${JSON.stringify(started.filter(stillRunning).map((p) => [p.pid, p.argv.join(' ')]))}`); });
      assert.deepEqual(ofCluster().map((p) => p.argv.join(' ')), [], 'a process naming the cluster started after up');
      assert.equal(existsSync(clusterDir), false, 'down leaves the cluster\'s directory');
    } finally {
      // Only what this test started: whatever names its cluster.
      for (const p of [...started, ...ofCluster()]) if (stillRunning(p)) process.kill(p.pid, 'SIGKILL');
    }
  });
});

/** Whether process `pid` names `dir` in its arguments or its environment (every process of a rig does: a kubeconfig, data or socket path). */
function namesDir(pid: number, dir: string): boolean {
  try {
    const needle = `${dir}/`;
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(needle) || readFileSync(`/proc/${pid}/environ`, 'utf8').includes(needle);
  } catch {
    return false;
  }
}
