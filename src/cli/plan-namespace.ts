// What the operator checks of an app against its namespace and the cluster's
// host claims, built as the controller builds it (controllers/serverlessapp.ts
// observe()): the same HostClaims verdict and the same budgets, in the same
// order, over what `kubectl sapp plan` read instead of the informers' caches.
// Pure: the reads are in plan-read.ts.

import type { HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { hostClaims, type SpecProblem, type ValidationPolicy } from '../api/v1alpha1/validation.ts';
import type { ClaimEvents } from '../controllers/host-claim-budget.ts';
import { HostClaims } from '../controllers/host-claims.ts';
import { overlaps } from '../planner/host-claims.ts';
import { ModelCacheQuota } from '../controllers/model-cache-quota.ts';
import { NamespaceBudgets } from '../controllers/budgets.ts';
import { servesHost, type HostVerdict } from '../planner/admission.ts';
import type { Route, RouteRef } from '../planner/route.ts';
import type { WorkloadObject } from '../planner/workloads.ts';
import type { CacheScope } from '../render/local-model-cache.ts';

/** What was read beside the app; each absent when it could not be read (the plan then notes what it did not check). */
export interface NamespaceView {
  /** The HostClaims that bear on the app's hosts: those found by name, or all when a rule needs them. */
  claims?: HostClaim[];
  /** The other apps of the app's namespace, when a rule needs them (the app names hosts or caches its model). */
  apps?: ServerlessApp[];
  /** Routes of ours that were read (the host rivals' and the app's own), by kind and name: within a namespace, the app serving a host keeps it. */
  routeNamed?: (...ref: RouteRef) => WorkloadObject | undefined;
}

/** The namespace's other apps naming a host that overlaps one of `app`'s: all the host rules compare. */
export function hostRivals(app: ServerlessApp, apps: ServerlessApp[]): ServerlessApp[] {
  const own = hostClaims(app);
  if (!own.length) return [];
  return apps.filter((a) => a.metadata.name !== app.metadata.name && hostClaims(a).some((h) => own.some((o) => overlaps(h, o))));
}

/** The claims read, as the rules read the informer: every claim an "add", and one by name. */
function claimSource(claims: HostClaim[]): ClaimEvents {
  const byName = new Map(claims.map((c) => [c.metadata.name, c]));
  return {
    on: (event, handler) => { if (event === 'add') for (const c of byName.values()) handler(c); },
    get: (_namespace, name) => byName.get(name),
  };
}

/** The host verdict and the budgets' problems for `app` (the edit, as it would be stored). */
export function namespaceChecks(app: ServerlessApp, view: NamespaceView, policy: Required<ValidationPolicy>, cacheScope: CacheScope, route: Route): { hosts: HostVerdict; budgets: SpecProblem[] } {
  const others = (view.apps ?? []).filter((a) => a.metadata.name !== app.metadata.name);
  // Only the apps the rules would look at go in: the host rivals and those claiming a cache (all the
  // budget counts). The verdict is the same; a namespace of a thousand apps costs a filter, not a
  // thousand index updates in a cold process.
  const find = view.routeNamed;
  const hosts = new HostClaims(claimSource(view.claims ?? []), find ? (a, host) => servesHost(route, a, host, find) : undefined);
  for (const a of [...hostRivals(app, others), app]) hosts.setApp(a);
  const quota = new ModelCacheQuota(policy, cacheScope);
  for (const a of others.filter(quota.counts)) quota.set(a);
  const budgets = new NamespaceBudgets(quota, view.claims ? claimSource(view.claims) : undefined, policy.maxHostClaimsPerNamespace).problems(app);
  // Claims unread: taken as held (no conflict, none to make), as the plan notes.
  const verdict = view.claims ? hosts.verdict(app) : { problems: hosts.problems(app), conflicts: [], missing: [] };
  return { hosts: verdict, budgets };
}
