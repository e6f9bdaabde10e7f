import assert from 'node:assert/strict';
import { findCondition } from './conditions.ts';
import type { KubeObject } from './kube.ts';
import { revisionStatus } from './knative-revision-status.ts';
import type { RevisionStatusInput } from './knative-revision-status.ts';

function rev(annotations: Record<string, string> = {}, opts: { image?: string; state?: string; status?: any } = {}): KubeObject {
  return {
    metadata: { name: 'shop-v1', namespace: 'ns', generation: 1, annotations, labels: { 'serving.knative.dev/routingState': opts.state ?? 'active' } },
    spec: { containers: [{ image: opts.image ?? 'shop:1' }] },
    ...(opts.status ? { status: opts.status } : {}),
  };
}

function status(revision: KubeObject, over: Partial<RevisionStatusInput> = {}) {
  return revisionStatus({ revision, startedAtMs: 0, nowMs: 1_000, readyDelayMs: 200, held: false, trafficPercent: 0, intendedPercent: 0, ...over });
}

describe('Knative revision replica model (stand-in)', () => {
  it('reports Deploying with initial-scale desired and no ready replicas while starting', () => {
    const r = status(rev({ 'autoscaling.knative.dev/initial-scale': '3' }), { nowMs: 50 });
    assert.equal(findCondition(r.status.conditions, 'Ready')?.status, 'Unknown');
    assert.equal(findCondition(r.status.conditions, 'Ready')?.reason, 'Deploying');
    assert.equal(r.status.desiredReplicas, 3);
    assert.equal(r.status.actualReplicas, 0);
    assert.equal(r.requeueAfterMs, 150);
  });

  it('becomes Ready after the delay and keeps one replica for a revision with traffic', () => {
    const r = status(rev(), { trafficPercent: 20 });
    assert.equal(findCondition(r.status.conditions, 'Ready')?.status, 'True');
    assert.equal(r.status.actualReplicas, 1);
    assert.equal(findCondition(r.status.conditions, 'Active')?.status, 'True');
  });

  it('scales a Ready revision without traffic and min-scale 0 to zero, reporting NoTraffic', () => {
    const r = status(rev());
    assert.equal(r.status.actualReplicas, 0);
    assert.equal(findCondition(r.status.conditions, 'Active')?.reason, 'NoTraffic');
    assert.equal(findCondition(r.status.conditions, 'Ready')?.status, 'True');
  });

  it('holds min-scale replicas for a reachable revision without traffic', () => {
    assert.equal(status(rev({ 'autoscaling.knative.dev/min-scale': '4' })).status.actualReplicas, 4);
    assert.equal(status(rev({ 'autoscaling.knative.dev/min-scale': '4' }, { state: 'pending' })).status.actualReplicas, 4);
  });

  it('ignores min-scale for a reserve (unrouted) revision, like PodAutoscaler.ScaleBounds', () => {
    assert.equal(status(rev({ 'autoscaling.knative.dev/min-scale': '4' }, { state: 'reserve' })).status.actualReplicas, 0);
  });

  it('caps replicas at max-scale', () => {
    assert.equal(status(rev({ 'autoscaling.knative.dev/min-scale': '5', 'autoscaling.knative.dev/max-scale': '2' })).status.actualReplicas, 2);
  });

  it('re-reads min-scale edited in place on a Ready revision', () => {
    const first = status(rev({ 'autoscaling.knative.dev/min-scale': '1' }));
    const edited = status(rev({ 'autoscaling.knative.dev/min-scale': '3' }, { status: first.status }), { nowMs: 5_000 });
    assert.equal(edited.status.actualReplicas, 3);
  });

  it('keeps replicas for a revision its service is about to route to', () => {
    assert.equal(status(rev(), { intendedPercent: 100 }).status.actualReplicas, 1);
  });

  it('never makes an image containing "unready" Ready, nor a held revision', () => {
    assert.equal(findCondition(status(rev({}, { image: 'shop:unready' }), { nowMs: 60_000 }).status.conditions, 'Ready')?.status, 'Unknown');
    const ready = status(rev());
    const held = status(rev({}, { status: ready.status }), { held: true, nowMs: 60_000 });
    assert.equal(findCondition(held.status.conditions, 'Ready')?.status, 'Unknown');
    assert.equal(held.status.actualReplicas, 0);
  });

  it('fails a revision that misses its progress deadline', () => {
    const r = status(rev({}, { image: 'x-unready' }), { progressDeadlineMs: 500, nowMs: 600 });
    const ready = findCondition(r.status.conditions, 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'ProgressDeadlineExceeded');
  });
});
