// `npm run bench -- --peer kserve`: the operator and the real KServe 0.20
// controller, back to back on one control plane, each handed N parents at
// once and making one child per parent, without a data plane:
//  - ours: N model ServerlessApps -> N InferenceServices (nothing reconciles
//    them: no KServe runs yet, so no status comes back from them);
//  - KServe's: the same N InferenceServices, created directly -> N Knative
//    Services (no Knative runs: nothing reconciles those).
// Each side has its own namespaces, and the operator is stopped and its
// InferenceServices deleted before KServe starts, so neither sees the other's
// objects and KServe's webhooks never touch ours.
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { InferenceService } from '../src/render/inference-service.ts';
import { KubeClient } from '../src/runtime/client.ts';
import { Kinds, type ResourceKind } from '../src/util/kinds.ts';
import { startControlPlane } from '../test/envtest/controlplane.ts';
import { installAllCrds } from '../test/envtest/upstream-crds.ts';
import { OperatorProcess } from '../test/support/operator-process.ts';
import { AuditTail } from './audit-tail.ts';
import { BENCH_USER_AGENT, OPERATOR_SCRIPT, OPERATOR_USER_AGENT, operatorCommand } from './environment.ts';
import { installKnativeAutoscalerConfig, KSERVE_USER_AGENT, startKServeAlone } from './peer-kserve.ts';
import { measureSide, type PeerTiming, type SideFigures } from './peer-measure.ts';
import { secondsSince, sleep } from './stats.ts';
import { SlimWatch } from './watch.ts';
import { appRefs, benchModelApp, forEachBounded, IN_FLIGHT } from './workload.ts';

export interface PeerOptions {
  apps: number;
  operatorConcurrency: number;
  idleMs: number;
  builtFrom: string;
  log: (line: string) => void;
}

export interface PeerResults {
  apps: number;
  operatorCommand: string;
  operatorBuiltFrom: string;
  operatorConcurrency: number;
  ours: SideFigures;
  kserve: SideFigures;
  seconds: number;
  startedAt: Date;
}

const OURS = Array.from({ length: 10 }, (_, i) => `peer-ours-${i}`);
const THEIRS = Array.from({ length: 10 }, (_, i) => `peer-kserve-${i}`);
// KServe's side grows faster than N (273 s for 1,000 parents, 1,058 s for
// 3,000 on the 2-core machine), so the limit grows with N: 0.7 s per parent,
// at least 30 minutes.
const timeoutMs = (apps: number) => Math.max(1_800_000, apps * 700);
const TIMING = { startQuietMs: 5_000, quietMs: 5_000 };

export async function runPeerKServe(o: PeerOptions): Promise<PeerResults> {
  const started = performance.now();
  const startedAt = new Date();
  const timing: PeerTiming = { ...TIMING, timeoutMs: timeoutMs(o.apps), idleMs: o.idleMs };
  o.log('starting the control plane and the rig\'s network namespace (kube-controller-manager, kube-scheduler, KWOK; no Knative)');
  const cp = await startControlPlane({ log: o.log, dataPlane: { knative: false } });
  const kc = cp.kubeConfig();
  const client = new KubeClient(kc, { fieldManager: 'bench', userAgent: BENCH_USER_AGENT });
  let op: OperatorProcess | undefined;
  try {
    await installAllCrds(kc);
    await installKnativeAutoscalerConfig(kc);
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of [...OURS, ...THEIRS]) await core.createNamespace({ body: { metadata: { name } } });
    const audit = new AuditTail(join(cp.dir, 'audit.log'));

    o.log(`ours: ${operatorCommand()} --concurrency ${o.operatorConcurrency}; ${o.apps} model ServerlessApps -> InferenceServices`);
    op = await OperatorProcess.start({ kubeconfigPath: cp.kubeconfigPath, script: OPERATOR_SCRIPT, concurrency: o.operatorConcurrency, logLevel: 'warn' });
    await op.waitReady(600_000);
    const isvcs = await countingWatch(kc, Kinds.InferenceService, OURS);
    // An app's first status comes with its first reconcile (Ready Unknown, Reconciling), whatever its InferenceService reports.
    const apps = new SlimWatch<number>(kc, Kinds.ServerlessApp, (a) => (a['status'] as { observedGeneration?: number } | undefined)?.observedGeneration ?? 0, { namespaces: OURS });
    await apps.start();
    const refs = appRefs(o.apps, OURS);
    const ours = await measureSide({
      label: 'serverlessapp-operator', pid: op.pid, userAgent: OPERATOR_USER_AGENT, children: () => isvcs.values.size,
      createParents: () => forEachBounded(refs, IN_FLIGHT, (r) => client.apply(benchModelApp(r))),
      reported: () => apps.count((g) => g > 0),
    }, o.apps, audit, timing, o.log);
    isvcs.stop();
    apps.stop();
    const theirParents = (await listAll<InferenceService>(client, OURS)).map(asKServeParent);
    await op.stop();
    op = undefined;
    await deleteInferenceServices(kc, client, OURS);

    o.log(`KServe: its manager as shipped (Knative mode, no Knative running); ${o.apps} InferenceServices -> Knative Services`);
    const { pid } = await startKServeAlone(cp);
    const ksvcs = await countingWatch(kc, Kinds.KnativeService, THEIRS);
    const kserve = await measureSide({
      label: 'KServe 0.20 manager', pid, userAgent: KSERVE_USER_AGENT, children: () => ksvcs.values.size,
      createParents: () => forEachBounded(theirParents, IN_FLIGHT, (isvc) => client.apply(isvc, { kind: Kinds.InferenceService })),
    }, o.apps, audit, timing, o.log);
    ksvcs.stop();
    audit.close();
    if (kserve.writes === 0) throw new Error(`no write from a user agent starting with ${KSERVE_USER_AGENT}: the KServe manager's user agent differs`);
    return {
      apps: o.apps, operatorCommand: operatorCommand(), operatorBuiltFrom: o.builtFrom,
      operatorConcurrency: o.operatorConcurrency, ours, kserve, seconds: secondsSince(started), startedAt,
    };
  } finally {
    await op?.kill();
    client.close();
    await cp.stop();
  }
}

/** A watch that only counts the objects of `kind` in `namespaces`. */
async function countingWatch(kc: KubeConfig, kind: ResourceKind, namespaces: string[]): Promise<SlimWatch<true>> {
  const watch = new SlimWatch<true>(kc, kind, () => true, { namespaces });
  await watch.start();
  return watch;
}

async function listAll<T>(client: KubeClient, namespaces: string[]): Promise<T[]> {
  const lists = await Promise.all(namespaces.map((ns) => client.list<T>(Kinds.InferenceService, ns)));
  return lists.flatMap((l) => l.items);
}

/** The operator's InferenceService, as it rendered it, in KServe's namespaces and owned by nobody (else the garbage collector would take it). */
function asKServeParent(isvc: InferenceService): InferenceService {
  const { name, namespace, labels, annotations } = isvc.metadata as InferenceService['metadata'] & { name: string; namespace: string; labels?: Record<string, string> };
  return {
    apiVersion: isvc.apiVersion, kind: isvc.kind,
    metadata: { name, namespace: THEIRS[OURS.indexOf(namespace)]!, ...(labels ? { labels } : {}), annotations } as InferenceService['metadata'],
    spec: isvc.spec,
  };
}

/** Deletes the operator's InferenceServices (nothing holds a finalizer on them: KServe has not run) and waits until they are gone. */
async function deleteInferenceServices(kc: KubeConfig, client: KubeClient, namespaces: string[]): Promise<void> {
  const { group, version, plural } = Kinds.InferenceService;
  const api = kc.makeApiClient(CustomObjectsApi);
  await Promise.all(namespaces.map((namespace) => api.deleteCollectionNamespacedCustomObject({ group, version, namespace, plural })));
  const deadline = performance.now() + 120_000;
  while ((await listAll(client, namespaces)).length > 0) {
    if (performance.now() > deadline) throw new Error('the operator\'s InferenceServices were not gone 120 s after their deletion');
    await sleep(500);
  }
}
