// A user's view for integration tests: apply ServerlessApps like `kubectl apply
// --server-side`, read them and their children, and wait for conditions.
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { findCondition, isConditionTrue } from '../../src/util/conditions.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { testKubeConfig } from './operator.ts';
import { SETTLE_MS, waitFor } from './wait.ts';

export const USER_AGENT = 'kubectl-test';

let shared: KubeClient | undefined;
/** A client acting as the user (its own field manager and user agent). */
export function userClient(): KubeClient {
  shared ??= new KubeClient(testKubeConfig(), { fieldManager: 'kubectl', userAgent: USER_AGENT });
  return shared;
}

export type AppSpec = ServerlessApp['spec'];

export function app(namespace: string, name: string, spec: AppSpec): ServerlessApp {
  return { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name, namespace }, spec };
}

export async function applyApp(a: ServerlessApp): Promise<ServerlessApp> {
  return userClient().apply(a);
}

export async function getApp(namespace: string, name: string): Promise<ServerlessApp> {
  const a = await userClient().get<ServerlessApp>(Kinds.ServerlessApp, namespace, name);
  if (!a) throw new Error(`ServerlessApp ${namespace}/${name} not found`);
  return a;
}

/** The app's condition of `type` (default Ready). */
export function condition(a: ServerlessApp, type = 'Ready') {
  return findCondition(a.status?.conditions, type);
}

/** Waits until the app's status satisfies `pred` for the current generation. */
export async function waitForApp(namespace: string, name: string, pred: (a: ServerlessApp) => boolean, message: string, timeoutMs = SETTLE_MS): Promise<ServerlessApp> {
  let last: ServerlessApp | undefined;
  return waitFor(message, async () => {
    const a = last = await getApp(namespace, name);
    return a.status?.observedGeneration === a.metadata.generation && pred(a) ? a : undefined;
  }, { timeoutMs }).catch((err: Error) => {
    // Where it stood when the wait gave up: a deadline alone does not say whether it was slow or stuck.
    const s = last?.status;
    const conditions = (s?.conditions ?? []).map((c) => `${c.type}=${c.status} ${c.reason}: ${c.message}`).join('; ');
    throw new Error(`${err.message} (${namespace}/${name} at generation ${last?.metadata.generation}, observed ${s?.observedGeneration}, phase ${s?.phase}; ${conditions || 'no conditions'})`);
  });
}

export interface KnativeService {
  metadata: { name: string; namespace: string; uid?: string; generation?: number; annotations?: Record<string, string>; labels?: Record<string, string>; ownerReferences?: unknown[]; resourceVersion?: string };
  spec: { template: { metadata: { name: string; annotations?: Record<string, string> }; spec: { containers: Array<{ image: string; env?: unknown[] }> } }; traffic: Array<{ revisionName?: string; percent: number; tag?: string }> };
  status?: {
    url?: string; observedGeneration?: number; latestReadyRevisionName?: string; latestCreatedRevisionName?: string;
    traffic?: Array<{ revisionName?: string; percent: number; tag?: string; url?: string }>;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

export async function getKsvc(namespace: string, name: string): Promise<KnativeService | undefined> {
  return userClient().get<KnativeService>(Kinds.KnativeService, namespace, name);
}

/** A Knative Revision as the tests read it: its bounds annotations, labels and what Knative reports. */
export interface KnativeRevision {
  metadata: { name: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { actualReplicas?: number; desiredReplicas?: number; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

export async function getRevision(namespace: string, name: string): Promise<KnativeRevision | undefined> {
  return userClient().get<KnativeRevision>(Kinds.KnativeRevision, namespace, name);
}

/** Whether Knative reports the object (Service, Revision) Ready=True. */
export const knativeReady = (o: { status?: { conditions?: Array<{ type: string; status: string }> } } | undefined): boolean =>
  isConditionTrue(o?.status?.conditions, 'Ready');

/**
 * The split Knative's Route reports in the Service's status (not what the
 * operator asked for in spec.traffic): tag (or revision, when untagged) ->
 * percent, 0% targets included. Empty while Knative has not reported the
 * Service's current generation, so a caller never reads a split from before an edit.
 */
export async function reportedSplit(namespace: string, name: string): Promise<Record<string, number>> {
  const k = await getKsvc(namespace, name);
  if (!k?.status || k.status.observedGeneration !== k.metadata.generation) return {};
  return Object.fromEntries((k.status.traffic ?? []).map((t) => [t.tag ?? t.revisionName ?? 'latest', t.percent ?? 0]));
}

export const readyTrue = (a: ServerlessApp) => condition(a, 'Ready')?.status === 'True';
