// `kubectl sapp` against the rig's real API server, run as kubectl runs it: a
// child process (the .ts entry, type-stripped) with a KUBECONFIG whose context
// names the namespace. The rollout commands must land as server-side applies
// by the field manager kubectl-sapp and compose (each states again what it
// owns); the operator does not run in the first part, so each status the
// commands read is a fixture written through the status subresource, as the
// operator writes it. The last part runs the operator on the real Knative for a
// canary and reads it back with `status`, then promotes it.
import assert from 'node:assert/strict';
import type { ServerlessApp, ServerlessAppStatus } from '../../src/api/v1alpha1/serverlessapp.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, readyTrue, userClient, waitForApp } from '../support/apps.ts';
import { freshNamespace, writesSince } from '../support/cluster.ts';
import { kubeconfigIn, sapp } from '../support/kubectl-sapp.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

/** The rollout settings the user applies, as stored (the CRD defaults progressDeadline). */
const USER_ROLLOUT = { steps: [20, 50], interval: '1m', progressDeadline: '10m' };

type LiveApp = ServerlessApp & { metadata: { managedFields?: Array<{ manager: string; operation: string; subresource?: string; fieldsV1?: { 'f:spec'?: { 'f:rollout'?: Record<string, unknown> } } }> } };

async function live(ns: string, name = 'shop'): Promise<LiveApp> {
  const a = await userClient().get<LiveApp>(Kinds.ServerlessApp, ns, name);
  assert.ok(a, `ServerlessApp ${ns}/${name} exists`);
  return a;
}

/** The spec.rollout fields kubectl-sapp owns by its own apply. */
function ownedBySapp(a: LiveApp): string[] {
  const entry = a.metadata.managedFields?.find((e) => e.manager === 'kubectl-sapp' && e.operation === 'Apply' && !e.subresource);
  return Object.keys(entry?.fieldsV1?.['f:spec']?.['f:rollout'] ?? {}).filter((k) => k.startsWith('f:')).map((k) => k.slice(2)).sort();
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const operatorClient = () => new KubeClient(testKubeConfig(), { fieldManager: 'test-operator', userAgent: 'test-operator' });
const NOW = '2026-11-22T12:00:00Z';
const stable = { version: 'a1a1a1a1a1', revision: 'shop-00001', image: 'ghcr.io/acme/shop:1', summary: 'shop:1', ready: true, warm: true, replicas: 2 };
const candidate = { version: 'b2b2b2b2b2', revision: 'shop-00002', image: 'ghcr.io/acme/shop:2', summary: 'shop:2', ready: true, warm: false, replicas: 1 };

/** Writes `status` through the status subresource, as the operator does. */
async function writeStatus(ns: string, status: ServerlessAppStatus): Promise<void> {
  await operatorClient().apply({ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'shop', namespace: ns }, status }, { subresource: 'status' });
}

const canaryStatus = (generation: number): ServerlessAppStatus => ({
  observedGeneration: generation,
  phase: 'Canary',
  conditions: [
    { type: 'Ready', status: 'Unknown', reason: 'CanaryProgressing', message: 'candidate b2b2b2b2b2 at 20%', lastTransitionTime: NOW },
    { type: 'Reconciling', status: 'True', reason: 'CanaryProgressing', message: 'candidate b2b2b2b2b2 at 20%', lastTransitionTime: NOW },
    { type: 'CanaryProgressing', status: 'True', reason: 'StepInterval', message: 'step 1/2 at 20%', lastTransitionTime: NOW },
  ],
  versions: { stable, candidate },
  traffic: [{ revision: 'shop-00001', percent: 80, tag: 'stable' }, { revision: 'shop-00002', percent: 20, tag: 'candidate' }],
  canary: { version: candidate.version, weight: 20, trafficPercent: 20, step: 0, message: 'error-rate 0.01 within [-, 0.05]' },
});

describe('kubectl sapp against the real API server (integration)', function () {
  this.timeout(600_000);
  let ns: string;
  let kubeconfig: string;

  beforeEach(async () => {
    ns = await freshNamespace('sapp');
    kubeconfig = kubeconfigIn(ns);
    // The user's own rollout settings, applied by another manager: the plugin's applies must leave them alone.
    await applyApp(app(ns, 'shop', { container: { image: 'ghcr.io/acme/shop:2' }, rollout: { steps: [20, 50], interval: '1m' } }));
  });
  // The fixture's status belongs to a manager of its own: a later test's operator (which watches every
  // namespace of the shared rig) must not meet an app whose status it cannot write alone.
  afterEach(async () => {
    await userClient().delete(Kinds.ServerlessApp, ns, 'shop').catch(() => undefined);
  });

  it('pause then set-weight keeps the rollout paused; resume keeps the weight; all applied by kubectl-sapp', async () => {
    const since = new Date();
    const paused = await sapp(kubeconfig, ['pause', 'shop']);
    assert.equal(paused.code, 0, paused.stderr);
    assert.equal(paused.stdout, 'serverlessapp "shop" paused\n');

    const weighted = await sapp(kubeconfig, ['set-weight', 'shop', '20']);
    assert.equal(weighted.code, 0, weighted.stderr);
    assert.equal(weighted.stdout, 'serverlessapp "shop" canary weight set to 20%\n');
    let a = await live(ns);
    assert.deepEqual(a.spec.rollout, { ...USER_ROLLOUT, paused: true, canaryPercent: 20 });
    assert.deepEqual(ownedBySapp(a), ['canaryPercent', 'paused']);

    const resumed = await sapp(kubeconfig, ['resume', 'shop']);
    assert.equal(resumed.code, 0, resumed.stderr);
    a = await live(ns);
    assert.deepEqual(a.spec.rollout, { ...USER_ROLLOUT, paused: false, canaryPercent: 20 });
    assert.deepEqual(a.spec.container, { image: 'ghcr.io/acme/shop:2' });

    const writes = writesSince(since, 'kubectl-sapp').filter((w) => w.namespace === ns);
    assert.deepEqual(writes.map((w) => `${w.verb} ${w.resource} ${w.name} ${w.code}`), Array(3).fill('patch serverlessapps shop 200'));
  });

  it('abort, then retry lifts the abort; retry of a failure bumps rollout.retry; promote writes the candidate\'s hash', async () => {
    const generation = (await live(ns)).metadata.generation!;
    await writeStatus(ns, canaryStatus(generation));
    const aborted = await sapp(kubeconfig, ['abort', 'shop']);
    assert.equal(aborted.code, 0, aborted.stderr);
    assert.equal((await live(ns)).spec.rollout?.abort, true);

    await writeStatus(ns, { ...canaryStatus(generation), phase: 'Aborted', canary: { version: candidate.version, weight: 0, trafficPercent: 0, aborted: true } });
    const lifted = await sapp(kubeconfig, ['retry', 'shop']);
    assert.equal(lifted.code, 0, lifted.stderr);
    assert.match(lifted.stdout, /abort lifted: the candidate starts again from its first step/);
    assert.equal((await live(ns)).spec.rollout?.abort, false);

    await writeStatus(ns, {
      ...canaryStatus(generation), phase: 'Failed',
      canary: { version: candidate.version, weight: 0, trafficPercent: 0, failure: { version: candidate.version, reason: 'AnalysisFailed', message: 'error-rate 0.2 above 0.05', at: NOW, retry: 0 } },
    });
    const promoteFailed = await sapp(kubeconfig, ['promote', 'shop']);
    assert.equal(promoteFailed.code, 1);
    assert.match(promoteFailed.stderr, /^error: candidate b2b2b2b2b2 of shop failed \(AnalysisFailed: error-rate 0\.2 above 0\.05\); promote does not override a failure: run `kubectl sapp retry shop` first\n$/);
    const retried = await sapp(kubeconfig, ['retry', 'shop']);
    assert.equal(retried.code, 0, retried.stderr);
    assert.deepEqual((await live(ns)).spec.rollout, { ...USER_ROLLOUT, abort: false, retry: 1 });

    await writeStatus(ns, { ...canaryStatus(generation), canary: { version: candidate.version, weight: 20, trafficPercent: 20, step: 0 } });
    const promoted = await sapp(kubeconfig, ['promote', 'shop']);
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.equal(promoted.stdout, 'serverlessapp "shop" promoting candidate b2b2b2b2b2 (shop:2)\n');
    const a = await live(ns);
    assert.deepEqual(a.spec.rollout, { ...USER_ROLLOUT, abort: false, retry: 1, promote: 'b2b2b2b2b2' });
    assert.deepEqual(ownedBySapp(a), ['abort', 'promote', 'retry']);
  });

  it('fails with a message naming the problem and a non-zero exit code, writing nothing', async () => {
    await writeStatus(ns, { observedGeneration: 1, phase: 'Stable', versions: { stable } });
    const since = new Date();
    const cases: Array<[string[], number, RegExp]> = [
      [['promote', 'shop'], 1, /^error: shop has no candidate to promote \(phase Stable\): status\.versions\.candidate is empty\n$/],
      [['abort', 'shop'], 1, /^error: shop has no candidate to abort \(phase Stable\)\n$/],
      [['retry', 'shop'], 1, /^error: shop has nothing to retry: it is Stable, not Failed or Aborted\n$/],
      [['pause', 'web'], 1, new RegExp(`^error: serverlessapp "web" not found in namespace "${ns}"\\n$`)],
      [['status', 'shop', '-n', 'elsewhere'], 1, /^error: serverlessapp "shop" not found in namespace "elsewhere"\n$/],
      [['set-weight', 'shop', '101'], 2, /^error: set-weight takes a whole percentage from 0 to 100, not 101\n/],
      [['pause', 'shop', '--context', 'prod'], 1, /context "prod" is not among its contexts/],
    ];
    for (const [args, code, stderr] of cases) {
      const run = await sapp(kubeconfig, args);
      assert.equal(run.code, code, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, stderr);
      assert.equal(run.stdout, '');
    }
    assert.deepEqual(writesSince(since, 'kubectl-sapp'), []);
    assert.equal((await live(ns)).spec.rollout?.promote, undefined);
  });

  it('refuses to retry a failed candidate while the operator refuses the spec (a retry would change nothing), writing nothing', async () => {
    const generation = (await live(ns)).metadata.generation!;
    await writeStatus(ns, {
      ...canaryStatus(generation), phase: 'Failed',
      conditions: ['Ready', 'Stalled'].map((type) => ({ type, status: type === 'Ready' ? 'False' as const : 'True' as const, reason: 'GatewayNotAllowed', message: 'spec.gateways[0]: gateway "istio-system/public" is not allowed; allowed: {namespace}/*. The running version is left as it was.', lastTransitionTime: NOW })),
      canary: { version: candidate.version, weight: 0, trafficPercent: 0, failure: { version: candidate.version, reason: 'AnalysisFailed', message: 'error-rate 0.2 above 0.05', at: NOW, retry: 0 } },
    });
    const since = new Date();
    const run = await sapp(kubeconfig, ['retry', 'shop']);
    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.stderr, 'error: shop cannot be retried: the spec is invalid: spec.gateways[0]: gateway "istio-system/public" is not allowed; allowed: {namespace}/*. The running version is left as it was.; fix the spec, retry is for a failed candidate\n');
    assert.equal(run.stdout, '');
    assert.deepEqual(writesSince(since, 'kubectl-sapp'), []);
  });

  it('takes canaryPercent over from a GitOps manager, saying that a sync will set it back', async () => {
    const gitops = new KubeClient(testKubeConfig(), { fieldManager: 'argocd-controller', userAgent: 'argocd' });
    await gitops.apply(app(ns, 'shop', { container: { image: 'ghcr.io/acme/shop:2' }, rollout: { canaryPercent: 10 } }));
    const run = await sapp(kubeconfig, ['set-weight', 'shop', '40']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^warning: spec\.rollout\.canaryPercent was set by argocd-controller; kubectl-sapp took it over\. Under GitOps the next sync sets it back: commit the change to Git instead\.\n$/);
    const a = await live(ns);
    assert.equal(a.spec.rollout?.canaryPercent, 40);
    assert.deepEqual(ownedBySapp(a), ['canaryPercent']);
  });

  it('status draws the app from the API server; --watch redraws on each change until Ctrl-C', async () => {
    const generation = (await live(ns)).metadata.generation!;
    await writeStatus(ns, canaryStatus(generation));
    const once = await sapp(kubeconfig, ['status', 'shop']);
    assert.equal(once.code, 0, once.stderr);
    assert.doesNotMatch(once.stdout, /\x1b/, 'no colour without a terminal');
    for (const line of [
      `Namespace:       ${ns}`, 'Phase:           ◌ Canary', 'Ready:           Unknown CanaryProgressing', 'Reconciling:     True CanaryProgressing: candidate b2b2b2b2b2 at 20%',
      'Progressing:     True StepInterval: step 1/2 at 20%',
      'Strategy:        steps 20% → 50%, interval 1m', '  Step:          1/2 (20%)', '  Weight:        20% asked, 20% served',
      'Candidate:       shop:2', '  Version:       b2b2b2b2b2', '  State:         ◌ ready, not warm yet', '  Traffic:       20%',
    ]) assert.ok(once.stdout.split('\n').includes(line), `status shows ${JSON.stringify(line)}:\n${once.stdout}`);

    const watch = sapp(kubeconfig, ['status', 'shop', '--watch'], (out) => out.includes('Phase:           ॥ Paused'));
    await waitFor('the first drawing', async () => watch.output().includes('Phase:           ◌ Canary'), { timeoutMs: 30_000 });
    assert.equal((await sapp(kubeconfig, ['pause', 'shop'])).code, 0);
    await waitFor('a redraw after the spec edit', async () => watch.output().includes('  Spec:          paused'), { timeoutMs: 30_000 });
    await writeStatus(ns, { ...canaryStatus(generation + 1), phase: 'Paused' });
    const watched = await watch;
    assert.equal(watched.code, 0, `Ctrl-C ends the watch cleanly: ${watched.stderr}`);
    const drawings = watched.stdout.split(/\n\n(?=Name:)/);
    assert.ok(drawings.length >= 3, `one drawing per change:\n${watched.stdout}`);
    assert.match(drawings.at(-1)!, /Phase: +॥ Paused/);
  });
});

describe('kubectl sapp on a canary the operator runs on the real Knative (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let ns: string;

  before(async () => {
    ns = await freshNamespace('sapp-op');
    op = await startOperator({ namespaces: [ns] });
  });
  after(async () => op?.stop());

  it('status shows stable and candidate as the operator reports them, and promote writes the candidate it reports', async () => {
    const kubeconfig = kubeconfigIn(ns);
    const spec = (tag: string, canaryPercent?: number) => ({ container: { image: `ghcr.io/acme/shop:${tag}`, port: 8080 }, scaling: { minScale: 0 }, ...(canaryPercent !== undefined ? { rollout: { canaryPercent } } : {}) });
    await applyApp(app(ns, 'shop', spec('1')));
    await waitForApp(ns, 'shop', readyTrue, 'v1 Ready on Knative', 120_000);
    await applyApp(app(ns, 'shop', spec('2', 20)));
    const canary = await waitForApp(ns, 'shop', (a) => a.status?.phase === 'Canary' && a.status.canary?.trafficPercent === 20, 'v2 the candidate at 20%', 120_000);
    const { stable: v1, candidate: v2 } = canary.status!.versions!;

    const status = await sapp(kubeconfig, ['status', 'shop']);
    assert.equal(status.code, 0, status.stderr);
    const [stableBlock, candidateBlock] = status.stdout.split(/\n\nCandidate: +/);
    assert.match(stableBlock!, new RegExp(`Stable: +${escape(v1!.summary ?? v1!.image!)}\\n  Image: +ghcr\\.io/acme/shop:1\\n  Version: +${v1!.version}\\n  Revision: +${v1!.revision}\\n`));
    assert.match(stableBlock!, /  Traffic: +80%/);
    assert.match(candidateBlock!, new RegExp(`^${escape(v2!.summary ?? v2!.image!)}\\n  Image: +ghcr\\.io/acme/shop:2\\n  Version: +${v2!.version}\\n  Revision: +${v2!.revision}\\n`));
    assert.match(candidateBlock!, /  Traffic: +20%/);
    assert.match(status.stdout, /Phase: +◌ Canary/);
    // A manual canaryPercent reached and held is a desired state: Ready, nothing in progress.
    assert.match(status.stdout, /\nReady: +True CanaryHeld: /);
    assert.doesNotMatch(status.stdout, /\nReconciling:/);

    const promoted = await sapp(kubeconfig, ['promote', 'shop']);
    assert.equal(promoted.code, 0, promoted.stderr);
    const a = await live(ns);
    assert.equal(a.spec.rollout?.promote, v2!.version);
    assert.equal(a.spec.rollout?.canaryPercent, 20, 'the user\'s own canaryPercent stays');
  });
});
