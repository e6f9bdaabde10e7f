import assert from 'node:assert/strict';
import type { RolloutSpec } from '../api/v1alpha1/serverlessapp.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import type { AnalysisPolicy } from '../api/v1alpha1/analysis-target.ts';
import { readBudget, runChecks } from '../effects/analysis-checks.ts';
import { revisionBounds } from '../scaling/revision-bounds.ts';
import { ErrorSeries, ScriptedPrometheus, errorsAmong, ratiosAt, seeded, since, type Bucket } from '../../test/support/scripted-prometheus.ts';
import { planRollout, type CanaryProgress, type ObservedRevision, type ReleaseStatus, type RevisionRef, type RolloutEvent, type RolloutInput, type RolloutPlan } from './canary.ts';
import { freezeFloor, gateWindows, judgeBurn, type Slo } from './slo.ts';

// SLO-gated releases on a virtual clock (issue 37): the rollout machine, the real query code
// (effects/analysis-checks.ts) over loopback, and a scripted Prometheus holding each version's
// requests and errors. Every story has a control that fails if the gate never fires or always does.

const MIN = 60_000;
const T0 = Date.parse('2026-11-29T10:00:00Z');
const CADENCE = 30_000;
const RPS_BUCKET = 500; // requests per 10 s bucket

/** The queries as examples/slo-gated-release.yaml writes them. */
const ERROR_RATIO = '(sum(increase(requests_total{app="{{app}}",version="{{version}}",code=~"5.."}[{{window}}])) or vector(0)) / sum(increase(requests_total{app="{{app}}",version="{{version}}"}[{{window}}]))';
const slo: Slo = { objective: 99.9, errorRatio: ERROR_RATIO };

const spec = (extra: Partial<RolloutSpec> = {}, sloExtra: Partial<Slo> = {}): RolloutSpec => ({
  steps: [10, 50], interval: '10m', bake: '30m',
  analysis: { prometheus: { provider: 'prom' }, slo: { ...slo, ...sloExtra }, cadence: '30s' },
  ...extra,
});

/** A version failing each request with probability `p(t)`, with binomial noise. */
const failing = (p: (atMs: number) => number, seed = 7) => {
  const random = seeded(seed);
  return (atMs: number): Bucket => ({ total: RPS_BUCKET, errors: errorsAmong(RPS_BUCKET, p(atMs), random) });
};
const healthy = failing(() => 0.0002);

const V1: RevisionRef = { version: 'v1', revision: 'shop-v1' };
const V2: RevisionRef = { version: 'v2', revision: 'shop-v2' };
const V3: RevisionRef = { version: 'v3', revision: 'shop-v3' };

/** The controller's loop around the rollout machine: rounds run when due (at once, on the virtual clock), the plan is recorded as status. */
class GatedRollout {
  stable: RevisionRef = V1;
  canary?: CanaryProgress;
  phase?: RolloutPlan['phase'];
  release?: ReleaseStatus;
  traffic = [{ revision: V1.revision, percent: 100 }];
  readonly events: Array<RolloutEvent & { at: number }> = [];
  rounds = 0;
  last?: RolloutPlan;
  readonly revisions: ObservedRevision[] = [
    { name: V1.revision, version: 'v1', ready: true, replicas: 3 },
    { name: V2.revision, version: 'v2', ready: true, replicas: 1 },
    { name: V3.revision, version: 'v3', ready: true, replicas: 1 },
  ];

  /** What the controller hands the machine: the status as recorded, the data plane as it reports. */
  private input(): RolloutInput {
    return {
      now: this.now, desired: this.desired, rollout: this.rollout,
      previous: { stable: this.stable, ...(this.canary ? { canary: this.canary } : {}), ...(this.phase ? { phase: this.phase } : {}), ...(this.release ? { release: this.release } : {}) },
      revisions: this.revisions, isWarm: () => true, traffic: this.traffic, freezeFloor: freezeFloor(this.rollout.analysis?.slo, this.platformFloor),
    };
  }

  /** The plan the machine makes now, without running a due round (what a reconcile writes while the round runs). */
  peek(): RolloutPlan {
    return planRollout(this.input());
  }

  readonly prom: ScriptedPrometheus;
  /** The virtual clock, shared with the scripted Prometheus. */
  readonly time: { now: Date };
  rollout: RolloutSpec;
  /** The platform's floor for the namespace (--release-freeze-below). */
  platformFloor: number;
  /** The version the spec asks for. */
  desired: RevisionRef = V2;
  /** Whether the platform marks the provider as confined to the namespace (values may be shown). */
  scoped = true;

  constructor(prom: ScriptedPrometheus, time: { now: Date }, rollout: RolloutSpec, platformFloor = 0) {
    this.prom = prom;
    this.time = time;
    this.rollout = rollout;
    this.platformFloor = platformFloor;
  }

  get now(): Date {
    return this.time.now;
  }

  set now(d: Date) {
    this.time.now = d;
  }

  private policy(): AnalysisPolicy {
    return { providers: [{ name: 'prom', url: this.prom.server.url, scoped: this.scoped }], allowAddress: false };
  }

  async tick(): Promise<RolloutPlan> {
    let plan!: RolloutPlan;
    for (let pass = 0; pass < 4; pass++) {
      const input = this.input();
      plan = planRollout(input);
      if (plan.due) {
        this.rounds++;
        const analysis = this.rollout.analysis!;
        const vars = { app: 'shop', namespace: 'team-a' };
        const outcome = plan.due.kind === 'budget'
          ? await readBudget(analysis, { ...vars, ...plan.stable! }, this.policy())
          : await runChecks(analysis, { ...vars, ...plan.candidate! }, this.policy());
        plan = planRollout({ ...input, ...(plan.due.kind === 'budget' ? { budget: outcome } : { analysis: outcome }) });
      }
      this.events.push(...plan.events.map((e) => ({ ...e, at: this.now.getTime() })));
      this.stable = plan.stable!;
      this.canary = plan.canary;
      this.phase = plan.phase;
      this.release = plan.release;
      const c = plan.candidate;
      const next = [{ revision: plan.stable!.revision, percent: 100 - (c?.percent ?? 0) }, ...(c && c.percent > 0 ? [{ revision: c.revision, percent: c.percent }] : [])]
        .filter((t) => t.percent > 0);
      const moved = JSON.stringify(next) !== JSON.stringify(this.traffic);
      this.traffic = next;
      if (!moved) break;
    }
    this.last = plan;
    return plan;
  }

  /** Steps the clock 10 s at a time until `done` or `forMs` passed; the plan where it stopped. */
  async run(forMs: number, done: (p: RolloutPlan) => boolean = () => false): Promise<RolloutPlan> {
    const end = this.now.getTime() + forMs;
    let plan = await this.tick();
    while (!done(plan) && this.now.getTime() < end) {
      this.now = new Date(this.now.getTime() + 10_000);
      plan = await this.tick();
    }
    return plan;
  }

  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}

describe('SLO-gated releases on a virtual clock', function () {
  this.timeout(60_000);
  let series: ErrorSeries;
  let prom: ScriptedPrometheus;
  const time = { now: new Date(T0) };

  beforeEach(async () => {
    time.now = new Date(T0);
    series = new ErrorSeries(T0 - 721 * 60 * MIN);
    series.fill('v1', T0 + 6 * 60 * MIN, healthy);
    prom = new ScriptedPrometheus(series, () => time.now);
    await prom.start();
  });
  afterEach(() => prom.stop());

  const rollout = (r: RolloutSpec, floor = 0) => new GatedRollout(prom, time, r, floor);

  /** When the workbook's gate first fires on the series, read straight from it (the test's own oracle). */
  function firstFiring(version: string, s: Slo, fromMs: number, toMs: number): number | undefined {
    for (let t = fromMs; t <= toMs; t += 10_000) {
      const ratios = ratiosAt(series, version, gateWindows(s), t);
      if (judgeBurn(s, ratios).fired) return t;
    }
    return undefined;
  }

  it('a fast burn in a step rolls all traffic back to stable within one cadence of the gate firing', async () => {
    const burnAt = T0 + 14 * MIN; // the second step (50%) began at about T0+10m
    series.fill('v2', T0 + 6 * 60 * MIN, since(T0, failing((t) => (t >= burnAt ? 0.2 : 0.0002))));
    const r = rollout(spec());
    const plan = await r.run(60 * MIN, (p) => p.phase === 'Failed');
    assert.equal(plan.phase, 'Failed', `the burn never failed the candidate: ${r.reasons().join(', ')}`);
    assert.equal(plan.canary?.failure?.reason, 'BurnRateExceeded');
    assert.match(plan.canary!.failure!.message, /at 50%: error budget burning faster than (14\.4x over both 1h and 5m|6x over both 6h and 30m) \([\d.]+x and [\d.]+x\) \(objective 99\.9%\)/);
    assert.deepEqual(r.traffic, [{ revision: V1.revision, percent: 100 }], 'all traffic back on stable');
    const fired = firstFiring('v2', slo, T0, T0 + 60 * MIN)!;
    const failedAt = r.events.find((e) => e.reason === 'BurnRateExceeded')!.at;
    assert.ok(failedAt - fired <= CADENCE, `failed ${(failedAt - fired) / 1000}s after the gate fired on the series; the cadence is ${CADENCE / 1000}s`);
    assert.ok(failedAt < T0 + 20 * MIN, 'caught within the step, not at its end');
  });

  it('a slow burn within budget goes on: both steps, the bake, promoted', async () => {
    // 0.3% errors: 3x the sustainable rate, under both factors (14.4 and 6).
    series.fill('v2', T0 + 6 * 60 * MIN, since(T0, failing(() => 0.003)));
    const r = rollout(spec());
    const plan = await r.run(3 * 60 * MIN, (p) => p.phase === 'Stable');
    assert.equal(plan.phase, 'Stable', `not promoted: ${r.reasons().join(', ')}`);
    assert.equal(plan.stable?.version, 'v2');
    assert.ok(!r.reasons().includes('BurnRateExceeded'));
    // Continuous: rounds ran about every cadence through 2 steps of 10 min and a bake of 30 min.
    assert.ok(r.rounds >= (50 * MIN) / CADENCE - 5, `${r.rounds} rounds in 50 minutes at a ${CADENCE / 1000}s cadence`);
    assert.ok(r.reasons().includes('Baking'));
  });

  it('a short spike inside the long window does not abort; the same spike sustained does', async () => {
    const spikeAt = T0 + 25 * MIN; // during the second step
    series.fill('v2', T0 + 6 * 60 * MIN, since(T0, failing((t) => (t >= spikeAt && t < spikeAt + MIN ? 0.06 : 0.0002))));
    const r = rollout(spec());
    const plan = await r.run(3 * 60 * MIN, (p) => p.phase === 'Stable' || p.phase === 'Failed');
    assert.equal(plan.phase, 'Stable', `a one-minute spike aborted the rollout: ${plan.canary?.failure?.message}`);
    // Control: the short window alone saw the spike (a gate on it alone would have fired).
    const shortAlone: Slo = { ...slo, burnRates: [{ long: '2m', short: '1m', factor: 14.4 }] };
    assert.ok(firstFiring('v2', shortAlone, spikeAt, spikeAt + 5 * MIN), 'the spike is visible to a short window');
  });

  it('over a replayed noisy trace of 30 days, the gate aborts under 1% of hour-long rollouts; a single short window aborts many', () => {
    const random = seeded(42);
    const trace = new ErrorSeries(T0);
    let spikeUntil = 0, spikeP = 0;
    const days = 30, end = T0 + days * 24 * 60 * MIN;
    trace.fill('v', end, (t) => {
      // About one spike every two hours, 1 to 3 minutes at 2% to 8% errors, over 0.02% to 0.08% background noise.
      if (t >= spikeUntil && random() < 10_000 / (120 * MIN)) {
        spikeUntil = t + MIN + random() * 2 * MIN;
        spikeP = 0.02 + random() * 0.06;
      }
      const p = t < spikeUntil ? spikeP : 0.0002 + random() * 0.0006;
      return { total: RPS_BUCKET, errors: errorsAmong(RPS_BUCKET, p, random) };
    });
    const aborted = (s: Slo) => {
      let count = 0, hours = 0;
      // Skip the first 6 hours: every window then holds a full history.
      for (let h = 6; h < days * 24; h++, hours++) {
        for (let t = T0 + h * 60 * MIN; t < T0 + (h + 1) * 60 * MIN; t += CADENCE) {
          const ratios = ratiosAt(trace, 'v', gateWindows(s), t);
          if (judgeBurn(s, ratios).fired) {
            count++;
            break;
          }
        }
      }
      return count / hours;
    };
    const workbook = aborted(slo);
    const naive = aborted({ ...slo, burnRates: [{ long: '5m', short: '1m', factor: 14.4 }] });
    assert.ok(workbook < 0.01, `the workbook's gate aborted ${(workbook * 100).toFixed(2)}% of rollouts on noise`);
    assert.ok(naive > 0.2, `control: a single short window should abort many noisy rollouts, aborted ${(naive * 100).toFixed(2)}%`);
  });

  it('a burn during the bake moves all traffic back to the previous version, held warm, without a new revision', async () => {
    const bakeBurn = T0 + 30 * MIN; // steps end at about T0+20m; the bake lasts 30m
    series.fill('v2', T0 + 6 * 60 * MIN, since(T0, failing((t) => (t >= bakeBurn ? 0.25 : 0.0002))));
    const r = rollout(spec());
    const baking = await r.run(60 * MIN, (p) => p.phase === 'Baking');
    assert.equal(baking.phase, 'Baking');
    assert.deepEqual(r.traffic, [{ revision: V2.revision, percent: 100 }]);
    const held = revisionBounds(baking, { minScale: 0 }, 0).get(V1.revision);
    assert.deepEqual(held, { minScale: 3 }, 'the previous version keeps the 3 replicas it had, at 0%');
    const plan = await r.run(60 * MIN, (p) => p.phase !== 'Baking');
    assert.equal(plan.phase, 'Failed', `the bake ended without the burn failing it: ${r.reasons().join(', ')}`);
    assert.equal(plan.canary?.failure?.reason, 'BurnRateExceeded');
    assert.match(plan.canary!.failure!.message, /^during the bake: /);
    assert.deepEqual(plan.stable, V1, 'the previous version is stable again, on its own revision');
    assert.deepEqual(r.traffic, [{ revision: V1.revision, percent: 100 }]);
    const fired = firstFiring('v2', slo, bakeBurn, bakeBurn + 30 * MIN)!;
    assert.ok(r.events.find((e) => e.reason === 'BurnRateExceeded')!.at - fired <= CADENCE);
  });

  it('no data halts: the step does not end while Prometheus is unreachable, and goes on once it answers', async () => {
    series.fill('v2', T0 + 6 * 60 * MIN, since(T0, healthy));
    const r = rollout(spec());
    await r.run(2 * MIN);
    prom.down = true;
    const halted = await r.run(30 * MIN);
    assert.equal(halted.phase, 'Canary');
    assert.equal(halted.candidate?.percent, 10, 'no step advanced without data');
    assert.equal(halted.progressing.reason, 'AnalysisNoData');
    assert.equal(r.reasons().filter((x) => x === 'AnalysisNoData').length, 1, 'one event when it halts');
    prom.down = false;
    const plan = await r.run(3 * 60 * MIN, (p) => p.phase === 'Stable');
    assert.equal(plan.phase, 'Stable');
  });

  it('threshold checks run continuously too: a check going bad mid-step fails the candidate within cadence x failureThreshold', async () => {
    series.fill('v2', T0 + 6 * 60 * MIN, since(T0, failing((t) => (t >= T0 + 3 * MIN ? 0.01 : 0.0002))));
    // The check reads the 1m error ratio: under 0.5% passes.
    const checks = [{ name: 'errors', query: ERROR_RATIO.replaceAll('{{window}}', '1m'), max: 0.005 }];
    const r = rollout({ steps: [10, 50], interval: '10m', analysis: { prometheus: { provider: 'prom' }, checks, cadence: '30s', failureThreshold: 2 } });
    const plan = await r.run(30 * MIN, (p) => p.phase === 'Failed');
    assert.equal(plan.canary?.failure?.reason, 'AnalysisFailed');
    const failedAt = r.events.find((e) => e.reason === 'AnalysisFailed')!.at;
    assert.ok(failedAt <= T0 + 4 * MIN + 2 * CADENCE, `failed at +${(failedAt - T0) / 1000}s, not within the first step`);
  });

  it('shows no figure from a provider the platform does not confine to the namespace: only which gate fired', async () => {
    series.fill('v2', T0 + 6 * 60 * MIN, since(T0, failing((t) => (t >= T0 + 2 * MIN ? 0.2 : 0.0002))));
    const r = rollout(spec());
    r.scoped = false;
    const plan = await r.run(30 * MIN, (p) => p.phase === 'Failed');
    assert.equal(plan.canary?.failure?.reason, 'BurnRateExceeded');
    assert.match(plan.canary!.failure!.message, /faster than (14\.4x over both 1h and 5m|6x over both 6h and 30m) \(objective 99\.9%\)$/);
    assert.doesNotMatch(JSON.stringify([plan, r.events]), /\d+(\.\d+)?x and \d/, 'no burn rate the query returned');
  });

  it('says how to fix an error ratio without `or vector(0)`: Prometheus answers nothing for a window without errors, and no data halts', async () => {
    series.fill('v2', T0 + 6 * 60 * MIN, since(T0, () => ({ total: 500, errors: 0 })));
    const r = rollout(spec({}, { errorRatio: ERROR_RATIO.replace(' or vector(0))', ')').replace('(sum(', 'sum(') }));
    const plan = await r.run(5 * MIN);
    assert.equal(plan.progressing.reason, 'AnalysisNoData');
    assert.match(plan.progressing.message, /query returned no data \(with no error in the window Prometheus has no series to sum: write the numerator as \(sum\(\.\.\.\) or vector\(0\)\)\)/);
  });

  it('a bake holds through a pause (its clock starting again on resume), and an edit to a third version promotes the baking one', async () => {
    series.fill('v2', T0 + 6 * 60 * MIN, since(T0, healthy)).fill('v3', T0 + 6 * 60 * MIN, since(T0, healthy));
    const r = rollout(spec());
    await r.run(60 * MIN, (p) => p.phase === 'Baking');
    r.rollout = spec({ paused: true });
    let plan = await r.run(40 * MIN);
    assert.equal(plan.phase, 'Paused', 'a pause holds the bake past its end');
    assert.deepEqual(revisionBounds(plan, { minScale: 0 }, 0).get(V1.revision), { minScale: 3 }, 'the previous version is still held warm');
    r.rollout = spec();
    plan = await r.run(MIN);
    assert.equal(plan.phase, 'Baking', 'resumed: the bake starts again');
    r.desired = V3;
    plan = await r.tick();
    assert.deepEqual(plan.stable, V2, 'the baking version is promoted');
    assert.match(r.events.find((e) => e.reason === 'Promoted')?.message ?? '', /version v2 \(revision shop-v2\) promoted to stable: the edit to version v3 cut its bake short; v1 retired/);
    assert.equal(plan.candidate?.version, 'v3');
    assert.deepEqual(r.traffic, [{ revision: V2.revision, percent: 90 }, { revision: V3.revision, percent: 10 }], 'v3 rolls out against v2');
  });

  describe('the release freeze', () => {
    /** v1's last 30 days spent `spent` of a 99.9% budget. */
    const spend = (spent: number) => {
      series = prom.series = new ErrorSeries(T0 - 721 * 60 * MIN);
      series.fill('v1', T0 + 6 * 60 * MIN, failing(() => 0.001 * spent));
      series.fill('v2', T0 + 6 * 60 * MIN, since(T0, healthy));
    };

    it('freezes a new version while too little budget remains; an override names it, passes, and is recorded', async () => {
      spend(0.9); // 10% left
      const r = rollout(spec({}, { freezeBelow: 25 }));
      let plan = await r.run(5 * MIN);
      assert.equal(plan.phase, 'Frozen');
      assert.equal(plan.candidate?.percent, 0);
      assert.equal(r.release?.frozen, true);
      assert.ok(Math.abs(r.release!.budgetRemaining! - 10) < 1, `remaining ${r.release?.budgetRemaining}%`);
      assert.match(plan.progressing.message, /release frozen: (9|10)(\.\d+)?% of the error budget remains over 720h, below the freeze policy of 25%.*rollout\.releaseOverride/);
      assert.equal(r.reasons().filter((x) => x === 'ReleaseFrozen').length, 1, 'one event when it freezes');
      // While the budget is read again, the candidate stays Frozen: no traffic, no replicas, Stalled does not flap.
      r.now = new Date(r.now.getTime() + CADENCE);
      const rereading = r.peek();
      assert.deepEqual([rereading.phase, rereading.due?.kind, rereading.candidate?.state], ['Frozen', 'budget', 'frozen']);
      assert.deepEqual(revisionBounds(rereading, { minScale: 2 }, 1).get(V2.revision), { minScale: 0 });
      const reads = prom.queries.length;
      assert.ok(reads >= (5 * MIN) / CADENCE - 1, `the budget is read again every cadence while frozen (${reads} reads)`);

      r.rollout = spec({ releaseOverride: { version: 'v2', by: 'alice@oncall', reason: 'INC-4211 hotfix' } }, { freezeBelow: 25 });
      plan = await r.run(MIN);
      assert.equal(plan.phase, 'Canary');
      assert.equal(plan.candidate?.percent, 10);
      assert.deepEqual(r.release?.override && { ...r.release.override, at: undefined }, { version: 'v2', by: 'alice@oncall', reason: 'INC-4211 hotfix', at: undefined });
      const audit = r.events.find((e) => e.reason === 'ReleaseFreezeOverridden');
      assert.match(audit?.message ?? '', /overridden for version v2 by "alice@oncall": INC-4211 hotfix/);
      // Once let through it is not held again, the override may go.
      r.rollout = spec({}, { freezeBelow: 25 });
      plan = await r.run(3 * 60 * MIN, (p) => p.phase === 'Stable' || p.phase === 'Frozen');
      assert.equal(plan.phase, 'Stable');
      assert.deepEqual(r.release?.override && { ...r.release.override, at: undefined }, { version: 'v2', by: 'alice@oncall', reason: 'INC-4211 hotfix', at: undefined }, 'the override stays on record after promotion');
      assert.notEqual(r.release?.frozen, true, 'nothing is frozen any more');
    });

    it('hides the remaining budget from a provider the platform does not confine to the namespace', async () => {
      spend(0.9);
      const r = rollout(spec({}, { freezeBelow: 25 }));
      r.scoped = false;
      const plan = await r.run(MIN);
      assert.equal(plan.phase, 'Frozen');
      assert.equal(r.release?.budgetRemaining, undefined);
      assert.match(plan.progressing.message, /^release frozen: less of the error budget remains than the freeze policy's 25% over 720h;/);
    });

    it('lets a new version through when enough budget remains (the control)', async () => {
      spend(0.5); // 50% left
      const r = rollout(spec({}, { freezeBelow: 25 }));
      const plan = await r.run(MIN);
      assert.equal(plan.phase, 'Canary');
      assert.equal(plan.candidate?.percent, 10);
      assert.equal(r.release?.frozen, false);
      assert.ok(!r.reasons().includes('ReleaseFrozen'));
    });

    it('holds the platform\'s floor over a lower one of the app\'s', async () => {
      spend(0.6); // 40% left: above the app's 25%, below the platform's 50%
      const r = rollout(spec({}, { freezeBelow: 25 }), 50);
      const plan = await r.run(MIN);
      assert.equal(plan.phase, 'Frozen');
      assert.equal(r.release?.freezeBelow, 50);
    });

    it('waits, neither frozen nor released, while the budget cannot be read', async () => {
      spend(0.1);
      prom.down = true;
      const r = rollout(spec({}, { freezeBelow: 25 }));
      let plan = await r.run(3 * MIN);
      assert.equal(plan.phase, 'Canary');
      assert.equal(plan.candidate?.percent, 0);
      assert.equal(plan.progressing.reason, 'BudgetNoData');
      assert.ok(!r.canary?.released);
      assert.deepEqual(revisionBounds(plan, { minScale: 2 }, 1).get(V2.revision), { minScale: 0 }, 'held back: no replicas either');
      prom.down = false;
      plan = await r.run(2 * MIN);
      assert.equal(plan.candidate?.percent, 10);
    });
  });
});
