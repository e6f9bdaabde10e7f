// What the GitOps tools conclude from a ServerlessApp at every step of its
// stories on the rig's real Knative, asked of their own code
// (test/support/gitops-judge.ts): kstatus, as Flux's health checks and
// `kubectl wait`-style tools read a status, and Argo CD's controller running
// the chart's health check in gopher-lua. Each step must read as the status
// contract's table says (README, "GitOps"): served Current / Healthy; from any
// spec edit until that spec serves InProgress / Progressing; a candidate that
// cannot start Failed / Degraded once the progressDeadline it names has passed;
// a fix-forward edit InProgress then Current; a reached pause Current /
// Suspended; a refused host or gateway Failed / Degraded at once; deletion
// Terminating / Progressing. `kubectl wait --for=condition=Ready` (and
// =Stalled) is read with kubectl's own rule for a condition's generation.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getApp, userClient, type AppSpec } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { judge, kubectlWaitMet, type Judgement } from '../support/gitops-judge.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';

const image = (tag: string) => `ghcr.io/acme/shop:${tag}`;
/** A pod asking for more CPU than any rig node has stays Pending, so Knative never makes its revision Ready. */
const UNSCHEDULABLE_CPU = '1000';

type Reading = `${string} / ${string}`;
/** kstatus / Argo CD, as the contract's table writes them. */
const CURRENT_HEALTHY: Reading = 'Current / Healthy';
const IN_PROGRESS: Reading = 'InProgress / Progressing';
const FAILED: Reading = 'Failed / Degraded';
const CURRENT_SUSPENDED: Reading = 'Current / Suspended';
const reading = (j: Judgement): Reading => `${j.kstatus.status} / ${j.argocd?.status ?? 'no health'}`;

/** One look at the app: as read, and what each tool concludes. */
interface Look { app: ServerlessApp; judged: Judgement; reading: Reading }

async function look(a: ServerlessApp): Promise<Look> {
  const judged = await judge(a);
  return { app: a, judged, reading: reading(judged) };
}

const describeLook = (l: Look) => {
  const s = l.app.status;
  const conditions = (s?.conditions ?? []).map((c) => `${c.type}=${c.status} ${c.reason}`).join(', ');
  return `${l.reading} at generation ${l.app.metadata.generation} (observed ${s?.observedGeneration}, phase ${s?.phase}; ${conditions || 'no conditions'}; kstatus "${l.judged.kstatus.message}", Argo CD "${l.judged.argocd?.message}")`;
};

/**
 * Looks at the app until it reads `want` and `also` holds; returns every look on the way (the last
 * one reads `want`), so a test can say what was read before, not only where it ended.
 */
async function lookUntil(ns: string, name: string, want: Reading, what: string, timeoutMs: number, also: (a: ServerlessApp) => boolean = () => true): Promise<Look[]> {
  const trail: Look[] = [];
  await waitFor(`${ns}/${name} to read ${want}: ${what}`, async () => {
    const l = await look(await getApp(ns, name));
    trail.push(l);
    return l.reading === want && also(l.app);
  }, { timeoutMs, intervalMs: 250 }).catch((err: Error) => {
    throw new Error(`${err.message}; last read ${trail.length ? describeLook(trail.at(-1)!) : 'nothing'}`);
  });
  return trail;
}

/** Every look but the last read `allowed` (the way to where the last one got). */
function onTheWay(trail: Look[], allowed: Reading, what: string): void {
  const other = trail.slice(0, -1).find((l) => l.reading !== allowed);
  assert.equal(other, undefined, `${what}: read ${other && describeLook(other)} before it got there`);
}

describe('what Flux (kstatus), Argo CD and kubectl wait read at every step of an app\'s stories (integration)', function () {
  this.timeout(900_000);
  const id = randomBytes(3).toString('hex');
  /** A domain every namespace may claim hosts under, so that two namespaces can contend for one. */
  const shared = `shared-${id}.example.com`;
  let op: RunningOperator;
  let clock: OffsetClock;
  let ns: string;

  before(async () => {
    clock = new OffsetClock();
    op = await startOperator({ allowedHostSuffixes: ['{namespace}.apps.example.com', shared] }, { clock });
  });
  after(async () => { await op?.stop(); });
  beforeEach(async () => { ns = await freshNamespace('gitops'); });

  const spec = (img: string, rollout?: AppSpec['rollout'], extra: Partial<AppSpec> = {}): AppSpec => ({
    container: { image: img, port: 8080 }, scaling: { minScale: 0 }, ...(rollout ? { rollout } : {}), ...extra,
  });

  /** Applies `s` and looks until it serves `img`: InProgress / Progressing from the edit on, then Current / Healthy. */
  async function editUntilServed(s: AppSpec, img: string, what: string): Promise<Look> {
    const applied = await look(await applyApp(app(ns, 'shop', s)));
    // What the apply returns: the new generation, the status of the last one the operator judged (none for a new app).
    assert.equal(applied.reading, IN_PROGRESS, `${what}: the applied object reads ${describeLook(applied)}`);
    assert.equal(kubectlWaitMet(applied.app, 'Ready'), false, `${what}: kubectl wait --for=condition=Ready must not return on the applied object`);
    const trail = await lookUntil(ns, 'shop', CURRENT_HEALTHY, `${what} serves`, READY_MS, (a) => a.status?.versions?.stable?.image === img);
    onTheWay(trail, IN_PROGRESS, what);
    // kubectl wait --for=condition=Ready returns only once the edited spec's version serves.
    for (const l of trail) {
      if (kubectlWaitMet(l.app, 'Ready')) assert.equal(l.app.status?.versions?.stable?.image, img, `${what}: Ready met for kubectl wait at ${describeLook(l)}`);
    }
    const served = trail.at(-1)!;
    assert.ok(kubectlWaitMet(served.app, 'Ready'), `${what}: kubectl wait --for=condition=Ready returns once it serves: ${describeLook(served)}`);
    assert.equal(kubectlWaitMet(served.app, 'Stalled'), false);
    // Every condition judged the generation status.observedGeneration names (they are written together).
    for (const c of served.app.status?.conditions ?? []) assert.equal(c.observedGeneration, served.app.metadata.generation, `${c.type}'s observedGeneration`);
    return served;
  }

  it('a served app is Current / Healthy; from its creation and from each edit until the edited spec serves it is InProgress / Progressing', async () => {
    await editUntilServed(spec(image('1')), image('1'), 'a new app');
    await editUntilServed(spec(image('2')), image('2'), 'an image edit');
  });

  it('a candidate that cannot start is Failed / Degraded once the progressDeadline it names has passed, not before; a fix-forward edit is InProgress, then Current', async () => {
    await editUntilServed(spec(image('1')), image('1'), 'v1');
    const unready: AppSpec = { ...spec(image('2'), { progressDeadline: '1m' }), container: { image: image('2'), port: 8080, resources: { requests: { cpu: UNSCHEDULABLE_CPU } } } };
    const applied = await look(await applyApp(app(ns, 'shop', unready)));
    assert.equal(applied.reading, IN_PROGRESS, describeLook(applied));
    // Waiting for a candidate that cannot start: still in progress (the stable version serving does not make it Current).
    const waiting = await lookUntil(ns, 'shop', IN_PROGRESS, 'waiting for the candidate', SETTLE_MS,
      (a) => a.status?.observedGeneration === a.metadata.generation && !!a.status?.canary?.startedAt);
    const startedAt = Date.parse(waiting.at(-1)!.app.status!.canary!.startedAt!);
    assert.equal(kubectlWaitMet(waiting.at(-1)!.app, 'Ready'), false, 'kubectl wait --for=condition=Ready does not return while the candidate is awaited');
    assert.equal(kubectlWaitMet(waiting.at(-1)!.app, 'Stalled'), false, 'nor --for=condition=Stalled before the deadline');

    clock.advance(61_000);
    op.apps.controller.enqueueAll();
    const trail = await lookUntil(ns, 'shop', FAILED, 'past the progress deadline', SETTLE_MS);
    onTheWay(trail, IN_PROGRESS, 'until the deadline passed');
    const failed = trail.at(-1)!;
    const stalled = condition(failed.app, 'Stalled');
    assert.equal(stalled?.reason, 'ProgressDeadlineExceeded', describeLook(failed));
    assert.ok(Date.parse(stalled!.lastTransitionTime) - startedAt >= 60_000, `stalled only past the deadline: started ${new Date(startedAt).toISOString()}, stalled ${stalled!.lastTransitionTime}`);
    assert.match(failed.judged.argocd!.message, /progress deadline \(1m\)/, 'Argo CD shows what failed');
    assert.ok(kubectlWaitMet(failed.app, 'Stalled'), 'kubectl wait --for=condition=Stalled returns on the failed rollout');
    assert.equal(kubectlWaitMet(failed.app, 'Ready'), false, 'and --for=condition=Ready does not');

    // Fix forward: a new image that can start.
    await editUntilServed(spec(image('3')), image('3'), 'a fix-forward edit');
  });

  it('a paused rollout is Current / Suspended where it stands; resumed, it is InProgress until promoted, then Current / Healthy', async () => {
    await editUntilServed(spec(image('1')), image('1'), 'v1');
    const steps = { steps: [10, 40], interval: '10s' };
    await applyApp(app(ns, 'shop', spec(image('2'), steps)));
    const toTen = await lookUntil(ns, 'shop', IN_PROGRESS, 'step 1 at 10%', READY_MS, (a) => a.status?.canary?.trafficPercent === 10);
    onTheWay(toTen, IN_PROGRESS, 'an automated canary');

    await applyApp(app(ns, 'shop', spec(image('2'), { ...steps, paused: true })));
    const paused = await lookUntil(ns, 'shop', CURRENT_SUSPENDED, 'paused at 10%', SETTLE_MS);
    onTheWay(paused, IN_PROGRESS, 'pausing');
    const held = paused.at(-1)!;
    const percent = held.app.status?.canary?.trafficPercent ?? 0;
    assert.ok(percent > 0 && percent < 100, `held where it stood, mid-canary: ${describeLook(held)}`);
    assert.ok(kubectlWaitMet(held.app, 'Ready'), 'a reached pause is Ready for kubectl wait');
    assert.ok(kubectlWaitMet(held.app, 'Paused'), 'and shows Paused');

    await editUntilServed(spec(image('2'), steps), image('2'), 'resumed');
    assert.equal(condition(await getApp(ns, 'shop'), 'Paused'), undefined, 'Paused is gone once resumed');
  });

  it('a host another namespace holds is Failed / Degraded at once, and so is a gateway the platform does not allow', async () => {
    const host = `shop.${shared}`;
    const holder = ns;
    await applyApp(app(holder, 'shop', spec(image('1'), undefined, { ingress: { hosts: [host] } })));
    await lookUntil(holder, 'shop', CURRENT_HEALTHY, 'the holder serves the host', READY_MS);

    ns = await freshNamespace('gitops-intruder');
    await applyApp(app(ns, 'shop', spec(image('1'), undefined, { ingress: { hosts: [host] } })));
    const refused = await lookUntil(ns, 'shop', FAILED, 'the host is refused', SETTLE_MS);
    onTheWay(refused, IN_PROGRESS, 'a refused host');
    assert.equal(condition(refused.at(-1)!.app, 'Stalled')?.reason, 'HostConflict', describeLook(refused.at(-1)!));
    assert.ok(kubectlWaitMet(refused.at(-1)!.app, 'Stalled'), 'kubectl wait --for=condition=Stalled returns');

    await applyApp(app(ns, 'gateway', spec(image('1'), undefined, { ingress: { hosts: [`gateway.${ns}.apps.example.com`], gateways: ['not-allowed/public'] } })));
    const gateway = await lookUntil(ns, 'gateway', FAILED, 'the gateway is refused', SETTLE_MS);
    onTheWay(gateway, IN_PROGRESS, 'a refused gateway');
    assert.equal(condition(gateway.at(-1)!.app, 'Stalled')?.reason, 'GatewayNotAllowed', describeLook(gateway.at(-1)!));
  });

  it('an app being deleted is Terminating / Progressing', async () => {
    await editUntilServed(spec(image('1')), image('1'), 'v1');
    // A finalizer of the user's keeps the app visible while it is being deleted.
    const hold = 'example.com/hold';
    await userClient().mergePatch(Kinds.ServerlessApp, ns, 'shop', { metadata: { finalizers: [hold] } });
    await userClient().delete(Kinds.ServerlessApp, ns, 'shop');
    try {
      const deleting = await look(await getApp(ns, 'shop'));
      assert.ok(deleting.app.metadata.deletionTimestamp, 'being deleted');
      assert.equal(deleting.judged.kstatus.status, 'Terminating', describeLook(deleting));
      assert.deepEqual(deleting.judged.argocd, { status: 'Progressing', message: `Pending deletion; blocked by finalizers: ${hold}` });
    } finally {
      await userClient().mergePatch(Kinds.ServerlessApp, ns, 'shop', { metadata: { finalizers: null } });
    }
    await waitFor('the app gone once its finalizer is removed', async () => !(await userClient().get(Kinds.ServerlessApp, ns, 'shop')), { timeoutMs: SETTLE_MS });
  });
});
