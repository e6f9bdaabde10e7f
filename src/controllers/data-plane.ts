// Which data-plane kinds an app needs, and whether the cluster serves them.
// Knative, KServe and Istio are separate installs: a cluster without KServe
// still runs container apps, one without Istio still runs apps without
// ingress. An app that needs a kind the API server does not serve gets
// Ready=False naming the field, the kind and what to install; it is looked at
// again when the kind appears (the informers keep checking), without a restart.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import type { ResourceKind } from '../util/kinds.ts';

/** What the check reads of an informer. */
export interface ServedKind {
  readonly kind: ResourceKind;
  served(): boolean;
}

export interface DataPlaneKinds {
  /** Knative Services and Revisions: container apps, and model apps (KServe's Serverless mode runs on Knative). */
  knative: ServedKind[];
  kserve: ServedKind[];
  istio: ServedKind[];
}

const INSTALLS = {
  knative: { reason: 'KnativeNotInstalled', product: 'Knative Serving' },
  kserve: { reason: 'KServeNotInstalled', product: 'KServe' },
  istio: { reason: 'IstioNotInstalled', product: 'Istio' },
} as const;

/** A problem for each data-plane product the app needs whose kinds the cluster does not serve. */
export function missingDataPlane(app: ServerlessApp, kinds: DataPlaneKinds): SpecProblem[] {
  const field = app.spec.model ? 'spec.model' : 'spec.container';
  const needs: Array<[keyof DataPlaneKinds, string]> = [
    ['knative', field],
    ...(app.spec.model ? [['kserve', field] as [keyof DataPlaneKinds, string]] : []),
    ...(app.spec.ingress ? [['istio', 'spec.ingress'] as [keyof DataPlaneKinds, string]] : []),
  ];
  return needs.flatMap(([product, at]) => {
    const missing = kinds[product].filter((k) => !k.served()).map((k) => `${k.kind.plural}.${k.kind.group}/${k.kind.version}`);
    if (missing.length === 0) return [];
    const { reason, product: name } = INSTALLS[product];
    return [{ reason, field: at, message: `needs ${name}, but this cluster does not serve ${missing.join(', ')}: install ${name} (the operator notices without a restart)` }];
  });
}
