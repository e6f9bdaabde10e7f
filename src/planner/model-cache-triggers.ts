// When the model-cache controller looks at an app again, pure: which events of
// the apps, their caches and InferenceServices bring which app back, and which
// apps a cache's deletion lets try again. The controller wires these to its
// informers and only enqueues what they return.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { MODEL_CACHED } from '../api/v1alpha1/serverlessapp.ts';
import { findCondition } from '../util/conditions.ts';
import { specOrDeletionChanged } from './app-triggers.ts';
import { controllingAppRef, labelledApp, labelsName } from '../render/metadata.ts';
import type { ObjectRef } from '../util/object-key.ts';
import type { WorkloadObject } from './workloads.ts';
import { appReported, CACHE_FINALIZER, wantsCache, type CacheObject, type ModelPolicy } from './model-cache-plan.ts';

const keyOf = (app: ServerlessApp): ObjectRef => ({ namespace: app.metadata.namespace, name: app.metadata.name });

/**
 * An app this controller may have something to do for: one that asks for its model to be cached, or
 * that still carries what an earlier pass left (the finalizer of its cluster-scoped caches, the
 * ModelCached condition, a recorded size refusal). Any other app has nothing here, and is not looked
 * at: a cache it still has brings it back through the caches' own events (appOfCache), and an edit
 * that stops caching through the old version of the app, which an update maps too. At a restart with
 * thousands of apps that cache nothing, half the first pass was this controller finding nothing to do.
 */
export function appToReconcile(app: ServerlessApp): ObjectRef[] {
  const mayHaveWork = app.spec.prewarm?.cacheModel === true || app.metadata.finalizers?.includes(CACHE_FINALIZER)
    || findCondition(app.status?.conditions ?? [], MODEL_CACHED) !== undefined || app.status?.refusedModelCache !== undefined;
  return mayHaveWork ? [keyOf(app)] : [];
}

/**
 * Only what the controller reads: the spec (generation), finalizers and deletion, the app
 * controller's first report (ModelCached waits for it, appReported), and its verdict as it shows
 * it (verdictShown), not every status write.
 */
export function appChangeMatters(app: ServerlessApp, old: ServerlessApp): boolean {
  return specOrDeletionChanged(app, old)
    || String(app.metadata.finalizers) !== String(old.metadata.finalizers) || appReported(app) !== appReported(old)
    || verdictShown(app) !== verdictShown(old);
}

/**
 * The app controller's admission verdict as its Ready condition shows it: the generation it judged
 * and its reason (a refusal's names the problem; claiming, deploying and serving have their own). The
 * verdict can change with no edit of the app (a host claimed or released elsewhere, a data plane
 * installed); the app controller is told and reports it, and that report brings the app here, where
 * the same verdict is asked again (planner/admission.ts). The reason, not only whether it names a
 * refusal: a new app's first report may come while it claims its hosts, and the next, admitted, one
 * judges the same generation.
 */
export function verdictShown(app: ServerlessApp): string {
  const ready = findCondition(app.status?.conditions, 'Ready');
  return ready ? `${ready.observedGeneration ?? ''}/${ready.reason ?? ''}` : '';
}

/** The app a cache's labels name. */
export function appOfCache(cache: CacheObject): ObjectRef[] {
  const app = labelledApp(cache);
  return app ? [app] : [];
}

/**
 * Whether an InferenceService's update brings its app back: never, only its add and delete do
 * (appDeletedWith). The plan reads of it only that it exists and which app controls it, both set when
 * it is made, while KServe rewrites its status with every revision and replica.
 */
export function inferenceServiceChangeMatters(): boolean {
  return false;
}

/** The app that controls an InferenceService, only while it is being deleted: once its InferenceService is gone, its cache can go. */
export function appDeletedWith(isvc: WorkloadObject, appNamed: (namespace: string, name: string) => ServerlessApp | undefined): ObjectRef[] {
  const app = controllingAppRef(isvc);
  return app && appNamed(app.namespace, app.name)?.metadata.deletionTimestamp ? [app] : [];
}

/**
 * The apps to try again as soon as `gone` is deleted, not when their backoff (up to minutes) runs out:
 * those that want a cache of the same model and have none, since KServe admits one cache per model
 * (its webhook refused theirs while `gone` existed). `caches`: the caches left.
 */
export function appsWaitingForCache(gone: CacheObject, apps: readonly ServerlessApp[], caches: readonly CacheObject[], policy: ModelPolicy = {}): ObjectRef[] {
  const model = gone.spec?.sourceModelUri;
  return apps.filter((a) => a.spec.model?.storageUri === model && wantsCache(a, policy) && !caches.some((c) => labelsName(c, keyOf(a)))).map(keyOf);
}
