// What an app and its Knative children say about themselves, in one line each:
// appended to a fault test's timeout so a failure on the real data plane shows
// whose readiness was missing (the operator's, Knative's, or a pod's).
import type { ServerlessApp } from '../../../src/api/v1alpha1/serverlessapp.ts';
import { Kinds } from '../../../src/util/kinds.ts';
import { userClient, waitForApp } from '../../support/apps.ts';

interface Condition { type: string; status: string; reason?: string; message?: string }
interface WithConditions { metadata: { name: string; generation?: number }; status?: { observedGeneration?: number; conditions?: Condition[]; traffic?: unknown } }

const conditions = (o: WithConditions | undefined) => (o?.status?.conditions ?? [])
  .map((c) => `${c.type}=${c.status}${c.reason ? `/${c.reason}` : ''}${c.status !== 'True' && c.message ? ` (${c.message.slice(0, 600)})` : ''}`).join(', ');

/** The app's phase and conditions, its Knative Service's conditions and reported traffic, and each of its revisions' conditions. */
export async function describeApp(namespace: string, name: string): Promise<string> {
  const client = userClient();
  const [a, ksvc, revisions] = await Promise.all([
    client.get<ServerlessApp>(Kinds.ServerlessApp, namespace, name),
    client.get<WithConditions>(Kinds.KnativeService, namespace, name),
    client.list<WithConditions & { metadata: { labels?: Record<string, string> } }>(Kinds.KnativeRevision, namespace),
  ]).catch((e: Error) => [undefined, undefined, { items: [] }, e] as const);
  const own = revisions.items.filter((r) => r.metadata.labels?.['serving.knative.dev/service'] === name);
  return [
    `app ${name}: gen ${a?.metadata.generation} observed ${a?.status?.observedGeneration}, phase ${a?.status?.phase}; ${conditions(a as WithConditions | undefined)}`,
    `ksvc ${name}: ${ksvc ? `${conditions(ksvc)}; reported traffic ${JSON.stringify(ksvc.status?.traffic)}` : 'absent'}`,
    ...own.map((r) => `revision ${r.metadata.name}: ${conditions(r)}`),
  ].join('\n');
}

/** waitForApp, and on a timeout the error carries describeApp. */
export async function waitForAppExplained(namespace: string, name: string, pred: (a: ServerlessApp) => boolean, message: string, timeoutMs: number): Promise<ServerlessApp> {
  try {
    return await waitForApp(namespace, name, pred, message, timeoutMs);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${await describeApp(namespace, name).catch((d: Error) => `(no description: ${d.message})`)}`);
  }
}
