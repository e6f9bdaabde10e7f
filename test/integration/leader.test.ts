import assert from 'node:assert/strict';
import { startStandins } from '../standin/standin.ts';
import { app, applyApp, readyTrue, waitForApp } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

describe('two operator replicas (integration)', function () {
  this.timeout(600_000);
  let a: RunningOperator | undefined;
  let b: RunningOperator | undefined;
  let standins: Awaited<ReturnType<typeof startStandins>>;

  before(async () => { standins = await startStandins({ kubeConfig: testKubeConfig(), readyDelayMs: 100 }); });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await standins?.stop();
  });

  it('elects exactly one leader; the other takes over when the leader stops, and keeps reconciling', async () => {
    const ns = await freshNamespace('leader');
    const election = { leaderElect: true, leaderElectionNamespace: ns, leaderElectionId: 'serverlessapp-operator-leader' };
    a = await startOperator({ ...election, identity: 'replica-a' });
    b = await startOperator({ ...election, identity: 'replica-b' });
    const leader = await waitFor('one leader', async () => [a!, b!].filter((o) => o.manager.isLeader()).length === 1 ? [a!, b!].find((o) => o.manager.isLeader()) : undefined, { timeoutMs: SETTLE_MS });
    const standby = leader === a ? b! : a!;
    assert.equal(standby.manager.isLeader(), false);

    await applyApp(app(ns, 'shop', { container: { image: 'shop:1' } }));
    await waitForApp(ns, 'shop', readyTrue, 'reconciled by the leader');

    const stoppedAt = Date.now();
    await leader.stop();
    if (leader === a) a = undefined; else b = undefined;
    await waitFor('standby takes over', async () => standby.manager.isLeader() || undefined, { timeoutMs: SETTLE_MS, intervalMs: 50 });
    const tookMs = Date.now() - stoppedAt;
    assert.ok(tookMs < 5_000, `a released lease is taken over quickly (${tookMs} ms)`);
    await applyApp(app(ns, 'shop', { container: { image: 'shop:2' } }));
    await waitForApp(ns, 'shop', (x) => x.status?.versions?.stable?.image === 'shop:2', 'the new leader reconciles');
  });
});
