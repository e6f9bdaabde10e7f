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
// Terminating / Progressing. The canary stories run on a controlled clock,
// their checks against a loopback Prometheus and their warmup against a
// loopback server; a scale window opens by moving that clock. `kubectl wait
// --for=condition=Ready` (and =Stalled) is asked of the real kubectl
// (test/support/kubectl.ts), against the app as it changes.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getApp, userClient, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { judge, type Judgement } from '../support/gitops-judge.ts';
import { LoopbackServer, promVector } from '../support/http-server.ts';
import { kubectl } from '../support/kubectl.ts';
import type { Run } from '../support/kubectl-sapp.ts';
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

/**
 * `kubectl wait --for=condition=<type> --timeout=<timeoutMs> serverlessapp/<name>`, the real
 * kubectl: exit 0 once the condition is met for the app's current generation; `timeoutMs` 0
 * checks once. Resolves with the run and a look at the app taken right after kubectl returned,
 * so a test can say what the app read when kubectl let its caller go on.
 */
async function kubectlWait(ns: string, name: string, type: string, timeoutMs: number): Promise<{ run: Run; after: Look; said: string }> {
  const args = ['wait', '-n', ns, `--for=condition=${type}`, `--timeout=${Math.round(timeoutMs / 1000)}s`, `serverlessapps.serverlessapp.io/${name}`];
  const run = await kubectl(testEnv().kubeconfigPath, args, { timeoutMs: timeoutMs + SETTLE_MS });
  const after = await look(await getApp(ns, name));
  return { run, after, said: `kubectl ${args.join(' ')} exited ${run.code} (${(run.stdout + run.stderr).trim()}); right after, ${describeLook(after)}` };
}

/** kubectl wait for `type` on the app gives up after `timeoutMs` (0: not met at its one check). */
async function kubectlWaitTimesOut(ns: string, name: string, type: string, timeoutMs: number, what: string): Promise<void> {
  const w = await kubectlWait(ns, name, type, timeoutMs);
  assert.notEqual(w.run.code, 0, `${what}: kubectl wait --for=condition=${type} must not return: ${w.said}`);
  // kubectl's own words (pkg/cmd/wait/condition.go): a single check (--timeout=0s) is "not met", a wait "timed out".
  assert.match(w.run.stderr, timeoutMs === 0 ? /condition not met for serverlessapps\// : /timed out waiting for the condition on serverlessapps\//, `${what}: kubectl wait --for=condition=${type} gives up: ${w.said}`);
}

/** kubectl wait for `type` on the app returns (at once with timeoutMs 0); returns what the app read right after. */
async function kubectlWaitReturns(ns: string, name: string, type: string, timeoutMs: number, what: string): Promise<Look> {
  const w = await kubectlWait(ns, name, type, timeoutMs);
  assert.equal(w.run.code, 0, `${what}: kubectl wait --for=condition=${type} returns: ${w.said}`);
  return w.after;
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
  /** The Prometheus the operator knows as the platform provider "test". */
  let prom: LoopbackServer;
  /** Where the operator sends warmup requests (warmupUrlTemplate). */
  let warm: LoopbackServer;

  before(async () => {
    prom = await new LoopbackServer().start();
    warm = await new LoopbackServer().start();
    clock = new OffsetClock();
    op = await startOperator({
      allowedHostSuffixes: ['{namespace}.apps.example.com', shared],
      analysisProviders: [{ name: 'test', url: prom.url }],
      warmupUrlTemplate: `${warm.url}/{namespace}/{revision}{path}`,
    }, { clock, warmupBackoffMs: 50 });
  });
  after(async () => {
    await op?.stop();
    await prom?.stop();
    await warm?.stop();
  });
  beforeEach(async () => { ns = await freshNamespace('gitops'); });

  const spec = (img: string, rollout?: AppSpec['rollout'], extra: Partial<AppSpec> = {}): AppSpec => ({
    container: { image: img, port: 8080 }, scaling: { minScale: 0 }, ...(rollout ? { rollout } : {}), ...extra,
  });

  /**
   * Applies `s` and looks until it serves `img`: InProgress / Progressing from the edit on, then Current / Healthy.
   * Meanwhile `kubectl wait --for=condition=Ready`, started right after the apply, must return only once
   * the edited spec serves: the app read right after it returned serves `img`.
   */
  async function editUntilServed(s: AppSpec, img: string, what: string): Promise<Look> {
    const applied = await look(await applyApp(app(ns, 'shop', s)));
    // What the apply returns: the new generation, the status of the last one the operator judged (none for a new app).
    assert.equal(applied.reading, IN_PROGRESS, `${what}: the applied object reads ${describeLook(applied)}`);
    // (No one-shot kubectl check here: on an idle rig a first version can serve before kubectl has started.)
    const waited = kubectlWait(ns, 'shop', 'Ready', READY_MS);
    waited.catch(() => undefined); // awaited below; a failing look must not leave it unhandled
    const trail = await lookUntil(ns, 'shop', CURRENT_HEALTHY, `${what} serves`, READY_MS, (a) => a.status?.versions?.stable?.image === img);
    onTheWay(trail, IN_PROGRESS, what);
    const served = trail.at(-1)!;
    // kubectl wait --for=condition=Ready returned only once the edited spec's version serves.
    const w = await waited;
    assert.equal(w.run.code, 0, `${what}: kubectl wait --for=condition=Ready returns once it serves: ${w.said}`);
    assert.deepEqual([w.after.reading, w.after.app.status?.versions?.stable?.image], [CURRENT_HEALTHY, img], `${what}: kubectl wait --for=condition=Ready returned before the edited spec served: ${w.said}`);
    await kubectlWaitTimesOut(ns, 'shop', 'Stalled', 0, `${what}, served`);
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
    // The deadline is a minute away on the operator's clock, which runs at real speed: 3 s of waiting stays well inside it.
    await kubectlWaitTimesOut(ns, 'shop', 'Ready', 3_000, 'while the candidate is awaited');
    await kubectlWaitTimesOut(ns, 'shop', 'Stalled', 0, 'before the deadline');

    const stalledWait = kubectlWait(ns, 'shop', 'Stalled', SETTLE_MS);
    stalledWait.catch(() => undefined); // awaited below
    clock.advance(61_000);
    op.apps.controller.enqueueAll();
    const trail = await lookUntil(ns, 'shop', FAILED, 'past the progress deadline', SETTLE_MS);
    onTheWay(trail, IN_PROGRESS, 'until the deadline passed');
    const failed = trail.at(-1)!;
    const stalled = condition(failed.app, 'Stalled');
    assert.equal(stalled?.reason, 'ProgressDeadlineExceeded', describeLook(failed));
    assert.ok(Date.parse(stalled!.lastTransitionTime) - startedAt >= 60_000, `stalled only past the deadline: started ${new Date(startedAt).toISOString()}, stalled ${stalled!.lastTransitionTime}`);
    assert.match(failed.judged.argocd!.message, /progress deadline \(1m\)/, 'Argo CD shows what failed');
    // kubectl wait --for=condition=Stalled, started before the deadline passed, returned on the failed rollout; --for=condition=Ready does not.
    const w = await stalledWait;
    assert.equal(w.run.code, 0, `kubectl wait --for=condition=Stalled returns on the failed rollout: ${w.said}`);
    assert.equal(w.after.reading, FAILED, `kubectl wait --for=condition=Stalled returned on a failed rollout: ${w.said}`);
    await kubectlWaitTimesOut(ns, 'shop', 'Ready', 0, 'the failed rollout');

    // Fix forward: a new image that can start.
    await editUntilServed(spec(image('3')), image('3'), 'a fix-forward edit');
  });

  /** Automated steps checked against the loopback Prometheus: a round per step, two failed rounds fail the candidate. */
  const auto = (extra: AppSpec['rollout'] = {}): AppSpec['rollout'] => ({
    steps: [10, 40], interval: '10s',
    analysis: { prometheus: { provider: 'test' }, checks: [{ name: 'success-rate', query: 'sum(rate(ok{revision="{{revision}}"}[1m]))', min: 0.99 }], failureThreshold: 2 },
    ...extra,
  });
  /** The step's interval has passed: move the clock past it and have the operator look again, instead of waiting. */
  function nextInterval(): void {
    clock.advance(10_001);
    op.apps.controller.enqueueAll();
  }

  it('a canary whose checks fail is Failed / Degraded once they have failed as often as it allows, not before; a retry is InProgress, then Current once promoted', async () => {
    prom.handler = (_r, res) => res.end(promVector(0.5));
    await editUntilServed(spec(image('1')), image('1'), 'v1');
    await applyApp(app(ns, 'shop', spec(image('2'), auto())));
    const toTen = await lookUntil(ns, 'shop', IN_PROGRESS, 'step 1 at 10%', READY_MS, (a) => a.status?.canary?.trafficPercent === 10);
    onTheWay(toTen, IN_PROGRESS, 'an automated canary');
    nextInterval();
    const once = await lookUntil(ns, 'shop', IN_PROGRESS, 'one failed check round of the two allowed', SETTLE_MS, (a) => a.status?.canary?.failedChecks === 1);
    onTheWay(once, IN_PROGRESS, 'the first check round');
    await kubectlWaitTimesOut(ns, 'shop', 'Stalled', 0, 'after one failed round of two');
    nextInterval();
    const trail = await lookUntil(ns, 'shop', FAILED, 'the second failed check round', SETTLE_MS);
    onTheWay(trail, IN_PROGRESS, 'until the second round failed');
    const failed = trail.at(-1)!;
    assert.equal(condition(failed.app, 'Stalled')?.reason, 'AnalysisFailed', describeLook(failed));
    assert.match(failed.judged.argocd!.message, /success-rate/, `Argo CD shows which check failed: ${describeLook(failed)}`);
    await kubectlWaitReturns(ns, 'shop', 'Stalled', 0, 'failed checks');
    await kubectlWaitTimesOut(ns, 'shop', 'Ready', 0, 'failed checks');

    // rollout.retry bumped, the checks passing now: InProgress from the edit (the steps again), Current once promoted.
    prom.handler = (_r, res) => res.end(promVector(1));
    await editUntilServed(spec(image('2'), auto({ retry: 1 })), image('2'), 'a retry');
  });

  it('a canary whose warmup gives up is Failed / Degraded once the warmup deadline it names has passed', async () => {
    warm.handler = (_r, res) => { res.statusCode = 503; res.end('loading'); };
    await editUntilServed(spec(image('1')), image('1'), 'v1');
    warm.requests.length = 0;
    const warmup = { path: '/warm', deadline: '5s', timeout: '1s' };
    const applied = await look(await applyApp(app(ns, 'shop', spec(image('2'), undefined, { prewarm: { warmup } }))));
    assert.equal(applied.reading, IN_PROGRESS, describeLook(applied));
    const trail = await lookUntil(ns, 'shop', FAILED, 'the warmup deadline (5s) passed', READY_MS);
    onTheWay(trail, IN_PROGRESS, 'while the candidate starts and warms');
    const failed = trail.at(-1)!;
    assert.equal(condition(failed.app, 'Stalled')?.reason, 'WarmupFailed', describeLook(failed));
    assert.match(failed.judged.argocd!.message, /warmup/, `Argo CD shows what failed: ${describeLook(failed)}`);
    const candidate = failed.app.status?.versions?.candidate?.revision;
    assert.ok(candidate && warm.requests.some((r) => r.url.startsWith(`/${ns}/${candidate}/warm`)), `warmup was tried against ${candidate}: ${warm.requests.map((r) => r.url).join(', ')}`);
    await kubectlWaitReturns(ns, 'shop', 'Stalled', 0, 'a warmup that gave up');
    await kubectlWaitTimesOut(ns, 'shop', 'Ready', 0, 'a warmup that gave up');
    warm.handler = (_r, res) => res.end('ok');
  });

  it('a paused rollout is Current / Suspended where it stands; resumed, it is InProgress until promoted, then Current / Healthy', async () => {
    await editUntilServed(spec(image('1')), image('1'), 'v1');
    const steps = { steps: [10, 40], interval: '10s' };
    await applyApp(app(ns, 'shop', spec(image('2'), steps)));
    const toTen = await lookUntil(ns, 'shop', IN_PROGRESS, 'step 1 at 10%', READY_MS, (a) => a.status?.canary?.trafficPercent === 10);
    onTheWay(toTen, IN_PROGRESS, 'an automated canary');
    await kubectlWaitTimesOut(ns, 'shop', 'Ready', 0, 'the canary moving at 10%');

    await applyApp(app(ns, 'shop', spec(image('2'), { ...steps, paused: true })));
    const paused = await lookUntil(ns, 'shop', CURRENT_SUSPENDED, 'paused at 10%', SETTLE_MS);
    onTheWay(paused, IN_PROGRESS, 'pausing');
    const held = paused.at(-1)!;
    const percent = held.app.status?.canary?.trafficPercent ?? 0;
    assert.ok(percent > 0 && percent < 100, `held where it stood, mid-canary: ${describeLook(held)}`);
    await kubectlWaitReturns(ns, 'shop', 'Ready', 0, 'a reached pause');
    await kubectlWaitReturns(ns, 'shop', 'Paused', 0, 'a reached pause');

    await editUntilServed(spec(image('2'), steps), image('2'), 'resumed');
    assert.equal(condition(await getApp(ns, 'shop'), 'Paused'), undefined, 'Paused is gone once resumed');
  });

  it('a scale window opening is InProgress / Progressing while it raises the scale, then Current / Healthy', async () => {
    // A daily window an hour ahead on the operator's clock (UTC, on the minute); the clock then jumps to 2 s before it opens.
    const opensAt = new Date(Math.ceil((clock.now().getTime() + 3_600_000) / 60_000) * 60_000);
    const peak = { name: 'peak', schedule: `${opensAt.getUTCMinutes()} ${opensAt.getUTCHours()} * * *`, duration: '1h', timeZone: 'UTC', minScale: 2 };
    await editUntilServed(spec(image('1'), undefined, { scaling: { minScale: 0, maxScale: 5, windows: [peak] } }), image('1'), 'v1 with a scale window');
    const isOpen = (a: ServerlessApp) => a.status?.scaling?.openWindows?.includes('peak') ?? false;
    clock.jumpTo(new Date(opensAt.getTime() - 2_000));
    op.apps.controller.enqueueAll();
    const trail = await lookUntil(ns, 'shop', CURRENT_HEALTHY, 'the window open and its 2 replicas ready', SETTLE_MS, isOpen);
    // Before the window opened the app read Current; from the opening until its replicas were ready, InProgress.
    const opened = trail.filter((l) => isOpen(l.app));
    onTheWay(opened, IN_PROGRESS, 'the window raising the scale');
    // A look that caught the window open before its replicas were ready must say why it is in progress. On a
    // quiet rig the replicas can be ready before any look: the reading itself is table-tested (readiness.test.ts).
    for (const raising of opened.slice(0, -1)) assert.equal(condition(raising.app, 'Reconciling')?.reason, 'WindowOpening', describeLook(raising));
    const served = trail.at(-1)!;
    assert.equal(served.app.status?.versions?.stable?.image, image('1'), `no new version: ${describeLook(served)}`);
    await kubectlWaitReturns(ns, 'shop', 'Ready', 0, 'the window open and its replicas ready');
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
    await kubectlWaitReturns(ns, 'shop', 'Stalled', 0, 'a refused host');

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
