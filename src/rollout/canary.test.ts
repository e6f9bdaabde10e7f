import assert from 'node:assert/strict';
import type { RolloutSpec } from '../api/v1alpha1/serverlessapp.ts';
import { phases, type Phase } from '../api/v1alpha1/serverlessapp.ts';
import { failureHolds, isParked, isStoppedPhase, planRollout, type AnalysisOutcome, type CandidateState, type CanaryProgress, type ObservedRevision, type RevisionRef, type RolloutPlan } from './canary.ts';

/** The split a data plane reports once it has applied `plan`'s routes (a ready revision only). */
function routed(plan: RolloutPlan, revisions: Map<string, ObservedRevision>): Array<{ revision: string; percent: number }> {
  const ready = (name?: string) => !!name && !!revisions.get(name)?.ready;
  if (!plan.stable) return plan.initial?.revision && ready(plan.initial.revision) ? [{ revision: plan.initial.revision, percent: 100 }] : [];
  const c = plan.candidate;
  const p = c && ready(c.revision) ? c.percent : 0;
  return [{ revision: plan.stable.revision, percent: 100 - p }, ...(c && p > 0 ? [{ revision: c.revision, percent: p }] : [])];
}

// A tiny driver: feeds each plan's stable/canary back in as status, like the
// controller does. `step` reconciles until the data plane reports what was asked
// (as the controller does on the data plane's status events), unless `lagging`
// holds the data plane back, in which case one step is one reconcile.
class Rollout {
  stable?: RevisionRef;
  canary?: CanaryProgress;
  phase?: Phase;
  warmupFailed?: string;
  revisions = new Map<string, ObservedRevision>();
  warm = new Set<string>();
  now = new Date('2026-11-21T10:00:00Z');
  traffic: Array<{ revision: string; percent: number }> = [];
  lagging = false;

  revision(name: string, version: string, ready = true): this {
    this.revisions.set(name, { name, version, ready, replicas: ready ? 1 : 0 });
    if (ready) this.warm.add(version);
    return this;
  }

  step(version: string, revision: string | undefined, rollout?: RolloutSpec, analysis?: AnalysisOutcome): RolloutPlan {
    const events: RolloutPlan['events'] = [];
    for (let pass = 0; ; pass++) {
      const plan = planRollout({
        now: this.now, desired: { version, ...(revision ? { revision } : {}) }, ...(rollout ? { rollout } : {}),
        previous: { ...(this.stable ? { stable: this.stable } : {}), ...(this.canary ? { canary: this.canary } : {}), ...(this.phase ? { phase: this.phase } : {}) },
        revisions: [...this.revisions.values()], isWarm: (v) => this.warm.has(v), ...(analysis ? { analysis } : {}),
        ...(this.warmupFailed ? { warmupFailed: this.warmupFailed } : {}),
        traffic: this.traffic,
      });
      // As the controller's status: a first version that failed is not stable.
      this.stable = plan.stable;
      this.canary = plan.canary;
      this.phase = plan.phase;
      events.push(...plan.events);
      const next = routed(plan, this.revisions);
      const moved = JSON.stringify(next) !== JSON.stringify(this.traffic);
      if (this.lagging || !moved || pass >= 3) return { ...plan, events };
      this.traffic = next;
    }
  }

  /** The lagging data plane catches up with the last plan's routes. */
  catchUp(plan: RolloutPlan): void {
    this.traffic = routed(plan, this.revisions);
  }

  advance(ms: number): void {
    this.now = new Date(this.now.getTime() + ms);
  }
}

const split = (p: RolloutPlan) => ({ phase: p.phase, stable: p.stable?.revision, candidate: p.candidate?.revision, percent: p.candidate?.percent ?? 0 });

describe('rollout state machine', () => {
  it('keeps the first version pending until its revision is ready, then makes it stable', () => {
    const r = new Rollout().revision('shop-v1', 'v1', false);
    let p = r.step('v1', 'shop-v1');
    assert.equal(p.phase, 'Pending');
    assert.equal(p.stable, undefined);
    assert.deepEqual(p.initial, { version: 'v1', revision: 'shop-v1', ready: false, warm: false });
    r.revision('shop-v1', 'v1', true);
    p = r.step('v1', 'shop-v1');
    assert.deepEqual(split(p), { phase: 'Stable', stable: 'shop-v1', candidate: undefined, percent: 0 });
    assert.equal(p.promoted.status, 'True');
  });

  it('waits for the first version to be warm when prewarm is configured', () => {
    const r = new Rollout().revision('shop-v1', 'v1');
    r.warm.delete('v1');
    assert.equal(r.step('v1', 'shop-v1').phase, 'Pending');
    r.warm.add('v1');
    assert.equal(r.step('v1', 'shop-v1').phase, 'Stable');
  });

  it('re-applying the same spec is a no-op: same plan, no events', () => {
    const r = new Rollout().revision('shop-v1', 'v1');
    r.step('v1', 'shop-v1');
    const again = r.step('v1', 'shop-v1');
    assert.deepEqual(split(again), { phase: 'Stable', stable: 'shop-v1', candidate: undefined, percent: 0 });
    assert.deepEqual(again.events, []);
  });

  it('without canaryPercent, a new version takes all traffic only once ready', () => {
    const r = new Rollout().revision('shop-v1', 'v1');
    r.step('v1', 'shop-v1');
    r.revision('shop-v2', 'v2', false);
    let p = r.step('v2', 'shop-v2');
    assert.deepEqual(split(p), { phase: 'Promoting', stable: 'shop-v1', candidate: 'shop-v2', percent: 0 });
    r.revision('shop-v2', 'v2', true);
    p = r.step('v2', 'shop-v2');
    assert.deepEqual(split(p), { phase: 'Stable', stable: 'shop-v2', candidate: undefined, percent: 0 });
    assert.ok(p.events.some((e) => e.reason === 'Promoted'));
  });

  it('is Promoting, not Promoted, until the data plane reports all traffic on the candidate', () => {
    const r = new Rollout().revision('shop-v1', 'v1');
    r.step('v1', 'shop-v1');
    r.revision('shop-v2', 'v2', true);
    r.lagging = true;
    let p = r.step('v2', 'shop-v2');
    assert.deepEqual(split(p), { phase: 'Promoting', stable: 'shop-v1', candidate: 'shop-v2', percent: 100 });
    assert.deepEqual([p.promoted.status, p.promoted.reason], ['False', 'TrafficMoving']);
    assert.ok(!p.events.some((e) => e.reason === 'Promoted'), 'no Promoted event before traffic moved');
    p = r.step('v2', 'shop-v2');
    assert.equal(p.phase, 'Promoting', 'a refused or slow route change keeps it Promoting');
    r.catchUp(p);
    p = r.step('v2', 'shop-v2');
    assert.deepEqual(split(p), { phase: 'Stable', stable: 'shop-v2', candidate: undefined, percent: 0 });
    assert.deepEqual([p.promoted.status, p.promoted.reason], ['True', 'Promoted']);
    assert.ok(p.events.some((e) => e.reason === 'Promoted'));
  });

  it('keeps the first version Pending until the data plane routes to it', () => {
    const r = new Rollout().revision('shop-v1', 'v1');
    r.lagging = true;
    let p = r.step('v1', 'shop-v1');
    assert.equal(p.phase, 'Pending');
    assert.match(p.promoted.message, /waiting for the data plane/);
    r.catchUp(p);
    p = r.step('v1', 'shop-v1');
    assert.equal(p.phase, 'Stable');
  });

  it('walks v1 -> v2 at 20% -> 50% -> 100% promoted, asserting weights after each edit', () => {
    const r = new Rollout().revision('shop-v1', 'v1');
    r.step('v1', 'shop-v1');
    r.revision('shop-v2', 'v2');
    assert.deepEqual(split(r.step('v2', 'shop-v2', { canaryPercent: 20 })), { phase: 'Canary', stable: 'shop-v1', candidate: 'shop-v2', percent: 20 });
    assert.deepEqual(split(r.step('v2', 'shop-v2', { canaryPercent: 50 })), { phase: 'Canary', stable: 'shop-v1', candidate: 'shop-v2', percent: 50 });
    const promoted = r.step('v2', 'shop-v2', { canaryPercent: 100 });
    assert.deepEqual(split(promoted), { phase: 'Stable', stable: 'shop-v2', candidate: undefined, percent: 0 });
    assert.equal(promoted.promoted.status, 'True');
    // Removing canaryPercent afterwards changes nothing.
    assert.deepEqual(split(r.step('v2', 'shop-v2')), { phase: 'Stable', stable: 'shop-v2', candidate: undefined, percent: 0 });
  });

  it('gives a candidate that never gets ready no traffic, whatever canaryPercent says', () => {
    const r = new Rollout().revision('shop-v1', 'v1');
    r.step('v1', 'shop-v1');
    r.revision('shop-v2', 'v2', false);
    for (const canaryPercent of [20, 50, 100]) {
      const p = r.step('v2', 'shop-v2', { canaryPercent });
      assert.equal(p.candidate?.percent, 0, `at ${canaryPercent}%`);
      assert.equal(p.stable?.revision, 'shop-v1');
    }
  });

  it('gives a ready but not yet warm candidate no traffic', () => {
    const r = new Rollout().revision('shop-v1', 'v1').revision('shop-v2', 'v2');
    r.step('v1', 'shop-v1');
    r.warm.delete('v2');
    const p = r.step('v2', 'shop-v2', { canaryPercent: 30 });
    assert.equal(p.candidate?.percent, 0);
    assert.equal(p.progressing.reason, 'WaitingForCandidate');
  });

  it('rolls back with canaryPercent 0 and keeps the candidate at 0%', () => {
    const r = new Rollout().revision('shop-v1', 'v1').revision('shop-v2', 'v2');
    r.step('v1', 'shop-v1');
    r.step('v2', 'shop-v2', { canaryPercent: 20 });
    const p = r.step('v2', 'shop-v2', { canaryPercent: 0 });
    assert.deepEqual(split(p), { phase: 'RolledBack', stable: 'shop-v1', candidate: 'shop-v2', percent: 0 });
    assert.equal(p.candidate?.state, 'rolledBack');
    assert.ok(p.events.some((e) => e.reason === 'RolledBack'));
    // And forward again.
    assert.deepEqual(split(r.step('v2', 'shop-v2', { canaryPercent: 10 })), { phase: 'Canary', stable: 'shop-v1', candidate: 'shop-v2', percent: 10 });
  });

  it('treats reverting the workload spec to stable as an instant rollback', () => {
    const r = new Rollout().revision('shop-v1', 'v1').revision('shop-v2', 'v2');
    r.step('v1', 'shop-v1');
    r.step('v2', 'shop-v2', { canaryPercent: 40 });
    const p = r.step('v1', 'shop-v1', { canaryPercent: 40 });
    assert.deepEqual(split(p), { phase: 'Stable', stable: 'shop-v1', candidate: undefined, percent: 0 });
    assert.ok(p.events.some((e) => e.reason === 'RolledBack'));
  });

  it('replaces the candidate when the workload changes during a canary; stable stays', () => {
    const r = new Rollout().revision('shop-v1', 'v1').revision('shop-v2', 'v2');
    r.step('v1', 'shop-v1');
    r.step('v2', 'shop-v2', { canaryPercent: 30 });
    r.revision('shop-v3', 'v3', false);
    let p = r.step('v3', 'shop-v3', { canaryPercent: 30 });
    assert.deepEqual(split(p), { phase: 'Canary', stable: 'shop-v1', candidate: 'shop-v3', percent: 0 });
    r.revision('shop-v3', 'v3', true);
    p = r.step('v3', 'shop-v3', { canaryPercent: 30 });
    assert.deepEqual(split(p), { phase: 'Canary', stable: 'shop-v1', candidate: 'shop-v3', percent: 30 });
  });

  it('moves stable to a newer revision of the same version only once it is ready', () => {
    const r = new Rollout().revision('shop-a', 'v1');
    r.step('v1', 'shop-a');
    r.revision('shop-b', 'v1', false);
    assert.equal(r.step('v1', 'shop-b').stable?.revision, 'shop-a');
    r.revision('shop-b', 'v1', true);
    const p = r.step('v1', 'shop-b');
    assert.equal(p.stable?.revision, 'shop-b');
    assert.ok(p.events.some((e) => e.reason === 'RevisionReplaced'));
  });

  it('resumes after a restart with the same split: status alone carries the state', () => {
    const r = new Rollout().revision('shop-v1', 'v1').revision('shop-v2', 'v2');
    r.step('v1', 'shop-v1');
    r.step('v2', 'shop-v2', { canaryPercent: 35 });
    const restarted = new Rollout();
    restarted.revisions = r.revisions;
    restarted.warm = r.warm;
    restarted.stable = r.stable;
    restarted.canary = r.canary;
    const p = restarted.step('v2', 'shop-v2', { canaryPercent: 35 });
    assert.deepEqual(split(p), { phase: 'Canary', stable: 'shop-v1', candidate: 'shop-v2', percent: 35 });
    assert.deepEqual(p.events, [], 'no transition event after a restart');
  });

  describe('automated steps', () => {
    // A cadence as long as the interval: one round per step, at its end (continuous rounds: rollout-gates.test.ts).
    const steps: RolloutSpec = { steps: [10, 25, 50], interval: '1m', analysis: { prometheus: { address: 'http://127.0.0.1:9' }, checks: [{ name: 'ok', query: 'up', min: 1 }], failureThreshold: 2, cadence: '1m' } };
    const pass: AnalysisOutcome = { result: 'pass', message: 'ok' };
    const fail: AnalysisOutcome = { result: 'fail', message: 'error rate too high' };

    function started(): Rollout {
      const r = new Rollout().revision('shop-v1', 'v1').revision('shop-v2', 'v2');
      r.step('v1', 'shop-v1');
      return r;
    }

    it('advances one step per interval when checks pass, then promotes after the last', () => {
      const r = started();
      let p = r.step('v2', 'shop-v2', steps);
      assert.deepEqual(split(p), { phase: 'Canary', stable: 'shop-v1', candidate: 'shop-v2', percent: 10 });
      assert.equal(p.requeueAfterMs, 60_000);
      r.advance(30_000);
      p = r.step('v2', 'shop-v2', steps);
      assert.equal(p.candidate?.percent, 10, 'no advance before the interval');
      assert.equal(p.requeueAfterMs, 30_000);
      r.advance(30_000);
      p = r.step('v2', 'shop-v2', steps);
      assert.equal(p.due?.kind, 'checks', 'checks are due at the interval');
      p = r.step('v2', 'shop-v2', steps, pass);
      assert.equal(p.candidate?.percent, 25);
      r.advance(60_000);
      p = r.step('v2', 'shop-v2', steps, pass);
      assert.equal(p.candidate?.percent, 50);
      r.advance(60_000);
      p = r.step('v2', 'shop-v2', steps, pass);
      assert.deepEqual(split(p), { phase: 'Stable', stable: 'shop-v2', candidate: undefined, percent: 0 });
    });

    it('halts on no data: stays at its weight, says so, and does not count a failure', () => {
      const r = started();
      r.step('v2', 'shop-v2', steps);
      r.advance(60_000);
      const p = r.step('v2', 'shop-v2', steps, { result: 'nodata', message: 'query returned no data' });
      assert.equal(p.candidate?.percent, 10);
      assert.equal(p.progressing.reason, 'AnalysisNoData');
      assert.equal(p.canary?.failedChecks, 0);
      assert.ok(p.events.some((e) => e.reason === 'AnalysisNoData' && e.type === 'Warning'));
      // Still halted on a reconcile between check rounds, and no repeated event.
      r.advance(500);
      const between = r.step('v2', 'shop-v2', steps);
      assert.deepEqual([between.progressing.reason, between.candidate?.percent, between.events.length], ['AnalysisNoData', 10, 0]);
      // A round with data resumes the rollout.
      r.advance(60_000);
      const resumed = r.step('v2', 'shop-v2', steps, pass);
      assert.deepEqual([resumed.progressing.reason, resumed.candidate?.percent, resumed.canary?.halted], ['CanaryInProgress', 25, undefined]);
    });

    it('fails the candidate once failures reach the threshold, and keeps it failed until a retry', () => {
      const r = started();
      r.step('v2', 'shop-v2', steps);
      r.advance(60_000);
      let p = r.step('v2', 'shop-v2', steps, fail);
      assert.equal(p.candidate?.percent, 10);
      assert.equal(p.canary?.failedChecks, 1);
      r.advance(60_000);
      p = r.step('v2', 'shop-v2', steps, fail);
      assert.deepEqual(split(p), { phase: 'Failed', stable: 'shop-v1', candidate: 'shop-v2', percent: 0 });
      assert.deepEqual([p.canary?.failure?.reason, p.canary?.failure?.version, p.progressing.status, p.candidate?.state], ['AnalysisFailed', 'v2', 'False', 'failed']);
      assert.deepEqual(p.events.filter((e) => e.type === 'Warning').map((e) => e.reason), ['AnalysisFailed'], 'one Warning event');
      r.advance(600_000);
      const later = r.step('v2', 'shop-v2', steps);
      assert.deepEqual([later.phase, later.events.length], ['Failed', 0], 'a failed version is not retried by itself');
      // A retry starts it again from its first step.
      const again = r.step('v2', 'shop-v2', { ...steps, retry: 1 });
      assert.deepEqual([again.phase, again.candidate?.percent, again.canary?.step, again.canary?.failure], ['Canary', 10, 0, undefined]);
    });

    it('reads a failure recorded before 0.2 (abortedVersion) as a failed analysis', () => {
      const r = started();
      r.canary = { weight: 0, abortedVersion: 'v2', message: 'error rate too high' };
      const p = r.step('v2', 'shop-v2', steps);
      assert.deepEqual([p.phase, p.canary?.failure?.reason, p.candidate?.percent], ['Failed', 'AnalysisFailed', 0]);
    });

    it('lets a manual canaryPercent win over the steps', () => {
      const r = started();
      r.step('v2', 'shop-v2', steps);
      const p = r.step('v2', 'shop-v2', { ...steps, canaryPercent: 70 });
      assert.equal(p.candidate?.percent, 70);
    });

    it('resumes the step it was on after a restart', () => {
      const r = started();
      r.step('v2', 'shop-v2', steps);
      r.advance(60_000);
      r.step('v2', 'shop-v2', steps, pass);
      const restarted = new Rollout();
      Object.assign(restarted, { revisions: r.revisions, warm: r.warm, stable: r.stable, canary: r.canary, now: r.now, traffic: r.traffic });
      const p = restarted.step('v2', 'shop-v2', steps);
      assert.equal(p.candidate?.percent, 25);
      assert.equal(p.canary?.step, 1);
    });
  });

  describe('lifecycle: every rollout ends, and the spec controls it', () => {
    const steps: RolloutSpec = { steps: [10, 50], interval: '1m' };
    function withCandidate(ready = true): Rollout {
      const r = new Rollout().revision('shop-v1', 'v1').revision('shop-v2', 'v2', ready);
      r.step('v1', 'shop-v1');
      return r;
    }
    const warnings = (p: RolloutPlan) => p.events.filter((e) => e.type === 'Warning').map((e) => e.reason);

    it('fails a candidate that is not ready within the progress deadline, with one Warning, stable serving', () => {
      const r = withCandidate(false);
      let p = r.step('v2', 'shop-v2', { progressDeadline: '2m' });
      assert.deepEqual([p.phase, p.requeueAfterMs], ['Promoting', 120_000], 'wakes up at the deadline');
      r.advance(119_000);
      assert.equal(r.step('v2', 'shop-v2', { progressDeadline: '2m' }).phase, 'Promoting');
      r.advance(1_000);
      p = r.step('v2', 'shop-v2', { progressDeadline: '2m' });
      assert.deepEqual(split(p), { phase: 'Failed', stable: 'shop-v1', candidate: 'shop-v2', percent: 0 });
      assert.deepEqual([p.progressing.status, p.progressing.reason, warnings(p)], ['False', 'ProgressDeadlineExceeded', ['ProgressDeadlineExceeded']]);
      // Ready later does not bring it back by itself.
      r.revision('shop-v2', 'v2', true);
      assert.deepEqual([r.step('v2', 'shop-v2', { progressDeadline: '2m' }).phase, r.traffic], ['Failed', [{ revision: 'shop-v1', percent: 100 }]]);
    });

    it('applies the default deadline of 10 minutes', () => {
      const r = withCandidate(false);
      r.step('v2', 'shop-v2', steps);
      r.advance(599_000);
      assert.equal(r.step('v2', 'shop-v2', steps).phase, 'Canary');
      r.advance(1_000);
      assert.equal(r.step('v2', 'shop-v2', steps).phase, 'Failed');
    });

    it('fails at once when the data plane gives up on the revision', () => {
      const r = withCandidate(false);
      r.revisions.set('shop-v2', { name: 'shop-v2', version: 'v2', ready: false, replicas: 0, failed: 'ContainerMissing: image not found' });
      const p = r.step('v2', 'shop-v2', { canaryPercent: 20 });
      assert.deepEqual([p.phase, p.canary?.failure?.reason, warnings(p)], ['Failed', 'RevisionFailed', ['RevisionFailed']]);
      assert.match(p.progressing.message, /ContainerMissing: image not found.*rollout.retry/);
    });

    it('fails a candidate whose warmup failed, and a retry warms it again', () => {
      const r = withCandidate();
      r.warm.delete('v2');
      r.warmupFailed = 'HTTP 503';
      let p = r.step('v2', 'shop-v2', steps);
      assert.deepEqual([p.phase, p.canary?.failure?.reason, p.canary?.failure?.retry, warnings(p)], ['Failed', 'WarmupFailed', 0, ['WarmupFailed']]);
      r.warmupFailed = undefined;
      p = r.step('v2', 'shop-v2', { ...steps, retry: 1 });
      assert.deepEqual([p.phase, p.canary?.failure, p.candidate?.state], ['Canary', undefined, 'starting']);
    });

    it('marks a first version whose warmup failed as Failed, and says it serves anyway', () => {
      const r = new Rollout().revision('shop-v1', 'v1');
      r.warm.delete('v1');
      r.warmupFailed = 'timeout';
      const p = r.step('v1', 'shop-v1');
      assert.deepEqual([p.phase, p.stable, p.initial?.revision, warnings(p)], ['Failed', undefined, 'shop-v1', ['WarmupFailed']]);
      assert.match(p.promoted.message, /serves anyway/);
      assert.deepEqual(r.step('v1', 'shop-v1').events, [], 'no repeated event');
    });

    it('pauses automated steps and resumes with a fresh interval', () => {
      const r = withCandidate();
      r.step('v2', 'shop-v2', steps);
      r.advance(30_000);
      let p = r.step('v2', 'shop-v2', { ...steps, paused: true });
      assert.deepEqual([p.phase, p.candidate?.percent, p.progressing.reason, p.events.map((e) => e.reason)], ['Paused', 10, 'Paused', ['Paused']]);
      r.advance(3_600_000);
      p = r.step('v2', 'shop-v2', { ...steps, paused: true });
      assert.deepEqual([p.phase, p.candidate?.percent, p.events], ['Paused', 10, []], 'held an hour, no deadline, no step');
      p = r.step('v2', 'shop-v2', steps);
      assert.deepEqual([p.phase, p.candidate?.percent, p.requeueAfterMs, p.events.map((e) => e.reason)], ['Canary', 10, 60_000, ['Resumed']]);
    });

    it('aborts to stable whatever else the spec says, and starts again from the first step when abort goes', () => {
      const r = withCandidate();
      r.step('v2', 'shop-v2', steps);
      r.advance(60_000);
      assert.equal(r.step('v2', 'shop-v2', steps).candidate?.percent, 50);
      let p = r.step('v2', 'shop-v2', { ...steps, canaryPercent: 80, abort: true });
      assert.deepEqual([split(p), warnings(p), p.candidate?.state], [{ phase: 'Aborted', stable: 'shop-v1', candidate: 'shop-v2', percent: 0 }, ['Aborted'], 'aborted']);
      assert.deepEqual(r.step('v2', 'shop-v2', { ...steps, abort: true }).events, [], 'one event');
      p = r.step('v2', 'shop-v2', steps);
      assert.deepEqual([p.phase, p.candidate?.percent, p.canary?.step], ['Canary', 10, 0]);
    });

    it('promotes the version rollout.promote names at once, skipping steps and pause', () => {
      const r = withCandidate();
      r.step('v2', 'shop-v2', steps);
      const p = r.step('v2', 'shop-v2', { ...steps, paused: true, promote: 'v2' });
      assert.deepEqual([p.phase, p.stable?.revision], ['Stable', 'shop-v2']);
    });

    it('ignores rollout.promote naming another version', () => {
      const r = withCandidate();
      const p = r.step('v2', 'shop-v2', { ...steps, promote: 'v9' });
      assert.deepEqual([p.phase, p.candidate?.percent], ['Canary', 10]);
    });

    it('does not let promote override a failure', () => {
      const r = withCandidate();
      r.warm.delete('v2');
      r.warmupFailed = 'HTTP 500';
      r.step('v2', 'shop-v2', steps);
      r.warm.add('v2');
      r.warmupFailed = undefined;
      assert.equal(r.step('v2', 'shop-v2', { ...steps, promote: 'v2' }).phase, 'Failed');
    });

    it('treats canaryPercent 0 with header rules as testing: its own phase, kept warm, no rollback', () => {
      const r = withCandidate();
      const testing: RolloutSpec = { canaryPercent: 0, match: [{ header: 'x-canary', exact: 'yes' }] };
      let p = r.step('v2', 'shop-v2', testing);
      assert.deepEqual([p.phase, p.candidate?.state, p.candidate?.percent, p.events.map((e) => e.reason)], ['Testing', 'testing', 0, ['Testing']]);
      p = r.step('v2', 'shop-v2', testing);
      assert.deepEqual(p.events, []);
      p = r.step('v2', 'shop-v2', { canaryPercent: 0 });
      assert.deepEqual([p.phase, p.events.map((e) => e.reason)], ['RolledBack', ['RolledBack']]);
    });
  });
});

describe('a failure holds until rollout.retry changes', () => {
  const cases: Array<[string, number | undefined, number | undefined, boolean]> = [
    ['holds while retry is unset on both sides (unset reads as 0)', undefined, undefined, true],
    ['holds while retry is the value in force when it failed', 2, 2, true],
    ['holds when 0 is written where it was unset', undefined, 0, true],
    ['ends when retry is bumped', 0, 1, false],
    ['ends when retry is set after a failure recorded without it', undefined, 1, false],
  ];
  for (const [name, recorded, spec, holds] of cases) {
    it(name, () => assert.equal(failureHolds(recorded === undefined ? {} : { retry: recorded }, spec), holds));
  }
});

describe('a stopped version: its candidate state parks it, and its phase shows it (one rule)', () => {
  const states: Array<[CandidateState, boolean]> = [
    ['starting', false], ['canary', false], ['testing', false], ['promoting', false], ['baking', false],
    ['rolledBack', true], ['aborted', true], ['failed', true], ['frozen', true],
  ];
  for (const [state, parked] of states) it(`state ${state}: ${parked ? 'parked' : 'not parked'}`, () => assert.equal(isParked(state), parked));
  it('no candidate: not parked', () => assert.equal(isParked(undefined), false));

  const stopped: Phase[] = ['RolledBack', 'Aborted', 'Failed', 'Frozen'];
  for (const phase of phases) {
    it(`phase ${phase}: ${stopped.includes(phase) ? 'stopped' : 'not stopped'}`, () => assert.equal(isStoppedPhase(phase), stopped.includes(phase)));
  }
});
