import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { phases, type ServerlessApp, type ServerlessAppStatus } from '../api/v1alpha1/serverlessapp.ts';
import type { PrewarmEvaluation } from '../prewarm/prewarm.ts';
import type { RolloutPlan } from '../rollout/canary.ts';
import { RolloutMetrics, warmupOutcome } from './rollout-metrics.ts';

const app = (name: string, status?: ServerlessAppStatus, warmup = true): ServerlessApp => ({
  apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
  metadata: { namespace: 'demo', name },
  spec: { container: { image: 'x' }, prewarm: { replicas: 1, ...(warmup ? { warmup: { path: '/warm' } } : {}) } },
  ...(status ? { status } : {}),
});

const plan = (phase: RolloutPlan['phase'], events: RolloutPlan['events'] = []): RolloutPlan => ({
  phase, events,
  promoted: { status: 'False', reason: 'x', message: 'x' }, progressing: { status: 'False', reason: 'x', message: 'x' },
});

/** The series of metric `name` as the registry exports them: "label=value,..." -> value. */
async function series(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  assert.ok(metric, `${name} is registered`);
  return Object.fromEntries(metric.values.map((v) => [
    [(v as { metricName?: string }).metricName ?? name, ...Object.entries(v.labels).map(([k, l]) => `${k}=${l}`)].join(','), v.value,
  ]));
}

const warm = (version: string, startedAt: string, warmedAt: string): PrewarmEvaluation => ({
  warm: true, startWarmup: false, status: { version, startedAt, warmedAt, requestsSent: 3, succeeded: 3 },
  condition: { status: 'True', reason: 'Warm', message: 'warm' },
});
const failed = (version: string): PrewarmEvaluation => ({
  warm: false, startWarmup: false, status: { version, startedAt: '2026-01-01T00:00:00Z', requestsSent: 9, succeeded: 0 },
  condition: { status: 'False', reason: 'WarmupFailed', message: 'deadline' },
});
const failedStatus = (version: string): ServerlessAppStatus => ({
  prewarm: { version, startedAt: '2026-01-01T00:00:00Z' },
  conditions: [{ type: 'Prewarmed', status: 'False', reason: 'WarmupFailed', message: 'deadline', lastTransitionTime: '2026-01-01T00:10:00Z' }],
});

describe('RolloutMetrics', () => {
  it('counts apps by phase, with a series for every phase, following each app from phase to phase until it is deleted', async () => {
    const registry = new Registry();
    const m = new RolloutMetrics(registry);
    m.observe(app('a'), plan('Canary'), false);
    m.observe(app('b'), plan('Canary'), false);
    m.observe(app('c'), plan('Stable'), false);
    m.observe(app('a'), plan('Promoting'), true);
    m.phase(app('d'), 'Failed');
    const counts = await series(registry, 'serverlessapp_apps');
    assert.deepEqual(Object.keys(counts).sort(), phases.map((p) => `serverlessapp_apps,phase=${p}`).sort());
    assert.deepEqual(
      Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0)),
      { 'serverlessapp_apps,phase=Canary': 1, 'serverlessapp_apps,phase=Promoting': 1, 'serverlessapp_apps,phase=Stable': 1, 'serverlessapp_apps,phase=Failed': 1 },
    );
    m.forget('demo', 'b');
    m.forget('demo', 'd');
    assert.equal((await series(registry, 'serverlessapp_apps'))['serverlessapp_apps,phase=Canary'], 0);
    assert.equal((await series(registry, 'serverlessapp_apps'))['serverlessapp_apps,phase=Failed'], 0);
  });

  it('counts a rollout outcome only when the status recording it was written', async () => {
    const registry = new Registry();
    const m = new RolloutMetrics(registry);
    const promoted = plan('Stable', [{ type: 'Normal', reason: 'Promoted', message: 'v2' }]);
    m.observe(app('a'), promoted, true);
    m.observe(app('a'), promoted, false);
    assert.deepEqual(await series(registry, 'serverlessapp_rollouts_total'), { 'serverlessapp_rollouts_total,result=promoted': 1 });
  });

  it('counts check rounds by result, every result from zero', async () => {
    const registry = new Registry();
    const m = new RolloutMetrics(registry);
    m.analysisRound('fail');
    m.analysisRound('fail');
    m.analysisRound('nodata');
    m.analysisRound('burn');
    assert.deepEqual(await series(registry, 'serverlessapp_analysis_rounds_total'), {
      'serverlessapp_analysis_rounds_total,result=pass': 0,
      'serverlessapp_analysis_rounds_total,result=fail': 2,
      'serverlessapp_analysis_rounds_total,result=burn': 1,
      'serverlessapp_analysis_rounds_total,result=nodata': 1,
      'serverlessapp_analysis_rounds_total,result=budget': 0,
    });
  });

  it('counts window transitions by change, every change from zero', async () => {
    const registry = new Registry();
    const m = new RolloutMetrics(registry);
    m.windowTransition('prewarm');
    m.windowTransition('open');
    assert.deepEqual(await series(registry, 'serverlessapp_window_transitions_total'), {
      'serverlessapp_window_transitions_total,change=open': 1,
      'serverlessapp_window_transitions_total,change=close': 0,
      'serverlessapp_window_transitions_total,change=prewarm': 1,
    });
  });

  it('times a warmup from its start to warm in the histogram, and counts a failed one', async () => {
    const registry = new Registry();
    const m = new RolloutMetrics(registry);
    assert.equal((await series(registry, 'serverlessapp_warmup_failures_total'))['serverlessapp_warmup_failures_total'], 0);
    m.prewarmed(app('a', { prewarm: { version: 'v2', startedAt: '2026-01-01T00:00:00Z' } }), warm('v2', '2026-01-01T00:00:00Z', '2026-01-01T00:00:45Z'));
    m.prewarmed(app('b'), failed('v2'));
    const h = await series(registry, 'serverlessapp_warmup_duration_seconds');
    assert.equal(h['serverlessapp_warmup_duration_seconds_count'], 1);
    assert.equal(h['serverlessapp_warmup_duration_seconds_sum'], 45);
    assert.equal(h['serverlessapp_warmup_duration_seconds_bucket,le=30'], 0);
    assert.equal(h['serverlessapp_warmup_duration_seconds_bucket,le=60'], 1);
    assert.equal((await series(registry, 'serverlessapp_warmup_failures_total'))['serverlessapp_warmup_failures_total'], 1);
  });
});

describe('warmupOutcome', () => {
  const cases: Array<[string, ServerlessApp, PrewarmEvaluation, ReturnType<typeof warmupOutcome>]> = [
    ['a version that just became warm, timed from its warmup start', app('a', { prewarm: { version: 'v2', startedAt: '2026-01-01T00:00:00Z' } }),
      warm('v2', '2026-01-01T00:00:00Z', '2026-01-01T00:02:00Z'), { seconds: 120 }],
    ['nothing for a version the status already shows warm', app('a', { prewarm: { version: 'v2', startedAt: '2026-01-01T00:00:00Z', warmedAt: '2026-01-01T00:02:00Z' } }),
      warm('v2', '2026-01-01T00:00:00Z', '2026-01-01T00:02:00Z'), undefined],
    ['a new version warm after an older one was', app('a', { prewarm: { version: 'v1', startedAt: '2026-01-01T00:00:00Z', warmedAt: '2026-01-01T00:02:00Z' } }),
      warm('v2', '2026-01-02T00:00:00Z', '2026-01-02T00:00:10Z'), { seconds: 10 }],
    ['nothing for a prewarm of replicas alone (no warmup to time)', app('a', undefined, false),
      warm('v2', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z'), undefined],
    ['a warmup that just failed', app('a', { prewarm: { version: 'v2', startedAt: '2026-01-01T00:00:00Z' } }), failed('v2'), 'failed'],
    ['nothing for a failure the status already shows', app('a', failedStatus('v2')), failed('v2'), undefined],
    ['a failure of a new version after an older one failed', app('a', failedStatus('v1')), failed('v2'), 'failed'],
    ['nothing while warming up', app('a'), { warm: false, startWarmup: true, status: { version: 'v2', startedAt: '2026-01-01T00:00:00Z' }, condition: { status: 'False', reason: 'WarmingUp', message: '' } }, undefined],
  ];
  for (const [name, a, evaluation, want] of cases) it(name, () => assert.deepEqual(warmupOutcome(a, evaluation), want));
});
