// The demo's story, told against whatever cluster and operator it is given:
// two example apps become Ready (the model one prewarmed), the web app gets a
// canary, a header route and a promotion; a bad version is rolled back, a good
// one moves through automated steps gated by a Prometheus check; a model
// version fails its warmup and a retry promotes it; then a scale window with a
// lead time prewarms, opens and closes on the demo clock; with KServe's llmisvc
// manager, an LLM's rollout by group weights (story-llm.ts). Each step edits the
// spec as a user would, waits for the real status and Events and prints what
// `kubectl` would show. `npm run demo` runs it on a local control plane;
// test/integration/demo.test.ts runs it so it cannot rot. The rollout steps
// beyond the plain canary are in story-rollouts.ts. Under the gateway-api
// router (`npm run demo -- --router gateway-api`) the same story shows the
// HTTPRoute, its weights and the status istiod wrote, where it shows the
// VirtualService under istio.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { Kinds } from '../src/util/kinds.ts';
import { condition, Observer, routeAccepted, routeWeights } from './observe.ts';
import type { Scene, StoryEnv } from './scene.ts';
import { automatedSteps, failedWarmup, rollBack } from './story-rollouts.ts';
import { llmRollout } from './story-llm.ts';
import { replaySessions, SHOP_STICKINESS } from './story-sessions.ts';
import { berlinTime, formatApps, formatHttpRoute, formatRevisions, formatRoutes, ROUTES_SIMULATED, type GatewayHttpRoute, type RevisionRow } from './table.ts';

/**
 * Monday 23 November 2026, 07:00:00 in Berlin (CET, UTC+1): an hour before
 * business hours. Steps a) to g) take a few minutes on the real Knative and
 * move the clock by two rollout intervals, so the window step fast-forwards it
 * to just before the window's lead time rather than turning it back.
 */
export const DEMO_CLOCK_START = '2026-11-23T06:00:00Z';
const WINDOW_OPENS = new Date('2026-11-23T07:00:00Z'); // 08:00 Berlin
const WINDOW = { name: 'business-hours', schedule: '0 8 * * 1-5', duration: '10h', timeZone: 'Europe/Berlin', minScale: 2 };
const WINDOW_CLOSES = new Date(WINDOW_OPENS.getTime() + 10 * 3600_000); // 18:00 Berlin
/** prewarm.leadTime: the window's minimum applies this long before it opens (07:59 Berlin). */
const LEAD_TIME = { text: '1m', ms: 60_000 };
const PREWARM_FROM = new Date(WINDOW_OPENS.getTime() - LEAD_TIME.ms);
const NEW_IMAGE = 'ghcr.io/acme/shop:1.5.0';

const examplesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'examples');

/** The live revision carries the app's effective bounds and every other revision is idle at 0 replicas. */
function settled(app: ServerlessApp, revisions: RevisionRow[]): boolean {
  const live = revisions.find((r) => r.name === app.status?.versions?.stable?.revision);
  return live?.minScale === String(app.status?.scaling?.minScale) && revisions.every((r) => r === live || (r.percent === 0 && r.replicas === 0));
}

function example(file: string, namespace: string): ServerlessApp {
  const app = parse(readFileSync(join(examplesDir, file), 'utf8')) as ServerlessApp;
  app.metadata.namespace = namespace;
  return app;
}

export async function runStory(env: StoryEnv): Promise<void> {
  const see = new Observer(env.kubeConfig, env.namespace, env.timeoutMs ?? 120_000);
  const { print, clock } = env;
  const ns = env.namespace;
  const shop = example('web-app-canary.yaml', ns);
  const fraud = example('model-gpu-prewarm.yaml', ns);
  const apply = (app: ServerlessApp) => see.client.apply(app);
  const gatewayApi = env.router === 'gateway-api';
  if (gatewayApi) {
    if (!env.gateway) throw new Error('the gateway-api router needs the parent Gateway ("namespace/name") the story attaches shop\'s route to');
    // An HTTPRoute needs a parent, and HTTPRoute retries are experimental-channel only (the operator refuses both under this router).
    const { retries: _retries, ...ingress } = shop.spec.ingress!;
    shop.spec.ingress = { ...ingress, gateways: [env.gateway] };
  }
  const route = (name: string) => `${name}-routes`;
  /** Under gateway-api: waits until istiod has accepted shop's HTTPRoute with `check` true of it. */
  const acceptedRoute = (what: string, check: (r: GatewayHttpRoute) => boolean) => see.until(`${what}, accepted by istiod`, ['shop'], async () => {
    const r = await see.httpRoute(route('shop'));
    return r && check(r) && routeAccepted(r) ? r : undefined;
  });
  const weightsText = (r: GatewayHttpRoute) => Object.entries(routeWeights(r)).map(([rev, w]) => `${rev} ${w}`).join(', ');

  async function show(apps: ServerlessApp[], note: string[], done?: string): Promise<void> {
    print(`\n$ kubectl get sapp -n ${ns} -o wide        # demo clock: ${berlinTime(clock.now())}`);
    print(formatApps(await Promise.all([shop, fraud].map((a) => see.app(a.metadata.name)))));
    for (const app of apps) print(formatRevisions(app.metadata.name, await see.revisions(app)));
    for (const line of note) print(`  > ${line}`);
    const events = await see.newEvents([shop.metadata.name, fraud.metadata.name]);
    for (const line of events.length ? events : ['(no new Events)']) print(`  > ${line}`);
    if (done) print(`  [${done}: done]`);
  }
  const heading = (text: string) => print(`\n==== ${text} ${'='.repeat(Math.max(0, 72 - text.length))}`);
  const jump = (to: Date, why: string) => {
    const from = clock.now();
    clock.jumpTo(to);
    env.resync();
    print(`demo clock ${to >= from ? 'moved forward' : 'set back'} from ${berlinTime(from)} to ${berlinTime(to)}: ${why} (the operator re-reads every app)`);
  };
  const scene: Scene = { env, see, shop, fraud, apply, heading, show, jump };

  try {
    heading(`a) two apps from examples/ in namespace ${ns}`);
    await see.client.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, { kind: Kinds.Namespace });
    await apply(shop);
    await apply(fraud);
    print(`applied examples/web-app-canary.yaml (shop: a container app) and examples/model-gpu-prewarm.yaml (fraud: a GPU model)`);
    if (gatewayApi) {
      print(`router gateway-api: shop's ingress.gateways set to [${env.gateway}] (an HTTPRoute needs a parent Gateway) and its ingress.retries removed `
        + '(HTTPRoute retries are experimental-channel only in Gateway API v1.6.3: the operator refuses them under this router)');
    }
    print('waiting for both to be Ready; fraud is prewarmed first: 2 ready replicas and 5 warmup requests...');
    let maxFraudReplicas = 0;
    const [shopA, fraudA] = await see.until('both apps Ready with a URL, fraud prewarmed, bounds settled', ['shop', 'fraud'], async (apps) => {
      const [s, f] = [apps.get('shop')!, apps.get('fraud')!];
      const fraudRevisions = await see.revisions(f);
      for (const r of fraudRevisions) maxFraudReplicas = Math.max(maxFraudReplicas, r.replicas ?? 0);
      const ok = condition(s, 'Ready')?.status === 'True' && s.status?.url && condition(f, 'Ready')?.status === 'True' && f.status?.url
        && condition(f, 'Prewarmed')?.status === 'True' && settled(f, fraudRevisions)
        && await see.hasEvent('shop', 'Ready') && await see.hasEvent('fraud', 'Ready');
      return ok ? [s, f] as const : undefined;
    });
    const warmups = env.warmupRequests();
    const p = fraudA.status?.prewarm;
    await show([shopA, fraudA], [
      'both Ready with a URL: Knative created their revisions (KServe the model\'s predictor) and reported them ready once KWOK ran their pods (simulated nodes: no container runs)',
      `fraud prewarmed before it served: held at >= ${fraud.spec.prewarm?.replicas} ready replicas (highest seen: ${maxFraudReplicas}), `
        + `warmup ${p?.succeeded ?? 0}/${fraud.spec.prewarm?.warmup?.count} succeeded, warm at ${p?.warmedAt ? berlinTime(new Date(p.warmedAt)) : '?'}; then the buffer was released `
        + 'on the live revision in place (Knative >= 1.21: no new predictor revision); Knative\'s autoscaler scales the extra replica away after its stable window',
      `SIMULATED model server: the demo's loopback server answered the ${warmups.length} warmup requests (${[...new Set(warmups.map((r) => `${r.method} ${r.url}`))].join(', ')}); `
        + 'on a cluster they go to the revision\'s private Service',
      ...(fraudA.status?.modelCache ? [`model cached on the nodes: ${fraudA.status.modelCache} (KServe LocalModelNamespaceCache, driven by KServe's local model controller and node agent; SIMULATED download: the rig writes the model's folder on the node, nothing is fetched)`] : []),
    ], 'a');

    heading('b) a new version of shop at 20%, each browser session kept on its version');
    shop.spec.container!.image = NEW_IMAGE;
    shop.spec.rollout = { canaryPercent: 20, stickiness: SHOP_STICKINESS };
    await apply(shop);
    print(`edited shop: container.image ${NEW_IMAGE}, rollout.canaryPercent 20, rollout.stickiness {cookieName: ${SHOP_STICKINESS.cookieName}}`);
    const shopB = await see.until('shop split 80/20 between stable and candidate', ['shop'], async (apps) => {
      const s = apps.get('shop')!;
      const split = (s.status?.traffic ?? []).map((t) => `${t.tag}=${t.percent}`).sort().join(',');
      return s.status?.phase === 'Canary' && s.status.canary?.weight === 20 && split === 'candidate=20,stable=80'
        && await see.hasEvent('shop', 'CanaryWeightChanged') ? s : undefined;
    });
    const routeB = gatewayApi
      ? await acceptedRoute('the HTTPRoute split 80/20', (r) => routeWeights(r)[shopB.status!.versions!.candidate!.revision!] === 20)
      : undefined;
    await show([shopB], [
      `the candidate (${shopB.status?.versions?.candidate?.revision}) gets 20% of new sessions, stable keeps 80%; each has its own tag URL; a response names the version it reached in cookie ${SHOP_STICKINESS.cookieName}, and the session stays there`,
      ...(routeB ? [`HTTPRoute ${route('shop')} default rule: ${weightsText(routeB)} (weights on the revisions' Services; Accepted and ResolvedRefs by istiod)`] : []),
      ROUTES_SIMULATED,
    ], 'b');

    heading('c) testers reach the candidate with a header');
    shop.spec.rollout = { canaryPercent: 20, match: [{ header: 'x-canary', exact: 'always' }], stickiness: SHOP_STICKINESS };
    await apply(shop);
    print('edited shop: rollout.match [{header: x-canary, exact: always}]');
    if (gatewayApi) {
      const r = await acceptedRoute('a header rule to the candidate in the HTTPRoute', (x) => !!x.spec.rules?.some((rule) => rule.name === 'candidate-by-header'));
      print(`\n$ kubectl get httproute ${route('shop')} -n ${ns} -o yaml      # hostnames ${r.spec.hostnames?.join(',')}, `
        + `parentRefs ${(r.spec.parentRefs ?? []).map((p) => `${p.namespace}/${p.name}`).join(',')}`);
      print(formatHttpRoute(route('shop'), r));
    } else {
      const vs = await see.until('a header-matched route to the candidate in the VirtualService', ['shop'], async () => {
        const v = await see.virtualService(route('shop'));
        return v?.spec.http?.some((r) => r.name === 'candidate-by-header') ? v : undefined;
      });
      print(`\n$ kubectl get virtualservice shop -n ${ns}      # hosts ${vs.spec.hosts?.join(',')}, gateways ${vs.spec.gateways?.join(',') ?? 'mesh'}`);
      print(formatRoutes('shop', vs.spec.http ?? []));
    }
    print(`  (${ROUTES_SIMULATED})`);
    const shopC = await see.app('shop');
    const sessions = !gatewayApi && env.proxyConfig ? await replaySessions(scene, shopC, env.proxyConfig) : [];
    await show([shopC], ['requests with "x-canary: always" go to the candidate whatever the weights or cookie; sessions stay on their version; new sessions follow the 80/20 split', ...sessions], 'c');

    heading('d) promote: canaryPercent 100');
    shop.spec.rollout = { canaryPercent: 100, stickiness: SHOP_STICKINESS };
    await apply(shop);
    print('edited shop: rollout.canaryPercent 100 (and the header rule removed): every session moves to the new version');
    const shopD = await see.until('shop promoted (Promoted=True, all traffic on the new version)', ['shop'], async (apps) => {
      const s = apps.get('shop')!;
      const all = s.status?.traffic?.length === 1 && s.status.traffic[0]?.percent === 100;
      const idle = (await see.revisions(s)).filter((r) => r.percent === 0);
      return s.status?.phase === 'Stable' && s.status.versions?.stable?.image === NEW_IMAGE && !s.status.versions.candidate && all
        && idle.every((r) => r.replicas === 0) && condition(s, 'Promoted')?.status === 'True' && await see.hasEvent('shop', 'Promoted') ? s : undefined;
    });
    const promoted = condition(shopD, 'Promoted')!;
    const promotedRevision = shopD.status!.versions!.stable!.revision!;
    const routeD = gatewayApi
      ? await acceptedRoute('the HTTPRoute sending everything to the promoted revision', (r) => JSON.stringify(routeWeights(r)) === JSON.stringify({ [promotedRevision]: 100 }))
      : undefined;
    await show([shopD], [
      `condition Promoted=${promoted.status} (${promoted.reason}): ${promoted.message}`,
      'the old revision is idle: no traffic, scaled to zero',
      ...(routeD ? [`HTTPRoute ${route('shop')}: ${weightsText(routeD)}, one rule (the header rule removed); Accepted and ResolvedRefs by istiod`] : []),
    ], 'd');
    if (env.lastStep === 'd') {
      print('\n(the story stops here: told through step d)');
      return;
    }

    await rollBack(scene);
    await automatedSteps(scene);
    await failedWarmup(scene);

    heading('h) a scale window with a lead time: replicas up before it opens');
    const toLead = PREWARM_FROM.getTime() - clock.now().getTime();
    if (toLead < 3_000 || toLead > 20_000) jump(new Date(PREWARM_FROM.getTime() - 8_000), 'the window\'s lead time begins in 8 s');
    shop.spec.scaling = { ...shop.spec.scaling, windows: [WINDOW] };
    shop.spec.prewarm = { leadTime: LEAD_TIME.text };
    await apply(shop);
    print(`edited shop: scaling.windows [{name: business-hours, schedule: "0 8 * * 1-5", duration: 10h, timeZone: Europe/Berlin, minScale: 2}], prewarm.leadTime ${LEAD_TIME.text}`);
    const pending = await see.until('the lead time\'s start as the next transition', ['shop'], (apps) => {
      const next = apps.get('shop')!.status?.scaling?.nextTransition;
      return next?.change === 'prewarm' && next.at === PREWARM_FROM.toISOString() ? next : undefined;
    });
    print(`status.scaling.nextTransition: ${pending.change} ${pending.window} at ${berlinTime(new Date(pending.at))} -> minScale ${pending.minScale} (the window opens at 08:00; its minimum applies ${LEAD_TIME.text} before)`);
    print(`waiting for the demo clock to pass 07:59 (${Math.max(0, Math.ceil((PREWARM_FROM.getTime() - clock.now().getTime()) / 1000))} s of real time)...`);
    const liveOf = async (s: ServerlessApp) => (await see.revisions(s)).find((r) => r.name === s.status?.versions?.stable?.revision);
    const shopH = await see.until('window business-hours prewarming: min-scale 2 on the live revision before the opening', ['shop'], async (apps) => {
      const s = apps.get('shop')!;
      const live = await liveOf(s);
      return s.status?.scaling?.minScale === 2 && s.status.scaling.prewarmingWindows?.includes(WINDOW.name) && !s.status.scaling.openWindows?.length
        && live?.minScale === '2' && live.replicas === 2 && await see.hasEvent('shop', 'WindowPrewarming') ? s : undefined;
    });
    await show([shopH], [
      `status.scaling.prewarmingWindows: [${shopH.status?.scaling?.prewarmingWindows?.join(', ')}], openWindows: [] : the window is not open yet, but its minScale 2 applies ${LEAD_TIME.text} early`,
      `so the live revision ${shopH.status?.versions?.stable?.revision} has its 2 replicas ready before 08:00 (min-scale set in place, no new revision)`,
      `next transition: ${shopH.status?.scaling?.nextTransition?.change} at ${berlinTime(new Date(shopH.status!.scaling!.nextTransition!.at))}`,
    ]);
    jump(new Date(WINDOW_OPENS.getTime() - 3_000), 'the window opens in 3 s');
    const shopH2 = await see.until('window business-hours open with min-scale 2 on the live revision', ['shop'], async (apps) => {
      const s = apps.get('shop')!;
      const live = await liveOf(s);
      return s.status?.scaling?.minScale === 2 && s.status.scaling.openWindows?.includes(WINDOW.name) && !s.status.scaling.prewarmingWindows?.length
        && live?.minScale === '2' && await see.hasEvent('shop', 'WindowOpened') ? s : undefined;
    });
    await show([shopH2], [
      `window open at 08:00 with its replicas already up: min-scale 2 stays on the live revision ${shopH2.status?.versions?.stable?.revision} (no new revision, no new version)`,
      `next transition: ${shopH2.status?.scaling?.nextTransition?.change} at ${berlinTime(new Date(shopH2.status!.scaling!.nextTransition!.at))}`,
    ], 'h');

    heading('i) the window closes: back to scale-to-zero');
    jump(new Date(WINDOW_CLOSES.getTime() - 2_000), '2 s before the window closes');
    const shopI = await see.until('window closed, min-scale 0 and the idle revisions at 0 replicas', ['shop'], async (apps) => {
      const s = apps.get('shop')!;
      const revs = await see.revisions(s);
      const live = revs.find((r) => r.name === s.status?.versions?.stable?.revision);
      const idle = revs.filter((r) => r.percent === 0);
      return s.status?.scaling?.minScale === 0 && s.status.scaling.openWindows?.length === 0 && live?.minScale === '0'
        && idle.length > 0 && idle.every((r) => r.replicas === 0) && await see.hasEvent('shop', 'WindowClosed') ? s : undefined;
    });
    const liveReplicas = (await liveOf(shopI))?.replicas;
    await show([shopI], [
      'MIN 0: nothing holds replicas any more; the idle revisions report 0 replicas',
      `Knative's autoscaler keeps the live revision's ${liveReplicas ?? '?'} replicas until it has seen no requests for `
        + `${shop.spec.scaling?.scaleToZeroAfter ?? 'its retention period'} (scaleToZeroAfter), then scales it to zero; no request reaches it here (the network is simulated)`,
      `next transition: ${shopI.status?.scaling?.nextTransition?.change} at ${berlinTime(new Date(shopI.status!.scaling!.nextTransition!.at))} (Tuesday's lead time)`,
    ], 'i');
    if (env.llm) await llmRollout(scene);
  } finally {
    see.close();
  }
}
