// Everything that happened to the Knative Services, Revisions and
// ServerlessApps of one namespace, recorded from watches, and the rollout
// invariants checked against it. All three kinds live in one etcd, so their
// resourceVersions are one sequence: replaying the events in that order shows
// what each revision's readiness was at the moment each traffic block or
// status was written. (resourceVersions are opaque to clients in general; in
// this single-etcd test cluster they are etcd revisions and compare as numbers.)
// Readiness is what Knative reports on each Revision, and traffic is checked
// twice: what the operator asked for (the Service's spec.traffic) and what
// Knative's Route reports serving (its status.traffic).
import type { KubeConfig } from '@kubernetes/client-node';
import type { ServerlessApp } from '../../../src/api/v1alpha1/serverlessapp.ts';
import { KubeClient } from '../../../src/runtime/client.ts';
import { Informer, type KubeObject } from '../../../src/runtime/informer.ts';
import { isConditionTrue } from '../../../src/util/conditions.ts';
import { Kinds, type ResourceKind } from '../../../src/util/kinds.ts';
import { waitFor } from '../../support/wait.ts';

const KINDS = { ksvc: Kinds.KnativeService, revision: Kinds.KnativeRevision, app: Kinds.ServerlessApp } as const;

interface Condition { type: string; status: string }
interface TrafficTarget { revisionName?: string; percent?: number; latestRevision?: boolean; tag?: string }

export interface Recorded {
  kind: 'ksvc' | 'revision' | 'app';
  rv: number;
  name: string;
  object: KubeObject & { spec?: { traffic?: TrafficTarget[] }; status?: { conditions?: Condition[]; traffic?: TrafficTarget[] } };
}

export interface Violation {
  rv: number;
  app: string;
  message: string;
}

export class History {
  readonly events: Recorded[] = [];
  private readonly informers: Array<Informer<KubeObject>>;
  private readonly client: KubeClient;
  private readonly namespace: string;

  private constructor(informers: Array<Informer<KubeObject>>, client: KubeClient, namespace: string) {
    this.informers = informers;
    this.client = client;
    this.namespace = namespace;
  }

  /** Starts watching `namespace`; resolves once all three watches have listed. */
  static async record(kc: KubeConfig, namespace: string): Promise<History> {
    const informers: Array<Informer<KubeObject>> = [];
    const history = new History(informers, new KubeClient(kc), namespace);
    for (const [kind, resource] of Object.entries(KINDS) as Array<[Recorded['kind'], ResourceKind]>) {
      const informer = new Informer<KubeObject>(kc, resource, { namespaces: [namespace] });
      const keep = (o: KubeObject) => history.events.push({ kind, rv: Number(o.metadata?.resourceVersion), name: o.metadata?.name ?? '', object: o as Recorded['object'] });
      informer.on('add', keep);
      informer.on('update', keep);
      informers.push(informer);
    }
    await Promise.all(informers.map((i) => i.start()));
    return history;
  }

  stop(): void {
    for (const i of this.informers) i.stop();
  }

  /** Resolves once every object of the namespace, as the API server has it now, is in the history at its current resourceVersion. */
  async catchUp(timeoutMs = 30_000): Promise<void> {
    const current = (await Promise.all((Object.entries(KINDS) as Array<[Recorded['kind'], ResourceKind]>).map(async ([kind, resource]) =>
      (await this.client.list<KubeObject>(resource, this.namespace)).items.map((o) => ({ kind, name: o.metadata?.name ?? '', rv: Number(o.metadata?.resourceVersion) })))))
      .flat();
    const missing = () => current.filter((c) => !this.events.some((e) => e.kind === c.kind && e.name === c.name && e.rv >= c.rv));
    await waitFor('the watches to have recorded every object at its current resourceVersion', () => missing().length === 0, { timeoutMs, intervalMs: 25 })
      .catch((err: Error) => { throw new Error(`${err.message}; not yet: ${JSON.stringify(missing().slice(0, 5))}`); });
  }

  /** How many traffic blocks (Knative Service versions) were seen. */
  trafficBlocks(): number {
    return this.events.filter((e) => e.kind === 'ksvc').length;
  }

  /** How many Knative Service versions reported traffic (status.traffic) that moved to another split. */
  reportedSplits(): number {
    let count = 0;
    const last = new Map<string, string>();
    for (const e of this.events) {
      if (e.kind !== 'ksvc') continue;
      const split = JSON.stringify((e.object.status?.traffic ?? []).map((t) => [t.revisionName, t.percent]));
      if (last.get(e.name) !== split) count++;
      last.set(e.name, split);
    }
    return count;
  }

  violations(): Violation[] {
    return checkRolloutInvariants(this.events);
  }
}

const isReady = (o: Recorded['object']) => isConditionTrue(o.status?.conditions, 'Ready');

/**
 * Once an app has a stable version, traffic never goes to a revision that is
 * not Ready, and the stable version never disappears nor names a revision
 * that is not Ready, at any point in the recorded history. Before that, while
 * the first version starts (phase Pending), status lists it as stable with
 * ready=false and the route points at it: Knative holds requests until it is
 * ready and there is nothing else to send them to.
 */
export function checkRolloutInvariants(events: readonly Recorded[]): Violation[] {
  const ordered = [...events].sort((a, b) => a.rv - b.rv);
  const ready = new Map<string, boolean>();
  const hasStable = new Set<string>();
  const violations: Violation[] = [];
  for (const e of ordered) {
    if (e.kind === 'revision') {
      ready.set(e.name, isReady(e.object));
    } else if (e.kind === 'ksvc') {
      if (!hasStable.has(e.name)) continue;
      for (const [where, traffic] of [['traffic', e.object.spec?.traffic], ['reported traffic', e.object.status?.traffic]] as const) {
        for (const t of traffic ?? []) {
          if ((t.percent ?? 0) > 0 && t.revisionName && !ready.get(t.revisionName)) {
            violations.push({ rv: e.rv, app: e.name, message: `${where} ${JSON.stringify(traffic)} sends ${t.percent}% to ${t.revisionName}, which was not Ready` });
          }
        }
      }
    } else {
      const status = (e.object as unknown as ServerlessApp).status;
      const stable = status?.phase === 'Pending' ? undefined : status?.versions?.stable;
      if (!stable) {
        if (hasStable.has(e.name)) violations.push({ rv: e.rv, app: e.name, message: `status.versions.stable disappeared (phase ${status?.phase})` });
        continue;
      }
      hasStable.add(e.name);
      if (!stable.revision || !ready.get(stable.revision)) {
        violations.push({ rv: e.rv, app: e.name, message: `status.versions.stable names ${stable.revision ?? '(no revision)'}, which was not Ready` });
      }
    }
  }
  return violations;
}
