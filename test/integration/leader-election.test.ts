// Leader election on a real Lease: one leader among candidates, a fast handover
// when the leader stops cleanly, and a takeover only after the lease expires
// when the leader dies without a word (a child process killed with SIGKILL).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { LeaderElector, type LeaderElectorOptions } from '../../src/runtime/leader-election.ts';
import { maxConcurrentLeaders } from '../../src/testing/leadership.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const timing = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 250 };

describe('LeaderElector against a real API server (integration)', function () {
  this.timeout(600_000);
  let ns: string;
  let electors: LeaderElector[];
  let child: ChildProcess | undefined;
  /** Leadership changes as [identity, leading], in order. */
  let timeline: Array<[string, boolean]>;

  function candidate(identity: string, opts: Partial<LeaderElectorOptions> = {}): LeaderElector {
    const e = new LeaderElector(testEnv().kubeConfig(), {
      namespace: ns,
      name: 'operator-lock',
      identity,
      ...timing,
      hooks: { onLeaderChange: (leading) => timeline.push([identity, leading]) },
      ...opts,
    });
    electors.push(e);
    void e.run({ onStartedLeading() {}, onStoppedLeading() {} });
    return e;
  }

  const lease = () => testEnv().kubeConfig().makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'operator-lock', namespace: ns });

  /** Waits until the holder renewed the lease a retry period past `since` (ms): a standby started by then has tried, and found it held. */
  const renewedPast = (since: number, what: string) =>
    waitFor(what, async () => Date.parse(String((await lease()).spec?.renewTime)) > since + timing.retryPeriodMs, { timeoutMs: SETTLE_MS });

  beforeEach(async () => {
    ns = await freshNamespace('leader-election');
    electors = [];
    timeline = [];
  });

  afterEach(async () => {
    child?.kill('SIGKILL');
    child = undefined;
    await Promise.all(electors.map((e) => e.stop()));
  });

  it('elects exactly one of two candidates and records it in the Lease', async () => {
    const a = candidate('a');
    const b = candidate('b');
    await waitFor('a leader', () => a.isLeader() || b.isLeader(), { timeoutMs: SETTLE_MS, intervalMs: 20 });
    // Held past a whole lease duration: the other candidate's tries all found a live lease.
    await waitFor('the lease renewed a lease duration past its acquisition', async () => {
      const spec = (await lease()).spec;
      return Date.parse(String(spec?.renewTime)) > Date.parse(String(spec?.acquireTime)) + timing.leaseDurationMs;
    }, { timeoutMs: SETTLE_MS });
    assert.equal([a, b].filter((e) => e.isLeader()).length, 1);
    assert.equal(maxConcurrentLeaders(timeline), 1);
    const l = await lease();
    assert.equal(l.spec?.holderIdentity, a.isLeader() ? 'a' : 'b');
    assert.equal(l.spec?.leaseDurationSeconds, 3);
    assert.equal(l.spec?.leaseTransitions, 0);
    const renewTime = String(l.spec?.renewTime);
    assert.match(renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'a MicroTime');
    assert.ok(Math.abs(Date.parse(renewTime) - Date.now()) < 2_000, `renewed recently (${renewTime})`);
    assert.ok(Date.parse(renewTime) > Date.parse(String(l.spec?.acquireTime)), 'renewed since it was acquired');
  });

  it('hands over at once when the leader stops and releases the lease', async () => {
    const a = candidate('a');
    await waitFor('a to lead', () => a.isLeader(), { timeoutMs: SETTLE_MS, intervalMs: 20 });
    const bStartedAt = Date.now();
    const b = candidate('b');
    await renewedPast(bStartedAt, 'a to renew while b tries');
    assert.equal(b.isLeader(), false);

    const stoppedAt = performance.now();
    await a.stop();
    await waitFor('b to take over', () => b.isLeader(), { timeoutMs: SETTLE_MS, intervalMs: 20 });
    const tookMs = performance.now() - stoppedAt;
    assert.ok(tookMs < timing.leaseDurationMs, `took over in ${Math.round(tookMs)} ms, without waiting for the lease to expire`);
    assert.equal(maxConcurrentLeaders(timeline), 1);
    const l = await lease();
    assert.equal(l.spec?.holderIdentity, 'b');
    assert.equal(l.spec?.leaseTransitions, 1);
  });

  it('takes over from a killed leader only once its lease has expired', async () => {
    child = spawnCandidate('killed', ns);
    await waitForLine(child, 'LEADING');
    const bStartedAt = Date.now();
    const b = candidate('b');
    await renewedPast(bStartedAt, 'the child leader to renew while b tries');
    assert.equal(b.isLeader(), false);

    child.kill('SIGKILL');
    const killedAt = performance.now();
    await waitFor('b to take over', () => b.isLeader(), { timeoutMs: 20_000, intervalMs: 20 });
    const tookMs = performance.now() - killedAt;
    assert.ok(tookMs >= timing.leaseDurationMs - timing.retryPeriodMs - 100, `waited for the lease to expire (${Math.round(tookMs)} ms)`);
    assert.ok(tookMs < timing.leaseDurationMs + 3 * timing.retryPeriodMs + 1_000, `took over soon after expiry (${Math.round(tookMs)} ms)`);
    assert.equal((await lease()).spec?.holderIdentity, 'b');
  });
});

/** A candidate in its own process, so it can die without releasing anything. */
function spawnCandidate(identity: string, namespace: string): ChildProcess {
  const module = new URL('../../src/runtime/leader-election.ts', import.meta.url).href;
  const script = `
    import { KubeConfig } from '@kubernetes/client-node';
    import { LeaderElector } from ${JSON.stringify(module)};
    const kc = new KubeConfig();
    kc.loadFromFile(process.env.KUBECONFIG);
    const e = new LeaderElector(kc, { namespace: ${JSON.stringify(namespace)}, name: 'operator-lock', identity: ${JSON.stringify(identity)}, ...${JSON.stringify(timing)} });
    e.run({ onStartedLeading: () => console.log('LEADING'), onStoppedLeading() {} });
  `;
  return spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: new URL('../..', import.meta.url),
    env: { ...process.env, KUBECONFIG: testEnv().kubeconfigPath },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

function waitForLine(proc: ChildProcess, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const lines = createInterface(proc.stdout!);
    lines.on('line', (l) => {
      if (l.trim() === line) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`the candidate process exited (${code}) before printing ${line}`)));
  });
}
