// What the admission verdict reads of an app the platform serves as it is: every data plane served,
// no host problem, no budget exceeded, a router that refuses nothing (test data: not built into dist/).
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { ValidationPolicy } from '../api/v1alpha1/validation.ts';
import type { AdmissionObservation } from '../planner/admission.ts';

export function servedAs(app: ServerlessApp, policy: Partial<ValidationPolicy> = {}, o: Partial<AdmissionObservation> = {}): AdmissionObservation {
  return {
    app, policy: { ...policy, allowedGateways: policy.allowedGateways ?? ['*'] }, route: { problems: () => [], product: 'istio' },
    hosts: { problems: [], conflicts: [], missing: [] }, unserved: { knative: [], kserve: [], istio: [], gatewayApi: [], llm: [] }, ...o,
  };
}
