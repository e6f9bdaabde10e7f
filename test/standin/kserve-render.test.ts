import assert from 'node:assert/strict';
import type { KubeObject } from './kube.ts';
import { deploymentMode, predictorTraffic, renderPredictorService } from './kserve-render.ts';

function isvc(predictor: any, extra: { annotations?: Record<string, string>; labels?: Record<string, string>; status?: any } = {}): KubeObject {
  return {
    metadata: { name: 'iris', namespace: 'ns', uid: 'isvc-uid', ...(extra.annotations ? { annotations: extra.annotations } : {}), ...(extra.labels ? { labels: extra.labels } : {}) },
    spec: { predictor },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

describe('KServe canary traffic (stand-in, as ksvc_reconciler.go)', () => {
  it('sends everything to the latest revision without a canary percent', () => {
    assert.deepEqual(predictorTraffic(undefined, 'iris-predictor-00001', false), [{ latestRevision: true, percent: 100 }]);
  });

  it('ignores the canary percent until a revision has been rolled out', () => {
    assert.deepEqual(predictorTraffic(20, undefined, false), [{ latestRevision: true, percent: 100 }]);
  });

  it('splits P to latest and 100-P to the last rolled-out revision tagged prev', () => {
    assert.deepEqual(predictorTraffic(20, 'iris-predictor-00001', false), [
      { latestRevision: true, percent: 20 },
      { revisionName: 'iris-predictor-00001', latestRevision: false, percent: 80, tag: 'prev' },
    ]);
  });

  it('tags latest only with tag routing enabled, and pins everything on prev at 0%', () => {
    assert.deepEqual(predictorTraffic(0, 'iris-predictor-00001', true), [
      { latestRevision: true, percent: 0, tag: 'latest' },
      { revisionName: 'iris-predictor-00001', latestRevision: false, percent: 100, tag: 'prev' },
    ]);
  });

  it('leaves out prev at 100%', () => {
    assert.deepEqual(predictorTraffic(100, 'iris-predictor-00001', false), [{ latestRevision: true, percent: 100 }]);
  });
});

describe('KServe predictor Knative Service (stand-in)', () => {
  const model = { modelFormat: { name: 'sklearn' }, storageUri: 'gs://m/iris' };

  it('names it <isvc>-predictor, owned by the ISVC, with merged labels and no revision name', () => {
    const k = renderPredictorService(isvc({ model, labels: { version: 'v2' } }, { labels: { app: 'iris', version: 'v1' } }));
    assert.equal(k.metadata.name, 'iris-predictor');
    assert.deepEqual(k.metadata.labels, { app: 'iris', version: 'v2', 'serving.kserve.io/inferenceservice': 'iris', component: 'predictor' });
    assert.deepEqual(k.spec.template.metadata.labels, k.metadata.labels);
    assert.equal(k.spec.template.metadata.name, undefined);
    assert.equal(k.metadata.ownerReferences?.[0]?.kind, 'InferenceService');
    assert.equal(k.metadata.ownerReferences?.[0]?.controller, true);
  });

  it('renders a placeholder model server with STORAGE_URI', () => {
    const [c] = renderPredictorService(isvc({ model })).spec.template.spec.containers;
    assert.equal(c.name, 'kserve-container');
    assert.equal(c.image, 'kserve-standin/sklearn-server:latest');
    assert.deepEqual(c.env, [{ name: 'STORAGE_URI', value: 'gs://m/iris' }]);
  });

  it('defaults min-scale to 1 (KServe minReplicas) and maps the scaling fields to Knative annotations', () => {
    const a = renderPredictorService(isvc({ model })).spec.template.metadata.annotations;
    assert.equal(a['autoscaling.knative.dev/min-scale'], '1');
    assert.equal(a['autoscaling.knative.dev/class'], 'kpa.autoscaling.knative.dev');
    assert.equal(a['autoscaling.knative.dev/max-scale'], undefined);
    const b = renderPredictorService(isvc({ model, minReplicas: 0, maxReplicas: 3, scaleTarget: 5, scaleMetric: 'rps' })).spec.template.metadata.annotations;
    assert.deepEqual([b['autoscaling.knative.dev/min-scale'], b['autoscaling.knative.dev/max-scale'], b['autoscaling.knative.dev/target'], b['autoscaling.knative.dev/metric']], ['0', '3', '5', 'rps']);
  });

  it('copies ISVC and predictor annotations, except disallowed ones, and moves rollout-duration to the Service', () => {
    const k = renderPredictorService(isvc({ model, annotations: { p: '1' } }, {
      annotations: { 'serving.kserve.io/enable-tag-routing': 'true', 'autoscaling.knative.dev/min-scale': '9', 'serving.knative.dev/rollout-duration': '60s' },
    }));
    const a = k.spec.template.metadata.annotations;
    assert.equal(a.p, '1');
    assert.equal(a['serving.kserve.io/enable-tag-routing'], 'true');
    assert.equal(a['autoscaling.knative.dev/min-scale'], '1');
    assert.equal(a['internal.serving.kserve.io/storage-initializer-sourceuri'], 'gs://m/iris');
    assert.equal(a['serving.knative.dev/rollout-duration'], undefined);
    assert.deepEqual(k.metadata.annotations, { 'serving.knative.dev/rollout-duration': '60s' });
    assert.deepEqual(k.spec.traffic, [{ latestRevision: true, percent: 100, tag: 'latest' }]);
  });

  it('splits traffic against status.components.predictor.latestRolledoutRevision', () => {
    const k = renderPredictorService(isvc({ model, canaryTrafficPercent: 20 }, { status: { components: { predictor: { latestRolledoutRevision: 'iris-predictor-00001' } } } }));
    assert.deepEqual(k.spec.traffic.map((t: any) => [t.revisionName ?? 'latest', t.percent]), [['latest', 20], ['iris-predictor-00001', 80]]);
  });

  it('tags the image "unready" for a storageUri containing "unready", so the revision never becomes Ready', () => {
    const [c] = renderPredictorService(isvc({ model: { ...model, storageUri: 'gs://m/unready' } })).spec.template.spec.containers;
    assert.equal(c.image, 'kserve-standin/sklearn-server:unready');
  });

  it('reads the legacy framework keys as the model format', () => {
    const [c] = renderPredictorService(isvc({ xgboost: { storageUri: 'gs://x' } })).spec.template.spec.containers;
    assert.equal(c.image, 'kserve-standin/xgboost-server:latest');
  });
});

describe('KServe deployment mode (stand-in)', () => {
  it('treats Serverless as Knative, RawDeployment as Standard, and lets status win', () => {
    assert.equal(deploymentMode(isvc({}, { annotations: { 'serving.kserve.io/deploymentMode': 'Serverless' } })), 'Knative');
    assert.equal(deploymentMode(isvc({}, { annotations: { 'serving.kserve.io/deploymentMode': 'RawDeployment' } })), 'Standard');
    assert.equal(deploymentMode(isvc({}, { annotations: { 'serving.kserve.io/deploymentMode': 'Standard' }, status: { deploymentMode: 'Knative' } })), 'Knative');
    assert.equal(deploymentMode(isvc({})), 'Knative');
  });
});
