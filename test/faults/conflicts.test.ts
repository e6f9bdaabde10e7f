// Fault injection: other writers fight the operator. For a while a "drifter"
// edits the rendered objects (Knative Service traffic and template,
// VirtualService routes, Revision bounds) and adds fields of its own, while a
// user keeps editing the apps' specs. Afterwards no spec edit may be lost (the
// last spec is rendered, and Knative reports serving its split), every drift
// must be undone, and the drifter's own fields must still be there. On the
// rig's real Knative a template edit that keeps the revision name is refused by
// Knative's validating webhook: those drifts are counted as refused (the
// drifter never got through), and the template must still be the operator's.
import assert from 'node:assert/strict';
import { ApiError, KubeClient } from '../../src/runtime/client.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { startStandins, type Standins } from '../standin/standin.ts';
import { app, applyApp, getApp, getKsvc, readyTrue, userClient, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { OperatorProcess } from '../support/operator-process.ts';
import { waitForAppExplained } from './support/diagnose.ts';
import { seedFor, type Random } from './support/seeded.ts';
import { pause } from '../support/schedule.ts';
import { waitFor } from '../support/wait.ts';

const APPS = ['c0', 'c1', 'c2', 'c3'];
const FIGHT_MS = 6_000;
const FOREIGN = 'drifter.example.com/note';
const LABEL = 'drifter.example.com/seen';

interface Edit { canaryPercent: number; maxScale: number; timeout: string }
/** What the drifter added of its own, per app: these must survive. */
interface Foreign { ksvcNote?: number; vsLabel?: boolean; appNote?: boolean }
interface VirtualService { metadata: { labels?: Record<string, string> }; spec: { hosts: string[]; http: Array<{ name?: string; timeout?: string }> } }
interface Revision { metadata: { annotations?: Record<string, string> } }

const spec = (name: string, e: Edit): AppSpec => ({
  container: { image: `${name}:2` },
  scaling: { minScale: 0, maxScale: e.maxScale },
  rollout: { canaryPercent: e.canaryPercent },
  ingress: { hosts: [`${name}.example.com`], timeout: e.timeout },
});

describe('concurrent writers against the operator (fault injection)', function () {
  this.timeout(600_000);
  let ns: string;
  let standins: Standins;
  let op: OperatorProcess | undefined;
  let drifter: KubeClient;

  before(async () => {
    ns = await freshNamespace('conflict');
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), namespaces: [ns], readyDelayMs: 100 });
    op = await OperatorProcess.start({ kubeconfigPath: testEnv().kubeconfigPath, namespaces: [ns] });
    await op.waitReady();
    drifter = new KubeClient(testEnv().kubeConfig(), { fieldManager: 'drifter', userAgent: 'drifter' });
  });
  after(async () => {
    await op?.kill();
    await standins?.stop();
    drifter?.close();
  });

  it('renders the last spec, undoes every drift and keeps the other writers\' fields', async () => {
    const rng = seedFor('conflicts');
    const last = new Map<string, Edit>();
    for (const name of APPS) {
      await applyApp(app(ns, name, { container: { image: `${name}:1` }, ingress: { hosts: [`${name}.example.com`] } }));
    }
    await Promise.all(APPS.map((name) => waitForAppExplained(ns, name, readyTrue, `${name} v1`, 120_000)));
    for (const name of APPS) {
      const first = { canaryPercent: 20, maxScale: 5, timeout: '10s' };
      await applyApp(app(ns, name, spec(name, first)));
      last.set(name, first);
    }
    await Promise.all(APPS.map((name) => waitForAppExplained(ns, name, (a) => a.status?.canary?.trafficPercent === 20, `${name} canary at 20% as the data plane reports it`, 120_000)));

    const foreign = new Map<string, Foreign>(APPS.map((name) => [name, {}]));
    const counts = { edits: 0, drifts: 0, refused: 0 };
    const until = performance.now() + FIGHT_MS;
    await Promise.all([
      (async () => {
        while (performance.now() < until) {
          const name = rng.pick(APPS);
          const e = { canaryPercent: rng.int(1, 9) * 10, maxScale: rng.int(3, 9), timeout: `${rng.int(1, 30)}s` };
          await applyApp(app(ns, name, spec(name, e)));
          last.set(name, e);
          counts.edits++;
          await pause(rng.int(20, 150));
        }
      })(),
      (async () => {
        while (performance.now() < until) {
          if (await drift(rng, foreign) === 'refused') counts.refused++;
          counts.drifts++;
          await pause(rng.int(10, 80));
        }
      })(),
    ]);

    let mismatch = '';
    await waitFor('every app to render its last spec', async () => {
      const found = await Promise.all(APPS.map((name) => differences(name, last.get(name)!, foreign.get(name)!)));
      mismatch = found.filter(Boolean).join('; ');
      return mismatch === '' || undefined;
    }, { timeoutMs: 90_000, intervalMs: 250 }).catch((e: Error) => {
      throw new Error(`${e.message}: ${mismatch}`);
    });
    assert.ok(op!.alive, 'the operator kept running');
    const conflicts = testEnv().auditWrites({ userAgentPrefix: 'serverlessapp-operator' }).filter((w) => w.namespace === ns && w.code === 409);
    console.log(`      ${counts.edits} spec edits and ${counts.drifts} drifts (${counts.refused} refused by the data plane's webhook) in ${FIGHT_MS / 1000} s; all converged; ${conflicts.length} conflicts answered to the operator`);
  });

  /** One edit by another writer to a random app's children or the app itself; 'refused' when admission refused it. */
  async function drift(rng: Random, foreign: Map<string, Foreign>): Promise<void | 'refused'> {
    const name = rng.pick(APPS);
    const mine = foreign.get(name)!;
    const kinds = { ksvc: Kinds.KnativeService, vs: Kinds.VirtualService };
    try {
      switch (rng.pick(['traffic', 'template', 'note', 'routes', 'label', 'bounds', 'app-note'] as const)) {
        case 'traffic':
          return void await drifter.mergePatch(kinds.ksvc, ns, name, { spec: { traffic: [{ latestRevision: true, percent: 100 }] } });
        case 'template':
          return void await drifter.mergePatch(kinds.ksvc, ns, name, { spec: { template: { metadata: { annotations: { 'autoscaling.knative.dev/metric': 'rps' } } } } });
        case 'note': {
          const n = (mine.ksvcNote ?? 0) + 1;
          await drifter.mergePatch(kinds.ksvc, ns, name, { metadata: { annotations: { [FOREIGN]: String(n) } } });
          mine.ksvcNote = n;
          return;
        }
        case 'routes':
          return void await drifter.mergePatch(kinds.vs, ns, `${name}-routes`, { spec: { http: [{ name: 'hijack', route: [{ destination: { host: 'elsewhere.example.com' } }] }] } });
        case 'label':
          await drifter.mergePatch(kinds.vs, ns, `${name}-routes`, { metadata: { labels: { [LABEL]: 'yes' } } });
          mine.vsLabel = true;
          return;
        case 'bounds': {
          const a = await getApp(ns, name);
          const revision = a.status?.versions?.stable?.revision;
          if (revision) await drifter.mergePatch(Kinds.KnativeRevision, ns, revision, { metadata: { annotations: { 'autoscaling.knative.dev/max-scale': '99' } } });
          return;
        }
        case 'app-note':
          await drifter.mergePatch(Kinds.ServerlessApp, ns, name, { metadata: { annotations: { [FOREIGN]: 'kept' } } });
          mine.appNote = true;
          return;
      }
    } catch (e) {
      // Knative's webhook refuses a template change that keeps the revision name: the drifter was refused.
      if (e instanceof ApiError && e.code === 400 && /admission webhook .* denied the request/.test(e.message)) return 'refused';
      // A child the operator is replacing may be briefly absent; that is not what this test is about.
      if (!/not found/i.test((e as Error).message)) throw e;
    }
  }

  /** '' when `name` renders `want` and kept the drifter's fields; otherwise what differs. */
  async function differences(name: string, want: Edit, foreign: Foreign): Promise<string> {
    const a = await getApp(ns, name);
    const k = await getKsvc(ns, name);
    const vs = await userClient().get<VirtualService>(Kinds.VirtualService, ns, `${name}-routes`);
    const s = a.status;
    const p = want.canaryPercent;
    const tag = (t: string) => k?.spec.traffic.find((x) => x.tag === t);
    const reported = (revision: string | undefined) => (k?.status?.traffic ?? []).filter((x) => x.revisionName === revision).reduce((sum, x) => sum + (x.percent ?? 0), 0);
    const revisionBounds = async (revision: string | undefined) => revision
      ? (await userClient().get<Revision>(Kinds.KnativeRevision, ns, revision))?.metadata.annotations?.['autoscaling.knative.dev/max-scale'] : undefined;
    const checks: Array<[boolean, string]> = [
      [a.spec.rollout?.canaryPercent === p && a.spec.scaling?.maxScale === want.maxScale && a.spec.ingress?.timeout === want.timeout, `spec ${JSON.stringify(a.spec)} is not the last edit ${JSON.stringify(want)}`],
      [s?.observedGeneration === a.metadata.generation, `observedGeneration ${s?.observedGeneration} of ${a.metadata.generation}`],
      [s?.canary?.weight === p && s?.canary?.trafficPercent === p && s?.phase === 'Canary', `status at ${s?.canary?.weight}%, reported ${s?.canary?.trafficPercent}% (${s?.phase})`],
      [reported(s?.versions?.stable?.revision) === 100 - p && reported(s?.versions?.candidate?.revision) === p, `Knative reports ${JSON.stringify(k?.status?.traffic)}`],
      [tag('stable')?.percent === 100 - p && tag('stable')?.revisionName === s?.versions?.stable?.revision, `stable traffic ${JSON.stringify(tag('stable'))}`],
      [tag('candidate')?.percent === p && tag('candidate')?.revisionName === s?.versions?.candidate?.revision, `candidate traffic ${JSON.stringify(tag('candidate'))}`],
      [(k?.spec.traffic.length ?? 0) === 2, `extra traffic targets ${JSON.stringify(k?.spec.traffic)}`],
      [k?.spec.template.metadata.annotations?.['autoscaling.knative.dev/metric'] === 'concurrency', 'template drift kept'],
      [k?.spec.template.spec.containers[0]?.image === `${name}:2`, 'template image'],
      [foreign.ksvcNote === undefined || k?.metadata.annotations?.[FOREIGN] === String(foreign.ksvcNote), `drifter's ksvc annotation ${k?.metadata.annotations?.[FOREIGN]} (last written ${foreign.ksvcNote})`],
      [!foreign.vsLabel || vs?.metadata.labels?.[LABEL] === 'yes', 'drifter\'s VirtualService label lost'],
      [!foreign.appNote || a.metadata.annotations?.[FOREIGN] === 'kept', 'drifter\'s app annotation lost'],
      [vs?.spec.http.map((h) => h.name).join() === 'default' && vs.spec.http[0]?.timeout === want.timeout, `routes ${JSON.stringify(vs?.spec.http)}`],
      [vs?.spec.hosts.join() === `${name}.example.com`, `hosts ${vs?.spec.hosts}`],
      [await revisionBounds(s?.versions?.stable?.revision) === String(want.maxScale), `stable revision max-scale ${await revisionBounds(s?.versions?.stable?.revision)}`],
      [await revisionBounds(s?.versions?.candidate?.revision) === String(want.maxScale), `candidate revision max-scale ${await revisionBounds(s?.versions?.candidate?.revision)}`],
    ];
    const failed = checks.filter(([ok]) => !ok).map(([, why]) => why);
    return failed.length ? `${name}: ${failed.join(', ')}` : '';
  }
});
