// The one path by which rendered children reach the API server (KServe's
// per-child reconcile): compare the desired object with the cached one and
// server-side apply it only when it differs: edited by hand (drift), or
// holding a field we applied before and no longer want.
// Fields other managers set are not in our apply, so they are left alone.
// Nothing is written that this app does not own: a child the cache does not
// show is read from the API server first (the caches only see objects with our
// labels), and one that exists but is not controlled by this app (by UID) is
// left untouched and reported (NotOwned), as KServe's reconcilers do
// (controllerutil.SetControllerReference refuses an object another controls).
//
// Server-side apply attributes what a mutating webhook defaults during our
// request to our field manager. A field we "own" but never rendered is usually
// such a default, not a field we dropped; a dry-run apply tells the two apart
// before we write (and the verdict is remembered per object version).
// What a kind's data plane requires beyond that (a template written only under
// a new name, atomic lists) comes with the write: the kind's WriteRule
// (planner/write-rules.ts); this writer knows no kind.

import { annotationApply, applyNeed, hasAnnotations, sameObject } from '../runtime/apply.ts';
import { sameJson } from '../util/canonical-json.ts';
import { ApiError, isNamespaceTerminating, isNotFound, isRejection, type KubeClient } from '../runtime/client.ts';
import type { Request } from '../runtime/controller.ts';
import { Kinds, type ResourceKind } from '../util/kinds.ts';
import { ensureWrite, WRITE_RULES, type WriteRule } from '../planner/write-rules.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { controlledBy, controllingAppRef, labelledApp, labelledFor, removableBy } from '../render/metadata.ts';
import type { ObjectRef } from '../util/object-key.ts';
import { shortHash } from '../rollout/version.ts';

interface Owned {
  metadata: {
    name: string; namespace?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string>;
    ownerReferences?: Array<{ uid: string; kind: string; name?: string; controller?: boolean }>;
    managedFields?: unknown;
  };
}

interface Child extends Owned {
  apiVersion: string;
  kind: string;
  spec?: unknown;
}

/** Maps a child to the app that controls it (its controller owner reference). */
export function ownedBy(obj: Owned): Request[] {
  const app = controllingAppRef(obj);
  return app ? [app] : [];
}

/**
 * A child this reconcile could not write, for a reason on the API server's side.
 * `ApplyRejected`: the API server refused the write (an admission webhook's
 * denial, a schema or CEL error, a field owned by another controller); retried
 * with backoff. `NotOwned`: the object exists and this app does not control it,
 * so the operator wrote nothing and does not back off and retry; it looks again
 * when the app changes or at the plan's requeue, which a refusal keeps.
 * Either way the app shows it as Ready=False with the reason.
 */
export class WriteRejected extends Error {
  readonly kind: string;
  readonly object: string;
  readonly reason: 'ApplyRejected' | 'NotOwned';
  /** The API server's status code (ApplyRejected only). */
  readonly code?: number;

  /** `cause`: the API server's refusal, or who controls the object instead of this app. */
  constructor(kind: string, object: string, cause: ApiError | { owner: string }) {
    const refused = cause instanceof ApiError;
    super(refused ? cause.message : cause.owner, refused ? { cause } : undefined);
    this.name = 'WriteRejected';
    this.kind = kind;
    this.object = object;
    this.reason = refused ? 'ApplyRejected' : 'NotOwned';
    if (refused) this.code = cause.code;
  }

  /** The namespace is being deleted: the app goes with it, so there is nothing to report or retry. */
  get namespaceTerminating(): boolean {
    return isNamespaceTerminating(this.cause);
  }

  /** Whether retrying with backoff can help: the API server may accept it later (a webhook back, a conflict gone). */
  get retry(): boolean {
    return this.reason === 'ApplyRejected';
  }

  /** One line for the Event. */
  get summary(): string {
    return this.reason === 'NotOwned'
      ? `${this.kind} ${this.object} is not controlled by this app (${this.message}): left untouched`
      : `the API server refused the ${this.kind} ${this.object}: ${this.message}`;
  }
}


export class ChildWriter {
  private readonly client: KubeClient;
  /** uid -> "resourceVersion/desired hash" for which a dry run showed the apply would change nothing. */
  private readonly noOps = new Map<string, string>();
  /** kind/namespace/name -> "resourceVersion the cache showed before the write/template name" of the template this writer last wrote. */
  private readonly templates = new Map<string, string>();

  constructor(client: KubeClient) {
    this.client = client;
  }

  /**
   * Applies `desired` when it differs from `live` (the cache's copy); returns
   * whether it wrote. Throws WriteRejected (NotOwned) when the object exists and
   * this app does not control it: a cached one, or one the cache does not show,
   * which is read from the API server before the first write. `rule`: what the kind's data plane requires.
   */
  async ensure(kind: ResourceKind, desired: Child, live: Child | undefined, rule: WriteRule = WRITE_RULES.apply, signal?: AbortSignal): Promise<boolean> {
    const current = live ?? await this.client.get<Child>(kind, desired.metadata.namespace, desired.metadata.name, signal ? { signal } : {});
    const owner = current && notControlledBy(desired, current);
    if (owner) throw new WriteRejected(kind.kind, nameOf(desired), { owner });
    if (rule.templateName && rule.routing) return this.ensureNamedTemplate(kind, desired, current, rule, signal);
    return this.applyIfChanged(kind, desired, current, this.client.fieldManager, rule, signal);
  }

  /**
   * Deletes a child of the app (never one it does not own), guarded by its uid: one the app controls, or,
   * with `owner` the app's key, one that cannot carry an owner reference and whose labels name the app
   * (render/metadata.ts labelledFor). An app already gone (undefined) controls nothing.
   */
  async remove(kind: ResourceKind, live: Owned | undefined, owner: ServerlessApp | ObjectRef | undefined, signal?: AbortSignal): Promise<boolean> {
    return removableBy(live, owner) && this.removeMatched(kind, live as Child, signal);
  }

  /**
   * Deletes an object the caller has matched to the app by its labels (a cluster-scoped model cache,
   * which cannot carry a namespaced owner), guarded by its uid so a namesake made since is never hit.
   */
  async removeMatched(kind: ResourceKind, live: Child, signal?: AbortSignal): Promise<boolean> {
    return this.write(kind, live, () => this.client.delete(kind, live.metadata.namespace, live.metadata.name, { ...sameObject(live), signal }));
  }

  /**
   * Adds `finalizer` to the app by server-side apply (finalizers are a set: others' entries stay), or
   * removes it by a merge patch guarded by resourceVersion, never by apply: an apply to an app that
   * has just gone would try to create it again. A conflict is retried by the queue; an app already gone
   * needs nothing (false); a refusal (an admission webhook's) is a WriteRejected, as for any child.
   */
  async finalizer(app: ServerlessApp, finalizer: string, present: boolean, signal?: AbortSignal): Promise<boolean> {
    const { name, namespace } = app.metadata;
    if (present) {
      await this.write(Kinds.ServerlessApp, app, () => this.client.apply({ apiVersion: app.apiVersion, kind: app.kind, metadata: { name, namespace, finalizers: [finalizer] } }, { signal }));
      return true;
    }
    const finalizers = (app.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    try {
      await this.write(Kinds.ServerlessApp, app, () => this.client.mergePatch(Kinds.ServerlessApp, namespace, name, { metadata: { finalizers, resourceVersion: app.metadata.resourceVersion } }, { signal }));
      return true;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return false;
    }
  }

  /**
   * Creates `obj`; returns false when an object of that name exists already (409). For
   * objects whose existence is the point (a HostClaim): of concurrent creates, one wins.
   * A create admission or RBAC refuses is a WriteRejected like any other refused write.
   */
  async createOnce(kind: ResourceKind, obj: Owned, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.write(kind, obj, () => this.client.create(kind, obj, signal ? { signal } : {}));
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) return false;
      throw err;
    }
  }

  /** Sets annotations on a live object under our field manager (Knative >= 1.21 revision bounds). */
  async annotate(kind: ResourceKind, live: Child, annotations: Record<string, string>, signal?: AbortSignal): Promise<boolean> {
    if (hasAnnotations(live, annotations)) return false;
    await this.write(kind, live, () => this.client.apply(annotationApply(live, annotations), { kind, signal }));
    return true;
  }

  /** The template is written whole, only under a new name; the rest moves through the routing manager. */
  private async ensureNamedTemplate(kind: ResourceKind, desired: Child, live: Child | undefined, rule: WriteRule, signal: AbortSignal | undefined): Promise<boolean> {
    const key = `${kind.plural}/${desired.metadata.namespace}/${desired.metadata.name}`;
    const name = rule.templateName?.(desired);
    // The cache can lag our own write: while it still shows the object exactly as it was before we wrote
    // this template (same resourceVersion, or still absent), the template must not be written again
    // (the data plane would refuse it without its defaults). Once the cache moves on, it is the truth
    // again: a template someone else changed is written back.
    const seen = `${live?.metadata.resourceVersion ?? 'absent'}/${name}`;
    const memo = this.templates.get(key);
    if (memo !== undefined && memo !== seen) this.templates.delete(key);
    // Our own create is not in the cache yet: nothing to add to it.
    if (memo === seen && !live) return false;
    const write = ensureWrite(rule, desired, live, this.client.fieldManager, memo === seen);
    if (write.whole) {
      // A new template (or no object yet): the whole object.
      await this.write(kind, desired, () => this.client.apply(desired, { signal }));
      this.templates.set(key, seen);
      return true;
    }
    // The template stays (or our own write of it is not in the cache yet): the rest, through the routing manager.
    return this.applyIfChanged(kind, write.body, live, write.fieldManager, WRITE_RULES.apply, signal);
  }

  private async applyIfChanged(kind: ResourceKind, desired: Child, live: Child | undefined, manager: string, rule: WriteRule, signal: AbortSignal | undefined): Promise<boolean> {
    let need = applyNeed(desired, live, manager);
    if (need === 'none' && rule.atomicLists && !sameJson(live?.spec, desired.spec)) need = 'dropsOwned';
    if (need === 'none') return false;
    // We own a field we did not render: usually a webhook's default, which an
    // apply would only remove for the webhook to add again. Ask the server.
    if (need === 'dropsOwned' && live && await this.wouldChangeNothing(kind, desired, live, manager, signal)) return false;
    await this.write(kind, desired, () => this.client.apply(desired, { kind, fieldManager: manager, signal }));
    return true;
  }

  private async wouldChangeNothing(kind: ResourceKind, desired: Child, live: Child, manager: string, signal: AbortSignal | undefined): Promise<boolean> {
    const uid = live.metadata.uid ?? '';
    const verdict = `${live.metadata.resourceVersion ?? ''}/${shortHash(desired)}`;
    if (uid && this.noOps.get(uid) === verdict) return true;
    const after = await this.write(kind, desired, () => this.client.apply(desired, { kind, fieldManager: manager, dryRun: true, signal }));
    const same = sameJson(comparable(after), comparable(live));
    if (same && uid) this.noOps.set(uid, verdict);
    return same;
  }

  private async write<T>(kind: ResourceKind, obj: Owned, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      if (isRejection(err)) throw new WriteRejected(kind.kind, nameOf(obj), err);
      throw err;
    }
  }
}

function nameOf(obj: Owned): string {
  return `${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`;
}

/**
 * Why `live` is not the app's to write, or undefined when it is: its controller
 * owner reference must carry the UID `desired` names. A child that cannot have
 * an owner reference (a cluster-scoped cache of a namespaced app) is the app's
 * when its labels name the app `desired` names and nothing controls it
 * (render/metadata.ts labelledFor, the rule its removal and the planner follow).
 */
export function notControlledBy(desired: Owned, live: Owned): string | undefined {
  const want = desired.metadata.ownerReferences?.find((r) => r.controller);
  const have = live.metadata.ownerReferences?.find((r) => r.controller);
  const owner = have ? `controlled by ${[have.kind, have.name].filter(Boolean).join(' ')} (uid ${have.uid})` : `no controller; written by ${writers(live)}`;
  if (want) return controlledBy({ metadata: { uid: want.uid } }, live) ? undefined : owner;
  return labelledFor(live, labelledApp(desired)) ? undefined : owner;
}

/** The field managers that wrote the object, for a person to find its owner ("kubectl", "helm", ...). */
function writers(obj: Owned): string {
  const names = [...new Set(((obj.metadata.managedFields ?? []) as Array<{ manager?: string }>).map((e) => e.manager).filter((m): m is string => !!m))];
  return names.length ? names.join(', ') : 'an unknown client';
}

/** What an apply can change: everything but the server's bookkeeping. */
function comparable(obj: unknown): unknown {
  const o = (obj ?? {}) as { metadata?: Record<string, unknown>; spec?: unknown };
  const { managedFields: _m, resourceVersion: _r, generation: _g, creationTimestamp: _c, uid: _u, ...metadata } = o.metadata ?? {};
  return { metadata, spec: o.spec };
}
