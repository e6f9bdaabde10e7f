// Fault injection: two operator replicas (child processes) elect a leader;
// the leader is SIGKILLed, so it cannot release the lease. The standby must
// take over once the lease expires (15 s) plus at most its polling jitter,
// must not have written anything while it was standby, and must then apply
// the edit made while nobody led. Each replica authenticates with its own
// client certificate, so the audit log tells their writes apart.
import assert from 'node:assert/strict';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { writeLabel, type AuditWrite } from '../envtest/audit.ts';
import { startStandins, type Standins } from '../standin/standin.ts';
import { app, applyApp, getApp, readyTrue } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { OperatorProcess } from '../support/operator-process.ts';
import { waitForAppExplained } from './support/diagnose.ts';
import { kubeconfigAs } from './support/identity.ts';
import { waitForSettled } from './support/settled.ts';
import { waitFor } from '../support/wait.ts';

/** The elector's defaults (src/runtime/leader-election.ts). */
const LEASE_DURATION_MS = 15_000;
/** A standby polls every retryPeriod (2 s) stretched by up to 2.2x jitter, as client-go does. */
const MAX_POLL_MS = 2_000 * 2.2;
const LEASE = 'serverlessapp-operator-leader';
const REPLICAS = ['replica-a', 'replica-b'] as const;

describe('leader failover (fault injection)', function () {
  this.timeout(600_000);
  let ns: string;
  let standins: Standins;
  const replicas = new Map<string, OperatorProcess>();

  before(async () => {
    ns = await freshNamespace('failover');
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), namespaces: [ns], readyDelayMs: 100 });
  });
  after(async () => {
    await Promise.all([...replicas.values()].map((r) => r.kill()));
    await standins?.stop();
  });

  const leases = () => testEnv().kubeConfig().makeApiClient(CoordinationV1Api);
  const holder = async () => (await leases().readNamespacedLease({ name: LEASE, namespace: ns }).catch(() => undefined))?.spec?.holderIdentity;

  it('hands over to the standby within the lease duration, and the standby wrote nothing before', async () => {
    for (const identity of REPLICAS) {
      const kubeconfigPath = await kubeconfigAs(testEnv(), identity);
      replicas.set(identity, await OperatorProcess.start({ kubeconfigPath, namespaces: [ns], leaderElect: true, leaderElectionNamespace: ns, identity }));
    }
    await Promise.all([...replicas.values()].map((r) => r.waitReady()));
    const leader = await waitFor('a leader', holder, { timeoutMs: 30_000, intervalMs: 100 });
    const standby = REPLICAS.find((r) => r !== leader)!;
    const since = new Date(Date.now() - 60_000);

    // minScale 1: the real Knative would otherwise scale the idle apps to zero meanwhile, a status change the new leader would rightly report.
    // Image references Knative's webhook can parse (a one-letter repository like `c:1` is refused).
    const spec = (image: string) => ({ container: { image: `ghcr.io/acme/${image}` }, scaling: { minScale: 1 } });
    for (const name of ['a', 'b', 'c']) await applyApp(app(ns, name, spec(`${name}:1`)));
    await Promise.all(['a', 'b', 'c'].map((name) => waitForAppExplained(ns, name, readyTrue, `${name} ready`, 120_000)));
    // The real Knative goes on reporting after Ready (replicas, routing state), and the leader rightly writes
    // that into status. The kill comes once the data plane's last word is in and in the apps' status, and the
    // leader has nothing queued or running: a write by the new leader to the apps nobody edits would then be
    // one the takeover alone caused.
    await Promise.all(['a', 'b', 'c'].map((name) => waitForSettled(ns, name, 120_000)));
    await replicas.get(leader)!.waitIdle();
    const statusAtKill = await Promise.all(['a', 'c'].map((name) => getApp(ns, name).then((x) => x.status)));

    const killedAt = Date.now();
    await replicas.get(leader!)!.kill('SIGKILL');
    // Made while nobody leads: the new leader must apply it.
    await applyApp(app(ns, 'b', spec('b:2')));

    await waitFor('the standby to take the lease', async () => (await holder()) === standby || undefined, { timeoutMs: LEASE_DURATION_MS + 2 * MAX_POLL_MS + 10_000, intervalMs: 100 });
    await waitForAppExplained(ns, 'b', (x) => readyTrue(x) && x.status?.versions?.stable?.image === 'ghcr.io/acme/b:2', 'the new leader applies the edit', 90_000);
    const appliedAt = Date.now();
    // The new leader reconciles every app when it takes over: once it is idle, a write to a or c would have been made.
    await replicas.get(standby)!.waitIdle();

    const writes = testEnv().auditWrites({ since });
    const byStandby = writes.filter((w) => w.user === standby);
    const acquired = byStandby.find((w) => w.resource === 'leases' && (w.code === 200 || w.code === 201));
    assert.ok(acquired, `the standby's lease write is in the audit log (${byStandby.length} writes by ${standby})`);
    // Only accepted writes count: a standby's refused attempt to create the Lease (409, both replicas race at start-up) changes nothing.
    const before = byStandby.filter((w) => w.timestamp < acquired.timestamp && (w.code ?? 0) < 400);
    assert.deepEqual(before.map((w) => `${w.verb} ${w.resource}/${w.name} ${w.code}`), [], 'the standby wrote nothing while it was not the leader');
    const byLeader = writes.filter((w) => w.user === leader);
    assert.ok(byLeader.length > 0, 'the leader\'s writes are in the audit log under its own user');
    assert.ok(writes.filter((w) => w.user === leader && w.timestamp.getTime() > killedAt + 1_000).length === 0, 'the killed leader wrote nothing after its death');

    const ofAOrC = (w: AuditWrite) => /^[ac]([-.]|$)/.test(w.name ?? '');
    const untouched = byStandby.filter(ofAOrC);
    const statusNow = await Promise.all(['a', 'c'].map((name) => getApp(ns, name).then((x) => x.status)));
    // Had the data plane changed a or c after the kill, the new leader would rightly have reported it: say so.
    const dataPlane = writes.filter((w) => ofAOrC(w) && w.timestamp.getTime() > killedAt && !(REPLICAS as readonly string[]).includes(w.user));
    assert.deepEqual(untouched.map((w) => `${w.verb} ${w.resource}/${w.name}`), [],
      `the new leader left the apps nobody edited alone (their status at the kill ${JSON.stringify(statusAtKill)}, now ${JSON.stringify(statusNow)}; `
      + `others' writes to them since the kill: ${JSON.stringify(dataPlane.map((w) => `${w.user} ${writeLabel(w)} ${w.name}`))})`);
    // The leader's last renewal: its last lease write before it died.
    const lastRenew = byLeader.filter((w) => w.resource === 'leases' && w.timestamp.getTime() <= killedAt).at(-1)!.timestamp.getTime();
    const takeoverMs = acquired.timestamp.getTime() - killedAt;
    const sinceRenewMs = acquired.timestamp.getTime() - lastRenew;
    console.log(`      ${leader} killed; ${standby} took the lease ${takeoverMs} ms after the kill (${sinceRenewMs} ms after its last renewal), `
      + `applied the edit made meanwhile ${appliedAt - killedAt} ms after the kill; ${byLeader.length} writes by the leader, ${byStandby.length} by the standby (all after taking over)`);
    // Expiry is judged on the standby's own clock, from when it last saw the lease change (client-go's rule):
    // that is up to one poll after the last renewal, and the takeover comes at the first poll after expiry.
    assert.ok(sinceRenewMs >= LEASE_DURATION_MS - 100, `no takeover before the lease expired (${sinceRenewMs} ms after the last renewal)`);
    assert.ok(sinceRenewMs <= LEASE_DURATION_MS + 2 * MAX_POLL_MS + 1_000, `took over within the lease duration plus two polls (${sinceRenewMs} ms after the last renewal)`);
  });
});
