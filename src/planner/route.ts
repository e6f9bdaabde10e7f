// The app's own route, by the platform's router setting: an Istio
// VirtualService on the hosts it claims, pointing at whichever workload serves
// (the other kind's during a kind switch), or a Gateway API HTTPRoute carrying
// the traffic plan's split itself. Header routes and mirroring reach a candidate
// only while it may be reached. Described like a workload (kind, name, write
// rule, render), so the planner renders it and the controller only writes what
// the plan says. Both routers name their route `<app>-routes`, so a router
// switch finds the other router's route by name (make before break).

import type { ServerlessApp, TrafficStatus } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import { renderHttpRoute } from '../render/http-route.ts';
import { routeName } from '../render/route-name.ts';
import type { TrafficPlan } from '../render/traffic.ts';
import { renderVirtualService } from '../render/virtual-service.ts';
import { Kinds, type ResourceKind } from '../util/kinds.ts';
import { httpRouteAdmission, type RouteAdmission } from './route-admission.ts';
import type { Workload, WorkloadObject } from './workloads.ts';
import type { WriteRuleName } from './write-rules.ts';

export interface Route {
  readonly kind: ResourceKind;
  readonly write: WriteRuleName;
  /** The data-plane product whose kinds spec.ingress needs (planner/data-plane.ts). */
  readonly product: 'istio' | 'gatewayApi';
  name(app: Pick<ServerlessApp, 'metadata'>): string;
  /** The name ours carried before 0.2 (the app's own, which KServe also uses for its VirtualService); none for newer routers. */
  legacyName(app: Pick<ServerlessApp, 'metadata'>): string | undefined;
  /**
   * `candidate.reachable`: header routes, its weight and mirroring may reach the candidate revision.
   * `observed`: the split the data plane reports, with its tags, whether its routes carry it yet, and the route as it is
   * (sticky sessions go to a tag only while it holds their version, and is routed).
   */
  render(app: ServerlessApp, serving: Workload, candidate: { reachable: boolean; revision?: string }, traffic: TrafficPlan, observed: ObservedRouting): WorkloadObject;
  /** What of spec.ingress this router cannot do. */
  problems(app: ServerlessApp): SpecProblem[];
  /** What the route's own status says of it; undefined: the router reports no status to read (Istio's VirtualService). */
  admission(app: ServerlessApp, live: WorkloadObject | undefined): RouteAdmission | undefined;
}

export interface ObservedRouting {
  inForce: TrafficStatus[];
  routesReady: boolean;
  live?: WorkloadObject;
}

export type RouterName = 'istio' | 'gateway-api';

export function istioRoute(localGateway: string): Route {
  return {
    kind: Kinds.VirtualService,
    write: 'atomic-lists',
    product: 'istio',
    name: routeName,
    legacyName: (app) => app.metadata.name,
    render: (app, serving, candidate, traffic, observed) => renderVirtualService(app, {
      localGateway, candidateReady: candidate.reachable, ...serving.hosts(app), traffic,
      inForce: observed.inForce, routesReady: observed.routesReady, ...(observed.live ? { live: observed.live as never } : {}),
      ...(candidate.revision ? { candidateRevision: candidate.revision } : {}),
    }) as unknown as WorkloadObject,
    problems: () => [],
    admission: () => undefined,
  };
}

/** Gateway API HTTPRoute (v1, standard channel of v1.6.3): parents are the app's (allowed) gateways. */
export function gatewayApiRoute(): Route {
  return {
    kind: Kinds.HTTPRoute,
    write: 'atomic-lists',
    product: 'gatewayApi',
    name: routeName,
    legacyName: () => undefined,
    render: (app, _serving, candidate, traffic) => renderHttpRoute(app, { traffic, candidateReachable: candidate.reachable }) as unknown as WorkloadObject,
    problems: (app) => {
      const ingress = app.spec.ingress;
      if (!ingress) return [];
      const out: SpecProblem[] = [];
      if (!ingress.gateways?.length) {
        out.push({ reason: 'RouterUnsupported', field: 'spec.ingress.gateways', message: 'the platform routes spec.ingress with Gateway API HTTPRoutes, which need a parent: name at least one Gateway as "namespace/name" (mesh-only routes are not supported by this router)' });
      }
      if (ingress.retries) {
        out.push({ reason: 'RouterUnsupported', field: 'spec.ingress.retries', message: 'the platform routes spec.ingress with Gateway API HTTPRoutes (standard channel v1.6.3), which have no retry policy (HTTPRoute retry is experimental-channel only): remove spec.ingress.retries' });
      }
      return out;
    },
    admission: (app, live) => httpRouteAdmission(live, app.spec.ingress?.gateways ?? []),
  };
}

export function routerFor(name: RouterName, localGateway: string): Route {
  return name === 'gateway-api' ? gatewayApiRoute() : istioRoute(localGateway);
}

/** The route kind of the router not in use: what a router switch leaves behind. */
export function retiredRouteKind(route: Route): ResourceKind | undefined {
  // Under istio, HTTPRoutes are neither watched nor removed (the RBAC grants them only under gateway-api):
  // switching back leaves them to their app's garbage collection (docs/install.md, Routers).
  return route.kind === Kinds.HTTPRoute ? Kinds.VirtualService : undefined;
}

/** An app's routes a reconcile sees: ours, ours under its pre-0.2 name, and the other router's (left by a router switch). */
export interface AppRoutes { live?: WorkloadObject; legacy?: WorkloadObject; retired?: WorkloadObject }

/** Where a route is found: its kind and name in the app's namespace. */
export type RouteRef = readonly [kind: ResourceKind, name: string];

/** Where each of the app's routes would be under `route`. Both routers use the same name, so a retired route is the other kind of that name. */
export function routeRefs(route: Route, app: Pick<ServerlessApp, 'metadata'>): { live: RouteRef; legacy?: RouteRef; retired?: RouteRef } {
  const name = route.name(app), legacyName = route.legacyName(app), retiredKind = retiredRouteKind(route);
  return {
    live: [route.kind, name],
    ...(legacyName !== undefined ? { legacy: [route.kind, legacyName] as const } : {}),
    ...(retiredKind ? { retired: [retiredKind, name] as const } : {}),
  };
}

/** Every place either router may find one of the app's routes: what a reader that does not know the router yet reads (kubectl sapp plan). */
export function everyRouteRef(app: Pick<ServerlessApp, 'metadata'>): RouteRef[] {
  // The local gateway is only rendered, never part of a route's name.
  const refs = [istioRoute(''), gatewayApiRoute()].flatMap((route) => Object.values(routeRefs(route, app)));
  return refs.filter(([kind, name], i) => refs.findIndex(([k, n]) => k === kind && n === name) === i);
}

/**
 * Which of the app's routes is which, given a lookup by kind and name: the
 * operator reads its caches through it and kubectl sapp plan what it fetched,
 * so both see the routes alike.
 */
export function appRoutes(route: Route, app: Pick<ServerlessApp, 'metadata'>, find: (...ref: RouteRef) => WorkloadObject | undefined): AppRoutes {
  const refs = routeRefs(route, app);
  const live = find(...refs.live), legacy = refs.legacy && find(...refs.legacy), retired = refs.retired && find(...refs.retired);
  return { ...(live ? { live } : {}), ...(legacy ? { legacy } : {}), ...(retired ? { retired } : {}) };
}
