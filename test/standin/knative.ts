// SIMULATED Knative Serving controller (a stand-in, not the real thing: no
// pods, no traffic). For each serving.knative.dev/v1 Service it creates the
// Revision its template stands for and writes the Service's and Revisions'
// status the way Knative's configuration, route, labeler, revision and
// autoscaler reconcilers would (see knative-*.ts for the rules). It writes only
// status (through /status), Revisions it creates and their routing labels.

import { findCondition, isTrue, timestamp } from './conditions.ts';
import type { Informer } from './informer.ts';
import { isNotFound, resourcePath } from './kube.ts';
import type { KubeClient, KubeObject, Resource } from './kube.ts';
import {
  LABEL, ROUTES_ANNOTATION, ROUTING_STATE_MODIFIED, SERVING, buildRevision, controlledBy, followsLatest, planRevision, routingStateChanges, specTraffic, stableStringify,
} from './knative-revision.ts';
import { revisionStatus } from './knative-revision-status.ts';
import { intendedPercent, serviceStatus, trafficByRevision } from './knative-service-status.ts';
import { WorkQueue } from './queue.ts';

export const KSVC: Resource = { group: SERVING, version: 'v1', plural: 'services', namespaced: true };
export const REVISION: Resource = { group: SERVING, version: 'v1', plural: 'revisions', namespaced: true };

export interface Clock {
  now(): number;
}

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
}

export interface KnativeStandinOptions {
  client: KubeClient;
  services: Informer;
  revisions: Informer;
  readyDelayMs: number;
  progressDeadlineMs?: number;
  domain: string;
  concurrency: number;
  clock: Clock;
  logger: Logger;
}

/** How long after creation a revision counts as "old" when the stand-in first sees it (e.g. after a restart). */
const OLD_REVISION_MS = 5_000;

export class KnativeStandin {
  private readonly o: KnativeStandinOptions;
  private readonly queue: WorkQueue;
  private readonly held = new Set<string>();
  /** "ns/name" → when the stand-in first saw that revision (by uid, so a re-created one starts over). */
  private readonly firstSeen = new Map<string, { uid: string | undefined; at: number }>();
  /** "ns/service" → keys of revisions labelled with that service. */
  private readonly byService = new Map<string, Set<string>>();

  constructor(o: KnativeStandinOptions) {
    this.o = o;
    this.queue = new WorkQueue({
      concurrency: o.concurrency,
      handle: (key) => (key.startsWith('svc:') ? this.reconcileService(key.slice(4)) : this.reconcileRevision(key.slice(4))),
      onError: (key, err) => o.logger.warn(`knative-standin: ${key}: ${(err as Error).message}`),
    });
    o.services.on((key, obj, old) => {
      this.queue.add(`svc:${key}`);
      const routing = (s: KubeObject | undefined) => stableStringify([s?.status?.traffic, s?.status?.latestCreatedRevisionName, s?.spec?.traffic]);
      if (routing(obj) !== routing(old)) {
        for (const rev of this.byService.get(key) ?? []) this.queue.add(`rev:${rev}`);
      }
    });
    o.revisions.on((key, obj, old) => {
      this.index(key, old, false);
      this.index(key, obj, true);
      this.queue.add(`rev:${key}`);
      const svc = (obj ?? old)?.metadata.labels?.[LABEL.service];
      if (svc) this.queue.add(`svc:${(obj ?? old)!.metadata.namespace}/${svc}`);
    });
  }

  /** Starts reconciling; the informers must have synced. */
  start(): void {
    this.queue.start();
  }

  stop(): Promise<void> {
    return this.queue.stop();
  }

  /** Keeps a revision from becoming (or staying) Ready until released. */
  hold(namespace: string, revision: string): void {
    this.held.add(`${namespace}/${revision}`);
    this.queue.add(`rev:${namespace}/${revision}`);
  }

  release(namespace: string, revision: string): void {
    this.held.delete(`${namespace}/${revision}`);
    this.queue.add(`rev:${namespace}/${revision}`);
  }

  /** Resolves when no key is waiting or being handled. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  busy(): boolean {
    return this.queue.length > 0;
  }

  private index(key: string, rev: KubeObject | undefined, add: boolean): void {
    const svc = rev?.metadata.labels?.[LABEL.service];
    if (!rev || !svc) return;
    const svcKey = `${rev.metadata.namespace}/${svc}`;
    const set = this.byService.get(svcKey) ?? new Set<string>();
    if (add) set.add(key);
    else set.delete(key);
    if (set.size) this.byService.set(svcKey, set);
    else this.byService.delete(svcKey);
  }

  private async reconcileService(key: string): Promise<void> {
    const { client, services, revisions, clock, logger } = this.o;
    const ksvc = services.get(key);
    const labelled = [...(this.byService.get(key) ?? [])].map((k) => revisions.get(k)).filter((r): r is KubeObject => !!r);
    if (!ksvc) return this.collectGarbage(labelled, key.slice(key.indexOf('/') + 1), undefined);
    if (ksvc.metadata.deletionTimestamp) return;
    const { name, namespace } = ksvc.metadata;
    const ns = namespace!;
    // A Service deleted and re-created under the same name: its predecessor's revisions go first.
    await this.collectGarbage(labelled, name, ksvc.metadata.uid);
    const owned = labelled.filter((r) => controlledBy(r, ksvc));
    const byName = (n: string) => revisions.get(`${ns}/${n}`);

    const plan = planRevision(ksvc, owned, byName);
    if (plan.kind === 'create') {
      // MakeRevision creates it active when the configuration is routed; the labeler would
      // mark it active at once anyway if the route names it, so save that write.
      const routed = (ksvc.status?.traffic?.length ?? 0) > 0 || specTraffic(ksvc).some((t) => followsLatest(t) || t.revisionName === plan.name);
      const created = await client.create(resourcePath(REVISION, ns), buildRevision(ksvc, plan.name, plan.generation, routed, timestamp(clock.now())));
      revisions.store(created);
      owned.push(revisions.get(`${ns}/${plan.name}`) ?? created);
      logger.info(`knative-standin: created Revision ${ns}/${plan.name} for Service ${name}`);
    }

    const status = serviceStatus({ ksvc, plan, owned, byName, domain: this.o.domain, nowMs: clock.now() });
    if (stableStringify(status) !== stableStringify(ksvc.status ?? {})) {
      const written = await client.applyStatus(resourcePath(KSVC, ns, name), { apiVersion: `${SERVING}/v1`, kind: 'Service', metadata: { name, namespace }, status });
      if (!written) return; // deleted meanwhile
      services.store(written);
      logger.info(`knative-standin: Service ${ns}/${name} status: ${summary(status)}`);
    }

    const routes = findCondition(status.conditions, 'RoutesReady');
    const changes = routingStateChanges(owned, specTraffic(ksvc), status.traffic ?? [], status.latestCreatedRevisionName, routes?.status !== 'Unknown');
    for (const [rev, state] of changes) {
      const patch = {
        metadata: {
          labels: { [LABEL.routingState]: state },
          annotations: { [ROUTES_ANNOTATION]: state === 'active' ? name : null, [ROUTING_STATE_MODIFIED]: timestamp(clock.now()) },
        },
      };
      revisions.store(await client.mergePatch(resourcePath(REVISION, ns, rev), patch));
      logger.info(`knative-standin: Revision ${ns}/${rev} routingState=${state}`);
    }
  }

  private async reconcileRevision(key: string): Promise<{ requeueAfterMs?: number } | void> {
    const { client, services, revisions, clock, logger } = this.o;
    const rev = revisions.get(key);
    if (!rev || rev.metadata.deletionTimestamp) {
      this.firstSeen.delete(key);
      return;
    }
    const { name, namespace, uid } = rev.metadata;
    const now = clock.now();
    let seen = this.firstSeen.get(key);
    if (!seen || seen.uid !== uid) {
      const created = Date.parse(rev.metadata.creationTimestamp ?? '');
      seen = { uid, at: Number.isFinite(created) && created < now - OLD_REVISION_MS ? created : now };
      this.firstSeen.set(key, seen);
    }
    const startedAtMs = seen.at;
    const svc = rev.metadata.labels?.[LABEL.service];
    const ksvc = svc ? services.get(`${namespace}/${svc}`) : undefined;
    const result = revisionStatus({
      revision: rev,
      startedAtMs,
      nowMs: now,
      readyDelayMs: this.o.readyDelayMs,
      ...(this.o.progressDeadlineMs !== undefined ? { progressDeadlineMs: this.o.progressDeadlineMs } : {}),
      held: this.held.has(key),
      trafficPercent: trafficByRevision(ksvc?.status).get(name) ?? 0,
      intendedPercent: intendedPercent(ksvc, name),
    });
    if (stableStringify(result.status) !== stableStringify(rev.status ?? {})) {
      const written = await client.applyStatus(resourcePath(REVISION, namespace, name), {
        apiVersion: `${SERVING}/v1`, kind: 'Revision', metadata: { name, namespace }, status: result.status,
      });
      if (!written) return; // deleted meanwhile
      revisions.store(written);
      const ready = isTrue(result.status.conditions, 'Ready') ? 'Ready' : 'not ready';
      logger.info(`knative-standin: Revision ${namespace}/${name} status: ${ready}, replicas ${result.status.actualReplicas}/${result.status.desiredReplicas}`);
    }
    return result.requeueAfterMs === undefined ? undefined : { requeueAfterMs: result.requeueAfterMs };
  }

  /** Stands in for the garbage collector: revisions of a Service `name` that is gone (or is not `uid`) go too. */
  private async collectGarbage(labelled: KubeObject[], name: string, uid: string | undefined): Promise<void> {
    for (const rev of labelled) {
      const owner = (rev.metadata.ownerReferences ?? []).find((r) => r.controller);
      if (!owner || owner.kind !== 'Service' || owner.name !== name || owner.uid === uid) continue;
      const { namespace, name: revName } = rev.metadata;
      try {
        await this.o.client.delete(resourcePath(REVISION, namespace, revName));
        this.o.logger.info(`knative-standin: deleted Revision ${namespace}/${revName} (its Service is gone)`);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      this.o.revisions.forget(`${namespace}/${revName}`);
    }
  }
}

function summary(status: any): string {
  const ready = findCondition(status.conditions, 'Ready');
  const traffic = (status.traffic ?? []).map((t: any) => `${t.revisionName}=${t.percent}%${t.tag ? `(${t.tag})` : ''}`).join(', ');
  return `Ready=${ready?.status}${ready?.reason ? ` (${ready.reason})` : ''}, latestReady=${status.latestReadyRevisionName ?? '-'}, traffic [${traffic}]`;
}
