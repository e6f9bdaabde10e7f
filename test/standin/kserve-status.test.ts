import assert from 'node:assert/strict';
import { applyConditions, findCondition } from './conditions.ts';
import type { KubeObject } from './kube.ts';
import { SERVICE_CONDITIONS } from './knative-service-status.ts';
import { isvcStatus, rolledOut } from './kserve-status.ts';

const T = Date.parse('2026-01-01T00:00:00Z');
const traffic = (...t: [string, number, boolean][]) => t.map(([revisionName, percent, latestRevision]) => ({ revisionName, percent, latestRevision }));

function ksvc(ready: 'True' | 'Unknown' | 'False', status: any = {}): KubeObject {
  const conditions = applyConditions(SERVICE_CONDITIONS, undefined, [
    { type: 'ConfigurationsReady', status: ready === 'False' ? 'False' : ready, ...(ready === 'False' ? { reason: 'RevisionFailed' } : {}) },
    { type: 'RoutesReady', status: ready === 'False' ? 'True' : ready },
  ], T);
  return {
    metadata: { name: 'iris-predictor', namespace: 'ns', generation: 7 },
    status: {
      observedGeneration: 7, conditions, url: 'http://iris-predictor.ns.example.com', address: { url: 'http://iris-predictor.ns.svc.cluster.local' },
      latestCreatedRevisionName: 'iris-predictor-00001', latestReadyRevisionName: 'iris-predictor-00001', traffic: traffic(['iris-predictor-00001', 100, true]), ...status,
    },
  };
}

const isvc: KubeObject = { metadata: { name: 'iris', namespace: 'ns', generation: 2 }, spec: { predictor: {} } };
const revision = (actual: number, ready = 'True'): KubeObject => ({ metadata: { name: 'iris-predictor-00001' }, status: { actualReplicas: actual, desiredReplicas: actual, conditions: [{ type: 'Ready', status: ready }] } });

describe('KServe rolled-out revisions (stand-in, as PropagateStatus)', () => {
  it('records a revision that reaches 100% as latest, pushing the old one to previous', () => {
    const ks = { latestReadyRevisionName: 'r2', latestCreatedRevisionName: 'r2', traffic: traffic(['r2', 100, true]) };
    assert.deepEqual(rolledOut({ latestRolledoutRevision: 'r1' }, ks), { latestRolledoutRevision: 'r2', previousRolledoutRevision: 'r1' });
  });

  it('does not roll out a canary that has only part of the traffic', () => {
    const ks = { latestReadyRevisionName: 'r2', latestCreatedRevisionName: 'r2', traffic: traffic(['r2', 20, true], ['r1', 80, false]) };
    assert.deepEqual(rolledOut({ latestRolledoutRevision: 'r1' }, ks), { latestRolledoutRevision: 'r1' });
  });

  it('rolls back to the previous revision when traffic splits over the same rolled-out revision', () => {
    const ks = { latestReadyRevisionName: 'r2', latestCreatedRevisionName: 'r2', traffic: traffic(['r2', 0, true], ['r2', 100, false]) };
    assert.deepEqual(rolledOut({ latestRolledoutRevision: 'r2', previousRolledoutRevision: 'r1' }, ks), { latestRolledoutRevision: 'r1', previousRolledoutRevision: 'r1' });
  });
});

describe('KServe InferenceService status (stand-in)', () => {
  it('is Ready with URLs, components and UpToDate once the predictor Service is Ready', () => {
    const s = isvcStatus({ isvc, ksvc: ksvc('True'), latestRevision: revision(1), domain: 'example.com', nowMs: T });
    assert.equal(findCondition(s.conditions, 'Ready')?.status, 'True');
    for (const t of ['PredictorReady', 'PredictorRouteReady', 'PredictorConfigurationReady', 'IngressReady', 'RoutesReady', 'LatestDeploymentReady']) {
      assert.equal(findCondition(s.conditions, t)?.status, 'True', t);
    }
    assert.equal(findCondition(s.conditions, 'Stopped')?.status, 'False');
    assert.equal(s.url, 'http://iris.ns.example.com');
    assert.deepEqual(s.address, { url: 'http://iris.ns.svc.cluster.local' });
    assert.equal(s.components.predictor.url, 'http://iris-predictor.ns.example.com');
    assert.equal(s.components.predictor.latestRolledoutRevision, 'iris-predictor-00001');
    assert.equal(s.modelStatus.transitionStatus, 'UpToDate');
    assert.equal(s.deploymentMode, 'Knative');
  });

  it('copies observedGeneration from the Knative Service, as KServe does', () => {
    assert.equal(isvcStatus({ isvc, ksvc: ksvc('True'), latestRevision: revision(1), domain: 'example.com', nowMs: T }).observedGeneration, 7);
  });

  it('reads InProgress while scaled to zero (kserve#6079)', () => {
    assert.equal(isvcStatus({ isvc, ksvc: ksvc('True'), latestRevision: revision(0), domain: 'example.com', nowMs: T }).modelStatus.transitionStatus, 'InProgress');
  });

  it('has no URL and an IngressReady waiting on the predictor while it deploys', () => {
    const s = isvcStatus({ isvc, ksvc: ksvc('Unknown'), latestRevision: revision(0, 'Unknown'), domain: 'example.com', nowMs: T });
    assert.equal(s.url, undefined);
    assert.equal(findCondition(s.conditions, 'IngressReady')?.reason, 'Predictor ingress not created');
    assert.equal(findCondition(s.conditions, 'Ready')?.status, 'Unknown');
  });

  it('reports BlockedByFailedLoad when the predictor failed and nothing runs', () => {
    const s = isvcStatus({ isvc, ksvc: ksvc('False'), latestRevision: revision(0, 'False'), domain: 'example.com', nowMs: T });
    assert.equal(s.modelStatus.transitionStatus, 'BlockedByFailedLoad');
    assert.equal(findCondition(s.conditions, 'Ready')?.status, 'False');
  });
});
