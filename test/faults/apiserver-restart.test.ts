// Fault injection: the API server restarts while apps are being rolled out.
// It is the rig's own API server, so every client notices: the operator and
// the real data plane (Knative Serving, kube-controller-manager, KWOK) alike.
// Once it is back, every app must converge and none may be left half-applied:
// each Knative Service (and VirtualService) renders its app's spec, Knative
// reports all traffic on the stable revision, status describes the current
// generation, and the app is Ready. 200 apps on the stand-in; 40 on the real
// Knative, where each is a Deployment and a KWOK pod (FAULT_RESTART_APPS for more).
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { Kinds, type ResourceKind } from '../../src/util/kinds.ts';
import { startStandins, type Standins } from '../standin/standin.ts';
import { app, readyTrue, type KnativeService } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { OperatorProcess } from '../support/operator-process.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const APPS = Number(process.env.FAULT_RESTART_APPS ?? (process.env.ENVTEST_DATAPLANE === 'off' ? 200 : 40));
const IN_FLIGHT = 16;

interface VirtualService { metadata: { name: string }; spec: { hosts: string[] } }

describe('API server restart mid-rollout (fault injection)', function () {
  this.timeout(600_000);
  let ns: string;
  let standins: Standins | undefined;
  let op: OperatorProcess | undefined;
  let client: KubeClient;

  before(async () => {
    ns = await freshNamespace('restart');
    client = new KubeClient(testEnv().kubeConfig(), { fieldManager: 'kubectl', userAgent: 'fault-test' });
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), namespaces: [ns], readyDelayMs: 100, concurrency: 16 });
    op = await OperatorProcess.start({ kubeconfigPath: testEnv().kubeconfigPath, namespaces: [ns], concurrency: 8 });
    await op.waitReady();
  });
  after(async () => {
    await op?.kill();
    await standins?.stop();
    client?.close();
  });

  it(`converges all ${APPS} apps once the API server is back, none half-applied`, async () => {
    const specs = Array.from({ length: APPS }, (_, i) => app(ns, `app-${i}`, {
      container: { image: `app-${i}:1` },
      ...(i % 2 === 0 ? { ingress: { hosts: [`app-${i}.example.com`] } } : {}),
    }));
    let next = 0;
    let restart: Promise<number> | undefined;
    const restartAfter = APPS / 2;
    const create = async () => {
      while (next < APPS) {
        const a = specs[next++]!;
        if (next === restartAfter) restart = timed(() => testEnv().restartApiServer());
        await withRetries(`the apply of ${a.metadata.name}`, () => client.apply(a));
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, create));
    const downMs = await restart!;
    const backAt = performance.now();

    let pending: string[] = [];
    await waitFor(`all ${APPS} apps to converge after the restart`, async () => (pending = await halfApplied(specs)).length === 0, { timeoutMs: 180_000, intervalMs: 500 })
      .catch((e: Error) => { throw new Error(`${e.message}: ${pending.length} apps not converged, e.g. ${pending.slice(0, 10).join('; ')}`); });
    assert.ok(op!.alive, 'the operator survived the restart');
    console.log(`      API server down and back in ${downMs} ms after ${restartAfter} creates; all ${APPS} apps converged ${Math.round(performance.now() - backAt)} ms after it was back (${Math.round(performance.now() - started)} ms in all)`);
  });

  /** Apps whose children or status do not (yet) match their spec, with what differs. */
  async function halfApplied(specs: ServerlessApp[]): Promise<string[]> {
    const [apps, ksvcs, vss] = await Promise.all([
      listAll<ServerlessApp>(Kinds.ServerlessApp), listAll<KnativeService>(Kinds.KnativeService), listAll<VirtualService>(Kinds.VirtualService),
    ]);
    const problems: string[] = [];
    for (const want of specs) {
      const name = want.metadata.name;
      const a = apps.get(name);
      const k = ksvcs.get(name);
      const image = want.spec.container!.image;
      const stable = a?.status?.versions?.stable;
      const traffic = k?.spec.traffic ?? [];
      const reported = (k?.status?.traffic ?? []).filter((t) => (t.percent ?? 0) > 0);
      const vs = vss.get(`${name}-routes`);
      const why = !a ? 'app missing'
        : a.status?.observedGeneration !== a.metadata.generation ? `observedGeneration ${a.status?.observedGeneration} of ${a.metadata.generation}`
        : !readyTrue(a) ? 'not Ready'
        : stable?.image !== image ? `stable image ${stable?.image}`
        : k?.spec.template.spec.containers[0]?.image !== image ? `ksvc image ${k?.spec.template.spec.containers[0]?.image}`
        : traffic.length !== 1 || traffic[0]?.percent !== 100 || traffic[0]?.revisionName !== stable?.revision ? `ksvc traffic ${JSON.stringify(traffic)}`
        : reported.length !== 1 || reported[0]?.percent !== 100 || reported[0]?.revisionName !== stable?.revision ? `Knative reports traffic ${JSON.stringify(k?.status?.traffic)}`
        : want.spec.ingress && vs?.spec.hosts.join() !== want.spec.ingress.hosts.join() ? `VirtualService hosts ${vs?.spec.hosts}`
        : !want.spec.ingress && vs ? 'unexpected VirtualService'
        : '';
      if (why) problems.push(`${name}: ${why}`);
    }
    return problems;
  }

  async function listAll<T extends { metadata: { name: string } }>(kind: ResourceKind): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    let cont: string | undefined;
    do {
      const page = await client.list<T>(kind, ns, { limit: 500, ...(cont ? { continue: cont } : {}) });
      for (const o of page.items) out.set(o.metadata.name, o);
      cont = page.metadata.continue;
    } while (cont);
    return out;
  }
});

async function timed(fn: () => Promise<void>): Promise<number> {
  const t = performance.now();
  await fn();
  return Math.round(performance.now() - t);
}

/** A user's client keeps trying while the API server is away. */
function withRetries<T extends object>(what: string, fn: () => Promise<T>): Promise<T> {
  return waitFor(what, fn, { timeoutMs: SETTLE_MS, intervalMs: 200 }) as Promise<T>;
}
