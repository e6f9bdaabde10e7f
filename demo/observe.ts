// The demo's eyes: reads ServerlessApps, their revisions, Events and the
// VirtualService or HTTPRoute from the API server as `kubectl` would, and polls until the
// real status shows what a step expects. A step that does not converge fails
// with what was expected and what was last seen, never with a bare timeout.

import type { KubeConfig } from '@kubernetes/client-node';
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { APP_LABEL } from '../src/render/metadata.ts';
import { KubeClient } from '../src/runtime/client.ts';
import { findCondition } from '../src/util/conditions.ts';
import { Kinds } from '../src/util/kinds.ts';
import type { GatewayHttpRoute, HttpRoute, RevisionRow } from './table.ts';

interface Revision {
  metadata: { name: string; annotations?: Record<string, string> };
  status?: { actualReplicas?: number };
}

interface ClusterEvent {
  metadata: { name: string };
  type?: string;
  reason?: string;
  note?: string;
  regarding?: { kind?: string; name?: string };
}

/** The operator's Events are about ServerlessApps; Knative's and KServe's (about their Services of the same name) are left to `kubectl get events`. */
const aboutApp = (e: ClusterEvent, apps: string[]) => (e.regarding?.kind ?? 'ServerlessApp') === 'ServerlessApp' && apps.includes(e.regarding?.name ?? '');

export interface VirtualService {
  spec: { hosts?: string[]; gateways?: string[]; http?: HttpRoute[] };
}

const POLL_MS = 200;

export class Observer {
  /** Acts as the user: applies with its own field manager, like `kubectl apply --server-side`. */
  readonly client: KubeClient;
  private readonly namespace: string;
  private readonly timeoutMs: number;
  private readonly seenEvents = new Set<string>();

  constructor(kubeConfig: KubeConfig, namespace: string, timeoutMs: number) {
    this.client = new KubeClient(kubeConfig, { fieldManager: 'demo', userAgent: 'serverlessapp-demo' });
    this.namespace = namespace;
    this.timeoutMs = timeoutMs;
  }

  async app(name: string): Promise<ServerlessApp> {
    const app = await this.client.get<ServerlessApp>(Kinds.ServerlessApp, this.namespace, name);
    if (!app) throw new Error(`ServerlessApp ${this.namespace}/${name} not found`);
    return app;
  }

  /** Every revision of the app, with its share of traffic from the app's status (0 when idle). */
  async revisions(app: ServerlessApp): Promise<RevisionRow[]> {
    const list = await this.client.list<Revision>(Kinds.KnativeRevision, this.namespace, { labelSelector: `${APP_LABEL}=${app.metadata.name}` });
    const traffic = app.status?.traffic ?? [];
    return list.items.map((r) => {
      const targets = traffic.filter((t) => t.revision === r.metadata.name);
      const tag = targets.map((t) => t.tag).filter(Boolean).join(',');
      const minScale = r.metadata.annotations?.['autoscaling.knative.dev/min-scale'];
      return {
        name: r.metadata.name,
        percent: targets.reduce((sum, t) => sum + t.percent, 0),
        ...(tag ? { tag } : {}),
        ...(minScale !== undefined ? { minScale } : {}),
        ...(r.status?.actualReplicas !== undefined ? { replicas: r.status.actualReplicas } : {}),
      };
    });
  }

  async virtualService(name: string): Promise<VirtualService | undefined> {
    return this.client.get<VirtualService>(Kinds.VirtualService, this.namespace, name);
  }

  async httpRoute(name: string): Promise<GatewayHttpRoute | undefined> {
    return this.client.get<GatewayHttpRoute>(Kinds.HTTPRoute, this.namespace, name);
  }

  /** The operator's Events about `apps` not shown before, oldest first, as one line each. */
  async newEvents(apps: string[]): Promise<string[]> {
    const list = await this.client.list<ClusterEvent>(Kinds.Event, this.namespace);
    const fresh = list.items.filter((e) => aboutApp(e, apps) && !this.seenEvents.has(e.metadata.name));
    for (const e of fresh) this.seenEvents.add(e.metadata.name);
    return fresh.map((e) => `Event ${e.type ?? 'Normal'} ${e.reason ?? '?'} on ${e.regarding?.name}: ${e.note ?? ''}`);
  }

  /** Whether an operator Event with `reason` about `app` exists (shown or not). */
  async hasEvent(app: string, reason: string): Promise<boolean> {
    const list = await this.client.list<ClusterEvent>(Kinds.Event, this.namespace);
    return list.items.some((e) => aboutApp(e, [app]) && e.reason === reason);
  }

  /**
   * Polls until `check` returns a value; a throw counts as "not yet". The apps'
   * status is only trusted once it describes their current spec (observedGeneration).
   */
  async until<T>(what: string, apps: string[], check: (apps: Map<string, ServerlessApp>) => Promise<T | undefined> | T | undefined): Promise<T> {
    const deadline = performance.now() + this.timeoutMs;
    let seen = new Map<string, ServerlessApp>();
    let lastError = '';
    for (;;) {
      try {
        seen = new Map(await Promise.all(apps.map(async (n) => [n, await this.app(n)] as const)));
        const current = [...seen.values()].every((a) => a.status?.observedGeneration === a.metadata.generation);
        const value = current ? await check(seen) : undefined;
        if (value !== undefined) return value;
        lastError = '';
      } catch (err) {
        lastError = (err as Error).message;
      }
      if (performance.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    const lastSeen = apps.map((n) => `  ${seen.has(n) ? summarize(seen.get(n)!) : `${n}: not read`}`).join('\n');
    throw new Error(`timed out after ${this.timeoutMs / 1000}s waiting for ${what}.\nLast seen:\n${lastSeen}${lastError ? `\nLast error: ${lastError}` : ''}`);
  }

  close(): void {
    this.client.close();
  }
}

export function condition(app: ServerlessApp, type: string) {
  return findCondition(app.status?.conditions, type);
}

/** Every parent's controller (istiod) has written Accepted and ResolvedRefs True about the route's live generation. */
export function routeAccepted(route: GatewayHttpRoute | undefined): boolean {
  const parents = route?.status?.parents ?? [];
  return parents.length > 0 && parents.length === (route!.spec.parentRefs ?? []).length && parents.every((p) => ['Accepted', 'ResolvedRefs'].every((type) => {
    const c = findCondition(p.conditions, type);
    return c?.status === 'True' && (c.observedGeneration ?? 0) >= (route!.metadata.generation ?? 0);
  }));
}

/** The weight per backend of an HTTPRoute's default rule (the split for all other requests). */
export function routeWeights(route: GatewayHttpRoute | undefined): Record<string, number> {
  return Object.fromEntries(route?.spec.rules?.find((r) => r.name === 'default')?.backendRefs?.map((b) => [b.name, b.weight ?? 1]) ?? []);
}

/** One line of what matters when a step does not converge. */
export function summarize(app: ServerlessApp): string {
  const s = app.status;
  const ready = condition(app, 'Ready');
  return `${app.metadata.name}: generation ${app.metadata.generation}, observed ${s?.observedGeneration ?? 'none'}; phase ${s?.phase ?? 'none'}; `
    + `canary ${s?.canary?.weight !== undefined ? `${s.canary.weight}%` : 'none'}; min ${s?.scaling?.minScale ?? 'none'}; `
    + `Ready=${ready?.status ?? 'none'} ${ready?.reason ?? ''}: ${ready?.message ?? ''}`;
}
