import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../../src/api/v1alpha1/serverlessapp.ts';
import { unsettled, type Revision, type Service } from './settled.ts';

const allTrue = (...types: string[]) => types.map((type) => ({ type, status: 'True' }));
const service: Service = {
  metadata: { name: 'a', generation: 2 },
  status: { observedGeneration: 2, url: 'http://a.ns.example.com', conditions: allTrue('ConfigurationsReady', 'RoutesReady', 'Ready'), traffic: [{ revisionName: 'a-v1', percent: 100 }] },
};
const revision: Revision = {
  metadata: { name: 'a-v1', generation: 1 },
  status: { observedGeneration: 1, conditions: allTrue('Active', 'ContainerHealthy', 'Ready', 'ResourcesAvailable'), actualReplicas: 1, desiredReplicas: 1 },
};
const app = {
  apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'a', namespace: 'ns', generation: 1 }, spec: { container: { image: 'a:1' } },
  status: {
    observedGeneration: 1, url: 'http://a.ns.example.com', conditions: [{ type: 'Ready', status: 'True', reason: 'Serving' }],
    versions: { stable: { version: 'v1', revision: 'a-v1', ready: true, warm: true, replicas: 1 } },
    traffic: [{ revision: 'a-v1', percent: 100, tag: 'stable' }],
  },
} as unknown as ServerlessApp;

const withStatus = <T extends { status?: object }>(o: T, status: object): T => ({ ...o, status: { ...o.status, ...status } });

describe('unsettled: when an app and its Knative children have stopped changing', () => {
  it('finds nothing once the children report their current generation with every condition True, and the app says so', () => {
    assert.deepEqual(unsettled(app, service, [revision]), []);
  });

  const moving: Array<[string, () => string[], RegExp]> = [
    ['the Service has not reported its generation', () => unsettled(app, withStatus(service, { observedGeneration: 1 }), [revision]), /Service a reports generation 1, not 2/],
    ['a Service condition is not True', () => unsettled(app, withStatus(service, { conditions: [...allTrue('ConfigurationsReady', 'Ready'), { type: 'RoutesReady', status: 'Unknown', reason: 'IngressNotConfigured' }] }), [revision]), /Service a: RoutesReady=Unknown\/IngressNotConfigured/],
    ['a Revision has no conditions yet', () => unsettled(app, service, [withStatus(revision, { conditions: [] })]), /Revision a-v1 has no conditions/],
    ['a Revision is short of the replicas the autoscaler wants', () => unsettled(app, service, [withStatus(revision, { actualReplicas: 0 })]), /Revision a-v1 runs 0 of 1 replicas/],
    ['the app reports an older generation', () => unsettled(withStatus(app, { observedGeneration: 0 }), service, [revision]), /status is for generation 0, not 1/],
    ['the app is not Ready', () => unsettled(withStatus(app, { conditions: [{ type: 'Ready', status: 'False' }] }), service, [revision]), /the app is Ready=False/],
    ['the app has not written the Service\'s url', () => unsettled(withStatus(app, { url: undefined }), service, [revision]), /the app's url undefined/],
    ['the app has not written the traffic the Service reports', () => unsettled(app, withStatus(service, { traffic: [{ revisionName: 'a-v2', percent: 100 }] }), [revision]), /the app's traffic \[a-v1:100\] is not the Service's \[a-v2:100\]/],
    ['the app has not written the replicas the revision runs', () => unsettled(app, service, [withStatus(revision, { actualReplicas: 2, desiredReplicas: 2 })]), /revision a-v1 is ready=true with 1 replicas; it is ready=true with 2/],
    ['there is no Knative Service', () => unsettled(app, undefined, []), /no Knative Service a/],
  ];
  for (const [when, check, says] of moving) {
    it(`says what still moves when ${when}`, () => {
      const found = check();
      assert.ok(found.some((m) => says.test(m)), found.join('; '));
    });
  }
});
