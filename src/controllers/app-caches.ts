// What a ServerlessApp reconcile reads of its children: the caches of Knative
// Services, InferenceServices, LLMInferenceServices, VirtualServices and HTTPRoutes (ours only, by label) and the
// app's Revisions (found through an index, never by scanning a namespace).
// Each data plane is optional: a missing CRD only stops the apps that need it.

import { MAX_APP_SPEC_BYTES, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { UnservedKinds } from '../planner/data-plane.ts';
import type { ReconcileObservation } from '../planner/reconcile.ts';
import { revisionApp, revisionsSelector, slimRevision, type Revision } from '../planner/revisions.ts';
import { servesHost } from '../planner/admission.ts';
import { appRoutes, type AppRoutes, type Route } from '../planner/route.ts';
import type { Workload, WorkloadObject } from '../planner/workloads.ts';
import { MANAGED_SELECTOR } from '../util/managed-by.ts';
import { keepAppliedFields } from '../runtime/apply.ts';
import type { Controller } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import type { Manager } from '../runtime/manager.ts';
import type { Projection } from '../runtime/object-decode.ts';
import { Kinds, type ResourceKind } from '../util/kinds.ts';
import { ownedBy } from './children.ts';
import { llmObservation, slimMember } from '../planner/llm-workload.ts';
import { controllingAppRef } from '../render/metadata.ts';
import { routingManager } from '../planner/write-rules.ts';
import { unservedKinds } from './data-plane.ts';
import { objectKey, type ObjectRef } from '../util/object-key.ts';

/**
 * The cache of the operator's children of `kind` (ours by label): one definition for every controller
 * that reads them, since the manager shares one informer per kind and selector and the first caller's
 * transform wins. Children keep our own managedFields entries: they tell which fields we applied (see needsApply).
 */
export function childInformer(mgr: Manager, kind: ResourceKind): Informer<WorkloadObject> {
  const transform = keepAppliedFields(mgr.client.fieldManager, routingManager(mgr.client.fieldManager));
  return mgr.informer<WorkloadObject>(kind, { labelSelector: MANAGED_SELECTOR, transform, optional: true });
}

/**
 * What the operator keeps of each app: of its metadata what its controllers read (identity,
 * generation, deletion, finalizers, owners). Labels, annotations (a client-side `kubectl apply` copies
 * the whole spec into one) and managedFields are skipped unparsed, so a tenant's large or many labels
 * and annotations cost no memory, and editing them costs a scan, not a parse. A spec past
 * MAX_APP_SPEC_BYTES is not parsed either: the app is refused for its size and kept without it.
 */
export const APP_PROJECTION: Projection = {
  metadata: ['name', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'finalizers', 'ownerReferences'],
  maxSpecBytes: MAX_APP_SPEC_BYTES,
};

/**
 * The cache of ServerlessApps: one definition for every controller that reads them (the manager
 * shares one informer per kind and the first caller's projection wins).
 */
export function appInformer(mgr: Manager): Informer<ServerlessApp> {
  return mgr.informer<ServerlessApp>(Kinds.ServerlessApp, { projection: APP_PROJECTION });
}

export class AppCaches {
  private readonly services: Informer<WorkloadObject>;
  private readonly inferenceServices: Informer<WorkloadObject>;
  private readonly virtualServices: Informer<WorkloadObject>;
  /** Only under the gateway-api router (its RBAC grants HTTPRoutes only then). */
  private readonly httpRoutes: Informer<WorkloadObject> | undefined;
  private readonly revisions: Informer<Revision>;
  /** LLM apps' members (one LLMInferenceService per live version), found by their app's key. */
  private readonly llmMembers: Informer<WorkloadObject>;

  constructor(mgr: Manager, route: Route) {
    const child = (kind: ResourceKind) => childInformer(mgr, kind);
    this.services = child(Kinds.KnativeService);
    this.inferenceServices = child(Kinds.InferenceService);
    this.virtualServices = child(Kinds.VirtualService);
    // VirtualServices under either router: under gateway-api, those the istio router wrote are what
    // a switch leaves to remove. HTTPRoutes only under gateway-api: switching back leaves them to
    // their app's garbage collection (docs/install.md, Routers).
    this.httpRoutes = route.kind === Kinds.HTTPRoute ? child(Kinds.HTTPRoute) : undefined;
    this.revisions = mgr.informer<Revision>(Kinds.KnativeRevision, { labelSelector: revisionsSelector(), transform: slimRevision, optional: true, indexBy: revisionAppKey });
    const keep = keepAppliedFields(mgr.client.fieldManager);
    this.llmMembers = mgr.informer<WorkloadObject>(Kinds.LLMInferenceService, {
      labelSelector: MANAGED_SELECTOR, transform: (m) => slimMember(keep(m)), optional: true,
      indexBy: (m) => { const app = controllingAppRef(m); return app ? objectKey(app.namespace, app.name) : undefined; },
    });
  }

  /** A child changed: look at the app that controls it (a Revision: the app its label names). */
  watchedBy(controller: Controller): void {
    controller.watches(this.services, ownedBy).watches(this.inferenceServices, ownedBy).watches(this.virtualServices, ownedBy).watches(this.llmMembers, ownedBy)
      .watches(this.revisions, (r) => { const app = revisionApp(r); return app ? [app] : []; });
    // A data plane installed (or removed) while running: every app may need to know.
    if (this.httpRoutes) controller.watches(this.httpRoutes, ownedBy);
    for (const i of [this.services, this.inferenceServices, this.virtualServices, ...(this.httpRoutes ? [this.httpRoutes] : []), this.revisions, this.llmMembers]) i.onServedChange(() => controller.enqueueAll());
  }

  /** Whether any of the app's routes (ours, ours before 0.2, the retired router's) carries `host`, as the caches hold them. */
  servesHost(app: ObjectRef, host: string, route: Route): boolean {
    return servesHost(route, app, host, (kind, routeName) => this.routeNamed(kind, app.namespace, routeName));
  }

  /** Calls `fn` with every route of ours added, changed (before and after) or deleted. */
  onRouteChange(fn: (route: WorkloadObject) => void): void {
    for (const i of [this.virtualServices, ...(this.httpRoutes ? [this.httpRoutes] : [])]) {
      i.on('add', fn);
      i.on('update', (r: WorkloadObject, old?: WorkloadObject) => { fn(r); if (old) fn(old); });
      i.on('delete', fn);
    }
  }

  unserved(): UnservedKinds {
    return unservedKinds({ knative: [this.services, this.revisions], kserve: [this.inferenceServices], istio: [this.virtualServices], gatewayApi: this.httpRoutes ? [this.httpRoutes] : [], llm: [this.llmMembers] });
  }

  /** The app's workloads of both kinds, its revisions and routes, as the caches hold them. */
  children(app: ServerlessApp, kinds: { knative: Workload; kserve: Workload; llm: Workload }, route: Route): Pick<ReconcileObservation, 'knative' | 'kserve' | 'llm' | 'revisions' | 'routes'> {
    const { namespace, name } = app.metadata;
    const routes = this.routesOf(app, route);
    const members = this.llmMembers.byIndex(objectKey(namespace, name));
    return {
      knative: { workload: kinds.knative, ...optional('live', this.services.get(namespace, name)) },
      kserve: { workload: kinds.kserve, ...optional('live', this.inferenceServices.get(namespace, name)) },
      llm: llmObservation(kinds.llm, members),
      revisions: this.revisions.byIndex(objectKey(namespace, name)),
      routes,
    };
  }

  private routesOf(app: Pick<ServerlessApp, 'metadata'>, route: Route): AppRoutes {
    return appRoutes(route, app, (kind, routeName) => this.routeNamed(kind, app.metadata.namespace, routeName));
  }

  /** Ours by label (MANAGED_SELECTOR), so never another's route of the same name. */
  private routeNamed(kind: ResourceKind, namespace: string, name: string): WorkloadObject | undefined {
    return (kind === Kinds.HTTPRoute ? this.httpRoutes : this.virtualServices)?.get(namespace, name);
  }
}

/** The app a revision belongs to, as its "namespace/name" key. */
function revisionAppKey(r: Revision): string | undefined {
  const app = revisionApp(r);
  return app ? objectKey(app.namespace, app.name) : undefined;
}

/** `{ [key]: value }` when the value is there: optional properties stay absent rather than undefined. */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
