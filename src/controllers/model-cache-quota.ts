// How much node cache one namespace's apps may reserve. Each model cache
// reserves its model.size on every node of the group, so without a budget one
// tenant could fill the disk every tenant's caches share. The budget is the
// sum of model.size over the namespace's apps that cache their model; apps
// are granted in creation order (then by name), each if it still fits, so the
// verdict is the same in every replica and after every restart, and one
// namespace's apps never count against another's. An app over the budget is
// refused (Ready=False ModelCacheQuotaExceeded, its running version kept) and
// gets no cache. Kept from the app cache's events, per namespace: a check
// looks at the apps of one namespace only.

import { formatBytes, parseQuantity } from '../api/v1alpha1/quantity.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { DEFAULT_MAX_MODEL_CACHE_PER_NAMESPACE, type SpecProblem } from '../api/v1alpha1/validation.ts';
import { getsCache, type ModelCachePolicy } from '../planner/model-cache-plan.ts';
import type { CacheScope } from '../render/local-model-cache.ts';
import { byCreation } from '../util/creation-order.ts';
import { objectKey } from '../util/object-key.ts';

export interface CacheClaim { key: string; created: string; bytes: number }

const keyOf = (app: ServerlessApp) => objectKey(app.metadata.namespace, app.metadata.name);

/** The claims that fit `limit`, first fit in creation order (the key, "namespace/name", orders a namespace's apps by name). Pure. */
export function grantedClaims(claims: Iterable<CacheClaim>, limit: number): Set<string> {
  const ordered = [...claims].sort((a, b) => byCreation({ created: a.created, name: a.key }, { created: b.created, name: b.key }));
  const granted = new Set<string>();
  let used = 0;
  for (const c of ordered) {
    if (used + c.bytes > limit) continue;
    used += c.bytes;
    granted.add(c.key);
  }
  return granted;
}

interface AppEvents {
  on(event: 'add' | 'update' | 'delete', handler: (app: ServerlessApp) => void): unknown;
}

export class ModelCacheQuota {
  private readonly byNamespace = new Map<string, Map<string, CacheClaim>>();
  /** Which apps count against the budget: those that ask for a cache the platform's per-app limits and the cache scope allow. */
  readonly counts: (app: ServerlessApp) => boolean;
  private readonly limit: number;
  private readonly listeners: Array<(keys: string[]) => void> = [];

  constructor(policy: ModelCachePolicy, scope: CacheScope) {
    this.counts = (app) => getsCache(app, scope, policy);
    this.limit = policy.maxModelCacheBytesPerNamespace ?? parseQuantity(DEFAULT_MAX_MODEL_CACHE_PER_NAMESPACE);
  }

  /**
   * Keeps the claims from `apps`' events. Called once, by whoever builds the quota (operator.ts):
   * both controllers read the same claims, so they never disagree on who gets a cache.
   */
  track(apps: AppEvents): this {
    const changed = (keys: string[]) => { for (const l of this.listeners) l(keys); };
    apps.on('add', (a) => changed(this.set(a)));
    apps.on('update', (a) => changed(this.set(a)));
    apps.on('delete', (a) => changed(this.set(a, true)));
    return this;
  }

  /** `listener` gets the other apps of a namespace whose verdict an event changed. */
  onChange(listener: (keys: string[]) => void): void {
    this.listeners.push(listener);
  }

  /** Records `app`'s claim (or its absence); returns the other apps of its namespace that gained or lost their grant. */
  set(app: ServerlessApp, deleted = false): string[] {
    const { namespace } = app.metadata;
    const claims = this.byNamespace.get(namespace) ?? new Map<string, CacheClaim>();
    const before = grantedClaims(claims.values(), this.limit);
    const claim = deleted ? undefined : this.claimOf(app);
    if (claim) claims.set(claim.key, claim);
    else claims.delete(keyOf(app));
    if (claims.size) this.byNamespace.set(namespace, claims);
    else this.byNamespace.delete(namespace);
    const after = grantedClaims(claims.values(), this.limit);
    const key = keyOf(app);
    return [...new Set([...claims.keys(), ...before])].filter((k) => k !== key && before.has(k) !== after.has(k));
  }

  /** Whether `app`, as it is now, gets its cache. */
  allows(app: ServerlessApp): boolean {
    return this.problem(app) === undefined;
  }

  /** ModelCacheQuotaExceeded when `app`'s cache does not fit its namespace's budget beside the earlier apps'. */
  problem(app: ServerlessApp): SpecProblem | undefined {
    const claim = this.claimOf(app);
    if (!claim) return undefined;
    const claims = new Map(this.byNamespace.get(app.metadata.namespace));
    claims.set(claim.key, claim);
    if (grantedClaims(claims.values(), this.limit).has(claim.key)) return undefined;
    const others = [...claims.values()].filter((c) => c.key !== claim.key);
    const used = [...grantedClaims(others, this.limit)].reduce((sum, k) => sum + claims.get(k)!.bytes, 0);
    return {
      reason: 'ModelCacheQuotaExceeded', field: 'spec.model.size',
      message: `the model caches of namespace ${app.metadata.namespace} may reserve ${formatBytes(this.limit)} on each node in all; ${formatBytes(used)} is taken by earlier apps, so this ${app.spec.model!.size} model does not fit: use a smaller model, turn off prewarm.cacheModel here or on another app, or ask the platform team for a larger budget`,
    };
  }

  private claimOf(app: ServerlessApp): CacheClaim | undefined {
    if (!this.counts(app)) return undefined;
    return { key: keyOf(app), created: app.metadata.creationTimestamp ?? '', bytes: parseQuantity(app.spec.model!.size!) };
  }
}
