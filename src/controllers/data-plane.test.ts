import assert from 'node:assert/strict';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { Kinds } from '../util/kinds.ts';
import { missingDataPlane as planned } from '../planner/data-plane.ts';
import { unservedKinds, type DataPlaneKinds } from './data-plane.ts';

const app = (spec: ServerlessApp['spec']): ServerlessApp => ({ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'shop', namespace: 'team-a' }, spec });
const kinds = (missing: string[] = []): DataPlaneKinds => {
  const k = (kind: (typeof Kinds)[keyof typeof Kinds]) => ({ kind, served: () => !missing.includes(kind.plural) });
  return { knative: [k(Kinds.KnativeService), k(Kinds.KnativeRevision)], kserve: [k(Kinds.InferenceService)], istio: [k(Kinds.VirtualService)], gatewayApi: [k(Kinds.HTTPRoute)], llm: [k(Kinds.LLMInferenceService)] };
};
const missingDataPlane = (a: ServerlessApp, k: DataPlaneKinds) => planned(a, unservedKinds(k));
const container = { container: { image: 'shop:1' } };
const model = { model: { format: { name: 'sklearn' as const }, storageUri: 's3://m/iris' } };
const ingress = { ingress: { hosts: ['shop.example.com'] } };

describe('data-plane kinds an app needs', () => {
  it('runs a container app on a cluster without KServe or Istio', () => {
    assert.deepEqual(missingDataPlane(app(container), kinds(['inferenceservices', 'virtualservices'])), []);
  });

  it('reports KServeNotInstalled on spec.model for a model app, naming the kind and what to install', () => {
    const [p, ...rest] = missingDataPlane(app(model), kinds(['inferenceservices']));
    assert.deepEqual(rest, []);
    assert.equal(p?.reason, 'KServeNotInstalled');
    assert.equal(p?.field, 'spec.model');
    assert.match(p!.message, /inferenceservices\.serving\.kserve\.io\/v1beta1: install KServe/);
  });

  it('reports IstioNotInstalled on spec.ingress only for apps with ingress', () => {
    assert.deepEqual(missingDataPlane(app({ ...container, ...ingress }), kinds(['virtualservices'])).map((p) => [p.reason, p.field]), [['IstioNotInstalled', 'spec.ingress']]);
    assert.deepEqual(missingDataPlane(app(container), kinds(['virtualservices'])), []);
  });

  it('under the gateway-api router needs the Gateway API CRDs for spec.ingress, and not Istio', () => {
    const k = kinds(['httproutes', 'virtualservices']);
    assert.deepEqual(planned(app({ ...container, ...ingress }), unservedKinds(k), 'gatewayApi').map((p) => [p.reason, p.field]), [['GatewayAPINotInstalled', 'spec.ingress']]);
    assert.match(planned(app({ ...container, ...ingress }), unservedKinds(k), 'gatewayApi')[0]!.message, /httproutes\.gateway\.networking\.k8s\.io\/v1/);
  });

  it('needs Knative for model apps too (KServe runs them as Knative Services)', () => {
    assert.deepEqual(missingDataPlane(app(model), kinds(['revisions'])).map((p) => p.reason), ['KnativeNotInstalled']);
  });
});
