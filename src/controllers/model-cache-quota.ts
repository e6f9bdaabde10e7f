// How much node cache one namespace's apps may reserve. Each model cache
// takes disk on every node of the group, so without a budget one tenant could
// fill the disk every tenant's caches share. A namespace may hold a number of
// caches and a number of bytes; each cache is charged the largest of its
// model.size, what the node-side usage reports found in its folder on any node
// (controllers/model-cache-usage.ts) and the platform's minimum per model
// (--model-cache-min-charge): KServe 0.20 downloads whatever the URI holds and
// reports no size of what landed, so a declared "1" cannot buy a free cache,
// and a model found larger than declared is refused outright
// (planner/model-cache-size.ts: ModelCacheLargerThanDeclared, remembered in the
// app's status) and holds no budget. Apps are granted in
// creation order (then by name), each if it still fits, so the verdict is the
// same in every replica and after every restart, and one namespace's apps
// never count against another's. Only apps admitted for every other reason
// count (a refused app gets no cache and holds no budget). An app over the
// budget is refused (Ready=False ModelCacheQuotaExceeded, its running version
// kept) and gets no cache.
//
// Kept from the app cache's events, per namespace, at O(1) per event (and a
// usage report's change of a model's measure re-judges only the apps of that
// model, found by its storage key): an edit
// that changes no charge does nothing, a new app (which sorts last by
// creation) is judged against what earlier apps hold, and the removal of a
// refused claim frees nothing. Anything else marks the namespace for one
// first-fit pass, run once for a batch of events (a LIST page, a watch burst:
// flush) or when a verdict is asked for, not once per event.

import { formatBytes, parseQuantity } from '../api/v1alpha1/quantity.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { DEFAULT_MAX_MODEL_CACHE_PER_NAMESPACE, DEFAULT_MAX_MODEL_CACHES_PER_NAMESPACE, DEFAULT_MODEL_CACHE_MIN_CHARGE, type SpecProblem } from '../api/v1alpha1/validation.ts';
import { getsCache, type ModelCachePolicy } from '../planner/model-cache-plan.ts';
import { cacheCharge, largerThanDeclared, refusalStands, sameModel, sizeProblem, sizeRefusal, type MeasuredModel, type RefusedModelCache } from '../planner/model-cache-size.ts';
import type { CacheScope } from '../render/local-model-cache.ts';
import { modelStorageKey, UNMEASURED } from '../render/model-cache-usage.ts';
import { byCreation } from '../util/creation-order.ts';
import { CACHED_NAMESPACES, NamespacedLru } from '../util/lru.ts';
import { objectKey } from '../util/object-key.ts';

export interface CacheClaim { key: string; created: string; bytes: number }

/** What one namespace's caches may hold in all: bytes on each node, and caches. */
export interface CacheBudget { bytes: number; count: number }

const keyOf = (app: ServerlessApp) => objectKey(app.metadata.namespace, app.metadata.name);
const modelKey = (namespace: string, model: string) => `${namespace}/${model}`;
const inOrder = (a: CacheClaim, b: CacheClaim) => byCreation({ created: a.created, name: a.key }, { created: b.created, name: b.key });

/** The claims that fit `budget`, first fit in creation order (the key, "namespace/name", orders a namespace's apps by name). Pure. */
export function grantedClaims(claims: Iterable<CacheClaim>, budget: CacheBudget): Set<string> {
  return firstFit([...claims].sort(inOrder), budget).granted;
}

/** First fit over claims already in creation order. */
function firstFit(ordered: readonly CacheClaim[], budget: CacheBudget): { granted: Set<string>; used: number } {
  const granted = new Set<string>();
  let used = 0;
  for (const c of ordered) {
    if (granted.size >= budget.count) break;
    if (used + c.bytes > budget.bytes) continue;
    used += c.bytes;
    granted.add(c.key);
  }
  return { granted, used };
}

/** The work the quota did, for tests that bound it (claims walked by first-fit passes, and the passes). */
export interface QuotaWork { passes: number; claimsWalked: number }

/** One namespace's claims and their verdicts (see the module comment for when a pass runs). */
class NamespaceClaims {
  readonly claims = new Map<string, CacheClaim>();
  granted = new Set<string>();
  used = 0;
  /** The claim that sorts last among those granted or refused so far: a new claim after it changes no earlier verdict. */
  last: CacheClaim | undefined;
  /** Verdicts as the listeners last heard them, kept from the first change that needs a pass until flush; undefined: none pending. */
  heard: Set<string> | undefined;
  /** The resourceVersion of each app asking for a cache, as its last event showed it (whether or not it counts). */
  readonly seen = new Map<string, string>();
  /** Keys whose own event came since the last flush: their own reconcile is queued already. */
  readonly touched = new Set<string>();
  stale = false;
  private readonly budget: CacheBudget;
  private readonly work: QuotaWork;

  constructor(budget: CacheBudget, work: QuotaWork) {
    this.budget = budget;
    this.work = work;
  }

  /** `own`: the app's own event (its reconcile is queued already); else a measure changed, whose listeners hear every app of the model. */
  set(key: string, claim: CacheClaim | undefined, own = true): void {
    const old = this.claims.get(key);
    if (old && claim && old.bytes === claim.bytes && old.created === claim.created) return;
    if (!old && !claim) return;
    if (own) this.touched.add(key);
    if (!this.stale && !old && claim && (!this.last || inOrder(this.last, claim) < 0)) {
      // Last in creation order: every earlier verdict stands, and this one is judged against them.
      this.claims.set(key, claim);
      this.last = claim;
      if (this.granted.size < this.budget.count && this.used + claim.bytes <= this.budget.bytes) {
        this.granted.add(key);
        this.used += claim.bytes;
      }
      return;
    }
    if (!this.stale && old && !claim && !this.granted.has(key)) {
      // A refused claim held nothing: its going frees nothing.
      this.claims.delete(key);
      return;
    }
    this.heard ??= new Set(this.granted);
    if (claim) this.claims.set(key, claim);
    else this.claims.delete(key);
    this.stale = true;
  }

  /** Brings the verdicts up to date: one first-fit pass when an event left them stale. */
  settle(): void {
    if (!this.stale) return;
    const ordered = [...this.claims.values()].sort(inOrder);
    this.work.passes++;
    this.work.claimsWalked += ordered.length;
    ({ granted: this.granted, used: this.used } = firstFit(ordered, this.budget));
    this.last = ordered.at(-1);
    this.stale = false;
  }

  /** The other apps whose grant changed since the listeners last heard, and forgets them. */
  flush(): string[] {
    this.settle();
    const heard = this.heard;
    this.heard = undefined;
    const changed = heard ? [...this.claims.keys()].filter((k) => !this.touched.has(k) && heard.has(k) !== this.granted.has(k)) : [];
    this.touched.clear();
    return changed;
  }
}

interface AppEvents {
  on(event: 'add' | 'update' | 'delete', handler: (app: ServerlessApp) => void): unknown;
}

export interface QuotaOptions {
  /**
   * Whether `app` is admitted for every reason other than this budget: only those count. A refused
   * app gets no cache (nor any other child), so it must hold none of its namespace's budget.
   */
  admitted?: (app: ServerlessApp) => boolean;
  /** The most any node's usage report shows of a model, by its storage key (controllers/model-cache-usage.ts); default: none. */
  measured?: (storageKey: string) => MeasuredModel | undefined;
}

/** What the quota keeps of an app asking for a cache, to judge it again when its model's measure changes. */
interface ModelUser { namespace: string; created: string; declared: number; counts: boolean; storageKey: string; model: string }

/**
 * Models whose last measure each namespace is remembered for (the most recently measured kept): a model
 * found larger than declared stays so after its folders are gone, for an app deleted and made again, or
 * one naming the same model another way (sameModel), not only for the app whose status records it.
 * Each would otherwise buy one more download of the model. A report of the app's own folder always
 * comes first; a folder the reporter could not measure (UNMEASURED) is not remembered.
 */
const REMEMBERED_MODELS_PER_NAMESPACE = 256;

export class ModelCacheQuota {
  private readonly byNamespace = new Map<string, NamespaceClaims>();
  /** The namespaces an event touched since the last flush: a flush looks at those only. */
  private readonly pending = new Set<string>();
  /** Which apps count against the budget: admitted ones that ask for a cache the platform's per-app limits and the cache scope allow. */
  readonly counts: (app: ServerlessApp) => boolean;
  private readonly asks: (app: ServerlessApp) => boolean;
  private readonly wantsAny: (app: ServerlessApp) => boolean;
  private readonly admitted: (app: ServerlessApp) => boolean;
  private readonly measured: (storageKey: string) => MeasuredModel | undefined;
  /** Storage key -> the apps asking for a cache of that model (by key): a measure's change re-judges these only. */
  private readonly users = new Map<string, Map<string, ModelUser>>();
  /** App key -> the storage key it is filed under in `users`. */
  private readonly userKeys = new Map<string, string>();
  private readonly budget: CacheBudget;
  private readonly minCharge: number;
  private readonly listeners: Array<(keys: string[]) => void> = [];
  /** Namespace -> model (sameModel) -> what a node was last seen to hold of it, while the operator runs. */
  private readonly remembered = new NamespacedLru<MeasuredModel>(REMEMBERED_MODELS_PER_NAMESPACE, CACHED_NAMESPACES);
  /** "namespace/model" -> the apps asking for a cache of that model under any of its names: a measure of one re-judges them all. */
  private readonly sameModelUsers = new Map<string, Set<string>>();
  private tracking = false;
  private flushQueued = false;
  /** What the first-fit passes cost so far (tests bound it: the bookkeeping is linear, not quadratic). */
  readonly work: QuotaWork = { passes: 0, claimsWalked: 0 };

  constructor(policy: ModelCachePolicy, scope: CacheScope, o: QuotaOptions = {}) {
    this.measured = o.measured ?? (() => undefined);
    // A cache refused for its size is no cache: it holds no budget.
    this.asks = (app) => getsCache(app, scope, policy) && !this.sizeRefusal(app);
    this.admitted = o.admitted ?? (() => true);
    this.counts = (app) => this.asks(app) && this.admitted(app);
    this.wantsAny = (app) => getsCache(app, scope, policy);
    this.budget = {
      bytes: policy.maxModelCacheBytesPerNamespace ?? parseQuantity(DEFAULT_MAX_MODEL_CACHE_PER_NAMESPACE),
      count: policy.maxModelCachesPerNamespace ?? DEFAULT_MAX_MODEL_CACHES_PER_NAMESPACE,
    };
    this.minCharge = policy.modelCacheMinChargeBytes ?? parseQuantity(DEFAULT_MODEL_CACHE_MIN_CHARGE);
  }

  /**
   * Keeps the claims from `apps`' events. Called once, by whoever builds the quota (operator.ts):
   * both controllers read the same claims, so they never disagree on who gets a cache. The
   * listeners hear once per batch of events (a microtask after the informer's synchronous run of
   * them), so a LIST of thousands of apps costs one pass per namespace, not one per app.
   */
  track(apps: AppEvents): this {
    this.tracking = true;
    apps.on('add', (a) => this.set(a));
    apps.on('update', (a) => this.set(a));
    apps.on('delete', (a) => this.set(a, true));
    return this;
  }

  /** `listener` gets the other apps of a namespace whose verdict a batch of events changed. */
  onChange(listener: (keys: string[]) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Records `app`'s claim (or its absence). O(1): whatever it changes for other apps is found by
   * flush, which a tracking quota runs in a microtask after the informer's synchronous run of events.
   */
  set(app: ServerlessApp, deleted = false): void {
    const wants = !deleted && this.asks(app);
    const counts = wants && this.admitted(app);
    const ns = this.record(app, counts ? this.claimOf(app) : undefined);
    if (wants) ns.seen.set(keyOf(app), app.metadata.resourceVersion ?? '');
    else ns.seen.delete(keyOf(app));
    this.file(app, !deleted && this.wantsAny(app));
  }

  /** Files `app` under its model's storage key (or takes it off), so a change of the model's measure finds it. O(1). */
  private file(app: ServerlessApp, asking: boolean): void {
    const key = keyOf(app);
    const was = this.userKeys.get(key);
    const storageKey = asking ? modelStorageKey(app.spec.model!.storageUri) : undefined;
    if (was !== undefined && was !== storageKey) {
      const users = this.users.get(was)!;
      const gone = users.get(key)!;
      users.delete(key);
      if (!users.size) this.users.delete(was);
      this.userKeys.delete(key);
      const named = this.sameModelUsers.get(modelKey(gone.namespace, gone.model));
      named?.delete(key);
      if (named && !named.size) this.sameModelUsers.delete(modelKey(gone.namespace, gone.model));
    }
    if (storageKey === undefined) return;
    let users = this.users.get(storageKey);
    if (!users) this.users.set(storageKey, (users = new Map()));
    // A refusal the status records stands whatever the measure: such an app counts for nothing until its spec changes.
    const counts = !refusalStands(app, app.status?.refusedModelCache) && this.admitted(app);
    const { namespace } = app.metadata;
    const model = sameModel(app.spec.model!.storageUri);
    this.remember(namespace, model, this.measured(storageKey));
    users.set(key, { namespace, created: app.metadata.creationTimestamp ?? '', declared: parseQuantity(app.spec.model!.size!), counts, storageKey, model });
    let named = this.sameModelUsers.get(modelKey(namespace, model));
    if (!named) this.sameModelUsers.set(modelKey(namespace, model), (named = new Set()));
    named.add(key);
    this.userKeys.set(key, storageKey);
  }

  /**
   * The measures of these models (storage keys) changed: each app of them is judged again (its charge,
   * or its refusal for a size larger than declared), and the listeners hear every one of them.
   */
  remeasured(storageKeys: Iterable<string>): void {
    // Every app of a model measured anew, under whichever of its names (sameModel) it asks for it.
    const models = new Set<string>();
    for (const storageKey of storageKeys) {
      for (const user of this.users.get(storageKey)?.values() ?? []) {
        this.remember(user.namespace, user.model, this.measured(storageKey));
        models.add(modelKey(user.namespace, user.model));
      }
    }
    const keys: string[] = [];
    for (const named of models) {
      for (const key of this.sameModelUsers.get(named) ?? []) {
        const user = this.users.get(this.userKeys.get(key) ?? '')?.get(key);
        if (!user) continue;
        keys.push(key);
        const measured = this.measureOf(user.namespace, user.storageKey, user.model);
        if (!user.counts) continue;
        const claim = largerThanDeclared(user.declared, measured) ? undefined : { key, created: user.created, bytes: cacheCharge(user.declared, measured, this.minCharge) };
        const ns = this.byNamespace.get(user.namespace);
        if (!ns) continue;
        ns.set(key, claim, false);
        this.pending.add(user.namespace);
      }
    }
    if (!keys.length) return;
    this.scheduleFlush();
    for (const l of this.listeners) l(keys);
  }

  /** The refusal of `app`'s cache for its size, standing or new (planner/model-cache-size.ts), if any. */
  sizeRefusal(app: ServerlessApp): RefusedModelCache | undefined {
    return app.spec.model?.storageUri === undefined ? undefined : sizeRefusal(app, this.measuredOf(app));
  }

  /** What a node holds of `app`'s model: the report of its own folder, else what was last seen of the model in its namespace. */
  private measuredOf(app: ServerlessApp): MeasuredModel | undefined {
    const uri = app.spec.model!.storageUri;
    return this.measureOf(app.metadata.namespace, modelStorageKey(uri), sameModel(uri));
  }

  private measureOf(namespace: string, storageKey: string, model: string): MeasuredModel | undefined {
    return this.measured(storageKey) ?? this.remembered.get(namespace, model);
  }

  /** Keeps a measure as the last seen of `model` in `namespace`; a folder that could not be measured says nothing of the model. */
  private remember(namespace: string, model: string, measured: MeasuredModel | undefined): void {
    if (measured && measured.bytes !== UNMEASURED) this.remembered.set(namespace, model, measured);
  }

  private record(app: ServerlessApp, claim: CacheClaim | undefined): NamespaceClaims {
    const { namespace } = app.metadata;
    let ns = this.byNamespace.get(namespace);
    if (!ns) this.byNamespace.set(namespace, (ns = new NamespaceClaims(this.budget, this.work)));
    ns.set(keyOf(app), claim);
    this.pending.add(namespace);
    this.scheduleFlush();
    return ns;
  }

  private scheduleFlush(): void {
    if (this.tracking && !this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(() => {
        this.flushQueued = false;
        const keys = this.flush();
        if (keys.length) for (const l of this.listeners) l(keys);
      });
    }
  }

  /** The apps, besides those set since the last flush, that gained or lost their grant since then. */
  flush(): string[] {
    const changed: string[] = [];
    for (const namespace of this.pending) {
      const ns = this.byNamespace.get(namespace)!;
      changed.push(...ns.flush());
      if (!ns.claims.size && !ns.seen.size) this.byNamespace.delete(namespace);
    }
    this.pending.clear();
    return changed;
  }

  /** Whether `app`, as it is now, gets its cache. */
  allows(app: ServerlessApp): boolean {
    return this.problem(app) === undefined;
  }

  /**
   * ModelCacheQuotaExceeded when `app`'s cache does not fit its namespace's budget beside the earlier
   * apps'. A tracking quota records the app as judged here: whether it counts may change with no
   * event of its own (its admission turns on a host another app claims or frees), and the
   * controllers judge it at every reconcile that change brings. An untracked quota (a plan of an
   * edit) judges it beside the recorded apps and keeps nothing.
   */
  problem(app: ServerlessApp): SpecProblem | undefined {
    const refused = this.wantsAny(app) ? this.sizeRefusal(app) : undefined;
    const claim = this.counts(app) ? this.claimOf(app) : undefined;
    const ns = this.byNamespace.get(app.metadata.namespace);
    // Only the object the informer last showed: a stale copy must not bring back a deleted app's claim.
    const current = ns?.seen.get(keyOf(app));
    if (this.tracking && current !== undefined && current === (app.metadata.resourceVersion ?? '')) this.record(app, claim);
    if (refused && this.admitted(app)) return sizeProblem(refused);
    if (!claim) return undefined;
    ns?.settle();
    const recorded = ns?.claims.get(claim.key);
    let taken: { count: number; bytes: number };
    if (ns && recorded && recorded.bytes === claim.bytes && recorded.created === claim.created) {
      if (ns.granted.has(claim.key)) return undefined;
      taken = { count: ns.granted.size, bytes: ns.used };
    } else {
      const claims = new Map(ns?.claims);
      claims.set(claim.key, claim);
      const granted = grantedClaims(claims.values(), this.budget);
      if (granted.has(claim.key)) return undefined;
      taken = { count: granted.size, bytes: [...granted].reduce((sum, k) => sum + claims.get(k)!.bytes, 0) };
    }
    return this.exceeded(app, claim, taken);
  }

  private exceeded(app: ServerlessApp, claim: CacheClaim, taken: { count: number; bytes: number }): SpecProblem {
    const { namespace } = app.metadata;
    const size = app.spec.model!.size!;
    const measured = this.measuredOf(app);
    const why = measured && measured.bytes === claim.bytes ? `what node ${measured.node} holds of it` : 'the platform\'s minimum per model cache';
    const charged = claim.bytes > parseQuantity(size) ? `${size} model, charged ${formatBytes(claim.bytes)} (${why}),` : `${size} model`;
    const remedy = 'turn off prewarm.cacheModel here or on another app, or ask the platform team for a larger budget';
    if (taken.count >= this.budget.count) {
      return {
        reason: 'ModelCacheQuotaExceeded', field: 'spec.prewarm.cacheModel',
        message: `namespace ${namespace} may have ${this.budget.count} model caches, and earlier apps have them all, so this app's model is not cached: ${remedy}`,
      };
    }
    return {
      reason: 'ModelCacheQuotaExceeded', field: 'spec.model.size',
      message: `the model caches of namespace ${namespace} may reserve ${formatBytes(this.budget.bytes)} on each node in all; ${formatBytes(taken.bytes)} is taken by earlier apps, so this ${charged} does not fit: use a smaller model, ${remedy}`,
    };
  }

  /** The claim of an app that counts (see counts). */
  private claimOf(app: ServerlessApp): CacheClaim {
    const bytes = cacheCharge(parseQuantity(app.spec.model!.size!), this.measuredOf(app), this.minCharge);
    return { key: keyOf(app), created: app.metadata.creationTimestamp ?? '', bytes };
  }
}
