import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';

/**
 * The name of the app's route, VirtualService or HTTPRoute: `<app>-routes`, one per
 * app whichever router. Not the app's own name: in Knative mode KServe creates and
 * updates a VirtualService named after the InferenceService (kserve
 * pkg/controller/v1beta1/inferenceservice/reconcilers/ingress/ingress_reconciler.go,
 * reconcileVirtualService), and net-istio names its own `<route>-ingress` and `<route>-mesh`.
 */
export function routeName(app: Pick<ServerlessApp, 'metadata'>): string {
  return `${app.metadata.name}-routes`;
}
