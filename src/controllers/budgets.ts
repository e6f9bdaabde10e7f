// The namespace budgets an app is held to, in the order its status lists them:
// its model cache's bytes, then its host claims. One list for the controller
// and for `kubectl sapp plan` (cli/plan-namespace.ts).

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import { HostClaimBudget, type ClaimEvents } from './host-claim-budget.ts';
import type { ModelCacheQuota } from './model-cache-quota.ts';

export class NamespaceBudgets {
  readonly #cache: ModelCacheQuota;
  readonly #hosts: HostClaimBudget | undefined;

  /** `claims` undefined (not read): the host claims' budget is left out. */
  constructor(cacheQuota: ModelCacheQuota, claims: ClaimEvents | undefined, maxHostClaimsPerNamespace: number) {
    this.#cache = cacheQuota;
    this.#hosts = claims ? new HostClaimBudget(claims, maxHostClaimsPerNamespace) : undefined;
  }

  /** The budgets `app` exceeds. */
  problems(app: ServerlessApp): SpecProblem[] {
    const cache = this.#cache.problem(app);
    return [...(cache ? [cache] : []), ...this.problemsButModelCache(app)];
  }

  /** The budgets `app` exceeds other than the model cache's: what decides whether it counts against that one. */
  problemsButModelCache(app: ServerlessApp): SpecProblem[] {
    return [this.#hosts?.problem(app)].filter((p) => p !== undefined);
  }
}
