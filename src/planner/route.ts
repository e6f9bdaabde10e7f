// The app's own route: an Istio VirtualService on the hosts it claims, pointing
// at whichever workload serves (the other kind's during a kind switch), with
// header routes and mirroring to a candidate only while it may be reached.
// Described like a workload (kind, name, write rule, render), so the planner
// renders it and the controller only writes what the plan says.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { renderVirtualService, virtualServiceName } from '../render/virtual-service.ts';
import { Kinds, type ResourceKind } from '../util/kinds.ts';
import type { Workload, WorkloadObject } from './workloads.ts';
import type { WriteRuleName } from './write-rules.ts';

export interface Route {
  readonly kind: ResourceKind;
  readonly write: WriteRuleName;
  name(app: ServerlessApp): string;
  /** The name ours carried before 0.2: the app's own, which KServe also uses for its VirtualService. */
  legacyName(app: ServerlessApp): string;
  /** `candidate.reachable`: header routes and mirroring may reach the candidate revision. */
  render(app: ServerlessApp, serving: Workload, candidate: { reachable: boolean; revision?: string }): WorkloadObject;
}

export function istioRoute(localGateway: string): Route {
  return {
    kind: Kinds.VirtualService,
    write: 'atomic-lists',
    name: virtualServiceName,
    legacyName: (app) => app.metadata.name,
    render: (app, serving, candidate) => renderVirtualService(app, {
      localGateway, candidateReady: candidate.reachable, ...serving.hosts(app),
      ...(candidate.revision ? { candidateRevision: candidate.revision } : {}),
    }) as unknown as WorkloadObject,
  };
}
