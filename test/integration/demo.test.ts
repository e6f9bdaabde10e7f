// `npm run demo` must keep working: its story runs here against the test run's
// rig (the real Knative Serving and KServe on KWOK nodes), with the operator on
// the demo clock, in a namespace of its own. The story fails itself when a step
// does not converge.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { DEMO_CLOCK_START, runStory } from '../../demo/story.ts';
import { formatApps } from '../../demo/table.ts';
import { getApp } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { LoopbackServer } from '../support/http-server.ts';
import { startOperator, testKubeConfig, type RunningOperator } from '../support/operator.ts';

describe('the demo story (integration)', function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let warmup: LoopbackServer;
  let ns: string;
  let clock: OffsetClock;

  before(async () => {
    ns = await freshNamespace('demo');
    warmup = await new LoopbackServer().start();
    clock = new OffsetClock(new Date(DEMO_CLOCK_START));
    op = await startOperator({
      namespaces: [ns], allowedGateways: ['istio-system/public-gateway'],
      warmupUrlTemplate: `${warmup.url}/{namespace}/{revision}{path}`,
    }, { clock, warmupBackoffMs: 50 });
  });
  after(async () => {
    await op?.stop();
    await warmup?.stop();
  });

  it('tells the whole story: ready and prewarmed, canary at 20%, header route, promotion, window opens and closes', async () => {
    const lines: string[] = [];
    await runStory({
      // Per step: real Knative takes seconds per revision, and scales an idle revision to zero in about a minute.
      kubeConfig: testKubeConfig(), namespace: ns, clock, timeoutMs: 180_000,
      resync: () => op.apps.controller.enqueueAll(),
      warmupRequests: () => warmup.requests,
      print: (text) => lines.push(...text.split('\n')),
    });
    const out = lines.join('\n');

    const done = lines.filter((l) => /^\s+\[[a-f]: done\]$/.test(l)).map((l) => l.trim());
    assert.deepEqual(done, ['[a: done]', '[b: done]', '[c: done]', '[d: done]', '[e: done]', '[f: done]']);
    assert.equal(warmup.requests.filter((r) => r.method === 'POST' && r.url.endsWith('/v1/models/fraud:predict')).length, 5, 'five warmup requests');
    assert.match(out, /loopback server answered the 5 warmup requests/);
    assert.match(out, /^\s+shop-\S+\s+80%\s+stable\s/m, 'the 80/20 split is printed');
    assert.match(out, /^\s+shop-\S+\s+20%\s+candidate\s/m);
    assert.match(out, /candidate-by-header\s+x-canary exact "always"\s+-> candidate-shop\./);
    assert.match(out, /condition Promoted=True/);
    for (const reason of ['CanaryWeightChanged', 'Promoted', 'WindowOpened', 'WindowClosed']) assert.match(out, new RegExp(`Event Normal ${reason} on shop`));

    const shop = await getApp(ns, 'shop');
    assert.equal(shop.status?.versions?.stable?.image, 'ghcr.io/acme/shop:1.5.0');
    assert.equal(shop.status?.scaling?.minScale, 0);
    assert.equal(shop.status?.scaling?.nextTransition?.at, '2026-11-24T07:00:00.000Z', 'next opening: Tuesday 08:00 Berlin');
  });
});

describe('the demo table', () => {
  it('prints apps like kubectl get sapp -o wide, sorted by name, with empty cells for what is not set', () => {
    const app = (name: string, status: ServerlessApp['status']): ServerlessApp => ({
      apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name, namespace: 'demo' }, spec: {}, ...(status ? { status } : {}),
    });
    const ready = { type: 'Ready', status: 'True' as const, reason: 'Serving', message: '', lastTransitionTime: '2026-11-23T07:00:00Z' };
    const table = formatApps([
      app('shop', { phase: 'Canary', url: 'http://shop.demo.example.com', conditions: [ready], versions: { stable: { version: 'abc' } }, canary: { weight: 20 }, scaling: { minScale: 2, maxScale: 10 } }),
      app('api', undefined),
    ]);
    assert.equal(table, [
      'NAME   READY   URL                            VERSION   CANARY %   MIN   MAX   PHASE',
      'api',
      'shop   True    http://shop.demo.example.com   abc       20         2     10    Canary',
    ].join('\n'));
  });
});
