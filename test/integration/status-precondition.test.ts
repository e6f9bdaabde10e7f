// The status is the rollout's only memory, so it is written only over the read
// its plan was made from (issue 33, part 3). On the real API server: a status
// apply bound to an outdated resourceVersion is refused (409), server-side apply
// honouring metadata.resourceVersion as a precondition; and the app controller,
// given a cache that has not seen the app's last change, writes, announces and
// counts nothing, then plans again from the fresh object and records the
// transition once. No operator runs here: the test drives one reconciler and
// chooses what its cache holds.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { parseConfig, validationPolicy } from '../../src/config.ts';
import { ModelCacheQuota } from '../../src/controllers/model-cache-quota.ts';
import { ServerlessAppReconciler } from '../../src/controllers/serverlessapp.ts';
import { istioRoute } from '../../src/planner/route.ts';
import { ApiError, KubeClient } from '../../src/runtime/client.ts';
import { createLogger } from '../../src/runtime/logging.ts';
import { Manager } from '../../src/runtime/manager.ts';
import { StaleRead, StatusWriter } from '../../src/runtime/status.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, getApp, userClient } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { ManualClock } from '../support/manual-clock.ts';

const logger = createLogger({ silent: true });
const ctx = () => ({ log: logger, reconcileID: 'test', signal: new AbortController().signal });

describe('the status write is bound to the read its plan was made from (integration)', function () {
  this.timeout(120_000);
  let ns: string;
  let client: KubeClient;

  before(async () => {
    ns = await freshNamespace('status-read');
    client = new KubeClient(testEnv().kubeConfig(), { fieldManager: 'status-precondition-test' });
  });
  after(() => client?.close());

  /** Another writer moves the app on (a label: no spec, no status change), as a tenant's tooling does. */
  const touch = (name: string, value: string) => userClient().mergePatch(Kinds.ServerlessApp, ns, name, { metadata: { labels: { touched: value } } });

  it('the API server refuses a status apply bound to an outdated resourceVersion (409) and takes it bound to the current one', async () => {
    await applyApp(app(ns, 'bound', { container: { image: 'ghcr.io/acme/bound:1' } }));
    const read = await getApp(ns, 'bound');
    await touch('bound', 'once');
    const writer = new StatusWriter(client);
    await assert.rejects(writer.write(read, { observedGeneration: 1, phase: 'Stable' }),
      (e: unknown) => e instanceof StaleRead && e.cause instanceof ApiError && e.cause.code === 409 && /has been modified/.test(e.cause.message));
    assert.equal((await getApp(ns, 'bound')).status?.phase, 'Pending', 'nothing written');
    assert.equal(await writer.write(await getApp(ns, 'bound'), { observedGeneration: 1, phase: 'Stable' }), true);
    assert.equal((await getApp(ns, 'bound')).status?.phase, 'Stable');
  });

  it('the app controller, planning from an outdated read, records nothing and plans again; from the fresh object it records the transition once', async () => {
    // 08:00:30 UTC on the reconciler's clock: the window "day" (08:00 for 8h) has just opened; the status shows it closed.
    const clock = new ManualClock(new Date('2026-11-23T08:00:30Z'));
    await applyApp(app(ns, 'shop', { container: { image: 'ghcr.io/acme/shop:1' }, scaling: { minScale: 0, maxScale: 10, windows: [{ name: 'day', schedule: '0 8 * * *', duration: '8h', minScale: 2 }] } }));
    await client.apply({ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'shop', namespace: ns },
      status: { observedGeneration: 1, phase: 'Stable', scaling: { minScale: 0, maxScale: 10, openWindows: [], prewarmingWindows: [] } } }, { subresource: 'status' });
    const stale = await getApp(ns, 'shop');
    await touch('shop', 'once');

    const mgr = new Manager({ kubeConfig: testEnv().kubeConfig(), logger, clock, namespaces: [ns] });
    const events: string[] = [];
    mgr.events.record = (_obj, type, reason) => { events.push(`${type} ${reason}`); };
    const opened = async () => (await mgr.metrics.registry.getSingleMetric('serverlessapp_window_transitions_total')!.get()).values.find((v) => v.labels.change === 'open')?.value ?? 0;
    const policy = validationPolicy(parseConfig([], {}));
    const r = new ServerlessAppReconciler(mgr, {
      policy, warmupUrlTemplate: 'http://{revision}-private.{namespace}.svc.cluster.local', llmWarmupUrlTemplate: 'http://{service}.{namespace}.svc.cluster.local:8000', route: istioRoute('knative-local-gateway'),
      inPlaceBounds: true, clusterLocal: true, concurrency: 1, modelCacheScope: 'namespace', cacheQuota: new ModelCacheQuota(policy, 'namespace'),
    });
    // The informers are not started: the app cache holds what the test says.
    let cached: ServerlessApp = stale;
    (r as unknown as { apps: { get: () => ServerlessApp } }).apps = { get: () => cached };
    try {
      assert.deepEqual(await r.reconcile({ namespace: ns, name: 'shop' }, ctx()), { replan: true }, 'refused by the API server: plan again at once');
      assert.deepEqual([events, await opened(), (await getApp(ns, 'shop')).status?.scaling?.openWindows], [[], 0, []], 'nothing written, announced or counted');

      cached = await getApp(ns, 'shop');
      await r.reconcile({ namespace: ns, name: 'shop' }, ctx());
      assert.deepEqual([events, await opened(), (await getApp(ns, 'shop')).status?.scaling?.openWindows], [['Normal WindowOpened'], 1, ['day']]);
      // Run again at once, the cache still holding the read that write replaced, a second later.
      clock.advance(1_000);
      await r.reconcile({ namespace: ns, name: 'shop' }, ctx());
      assert.deepEqual([events, await opened()], [['Normal WindowOpened'], 1], 'the transition is recorded once');
    } finally {
      mgr.client.close();
    }
  });
});
