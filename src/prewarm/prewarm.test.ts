import assert from 'node:assert/strict';
import { evaluatePrewarm, warmupGaveUp } from './prewarm.ts';

const now = new Date('2026-11-21T10:00:00Z');
const rev = (ready: boolean, replicas: number) => ({ name: 'shop-abc', version: 'v2', ready, replicas });

describe('prewarm state', () => {
  it('is warm once ready when nothing is configured', () => {
    assert.equal(evaluatePrewarm(undefined, 'v2', rev(true, 1), undefined, undefined, now).warm, true);
    assert.equal(evaluatePrewarm(undefined, 'v2', rev(false, 0), undefined, undefined, now).warm, false);
  });

  it('waits for the replica buffer before warmup, and says how many are ready', () => {
    const e = evaluatePrewarm({ replicas: 3, warmup: { path: '/' } }, 'v2', rev(true, 2), undefined, undefined, now);
    assert.deepEqual([e.warm, e.startWarmup, e.condition.reason], [false, false, 'WaitingForReplicas']);
    assert.match(e.condition.message, /2\/3 replicas/);
  });

  it('starts warmup when replicas are ready, then is warm when the requests succeeded', () => {
    const spec = { replicas: 2, warmup: { path: '/', count: 2 } };
    const started = evaluatePrewarm(spec, 'v2', rev(true, 2), undefined, undefined, now);
    assert.deepEqual([started.warm, started.startWarmup, started.condition.reason], [false, true, 'WarmingUp']);
    const done = evaluatePrewarm(spec, 'v2', rev(true, 2), started.status, { phase: 'succeeded', sent: 3, succeeded: 2, startedAt: now, finishedAt: now }, now);
    assert.deepEqual([done.warm, done.condition.reason, done.status?.requestsSent], [true, 'Warm', 3]);
  });

  it('reports the runner\'s start, so startedAt never follows warmedAt when status missed the start', () => {
    // The reconcile that sees the finished task is later than the task itself, and status never recorded the start.
    const later = new Date(now.getTime() + 5_000);
    const started = new Date(now.getTime() - 2_000);
    const e = evaluatePrewarm({ warmup: { path: '/' } }, 'v2', rev(true, 1), undefined, { phase: 'succeeded', sent: 1, succeeded: 1, startedAt: started, finishedAt: now }, later);
    assert.equal(e.status?.startedAt, started.toISOString());
    assert.ok(Date.parse(e.status!.startedAt!) <= Date.parse(e.status!.warmedAt!));
  });

  it('reports WarmupFailed past the deadline: warmup gave up', () => {
    const e = evaluatePrewarm({ warmup: { path: '/' } }, 'v2', rev(true, 1), { version: 'v2', startedAt: now.toISOString() }, { phase: 'failed', sent: 5, succeeded: 0, lastError: 'HTTP 503', startedAt: now, finishedAt: now }, now);
    assert.deepEqual([e.warm, e.condition.status, e.condition.reason, warmupGaveUp(e.condition)], [false, 'False', 'WarmupFailed', true]);
    assert.match(e.condition.message, /HTTP 503/);
  });

  it('has not given up while it waits for replicas or warms up, nor once warm', () => {
    const spec = { replicas: 2, warmup: { path: '/' } };
    const waiting = evaluatePrewarm(spec, 'v2', rev(true, 1), undefined, undefined, now);
    const warming = evaluatePrewarm(spec, 'v2', rev(true, 2), undefined, undefined, now);
    const warm = evaluatePrewarm(spec, 'v2', rev(true, 2), { version: 'v2', warmedAt: now.toISOString() }, undefined, now);
    assert.deepEqual([waiting, warming, warm].map((e) => [e.condition.reason, warmupGaveUp(e.condition)]), [['WaitingForReplicas', false], ['WarmingUp', false], ['Warm', false]]);
    assert.equal(warmupGaveUp(undefined), false, 'no condition: nothing gave up');
  });

  it('remembers warmth from status, so a restart does not warm twice', () => {
    const e = evaluatePrewarm({ warmup: { path: '/' } }, 'v2', rev(true, 1), { version: 'v2', warmedAt: now.toISOString() }, undefined, now);
    assert.deepEqual([e.warm, e.startWarmup], [true, false]);
  });
});
