// SIMULATED KServe controller (a stand-in, not the real thing: no model
// servers, no ServingRuntimes, no VirtualService). For each
// serving.kserve.io/v1beta1 InferenceService in Knative mode it server-side
// applies the `<isvc>-predictor` Knative Service real KServe would build, and
// writes the ISVC's status from that Service's status; the Knative stand-in
// then does its part on the Service. LocalModelCaches get a status that looks
// alive, unless KServe's real local model controller runs (the rig's data plane
// runs it; the benchmarks' stand-in data plane does not). It writes only
// status, and the Knative Services it owns.

import type { Informer } from './informer.ts';
import { isNotFound, resourcePath } from './kube.ts';
import type { KubeClient, KubeObject, Resource } from './kube.ts';
import { controlledBy, stableStringify } from './knative-revision.ts';
import { KSVC } from './knative.ts';
import type { Clock, Logger } from './knative.ts';
import { ISVC_LABEL, KSERVE, deploymentMode, predictorServiceName, renderPredictorService, storageUri } from './kserve-render.ts';
import { isvcStatus } from './kserve-status.ts';
import { cacheStatus, matchStorageUri } from './local-model-cache.ts';
import { findCondition } from './conditions.ts';
import { WorkQueue } from './queue.ts';

export const ISVC: Resource = { group: KSERVE, version: 'v1beta1', plural: 'inferenceservices', namespaced: true };
export const LOCAL_MODEL_CACHE: Resource = { group: KSERVE, version: 'v1alpha1', plural: 'localmodelcaches', namespaced: false };
export const LOCAL_MODEL_NAMESPACE_CACHE: Resource = { group: KSERVE, version: 'v1alpha1', plural: 'localmodelnamespacecaches', namespaced: true };

/** Cache status lists ISVCs, so ISVC churn re-reads it at most this often. */
const CACHE_DEBOUNCE_MS = 500;

export interface KServeStandinOptions {
  client: KubeClient;
  /** Simulate the InferenceService controller (off when the real KServe runs). */
  inferenceServices?: boolean;
  /** Simulate the LocalModelCache controller (off when KServe's real local model controller runs). */
  localModelCaches?: boolean;
  isvcs: Informer;
  services: Informer;
  revisions: Informer;
  caches: Informer;
  namespaceCaches: Informer;
  /** How long a simulated node takes to download a cached model. */
  downloadDelayMs: number;
  domain: string;
  concurrency: number;
  clock: Clock;
  logger: Logger;
}

export class KServeStandin {
  private readonly o: KServeStandinOptions;
  private readonly queue: WorkQueue;
  private readonly firstSeen = new Map<string, { uid: string | undefined; at: number }>();
  private readonly skipped = new Set<string>();

  constructor(o: KServeStandinOptions) {
    this.o = o;
    this.queue = new WorkQueue({
      concurrency: o.concurrency,
      handle: (key) => this.handle(key),
      onError: (key, err) => o.logger.warn(`kserve-standin: ${key}: ${(err as Error).message}`),
    });
    o.isvcs.on((key, obj, old) => {
      this.queue.add(`isvc:${key}`);
      this.touchCaches([obj, old]);
    });
    const byIsvcLabel = (_key: string, obj: KubeObject | undefined, old: KubeObject | undefined) => {
      const o2 = obj ?? old;
      const isvc = o2?.metadata.labels?.[ISVC_LABEL];
      if (isvc) this.queue.add(`isvc:${o2!.metadata.namespace}/${isvc}`);
    };
    o.services.on(byIsvcLabel);
    o.revisions.on(byIsvcLabel);
    o.caches.on((key) => this.queue.add(`lmc:${key}`));
    o.namespaceCaches.on((key) => this.queue.add(`lmnc:${key}`));
  }

  start(): void {
    this.queue.start();
  }

  stop(): Promise<void> {
    return this.queue.stop();
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  busy(): boolean {
    return this.queue.length > 0;
  }

  private handle(key: string): Promise<{ requeueAfterMs?: number } | void> {
    const [kind, rest] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
    if (kind === 'isvc') return this.o.inferenceServices === false ? Promise.resolve() : this.reconcileIsvc(rest);
    if (this.o.localModelCaches === false) return Promise.resolve();
    if (kind === 'lmc') return this.reconcileCache(this.o.caches, LOCAL_MODEL_CACHE, 'LocalModelCache', rest);
    return this.reconcileCache(this.o.namespaceCaches, LOCAL_MODEL_NAMESPACE_CACHE, 'LocalModelNamespaceCache', rest);
  }

  private touchCaches(isvcs: (KubeObject | undefined)[]): void {
    const uris = isvcs.map((i) => (i ? storageUri(i) : undefined)).filter((u): u is string => !!u);
    if (!uris.length) return;
    const matches = (c: KubeObject) => uris.some((u) => matchStorageUri(c.spec?.sourceModelUri ?? '', u));
    for (const c of this.o.caches.list()) if (matches(c)) this.queue.addAfter(`lmc:${c.metadata.name}`, CACHE_DEBOUNCE_MS);
    for (const c of this.o.namespaceCaches.list()) if (matches(c)) this.queue.addAfter(`lmnc:${c.metadata.namespace}/${c.metadata.name}`, CACHE_DEBOUNCE_MS);
  }

  private async reconcileIsvc(key: string): Promise<void> {
    const { client, isvcs, services, revisions, clock, logger } = this.o;
    const [ns, name] = key.split('/') as [string, string];
    const isvc = isvcs.get(key);
    const ksvcKey = `${ns}/${predictorServiceName({ metadata: { name } })}`;
    const existing = services.get(ksvcKey);
    if (!isvc) {
      await this.collectGarbage(existing, name, undefined);
      return;
    }
    if (isvc.metadata.deletionTimestamp) return;
    if (await this.collectGarbage(existing, name, isvc.metadata.uid)) return;
    const mode = deploymentMode(isvc);
    if (mode !== 'Knative') {
      if (!this.skipped.has(key)) logger.warn(`kserve-standin: InferenceService ${key} is in ${mode} mode; only Knative mode is simulated`);
      this.skipped.add(key);
      return;
    }
    this.skipped.delete(key);
    if (existing && !controlledBy(existing, isvc)) {
      logger.warn(`kserve-standin: Knative Service ${ksvcKey} exists and is not owned by InferenceService ${key}; leaving it alone`);
      return;
    }

    const desired = renderPredictorService(isvc);
    if (!existing || !sameService(desired, existing)) {
      services.store(await client.apply(resourcePath(KSVC, ns, predictorServiceName(isvc)), desired));
      logger.info(`kserve-standin: applied Knative Service ${ksvcKey} (traffic ${stableStringify(desired.spec.traffic)})`);
    }

    const ksvc = services.get(ksvcKey);
    const latest = ksvc?.status?.latestCreatedRevisionName;
    const status = isvcStatus({
      isvc, ksvc, latestRevision: latest ? revisions.get(`${ns}/${latest}`) : undefined, domain: this.o.domain, nowMs: clock.now(),
    });
    if (stableStringify(status) !== stableStringify(isvc.status ?? {})) {
      const written = await client.applyStatus(resourcePath(ISVC, ns, name), { apiVersion: `${KSERVE}/v1beta1`, kind: 'InferenceService', metadata: { name, namespace: ns }, status });
      if (!written) return; // deleted meanwhile
      isvcs.store(written);
      const ready = findCondition(status.conditions, 'Ready');
      logger.info(`kserve-standin: InferenceService ${key} status: Ready=${ready?.status}, url=${status.url ?? '-'}, model ${status.modelStatus.transitionStatus}`);
    }
  }

  private async reconcileCache(informer: Informer, resource: Resource, kind: string, key: string): Promise<{ requeueAfterMs?: number } | void> {
    const { client, isvcs, clock, logger } = this.o;
    const cache = informer.get(key);
    const seenKey = `${kind}/${key}`;
    if (!cache) {
      this.firstSeen.delete(seenKey);
      return;
    }
    const now = clock.now();
    let seen = this.firstSeen.get(seenKey);
    if (!seen || seen.uid !== cache.metadata.uid) {
      // Seen first after a restart of the stand-in: a finished download stays finished.
      const copies = cache.status?.copies;
      const done = copies?.total > 0 && copies.available === copies.total;
      seen = { uid: cache.metadata.uid, at: done ? now - this.o.downloadDelayMs : now };
      this.firstSeen.set(seenKey, seen);
    }
    const downloaded = now - seen.at >= this.o.downloadDelayMs;
    const status = cacheStatus({ cache, isvcs: isvcs.list(), downloaded });
    if (stableStringify(status) !== stableStringify(cache.status ?? {})) {
      const { name, namespace } = cache.metadata;
      const written = await client.applyStatus(resourcePath(resource, namespace, name), {
        apiVersion: `${KSERVE}/v1alpha1`, kind, metadata: { name, ...(namespace ? { namespace } : {}) }, status,
      });
      if (!written) return; // deleted meanwhile
      informer.store(written);
      logger.info(`kserve-standin: ${kind} ${key} status: ${status.copies.available}/${status.copies.total} copies, ${status.inferenceServices.length} InferenceServices`);
    }
    return downloaded ? undefined : { requeueAfterMs: this.o.downloadDelayMs - (now - seen.at) };
  }

  /** Stands in for the garbage collector: the predictor Service of an ISVC `name` that is gone (or is not `uid`) goes too. */
  private async collectGarbage(ksvc: KubeObject | undefined, isvcName: string, uid: string | undefined): Promise<boolean> {
    const owner = ksvc?.metadata.ownerReferences?.find((r) => r.controller);
    if (!ksvc || !owner || owner.kind !== 'InferenceService' || owner.name !== isvcName || owner.uid === uid) return false;
    const { namespace, name } = ksvc.metadata;
    try {
      await this.o.client.delete(resourcePath(KSVC, namespace, name));
      this.o.logger.info(`kserve-standin: deleted Knative Service ${namespace}/${name} (its InferenceService is gone)`);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.o.services.forget(`${namespace}/${name}`);
    return true;
  }
}

/** ksvc_reconciler's semanticEquals: template, traffic, labels and the annotations we manage. */
function sameService(desired: KubeObject, existing: KubeObject): boolean {
  const annotations = existing.metadata.annotations ?? {};
  return stableStringify(desired.spec) === stableStringify(existing.spec)
    && stableStringify(desired.metadata.labels) === stableStringify(existing.metadata.labels ?? {})
    && Object.entries(desired.metadata.annotations ?? {}).every(([k, v]) => annotations[k] === v);
}
