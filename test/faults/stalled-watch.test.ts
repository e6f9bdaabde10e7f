// Fault injection: the operator's watches go silent. The operator (a child
// process) reaches the API server through a proxy that, on cue, stops
// forwarding every established watch without closing it. Only the informers'
// watchdog can notice; it must, within its period, and the edit made while the
// watches were silent must be applied.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startStandins, type Standins } from '../standin/standin.ts';
import { app, applyApp, getApp, getKsvc, readyTrue } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { OperatorProcess } from '../support/operator-process.ts';
import { StallingProxy, kubeconfigTarget, kubeconfigThroughProxy } from '../support/proxy.ts';
import { waitForAppExplained } from './support/diagnose.ts';
import { atInstant } from '../support/schedule.ts';
import { waitFor } from '../support/wait.ts';

const WATCHDOG_MS = 10_000;
/** A reply follows its request within this; a watch goes on talking long after. */
const QUIET_MS = 1_500;

interface LogLine { ts?: string; level?: string; message?: string; kind?: string; reason?: string }

describe('stalled watches (fault injection)', function () {
  this.timeout(600_000);
  let ns: string;
  let standins: Standins;
  let proxy: StallingProxy;
  let op: OperatorProcess | undefined;

  before(async () => {
    ns = await freshNamespace('stall');
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), namespaces: [ns], readyDelayMs: 100 });
    proxy = await StallingProxy.start(kubeconfigTarget(testEnv().kubeconfigPath));
  });
  after(async () => {
    await op?.kill();
    await proxy?.close();
    await standins?.stop();
  });

  it('restarts silent watches within the watchdog period and applies the edit made meanwhile', async () => {
    const kubeconfigPath = kubeconfigThroughProxy(testEnv().kubeconfigPath, proxy, join(testEnv().dir, 'kubeconfig-stalling-proxy'));
    op = await OperatorProcess.start({ kubeconfigPath, namespaces: [ns], args: ['--watch-watchdog', `${WATCHDOG_MS / 1000}s`] });
    await op.waitReady();
    await applyApp(app(ns, 'shop', { container: { image: 'shop:1' }, ingress: { hosts: [`shop.${ns}.example.com`] } }));
    await waitForAppExplained(ns, 'shop', readyTrue, 'v1 ready', 120_000);

    const wallStalledAt = Date.now();
    const stalledAt = performance.now();
    proxy.stallStreams({ quietMs: QUIET_MS });
    // Every watch open now is older than QUIET_MS when this edit's events reach it, so they are swallowed;
    // none of them can have been replaced yet: the earliest watchdog fires WATCHDOG_MS after the watch's
    // last traffic, and a watch is recycled by the server within 0.75 * WATCHDOG_MS.
    // The stall is defined by time (the proxy's QUIET_MS), so the edit is scheduled by it.
    await atInstant(stalledAt + QUIET_MS + 200);
    const editedAt = performance.now();
    await applyApp(app(ns, 'shop', { container: { image: 'shop:2' }, ingress: { hosts: [`shop.${ns}.example.com`] } }));

    await waitFor('the edit rendered', async () => (await getKsvc(ns, 'shop'))?.spec.template.spec.containers[0]?.image === 'shop:2' || undefined, { timeoutMs: WATCHDOG_MS + 10_000, intervalMs: 50 });
    const renderedMs = performance.now() - editedAt;
    const wallRenderedAt = Date.now();
    // The real Knative makes the new revision Ready (a KWOK pod) before the operator can promote it.
    const a = await waitForAppExplained(ns, 'shop', (x) => readyTrue(x) && x.status?.versions?.stable?.image === 'shop:2', 'v2 stable', 90_000);
    assert.equal(a.status?.observedGeneration, a.metadata.generation);

    const restarts = op.output().flatMap((l) => parseLog(l)).filter((l) => l.reason === 'watchdog' && Date.parse(l.ts ?? '') >= wallStalledAt);
    const kinds = [...new Set(restarts.map((l) => l.kind))].sort();
    const latest = Math.max(...restarts.map((l) => Date.parse(l.ts!) - wallStalledAt));
    console.log(`      ${proxy.stats().stalled} connections stalled; watchdog restarted ${kinds.join(', ')} within ${latest} ms of the stall; the edit was rendered ${Math.round(renderedMs)} ms after it was made`);
    assert.ok(proxy.stats().stalled >= 1, 'the proxy stalled at least one watch');
    const appsRestartedAt = Math.min(...restarts.filter((l) => l.kind === 'serverlessapps').map((l) => Date.parse(l.ts!)));
    assert.ok(Number.isFinite(appsRestartedAt), `the ServerlessApp watch was restarted by the watchdog (restarted: ${kinds.join(', ') || 'none'})`);
    assert.ok(appsRestartedAt <= wallRenderedAt, 'the edit was seen only once the watchdog had replaced the silent ServerlessApp watch');
    // Nothing reached a stalled watch after the stall, so each watchdog fires within one period of it.
    assert.ok(latest <= WATCHDOG_MS + 1_500, `every watchdog restart came within one period of the stall (${latest} ms)`);
    assert.ok(renderedMs <= WATCHDOG_MS + 2_000, `the edit was applied within the watchdog period plus a relist (${Math.round(renderedMs)} ms)`);
    assert.ok(op.alive, 'the operator kept running');
    assert.ok((await getApp(ns, 'shop')).status?.phase === 'Stable');
  });
});

function parseLog(line: string): LogLine[] {
  try {
    return [JSON.parse(line) as LogLine];
  } catch {
    return [];
  }
}
