import assert from 'node:assert/strict';
import { FAILURE_REASONS, phases, type Phase, type RolloutSpec, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { PROBLEM_REASONS } from '../api/v1alpha1/problem-reasons.ts';
import { planRollout, type CanaryProgress, type ObservedRevision, type RolloutInput, type RolloutPlan } from '../rollout/canary.ts';
import type { EffectiveScale } from '../scaling/windows.ts';
import { findCondition, type Condition } from '../util/conditions.ts';
import { readinessConditions, readingOf, rolloutPaused, type ReadingInput } from './readiness.ts';
import { invalidSpecStatus } from './status.ts';
import type { WorkloadSummary } from './workloads.ts';

// Every phase of the rollout machine, every failure and every spec problem, read as the status
// contract (issue 33; readiness.ts, and status.conditions in the CRD) says: Ready, Reconciling, Stalled, Paused.

const NOW = new Date('2026-11-23T10:00:00Z');
const V1 = { version: 'v1', revision: 'shop-1' };
const V2 = { version: 'v2', revision: 'shop-2' };
const revision = (ref: { version: string; revision: string }, extra: Partial<ObservedRevision> = {}): ObservedRevision => ({ name: ref.revision, version: ref.version, ready: true, replicas: 1, ...extra });
const split = (stable: number, candidate = 100 - stable) => [{ revision: V1.revision, percent: stable }, ...(candidate ? [{ revision: V2.revision, percent: candidate }] : [])];

interface Case {
  /** The rollout step's input, over a default: a stable v1, the spec asking for v2, both ready and warm. */
  input?: Partial<RolloutInput>;
  rollout?: RolloutSpec;
  canary?: CanaryProgress;
  traffic?: RolloutInput['traffic'];
  workload?: Partial<WorkloadSummary>;
  reading?: Partial<ReadingInput>;
  /** The route's parents have not admitted it: CanaryProgressing says so (planner/decide.ts withRouteAdmission). */
  notAdmitted?: boolean;
}

function read(c: Case): { phase: Phase; conditions: ReturnType<typeof readinessConditions> } {
  const traffic = c.traffic ?? split(100, 0);
  const input: RolloutInput = {
    now: NOW, desired: V2, ...(c.rollout ? { rollout: c.rollout } : {}),
    previous: { stable: V1, ...(c.canary ? { canary: c.canary } : {}) },
    revisions: [revision(V1), revision(V2)], isWarm: () => true, traffic, ...c.input,
  };
  const planned = planRollout(input);
  const plan: RolloutPlan = c.notAdmitted ? { ...planned, progressing: { status: 'False', reason: 'RouteNotAccepted', message: 'HTTPRoute shop-routes not accepted yet' } } : planned;
  const workload: WorkloadSummary = { status: 'True', ready: true, reason: 'Ready', message: 'Service is ready', traffic: input.traffic, routeReady: true, ...c.workload };
  const scale: EffectiveScale = { minScale: 0, openWindows: [], prewarmingWindows: [] };
  const r: ReadingInput = { plan, workload, revisions: new Map(input.revisions.map((x) => [x.name, x])), scale, ...(c.rollout ? { rollout: c.rollout } : {}), ...c.reading };
  return { phase: plan.phase, conditions: readinessConditions(readingOf(r), rolloutPaused(plan, c.rollout)) };
}

/** [status, reason] of each condition the contract names; absent: undefined. */
function said(conditions: Array<Pick<Condition, 'type' | 'status' | 'reason'>>) {
  const one = (type: string) => { const c = findCondition(conditions, type); return c && `${c.status} ${c.reason}`; };
  return { Ready: one('Ready'), Reconciling: one('Reconciling'), Stalled: one('Stalled'), Paused: one('Paused') };
}

const firstVersion = (extra: Partial<RolloutInput>): Partial<RolloutInput> => ({ desired: V1, previous: {}, ...extra });
const steps: RolloutSpec = { steps: [10, 50], interval: '5m' };
const slo: RolloutSpec = { steps: [10, 50], analysis: { prometheus: { provider: 'main' }, slo: { objective: 99.9, errorRatio: 'x[{{window}}]', freezeBelow: 25 } } };
const stepped: CanaryProgress = { version: 'v2', startedAt: '2026-11-23T09:59:00Z', step: 0, stepStartedAt: '2026-11-23T09:59:00Z', weight: 10, failedChecks: 0 };
const failedAt = (reason: (typeof FAILURE_REASONS)[number]): CanaryProgress => ({ version: 'v2', startedAt: '2026-11-23T09:00:00Z', weight: 0, failure: { version: 'v2', reason, message: 'it failed', retry: 0 } });

const cases: Array<[string, Phase, Case, ReturnType<typeof said>]> = [
  ['Pending: the first version starting', 'Pending', { input: firstVersion({ revisions: [revision(V1, { ready: false })], traffic: [] }), workload: { status: 'Unknown', ready: false, reason: 'RevisionMissing', traffic: [] } },
    { Ready: 'Unknown Deploying', Reconciling: 'True Deploying', Stalled: undefined, Paused: undefined }],
  ['Pending: the first version ready, warming', 'Pending', { input: firstVersion({ isWarm: () => false, traffic: [] }) },
    { Ready: 'Unknown Prewarming', Reconciling: 'True Prewarming', Stalled: undefined, Paused: undefined }],
  ['Pending: the data plane says what is wrong while it tries (Ready False with its reason)', 'Pending', { input: firstVersion({ revisions: [revision(V1, { ready: false, waiting: 'Unschedulable' })], traffic: [] }), workload: { status: 'False', ready: false, reason: 'Unschedulable', traffic: [] } },
    { Ready: 'False Unschedulable', Reconciling: 'True Deploying', Stalled: undefined, Paused: undefined }],
  ['Pending, rollout.paused: a first version is not held', 'Pending', { rollout: { paused: true }, input: firstVersion({ revisions: [revision(V1, { ready: false })], traffic: [] }) },
    { Ready: 'Unknown Deploying', Reconciling: 'True Deploying', Stalled: undefined, Paused: undefined }],
  ['Stable: the first version served', 'Stable', { input: firstVersion({ traffic: [{ revision: V1.revision, percent: 100 }] }) },
    { Ready: 'True Serving', Reconciling: undefined, Stalled: undefined, Paused: undefined }],
  ['Stable: the spec asks for the stable version', 'Stable', { input: { desired: V1 } },
    { Ready: 'True Serving', Reconciling: undefined, Stalled: undefined, Paused: undefined }],
  ['Stable: a replacement revision of the stable version not ready yet', 'Stable', { input: { desired: V1 }, reading: { desiredRevision: 'shop-1b' } },
    { Ready: 'Unknown Deploying', Reconciling: 'True Deploying', Stalled: undefined, Paused: undefined }],
  ['Stable: an edit of the ingress its route\'s parents have not admitted (Gateway API) is not reached', 'Stable', { input: { desired: V1 }, reading: { route: { admitted: false, reason: 'RouteNotAccepted', message: 'HTTPRoute team-a/shop-routes: Gateway gw/public did not accept it (NotAllowedByListeners: )' } } },
    { Ready: 'Unknown RouteNotAccepted', Reconciling: 'True RouteNotAccepted', Stalled: undefined, Paused: undefined }],
  ['Stable: the route admitted by its parents', 'Stable', { input: { desired: V1 }, reading: { route: { admitted: true, reason: 'RouteAdmitted', message: 'admitted' } } },
    { Ready: 'True Serving', Reconciling: undefined, Stalled: undefined, Paused: undefined }],
  ['Stable, rollout.paused: nothing to hold, and held', 'Stable', { input: { desired: V1 }, rollout: { paused: true } },
    { Ready: 'True Serving', Reconciling: undefined, Stalled: undefined, Paused: 'True RolloutPaused' }],
  ['Stable: a scale window opened, its minimum not up yet', 'Stable', { input: { desired: V1 }, reading: { scale: { minScale: 3, openWindows: ['day'], prewarmingWindows: [] } } },
    { Ready: 'Unknown WindowOpening', Reconciling: 'True WindowOpening', Stalled: undefined, Paused: undefined }],
  ['Stable: a minimum not up yet, no window', 'Stable', { input: { desired: V1 }, reading: { scale: { minScale: 2, openWindows: [], prewarmingWindows: [] } } },
    { Ready: 'Unknown ScalingUp', Reconciling: 'True ScalingUp', Stalled: undefined, Paused: undefined }],
  ['Canary: automated steps, the candidate at a step', 'Canary', { rollout: steps, canary: stepped, traffic: split(90) },
    { Ready: 'Unknown CanaryProgressing', Reconciling: 'True CanaryProgressing', Stalled: undefined, Paused: undefined }],
  ['Canary: automated steps, the candidate not ready yet', 'Canary', { rollout: steps, input: { revisions: [revision(V1), revision(V2, { ready: false })] } },
    { Ready: 'Unknown CanaryProgressing', Reconciling: 'True CanaryProgressing', Stalled: undefined, Paused: undefined }],
  ['Canary: automated steps halted, a check round had no data', 'Canary', { rollout: { ...steps, analysis: { prometheus: { provider: 'main' }, checks: [{ name: 'e', query: 'q', max: 1 }] } }, canary: { ...stepped, stepStartedAt: '2026-11-23T09:00:00Z' }, traffic: split(90), input: { analysis: { result: 'nodata', message: 'no series' } } },
    { Ready: 'Unknown AnalysisNoData', Reconciling: 'True AnalysisNoData', Stalled: undefined, Paused: undefined }],
  ['Canary: a manual canaryPercent reached and held', 'Canary', { rollout: { canaryPercent: 30 }, canary: { version: 'v2', startedAt: '2026-11-23T09:59:00Z', weight: 30 }, traffic: split(70) },
    { Ready: 'True CanaryHeld', Reconciling: undefined, Stalled: undefined, Paused: undefined }],
  ['Canary: a manual canaryPercent asked, the data plane not there yet', 'Canary', { rollout: { canaryPercent: 30 }, traffic: split(100, 0) },
    { Ready: 'Unknown CanaryProgressing', Reconciling: 'True CanaryProgressing', Stalled: undefined, Paused: undefined }],
  ['Canary: a manual canaryPercent in force on the data plane, the route not admitted by its parents yet (Gateway API)', 'Canary', { rollout: { canaryPercent: 30 }, canary: { version: 'v2', startedAt: '2026-11-23T09:59:00Z', weight: 30 }, traffic: split(70), notAdmitted: true },
    { Ready: 'Unknown CanaryProgressing', Reconciling: 'True CanaryProgressing', Stalled: undefined, Paused: undefined }],
  ['Testing: header testing, the candidate warm', 'Testing', { rollout: { canaryPercent: 0, match: [{ header: 'x-canary', exact: '1' }] } },
    { Ready: 'True Testing', Reconciling: undefined, Stalled: undefined, Paused: undefined }],
  ['Testing: header testing, the candidate not warm yet', 'Testing', { rollout: { canaryPercent: 0, match: [{ header: 'x-canary', exact: '1' }] }, input: { isWarm: (v) => v === 'v1' } },
    { Ready: 'Unknown CanaryProgressing', Reconciling: 'True CanaryProgressing', Stalled: undefined, Paused: undefined }],
  ['Paused: held where it stands', 'Paused', { rollout: { ...steps, paused: true }, canary: stepped, traffic: split(90) },
    { Ready: 'True Paused', Reconciling: undefined, Stalled: undefined, Paused: 'True RolloutPaused' }],
  ['Promoting: traffic moving to the candidate', 'Promoting', { rollout: { promote: 'v2' }, traffic: split(50) },
    { Ready: 'Unknown Promoting', Reconciling: 'True Promoting', Stalled: undefined, Paused: undefined }],
  ['Promoting over rollout.paused: not held', 'Promoting', { rollout: { promote: 'v2', paused: true }, traffic: split(50) },
    { Ready: 'Unknown Promoting', Reconciling: 'True Promoting', Stalled: undefined, Paused: undefined }],
  ['Baking: all traffic on the candidate, the previous version held warm', 'Baking', { rollout: { canaryPercent: 100, bake: '10m' }, traffic: split(0) },
    { Ready: 'Unknown Baking', Reconciling: 'True Baking', Stalled: undefined, Paused: undefined }],
  ['Frozen: too little error budget left, the candidate waits', 'Frozen', { rollout: slo, input: { freezeFloor: 25, budget: { result: 'pass', message: 'read', budget: { remaining: 10, shown: false } } } },
    { Ready: 'False ReleaseFrozen', Reconciling: undefined, Stalled: 'True ReleaseFrozen', Paused: undefined }],
  ['Stable: the candidate promoted', 'Stable', { rollout: { promote: 'v2' }, traffic: split(0) },
    { Ready: 'True Serving', Reconciling: undefined, Stalled: undefined, Paused: undefined }],
  ['RolledBack: canaryPercent 0, all traffic on stable', 'RolledBack', { rollout: { canaryPercent: 0 } },
    { Ready: 'True RolledBack', Reconciling: undefined, Stalled: undefined, Paused: undefined }],
  ['RolledBack: canaryPercent 0, traffic still moving back', 'RolledBack', { rollout: { canaryPercent: 0 }, traffic: split(80) },
    { Ready: 'Unknown CanaryProgressing', Reconciling: 'True CanaryProgressing', Stalled: undefined, Paused: undefined }],
  ['Aborted: rollout.abort', 'Aborted', { rollout: { abort: true } },
    { Ready: 'False Aborted', Reconciling: undefined, Stalled: 'True Aborted', Paused: undefined }],
  ['Aborted with rollout.paused: Stalled, and still held', 'Aborted', { rollout: { abort: true, paused: true } },
    { Ready: 'False Aborted', Reconciling: undefined, Stalled: 'True Aborted', Paused: 'True RolloutPaused' }],
  ['Failed: the candidate\'s revision failed', 'Failed', { input: { revisions: [revision(V1), revision(V2, { ready: false, failed: 'ImagePullBackOff' })] } },
    { Ready: 'False RevisionFailed', Reconciling: undefined, Stalled: 'True RevisionFailed', Paused: undefined }],
  ['Failed: the progress deadline passed', 'Failed', { rollout: { progressDeadline: '1m' }, canary: { version: 'v2', startedAt: '2026-11-23T09:00:00Z' }, input: { revisions: [revision(V1), revision(V2, { ready: false, waiting: 'Unschedulable' })] } },
    { Ready: 'False ProgressDeadlineExceeded', Reconciling: undefined, Stalled: 'True ProgressDeadlineExceeded', Paused: undefined }],
  ['Failed: warmup gave up', 'Failed', { input: { isWarm: (v) => v === 'v1', warmupFailed: 'connection refused' } },
    { Ready: 'False WarmupFailed', Reconciling: undefined, Stalled: 'True WarmupFailed', Paused: undefined }],
  ...FAILURE_REASONS.map((reason): [string, Phase, Case, ReturnType<typeof said>] => [`Failed: a recorded ${reason} holds until a retry`, 'Failed', { canary: failedAt(reason) },
    { Ready: `False ${reason}`, Reconciling: undefined, Stalled: `True ${reason}`, Paused: undefined }]),
  ['Failed: the first version failed, nothing else to serve', 'Failed', { input: firstVersion({ revisions: [revision(V1, { ready: false, failed: 'RevisionFailed: boom' })], traffic: [] }) },
    { Ready: 'False RevisionFailed', Reconciling: undefined, Stalled: 'True RevisionFailed', Paused: undefined }],
  ['Stable: a replacement revision failed', 'Stable', { input: { desired: V1, revisions: [revision(V1), revision({ version: 'v1', revision: 'shop-1b' }, { ready: false, failed: 'ExitCode1' })] }, reading: { desiredRevision: 'shop-1b' } },
    { Ready: 'False RevisionFailed', Reconciling: undefined, Stalled: 'True RevisionFailed', Paused: undefined }],
  ['a refused write, retried: in progress, Ready False naming it', 'Stable', { input: { desired: V1 }, reading: { rejected: { kind: 'Service', object: 'team-a/shop', message: 'denied', reason: 'ApplyRejected' } } },
    { Ready: 'False ApplyRejected', Reconciling: 'True ApplyRejected', Stalled: undefined, Paused: undefined }],
  ['an object the app does not own: only an edit helps', 'Canary', { rollout: steps, canary: stepped, traffic: split(90), reading: { rejected: { kind: 'Service', object: 'team-a/shop', message: 'exists', reason: 'NotOwned' } } },
    { Ready: 'False NotOwned', Reconciling: undefined, Stalled: 'True NotOwned', Paused: undefined }],
  ['the stable revision not ready: in progress, Ready False', 'Stable', { input: { desired: V1, revisions: [revision(V1, { ready: false })] } },
    { Ready: 'False StableNotReady', Reconciling: 'True StableNotReady', Stalled: undefined, Paused: undefined }],
  ['the stable version ready, its route not reported yet', 'Stable', { input: { desired: V1 }, workload: { traffic: [] } },
    { Ready: 'Unknown Deploying', Reconciling: 'True Deploying', Stalled: undefined, Paused: undefined }],
];

describe('the status contract: each phase of the rollout machine read as Ready, Reconciling, Stalled, Paused', () => {
  for (const [name, phase, c, want] of cases) {
    it(name, () => {
      const got = read(c);
      assert.equal(got.phase, phase, 'the rollout machine\'s phase');
      assert.deepEqual(said(got.conditions), want);
    });
  }

  it('covers every phase', () => {
    const covered = new Set(cases.map(([, phase]) => phase));
    assert.deepEqual(phases.filter((p) => !covered.has(p)), []);
  });

  it('gives a Stalled app a message that says what to change', () => {
    const stalled = cases.filter(([, , , want]) => want.Stalled).map(([, , c]) => findCondition(read(c).conditions, 'Stalled')!.message);
    for (const message of stalled) assert.match(message, /retry|remove abort|change the workload spec|Rename the app|rollout.releaseOverride/, message);
  });
});

describe('the status contract: a spec the operator will not serve is Stalled at once', () => {
  const app = { metadata: { name: 'shop', namespace: 'team-a', generation: 4 }, spec: { container: { image: 'shop:2' } } } as unknown as ServerlessApp;
  for (const reason of PROBLEM_REASONS) {
    it(`${reason}: Stalled and Ready False with the reason, no Reconciling, the generation judged`, () => {
      const s = invalidSpecStatus(app, [{ reason, field: 'spec.x', message: 'not allowed' }], NOW);
      assert.deepEqual(said(s.conditions!), { Ready: `False ${reason}`, Reconciling: undefined, Stalled: `True ${reason}`, Paused: undefined });
      assert.deepEqual([s.observedGeneration, ...s.conditions!.map((c) => c.observedGeneration)], Array(s.conditions!.length + 1).fill(4));
    });
  }
});

describe('the status contract over generated rollouts (never Reconciling and Stalled together)', () => {
  // Every combination of the controls, the candidate's state, the recorded progress, the reported split and a refusal.
  const rollouts: Array<RolloutSpec | undefined> = [undefined, steps, { canaryPercent: 30 }, { canaryPercent: 0 }, { canaryPercent: 0, match: [{ header: 'h', exact: '1' }] },
    { ...steps, paused: true }, { abort: true }, { promote: 'v2' }, { promote: 'v2', paused: true }, { canaryPercent: 100 }, { ...steps, progressDeadline: '1m' }];
  const candidates: ObservedRevision[] = [revision(V2), revision(V2, { ready: false }), revision(V2, { ready: false, waiting: 'Unschedulable' }), revision(V2, { ready: false, failed: 'boom' })];
  const progress: Array<CanaryProgress | undefined> = [undefined, stepped, failedAt('AnalysisFailed'), { version: 'v2', startedAt: '2026-11-23T08:00:00Z', weight: 30 }];
  const traffic = [split(100, 0), split(70), split(0)];
  const rejections: Array<ReadingInput['rejected']> = [undefined, { kind: 'Service', object: 's', message: 'm', reason: 'ApplyRejected' }, { kind: 'Service', object: 's', message: 'm', reason: 'NotOwned' }];
  const desired = [V1, V2];
  const total = rollouts.length * candidates.length * progress.length * traffic.length * rejections.length * desired.length * 4;
  it(`holds for each of ${total} generated rollouts: Ready True exactly when neither is, a Stalled app not Ready, a failed or aborted rollout Stalled`, () => {
    let count = 0;
    for (const rollout of rollouts) for (const candidate of candidates) for (const canary of progress) for (const t of traffic) for (const rejected of rejections) for (const d of desired) for (const warm of [true, false]) for (const stableReady of [true, false]) {
      const c: Case = {
        ...(rollout ? { rollout } : {}), ...(canary ? { canary } : {}), traffic: t,
        input: { desired: d, revisions: [revision(V1, { ready: stableReady }), candidate], isWarm: (v) => warm || v === 'v1' },
        ...(rejected ? { reading: { rejected } } : {}),
      };
      const { phase, conditions } = read(c);
      const s = said(conditions);
      const where = `${JSON.stringify(c)} (${phase}): ${JSON.stringify(s)}`;
      count++;
      if (s.Reconciling && s.Stalled) assert.fail(`Reconciling and Stalled together: ${where}`);
      if ((s.Ready?.startsWith('True ')) !== (!s.Reconciling && !s.Stalled)) assert.fail(`Ready True exactly when neither is: ${where}`);
      if (s.Stalled && !s.Ready?.startsWith('False ')) assert.fail(`a Stalled app is not Ready: ${where}`);
      if (s.Stalled && s.Stalled.slice(5) !== s.Ready!.slice(6)) assert.fail(`Ready says Stalled's reason: ${where}`);
      if ((phase === 'Failed' || phase === 'Aborted') && !s.Stalled) assert.fail(`a failed or aborted rollout is Stalled: ${where}`);
      if (s.Paused && !rollout?.paused) assert.fail(`Paused only while rollout.paused: ${where}`);
    }
    assert.equal(count, total);
  });
});
