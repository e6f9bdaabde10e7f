// Which data-plane kinds the cluster serves now, read from the informers (each
// data plane is optional: a missing CRD only stops the apps that need it, see
// planner/data-plane.ts). The informers keep checking, so an app is looked at
// again when a kind appears, without a restart.

import type { UnservedKinds } from '../planner/data-plane.ts';
import { crdName, type ResourceKind } from '../util/kinds.ts';

/** What the check reads of an informer. */
export interface ServedKind {
  readonly kind: ResourceKind;
  served(): boolean;
}

export type DataPlaneKinds = Record<keyof UnservedKinds, ServedKind[]>;

export function unservedKinds(kinds: DataPlaneKinds): UnservedKinds {
  const unserved = (list: ServedKind[]) => list.filter((k) => !k.served()).map((k) => `${crdName(k.kind)}/${k.kind.version}`);
  return { knative: unserved(kinds.knative), kserve: unserved(kinds.kserve), istio: unserved(kinds.istio), gatewayApi: unserved(kinds.gatewayApi), llm: unserved(kinds.llm) };
}
