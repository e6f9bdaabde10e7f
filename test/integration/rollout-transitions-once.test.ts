// Every transition of an automated rollout and of a failed one is announced
// once and counted once (issue 33: the status is the rollout's only memory, and
// a re-run planned from a cache that has not seen the last status write used
// to record the same transition again). On the rig's real Knative with the
// operator in this process: the app's Events as the API server holds them (a
// repeat shows as a second Event or as a series count above 1), and the
// moves of serverlessapp_rollouts_total and serverlessapp_analysis_rounds_total
// in the operator's own registry (this suite's operator watches only its own
// namespace, so a move is this app's: other test files leave apps behind in
// the shared cluster, and one whose rollout fails meanwhile would count). The
// steps run on a controlled clock against a loopback Prometheus the operator
// knows as the platform provider "test".
import assert from 'node:assert/strict';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { LoopbackServer, promVector } from '../support/http-server.ts';
import { waitIdle } from '../support/idle.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS } from '../support/wait.ts';

const COUNTERS = ['serverlessapp_rollouts_total', 'serverlessapp_analysis_rounds_total'];

interface AppEvent { reason?: string; note?: string; type?: string; regarding?: { kind?: string; name?: string }; series?: { count?: number } }

describe('every transition of an automated and of a failed rollout appears exactly once in Events and in each counter (integration)', function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let clock: OffsetClock;
  let prom: LoopbackServer;
  let ns: string;

  before(async () => {
    prom = await new LoopbackServer().start();
    clock = new OffsetClock();
    ns = await freshNamespace('once');
    op = await startOperator({ analysisProviders: [{ name: 'test', url: prom.url }], namespaces: [ns] }, { clock });
  });
  after(async () => {
    await op?.stop();
    await prom?.stop();
  });

  const spec = (tag: string, rollout?: AppSpec['rollout']): AppSpec => ({
    container: { image: `ghcr.io/acme/shop:${tag}`, port: 8080 }, scaling: { minScale: 0 }, ...(rollout ? { rollout } : {}),
  });
  /** Two steps, a check round at each, two failed rounds fail the candidate. */
  const auto = {
    steps: [10, 40], interval: '10s',
    analysis: { prometheus: { provider: 'test' }, checks: [{ name: 'success-rate', query: 'sum(rate(ok{revision="{{revision}}"}[1m]))', min: 0.99 }], failureThreshold: 2 },
  };
  /** The step's interval has passed: move the clock past it and have the operator look again, instead of waiting. */
  function nextInterval(): void {
    clock.advance(10_001);
    op.apps.controller.enqueueAll();
  }

  /** Each counter's series, "name{result}" -> value, read from the in-process operator's registry. */
  async function counters(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const name of COUNTERS) {
      const metric = op.manager.metrics.registry.getSingleMetric(name);
      assert.ok(metric, `the operator registers ${name}`);
      for (const v of (await metric.get()).values) out[`${name}{${v.labels.result}}`] = v.value;
    }
    return out;
  }
  /** The series that moved between two readings, and by how much. */
  const moved = (before: Record<string, number>, after: Record<string, number>) =>
    Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)] as const).filter(([, d]) => d !== 0));

  /** The app's Events as the API server holds them, once the operator is idle (every recorded Event written). */
  async function appEvents(): Promise<AppEvent[]> {
    await waitIdle(op.manager);
    const all = (await userClient().list<AppEvent>(Kinds.Event, ns)).items;
    return all.filter((e) => e.regarding?.kind === 'ServerlessApp' && e.regarding.name === 'shop');
  }
  const describeEvents = (events: AppEvent[]) => events.map((e) => `${e.reason} ×${e.series?.count ?? 1} "${e.note}"`).join('; ');

  it('an automated rollout to promotion and a failed one: each transition one Event, each counter moved once per transition', async () => {
    prom.handler = (_r, res) => res.end(promVector(0.999));
    await applyApp(app(ns, 'shop', spec('1')));
    await waitForApp(ns, 'shop', (a) => readyTrue(a) && a.status?.versions?.stable?.image === 'ghcr.io/acme/shop:1', 'v1 serving', READY_MS);
    await waitIdle(op.manager);
    const start = await counters();

    // Automated: 10% -> (a passing round) 40% -> (a passing round) promoted.
    await applyApp(app(ns, 'shop', spec('2', auto)));
    await waitForApp(ns, 'shop', (a) => a.status?.canary?.trafficPercent === 10, 'v2 at step 1, 10%', READY_MS);
    nextInterval();
    await waitForApp(ns, 'shop', (a) => a.status?.canary?.trafficPercent === 40, 'v2 at step 2, 40%, after a passing round', SETTLE_MS);
    nextInterval();
    await waitForApp(ns, 'shop', (a) => a.status?.phase === 'Stable' && a.status.versions?.stable?.image === 'ghcr.io/acme/shop:2', 'v2 promoted after a second passing round', SETTLE_MS);
    await waitIdle(op.manager);
    const promoted = await counters();
    assert.deepEqual(moved(start, promoted), {
      'serverlessapp_rollouts_total{promoted}': 1,
      'serverlessapp_analysis_rounds_total{pass}': 2,
    }, `the automated rollout: one promotion, one passing round per step; the app's Events: ${describeEvents(await appEvents())}`);

    // Failed: 10% -> a failed round -> a second failed round fails the candidate.
    prom.handler = (_r, res) => res.end(promVector(0.5));
    await applyApp(app(ns, 'shop', spec('3', auto)));
    await waitForApp(ns, 'shop', (a) => a.status?.canary?.trafficPercent === 10, 'v3 at step 1, 10%', READY_MS);
    nextInterval();
    await waitForApp(ns, 'shop', (a) => a.status?.canary?.failedChecks === 1, 'v3 after one failed round', SETTLE_MS);
    nextInterval();
    await waitForApp(ns, 'shop', (a) => a.status?.phase === 'Failed', 'v3 failed after the second failed round', SETTLE_MS);
    // Failed holds: more intervals pass and the operator looks again, and nothing more is announced or counted.
    nextInterval();
    await waitIdle(op.manager);
    assert.deepEqual(moved(promoted, await counters()), {
      'serverlessapp_rollouts_total{failed}': 1,
      'serverlessapp_analysis_rounds_total{fail}': 2,
    }, `the failed rollout: one failure, the two failed rounds; the app's Events: ${describeEvents(await appEvents())}`);

    const events = await appEvents();
    const repeated = events.filter((e) => (e.series?.count ?? 1) !== 1);
    assert.deepEqual(repeated.map((e) => e.reason), [], `no transition announced twice (a repeat joins the Event's series): ${describeEvents(events)}`);
    const keys = events.map((e) => `${e.reason}: ${e.note}`);
    assert.equal(new Set(keys).size, keys.length, `no two Events say the same: ${describeEvents(events)}`);
    const byReason = (reason: string) => events.filter((e) => e.reason === reason).map((e) => e.note);
    const transitions = ['Ready', 'CanaryWeightChanged', 'CheckRoundFailed', 'AnalysisFailed', 'Promoted'];
    assert.deepEqual(Object.fromEntries(transitions.map((r) => [r, byReason(r).length])), {
      Ready: 1, // v1, the first version
      CanaryWeightChanged: 3, // v2 at 10% and 40%, v3 at 10%
      CheckRoundFailed: 1, // v3's first failed round (the second fails it)
      AnalysisFailed: 1,
      Promoted: 1, // v2
    }, `each transition once: ${describeEvents(events)}`);
    const weights = byReason('CanaryWeightChanged').map((n) => /gets (\d+)% of traffic/.exec(n ?? '')?.[1]).sort();
    assert.deepEqual(weights, ['10', '10', '40'], `the weights announced: ${describeEvents(events)}`);
  });
});
