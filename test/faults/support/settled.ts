// When a container app and its Knative children have stopped changing: the
// data plane's last word on the Knative Service and its Revisions is in, and
// the app's status already says it. From then on the operator has nothing to
// write for the app until someone changes it, so a later write is one a fault
// (a takeover, a restart) caused.
import type { ServerlessApp } from '../../../src/api/v1alpha1/serverlessapp.ts';
import { Kinds } from '../../../src/util/kinds.ts';
import { findCondition } from '../../../src/util/conditions.ts';
import { userClient } from '../../support/apps.ts';
import { waitFor } from '../../support/wait.ts';

interface Condition { type: string; status: string; reason?: string }
interface Reported {
  metadata: { name: string; generation?: number; labels?: Record<string, string> };
  status?: { observedGeneration?: number; conditions?: Condition[] };
}
export interface Service extends Reported {
  status?: Reported['status'] & { url?: string; traffic?: Array<{ revisionName?: string; percent?: number }> };
}
export interface Revision extends Reported {
  status?: Reported['status'] & { actualReplicas?: number; desiredReplicas?: number };
}

/** A Knative object whose status is final: it reports its current generation, with every condition True. */
function unfinished(kind: string, o: Reported): string[] {
  const s = o.status;
  const pending = (s?.conditions ?? []).filter((c) => c.status !== 'True').map((c) => `${c.type}=${c.status}${c.reason ? `/${c.reason}` : ''}`);
  return [
    ...(s?.observedGeneration !== o.metadata.generation ? [`${kind} ${o.metadata.name} reports generation ${s?.observedGeneration}, not ${o.metadata.generation}`] : []),
    ...(!s?.conditions?.length ? [`${kind} ${o.metadata.name} has no conditions`] : []),
    ...(pending.length ? [`${kind} ${o.metadata.name}: ${pending.join(', ')}`] : []),
  ];
}

/** What still has to happen before the app and its Knative children are settled; empty when they are. */
export function unsettled(app: ServerlessApp, service: Service | undefined, revisions: Revision[]): string[] {
  if (!service) return [`no Knative Service ${app.metadata.name}`];
  const s = app.status;
  const ready = findCondition(s?.conditions, 'Ready');
  const reportedTraffic = (service.status?.traffic ?? []).map((t) => `${t.revisionName}:${t.percent ?? 0}`);
  const appTraffic = (s?.traffic ?? []).map((t) => `${t.revision}:${t.percent}`);
  const versions = [s?.versions?.stable, s?.versions?.candidate].filter((v) => v?.revision !== undefined);
  return [
    ...unfinished('Service', service),
    ...revisions.flatMap((r) => [
      ...unfinished('Revision', r),
      // Ready comes with the first replica; the count is final once it is the one the autoscaler wants.
      ...(r.status?.actualReplicas !== r.status?.desiredReplicas ? [`Revision ${r.metadata.name} runs ${r.status?.actualReplicas} of ${r.status?.desiredReplicas} replicas`] : []),
    ]),
    ...(s?.observedGeneration !== app.metadata.generation ? [`the app's status is for generation ${s?.observedGeneration}, not ${app.metadata.generation}`] : []),
    ...(ready?.status !== 'True' ? [`the app is Ready=${ready?.status}`] : []),
    // Its status says what the children say now: what the operator would write on its next look.
    ...(s?.url !== service.status?.url ? [`the app's url ${s?.url} is not the Service's ${service.status?.url}`] : []),
    ...(appTraffic.join() !== reportedTraffic.join() ? [`the app's traffic [${appTraffic.join()}] is not the Service's [${reportedTraffic.join()}]`] : []),
    ...versions.flatMap((v) => {
      const r = revisions.find((x) => x.metadata.name === v!.revision);
      const revisionReady = findCondition(r?.status?.conditions, 'Ready')?.status === 'True';
      const replicas = r?.status?.actualReplicas ?? 0;
      return v!.ready !== revisionReady || v!.replicas !== replicas
        ? [`the app says revision ${v!.revision} is ready=${v!.ready} with ${v!.replicas} replicas; it is ready=${revisionReady} with ${replicas}`]
        : [];
    }),
  ];
}

/** Waits until `unsettled` finds nothing for the app; on a timeout the error says what was still moving. */
export async function waitForSettled(namespace: string, name: string, timeoutMs: number): Promise<void> {
  const client = userClient();
  await waitFor(`${namespace}/${name} and its Knative children to settle`, async () => {
    const [app, service, revisions] = await Promise.all([
      client.get<ServerlessApp>(Kinds.ServerlessApp, namespace, name),
      client.get<Service>(Kinds.KnativeService, namespace, name),
      client.list<Revision>(Kinds.KnativeRevision, namespace, { labelSelector: `serving.knative.dev/service=${name}` }),
    ]);
    if (!app) throw new Error(`no ServerlessApp ${name}`);
    const moving = unsettled(app, service, revisions.items);
    if (moving.length) throw new Error(moving.join('; '));
    return true;
  }, { timeoutMs, intervalMs: 250 });
}
