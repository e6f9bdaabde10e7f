// Which data-plane products an app needs, against what the cluster serves.
// Knative, KServe and Istio are separate installs: a cluster without KServe
// still runs container apps, one without Istio still runs apps without
// ingress. An app that needs a kind the API server does not serve gets
// Ready=False naming the field, the kind and what to install.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import { servesLlm } from '../api/v1alpha1/serving.ts';

/** The kinds of each product the API server does not serve now ("plural.group/version"); empty when all are. */
export interface UnservedKinds {
  /** Knative Services and Revisions: container apps, and model apps (KServe's Serverless mode runs on Knative). */
  knative: string[];
  kserve: string[];
  istio: string[];
  /** Gateway API's HTTPRoute: spec.ingress under the gateway-api router. */
  gatewayApi: string[];
  /** KServe's LLMInferenceService: model apps with serving llm. */
  llm: string[];
}

const INSTALLS = {
  knative: { reason: 'KnativeNotInstalled', product: 'Knative Serving' },
  kserve: { reason: 'KServeNotInstalled', product: 'KServe' },
  istio: { reason: 'IstioNotInstalled', product: 'Istio' },
  gatewayApi: { reason: 'GatewayAPINotInstalled', product: 'the Gateway API CRDs (standard channel)' },
  llm: { reason: 'LLMInferenceServiceNotInstalled', product: 'KServe\'s LLMInferenceService (its CRDs and llmisvc manager, KServe 0.20)' },
} as const;

/** A problem for each data-plane product the app needs whose kinds the cluster does not serve. */
/** `router`: which product spec.ingress needs (the platform's router setting). */
export function missingDataPlane(app: ServerlessApp, unserved: UnservedKinds, router: 'istio' | 'gatewayApi' = 'istio'): SpecProblem[] {
  const field = app.spec.model ? 'spec.model' : 'spec.container';
  // An LLM app's routes are KServe's (Gateway API HTTPRoutes it writes and its own webhook judges): the operator's router plays no part.
  const needs: Array<[keyof UnservedKinds, string]> = servesLlm(app.spec) ? [['llm', 'spec.model.serving']] : [
    ['knative', field],
    ...(app.spec.model ? [['kserve', field] as [keyof UnservedKinds, string]] : []),
    ...(app.spec.ingress ? [[router, 'spec.ingress'] as [keyof UnservedKinds, string]] : []),
  ];
  return needs.flatMap(([product, at]) => {
    const missing = unserved[product];
    if (missing.length === 0) return [];
    const { reason, product: name } = INSTALLS[product];
    return [{ reason, field: at, message: `needs ${name}, but this cluster does not serve ${missing.join(', ')}: install ${name} (the operator notices without a restart)` }];
  });
}
