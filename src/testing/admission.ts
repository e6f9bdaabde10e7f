// What the admission verdict reads of an app the platform serves as it is: every data plane served,
// no host problem, no budget exceeded (test data: not built into dist/).
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { ValidationPolicy } from '../api/v1alpha1/validation.ts';
import type { AdmissionObservation } from '../planner/admission.ts';
import { istioRoute, type Route } from '../planner/route.ts';

export function servedAs(app: ServerlessApp, policy: Partial<ValidationPolicy> = {}, o: Partial<Omit<AdmissionObservation, 'route'>> = {}): AdmissionObservation & { route: Route } {
  return {
    app, policy: { ...policy, allowedGateways: policy.allowedGateways ?? ['*'] },
    hosts: { problems: [], conflicts: [], missing: [] }, unserved: { knative: [], kserve: [], istio: [], gatewayApi: [] }, ...o, route: istioRoute('gw'),
  };
}
