// How many hosts one namespace may hold. HostClaims are cluster-scoped and
// outlive the apps that name them (a host stays its namespace's across a
// delete and re-create), so without a bound a tenant editing its hosts would
// pile claims up in etcd and in every replica's cache. The budget counts the
// claims a namespace holds plus the ones an app would add; an app whose new
// hosts do not fit is refused (Ready=False HostClaimQuotaExceeded naming
// spec.ingress.hosts) and claims nothing, while apps whose hosts are already
// claimed are never affected. Claims no app names any more are released after
// a grace period (host-claim-release.ts), which frees the budget again.
// Counted from the HostClaim informer's events, per namespace.

import { hostClaimName, type HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { hostClaims, type SpecProblem } from '../api/v1alpha1/validation.ts';

/** The HostClaims as the rules read them: their events, and one by name. */
export interface ClaimEvents {
  on(event: 'add' | 'update' | 'delete', handler: (claim: HostClaim, old?: HostClaim) => void): unknown;
  get(namespace: undefined, name: string): HostClaim | undefined;
}

/** The problem of an app that would hold `held + adding` claims in a namespace allowed `max`; pure. */
export function claimBudgetProblem(held: number, adding: number, max: number): SpecProblem | undefined {
  if (adding === 0 || held + adding <= max) return undefined;
  return {
    reason: 'HostClaimQuotaExceeded', field: 'spec.ingress.hosts',
    message: `the namespace holds ${held} host claims and these hosts need ${adding} more; a namespace may hold ${max} (the platform's --max-host-claims-per-namespace). Hosts no app of the namespace names are released after a grace period; reuse a host already claimed, or ask the platform team`,
  };
}

export class HostClaimBudget {
  readonly #claims: ClaimEvents;
  readonly #max: number;
  /** namespace -> claim names. */
  readonly #held = new Map<string, Set<string>>();

  constructor(claims: ClaimEvents, max: number) {
    this.#claims = claims;
    this.#max = max;
    claims.on('add', (c) => this.#add(c));
    claims.on('update', (c, old) => {
      if (old) this.#remove(old);
      this.#add(c);
    });
    claims.on('delete', (c) => this.#remove(c));
  }

  /** Claims the namespace holds now. */
  held(namespace: string): number {
    return this.#held.get(namespace)?.size ?? 0;
  }

  /** Whether the claims `app`'s hosts still need fit its namespace's budget. */
  problem(app: ServerlessApp): SpecProblem | undefined {
    const namespace = app.metadata.namespace;
    const adding = hostClaims(app).filter((host) => {
      const name = hostClaimName(host);
      return name !== undefined && this.#claims.get(undefined, name) === undefined;
    }).length;
    return claimBudgetProblem(this.held(namespace), adding, this.#max);
  }

  #add(c: HostClaim): void {
    let names = this.#held.get(c.spec.namespace);
    if (!names) this.#held.set(c.spec.namespace, (names = new Set()));
    names.add(c.metadata.name);
  }

  #remove(c: HostClaim): void {
    const names = this.#held.get(c.spec.namespace);
    names?.delete(c.metadata.name);
    if (names?.size === 0) this.#held.delete(c.spec.namespace);
  }
}
