// Whether the operator serves an app: the one verdict every plan of a child
// asks (the app's workload, route, host claims, warmup and analysis in
// planner/reconcile.ts; its node model cache in planner/model-cache-plan.ts).
// Pure: from the app, the platform's policy, what the host-claim caches say of
// its hosts, its namespace's budgets and which data planes the cluster serves.
//
// The rule, for every child kind:
// - admitted: the plans make what the spec asks.
// - claiming: the spec is allowed and its free hosts are claimed first; nothing
//   else is made or changed until the claims show (a new app has no child yet).
// - refused (any problem reason): no child is made or changed. An app that was
//   never admitted therefore has none. One that was serving and whose edit is
//   refused keeps what runs (workload and route as last written: a tenant's bad
//   edit never takes down what runs), with two exceptions: a route carrying a
//   gateway or host the platform no longer lets it use, or a host another
//   namespace's claim holds, is withdrawn (revokedBy: the platform's policy is
//   not the tenant's to keep; a host another app of the same namespace serves
//   never withdraws anything, see planner/reconcile.ts), and its
//   node model cache goes (a refused app holds no cache budget, so it holds no
//   cache disk either).

import { servesLlm } from '../api/v1alpha1/serving.ts';
import type { HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { normaliseHost, validateApp, type SpecProblem, type ValidationPolicy } from '../api/v1alpha1/validation.ts';
import { missingDataPlane, type UnservedKinds } from './data-plane.ts';
import { appRoutes, type Route, type RouteRef } from './route.ts';
import type { WorkloadObject } from './workloads.ts';

/** What the host-claim caches say of the app's hosts (controllers/host-claims.ts reads them). */
export interface HostVerdict {
  /** Hosts that cannot be claimed, or that an earlier app of the app's namespace routes. */
  problems: SpecProblem[];
  /** Hosts another namespace's claim holds. */
  conflicts: SpecProblem[];
  /** Claims to create: hosts no namespace holds yet. */
  missing: HostClaim[];
}

/** What the verdict reads of an app. */
export interface AdmissionObservation {
  app: ServerlessApp;
  /** What tenants may claim: gateways, hosts, analysis providers, model limits (the platform's settings). */
  policy: ValidationPolicy;
  /** The platform's router: what of spec.ingress it cannot do, and which data plane it needs. */
  route: Pick<Route, 'problems' | 'product'>;
  hosts: HostVerdict;
  /** The namespace's budgets that refuse this app: model caches, host claims. */
  budgets?: SpecProblem[];
  unserved: UnservedKinds;
}

export type Admission =
  | { verdict: 'admitted' }
  | { verdict: 'claiming'; claims: HostClaim[] }
  | { verdict: 'refused'; problems: SpecProblem[] };

/**
 * The verdict on `o.app`. The spec's own problems come first; only a spec the platform allows is
 * judged against other namespaces' claims, and only one no claim conflicts with claims its free hosts
 * (a refused spec never takes a host from anyone).
 */
export function admission(o: AdmissionObservation): Admission {
  const { app } = o;
  // An LLM app's route is KServe's (planner/llm-workload.ts): the platform's router has no say in it.
  const problems = [...validateApp(app, o.policy), ...(servesLlm(app.spec) ? [] : o.route.problems(app)), ...o.hosts.problems, ...(o.budgets ?? []), ...missingDataPlane(app, o.unserved, o.route.product)];
  if (problems.length) return { verdict: 'refused', problems };
  if (o.hosts.conflicts.length) return { verdict: 'refused', problems: o.hosts.conflicts };
  if (o.hosts.missing.length) return { verdict: 'claiming', claims: o.hosts.missing };
  return { verdict: 'admitted' };
}

/**
 * Reasons that take a gateway or host from an app whatever its own edit: the platform's policy, or another
 * namespace's claim (HostConflict from a host the app's own namespace settles revokes nothing: reconcile.ts).
 */
export const REVOKING_REASONS: ReadonlySet<string> = new Set(['GatewayNotAllowed', 'HostNotAllowed', 'HostConflict']);

/** The live route's spec, as either router writes it (a VirtualService's gateways and hosts, an HTTPRoute's parentRefs and hostnames). */
interface RouteSpec {
  gateways?: string[];
  hosts?: string[];
  hostnames?: string[];
  parentRefs?: Array<{ name?: string; namespace?: string }>;
}

/** The gateway or host a problem names, read from the spec at its field (spec.ingress.gateways[i], spec.ingress.hosts[i]). */
function namedValue(app: ServerlessApp, field: string): { gateway: string } | { host: string } | undefined {
  const m = /^spec\.ingress\.(gateways|hosts)\[(\d+)\]$/.exec(field);
  if (!m) return undefined;
  const value = app.spec.ingress?.[m[1] as 'gateways' | 'hosts']?.[Number(m[2])];
  if (value === undefined) return undefined;
  return m[1] === 'gateways' ? { gateway: value } : { host: value };
}

/** The hosts `live` routes for, normalised: a VirtualService's hosts or an HTTPRoute's hostnames. */
export function routedHosts(live: { spec?: unknown }): string[] {
  const spec = (live.spec ?? {}) as RouteSpec;
  return [...(spec.hosts ?? []), ...(spec.hostnames ?? [])].map(normaliseHost);
}

/**
 * Whether any of the app's routes (ours, ours before 0.2, the retired router's) carries `host`, looked up
 * with `find` (the operator's caches, or what kubectl sapp plan read): within a namespace, the app serving
 * a host keeps it (host-claims.ts earlierHolder).
 */
export function servesHost(route: Route, app: { namespace: string; name: string }, host: string, find: (...ref: RouteRef) => WorkloadObject | undefined): boolean {
  const { live, legacy, retired } = appRoutes(route, { metadata: app }, find);
  return [live, legacy, retired].some((r) => r !== undefined && routedHosts(r).includes(host));
}

/** Whether `live` routes through the gateway or for the host `named`. */
function carries(live: { metadata: { namespace?: string }; spec?: unknown }, named: { gateway: string } | { host: string }): boolean {
  if ('host' in named) return routedHosts(live).includes(normaliseHost(named.host));
  const spec = (live.spec ?? {}) as RouteSpec;
  const parents = (spec.parentRefs ?? []).map((p) => `${p.namespace ?? live.metadata.namespace}/${p.name}`);
  return (spec.gateways ?? []).includes(named.gateway) || parents.includes(named.gateway);
}

/**
 * The problems that revoke what `live` (the app's route as last written) carries: a gateway the
 * platform no longer allows, a host it may no longer route. A tenant's edit that adds a refused
 * gateway or host leaves the route as it was (the live route does not carry it), so only the
 * platform's revocation takes a route down, never the tenant's own mistake.
 */
export function revokedBy(app: ServerlessApp, problems: SpecProblem[], live: { metadata: { namespace?: string }; spec?: unknown } | undefined): SpecProblem[] {
  if (!live) return [];
  return problems.filter((p) => {
    const named = revokes(app, p) ? namedValue(app, p.field) : undefined;
    return named !== undefined && carries(live, named);
  });
}

/** Whether `p` takes a gateway or host of the app's spec.ingress from it for a revoking reason. */
export function revokes(app: ServerlessApp, p: SpecProblem): boolean {
  return REVOKING_REASONS.has(p.reason) && namedValue(app, p.field) !== undefined;
}
