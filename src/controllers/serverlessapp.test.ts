// The app controller keeps its plan's requeue whatever a write does: a write that
// fails (here every request answers 500) leaves the reconcile as a RetryError
// carrying the next planned look, so the work queue runs the earlier of that
// look and its backoff (runtime/controller.ts), and a window transition or a
// progress deadline never waits for a backoff of up to 1000 s. Nor does a write
// refused because the object is not the app's (NotOwned). An app absent or being
// deleted gets the planner's farewell: nothing written, only memory dropped.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { parseConfig, validationPolicy } from '../config.ts';
import { istioRoute } from '../planner/route.ts';
import { ApiError } from '../runtime/client.ts';
import { RetryError } from '../runtime/controller.ts';
import { createLogger } from '../runtime/logging.ts';
import { Manager } from '../runtime/manager.ts';
import { Kinds, type ResourceKind } from '../util/kinds.ts';
import { containerApp } from '../testing/apps.ts';
import { reply } from '../testing/http.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';
import { ModelCacheQuota } from './model-cache-quota.ts';
import { ServerlessAppReconciler } from './serverlessapp.ts';

/** A reconcile's context in a leadership term that does not end. */
const ctx = () => ({ log: createLogger({ silent: true }), reconcileID: 'test', signal: new AbortController().signal });

describe('ServerlessAppReconciler', () => {
  let server: Server;
  let kubeConfig: KubeConfig;
  const requests: string[] = [];
  type Answer = (method: string, url: string, body: string) => [number, unknown];
  // An API server whose every answer is a 500 (the first write of the plan fails), unless a test answers otherwise.
  const failing: Answer = () => [500, { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'etcdserver: leader changed', reason: 'InternalError', code: 500 }];
  let answer: Answer = failing;
  afterEach(() => { answer = failing; });

  before(async () => {
    server = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      let body = '';
      req.on('data', (c: Buffer) => { body += c.toString('utf8'); }).on('end', () => reply(res, ...answer(req.method ?? '', req.url ?? '', body)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'fake', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'u' }],
      currentContext: 'fake',
    });
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** The reconciler on a manager that is never started; its app cache holds `app` alone. */
  function reconcilerWith(app: ServerlessApp, clock: ManualClock, mgr = new Manager({ kubeConfig, logger: createLogger({ silent: true }), clock })): ServerlessAppReconciler {
    const policy = validationPolicy(parseConfig([], {}));
    const r = new ServerlessAppReconciler(mgr, {
      policy, warmupUrlTemplate: 'http://{revision}-private.{namespace}.svc.cluster.local', llmWarmupUrlTemplate: 'http://{service}.{namespace}.svc.cluster.local:8000', route: istioRoute('knative-local-gateway'),
      inPlaceBounds: true, clusterLocal: true, concurrency: 1, modelCacheScope: 'namespace', cacheQuota: new ModelCacheQuota(policy, 'namespace'),
    });
    // The informer is not started (no watch here): the app is what its cache would hold.
    cache(r, () => app);
    return r;
  }

  /** What the reconciler's app cache holds: `read()`'s answer, for the app's key. */
  function cache(r: ServerlessAppReconciler, read: () => ServerlessApp): void {
    (r as unknown as { apps: { get: (ns: string, name: string) => ServerlessApp | undefined } }).apps = {
      get: (ns, name) => { const app = read(); return ns === app.metadata.namespace && name === app.metadata.name ? app : undefined; },
    };
  }

  // A reconcile that writes a child and then the status is run again at once by the child's watch event,
  // and reads the app from a cache that has not yet seen its own status write. Replayed here against an
  // API server that keeps the app's resourceVersion: each transition is written, announced and counted once.
  describe('a re-run that reads the app as it was before its own status write', () => {
    /** 08:00:30 UTC: the window "day" (08:00 for 8h) has just opened; the app's status still shows it closed. */
    const opening = () => {
      const app = containerApp({ scaling: { minScale: 0, maxScale: 10, windows: [{ name: 'day', schedule: '0 8 * * *', duration: '8h', minScale: 2 }] } });
      return { ...app, metadata: { ...app.metadata, uid: 'u1', generation: 1, resourceVersion: '100' }, status: { observedGeneration: 1, phase: 'Stable', scaling: { minScale: 0, maxScale: 10, openWindows: [], prewarmingWindows: [] } } } as unknown as ServerlessApp;
    };

    /** The app's API server: children are written as asked; the status subresource keeps the app, bound to its resourceVersion. */
    function appServer(initial: ServerlessApp) {
      const server = { app: initial, statusWrites: 0 };
      answer = (method, url, body) => {
        if (method === 'PATCH' && url.includes('/serverlessapps/shop/status')) {
          const applied = JSON.parse(body) as ServerlessApp;
          // As the real one: a write that names no resourceVersion has no precondition.
          if (applied.metadata.resourceVersion !== undefined && applied.metadata.resourceVersion !== server.app.metadata.resourceVersion) {
            return [409, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Conflict', code: 409, message: 'Operation cannot be fulfilled on serverlessapps.serverlessapp.io "shop": the object has been modified; please apply your changes to the latest version and try again' }];
          }
          server.statusWrites++;
          server.app = { ...server.app, metadata: { ...server.app.metadata, resourceVersion: String(Number(server.app.metadata.resourceVersion) + 1) }, status: applied.status };
          return [200, server.app];
        }
        if (method === 'GET') return [404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' }];
        return [200, body ? JSON.parse(body) as object : {}];
      };
      return server;
    }

    function counted(mgr: Manager) {
      const events: string[] = [];
      mgr.events.record = (_obj, type, reason) => { events.push(`${type} ${reason}`); };
      const opened = async () => (await mgr.metrics.registry.getSingleMetric('serverlessapp_window_transitions_total')!.get()).values.find((v) => v.labels.change === 'open')?.value ?? 0;
      return { events, opened };
    }

    it('announces and counts the window\'s opening once: the re-run waits for the cache to show its write', async () => {
      const clock = new ManualClock(new Date('2026-11-23T08:00:30Z'));
      const read = opening();
      const server = appServer(read);
      const mgr = new Manager({ kubeConfig, logger: createLogger({ silent: true }), clock });
      const { events, opened } = counted(mgr);
      const r = reconcilerWith(read, clock, mgr);

      await r.reconcile({ namespace: 'team-a', name: 'shop' }, ctx());
      assert.deepEqual([events, await opened(), server.statusWrites], [['Normal WindowOpened'], 1, 1], 'the first pass writes, announces and counts the opening');
      // The child's watch event runs the key again a second later; the cache still holds the app as read before.
      clock.advance(1_000);
      await r.reconcile({ namespace: 'team-a', name: 'shop' }, ctx());
      assert.deepEqual([events, await opened(), server.statusWrites], [['Normal WindowOpened'], 1, 1], 'the re-run from the old read writes, announces and counts nothing');
      // The cache catches up: the opening is already recorded.
      cache(r, () => server.app);
      await r.reconcile({ namespace: 'team-a', name: 'shop' }, ctx());
      assert.deepEqual([events, await opened()], [['Normal WindowOpened'], 1]);
    });

    it('a status written by another writer since the read: refused (409), planned again at once, nothing announced or counted', async () => {
      const clock = new ManualClock(new Date('2026-11-23T08:00:30Z'));
      const read = opening();
      const server = appServer(read);
      // Another writer (the model-cache controller's condition) moved the app on; the cache has not seen it.
      server.app = { ...read, metadata: { ...read.metadata, resourceVersion: '101' } };
      const mgr = new Manager({ kubeConfig, logger: createLogger({ silent: true }), clock });
      const { events, opened } = counted(mgr);
      // The app informer's update handlers, to play the cache moving on.
      const updates: Array<(a: ServerlessApp, old?: ServerlessApp) => void> = [];
      const informerOf = mgr.informer.bind(mgr);
      mgr.informer = ((kind: ResourceKind, opts?: object) => {
        const i = informerOf(kind, opts);
        if (kind === Kinds.ServerlessApp) {
          const on = i.on.bind(i);
          i.on = (event, handler) => { if (event === 'update') updates.push(handler as (a: ServerlessApp, old?: ServerlessApp) => void); on(event, handler); };
        }
        return i;
      }) as Manager['informer'];
      const r = reconcilerWith(read, clock, mgr);
      const result = await r.reconcile({ namespace: 'team-a', name: 'shop' }, ctx());
      assert.deepEqual([result, events, await opened(), server.statusWrites], [{ replan: true }, [], 0, 0]);
      // Run again at once, the cache not moved on yet: nothing planned, nothing sent.
      requests.length = 0;
      assert.deepEqual([await r.reconcile({ namespace: 'team-a', name: 'shop' }, ctx()), requests], [undefined, []]);
      // The cache's next update of the app brings the key back, whatever it changed (a label edit included).
      const queued: string[] = [];
      r.controller.enqueue = (req) => { queued.push(`${req.namespace}/${req.name}`); };
      const labelled = (a: ServerlessApp) => ({ ...a, metadata: { ...a.metadata, labels: { team: 'web' } } });
      updates.forEach((h) => h(labelled(read), read));
      assert.deepEqual(queued, [], 'not while the cache still shows the outdated read');
      // A label edit alone, which the watch's update filter drops (changedBeyondLabels).
      updates.forEach((h) => h(labelled(server.app), read));
      assert.deepEqual(queued, ['team-a/shop']);
      // Planned again from the fresh object: written, announced and counted once.
      cache(r, () => server.app);
      await r.reconcile({ namespace: 'team-a', name: 'shop' }, ctx());
      assert.deepEqual([events, await opened(), server.statusWrites], [['Normal WindowOpened'], 1, 1]);
    });
  });

  it('a write that fails with a 500 is retried with the plan\'s requeue kept (the next window transition)', async () => {
    // 07:00 UTC; the window "day" opens at 08:00 UTC: the plan's next look is in one hour.
    const clock = new ManualClock(new Date('2026-11-23T07:00:00Z'));
    const app = containerApp({ scaling: { minScale: 0, maxScale: 10, windows: [{ name: 'day', schedule: '0 8 * * *', duration: '8h', minScale: 2 }] } });
    const r = reconcilerWith(app, clock);
    requests.length = 0;
    const err = await r.reconcile({ namespace: 'team-a', name: 'shop' }, ctx()).then(
      () => assert.fail('the reconcile should fail: every write answers 500'),
      (e: unknown) => e,
    );
    assert.ok(requests.some((x) => x.includes('/services/shop')), `the workload's write reached the API server (requests: ${requests.join(', ')})`);
    assert.ok(err instanceof RetryError, `a RetryError, not ${String(err)}`);
    // Just past 08:00 (the planner looks a moment after a transition, when it has happened).
    assert.ok(err.requeueAfterMs !== undefined && err.requeueAfterMs >= 3_600_000 && err.requeueAfterMs <= 3_601_000, `the next window transition is kept (requeue ${err.requeueAfterMs} ms)`);
    assert.ok(err.cause instanceof ApiError && err.cause.code === 500, 'the API server\'s answer is its cause');
  });

  it('a write refused because the object is not the app\'s (NotOwned) keeps the plan\'s requeue', async () => {
    const clock = new ManualClock(new Date('2026-11-23T07:00:00Z'));
    const app = containerApp({ scaling: { minScale: 0, maxScale: 10, windows: [{ name: 'day', schedule: '0 8 * * *', duration: '8h', minScale: 2 }] } });
    // The app's Knative Service exists and another app controls it; everything else is written as asked.
    answer = (method, url, body) => {
      if (method === 'GET' && url.includes('/services/shop')) {
        return [200, { apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'shop', namespace: 'team-a', uid: 'u-other',
          ownerReferences: [{ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', name: 'other', uid: 'u-x', controller: true }] } }];
      }
      if (method === 'GET') return [404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' }];
      return [200, { ...app, ...(body ? JSON.parse(body) as object : {}) }];
    };
    const r = reconcilerWith(app, clock);
    requests.length = 0;
    const result = await r.reconcile({ namespace: 'team-a', name: 'shop' }, ctx());
    assert.ok(requests.some((x) => x.startsWith('PATCH') && x.includes('/serverlessapps/shop/status')), `the refusal is written to status (requests: ${requests.join(', ')})`);
    assert.ok(!requests.some((x) => x.startsWith('PATCH') && x.includes('/services/shop')), 'the other app\'s Service is not written');
    const after = result?.requeueAfterMs;
    assert.ok(after !== undefined && after >= 3_600_000 && after <= 3_601_000, `the next window transition is kept (requeue ${after} ms)`);
  });

  // The planner's farewell, executed: nothing reaches the API server (children go with their owner by
  // garbage collection), and what is dropped from memory is what the farewell names.
  const deleting = { ...containerApp(), metadata: { ...containerApp().metadata, deletionTimestamp: '2026-11-23T06:59:00Z' } };
  const farewells: Array<[string, ServerlessApp, string, { work: string[]; records: string[] }]> = [
    ['an app being deleted: its in-memory work is dropped, nothing is written', deleting, 'shop', { work: ['team-a/shop'], records: [] }],
    ['an app the cache no longer holds: its in-memory work and its status and metrics records are dropped', containerApp(), 'gone', { work: ['team-a/gone'], records: ['team-a/gone', 'team-a/gone'] }],
  ];
  for (const [name, app, asked, want] of farewells) {
    it(name, async () => {
      const r = reconcilerWith(app, new ManualClock(new Date('2026-11-23T07:00:00Z')));
      const dropped = { work: [] as string[], records: [] as string[] };
      r.effects.forget = (key) => { dropped.work.push(key); };
      const recorder = { forget: (ns: string, n: string) => { dropped.records.push(`${ns}/${n}`); }, behind: () => false };
      Object.assign(r as unknown as object, { status: recorder, metrics: recorder });
      // A farewell needs only the app: its children, hosts and budgets are not read.
      const caches = (r as unknown as { caches: { children: (...a: unknown[]) => unknown } }).caches, children = caches.children.bind(caches);
      let observed = 0;
      caches.children = (...a) => { observed++; return children(...a); };
      requests.length = 0;
      const result = await r.reconcile({ namespace: 'team-a', name: asked }, ctx());
      assert.deepEqual([requests, result, dropped, observed], [[], undefined, want, 0]);
    });
  }
});
