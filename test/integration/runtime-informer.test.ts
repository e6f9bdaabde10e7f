// The informer against a real kube-apiserver, with its connection routed
// through a loopback TCP proxy that the test can cut or freeze: the failures
// that make client-node's own informer stop or hang (#364, #958, #589).
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { Informer } from '../../src/runtime/informer.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { freshNamespace, publishedIntoEveryNamespace, testEnv } from '../support/cluster.ts';
import { assertQuietWindow } from '../support/quiet-window.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

/** The test cluster's admin config, optionally pointed at another address (the proxy). */
function kubeConfig(server?: string): KubeConfig {
  const kc = testEnv().kubeConfig();
  if (server === undefined) return kc;
  const current = kc.getCurrentCluster()!;
  const clusters = kc.getClusters().map((c) => (c.name === current.name ? { ...c, server } : c));
  kc.loadFromOptions({ clusters, users: kc.getUsers(), contexts: kc.getContexts(), currentContext: kc.getCurrentContext() });
  return kc;
}

/** Forwards loopback connections to the API server; can cut them, refuse new ones, or freeze the open ones. */
class TcpProxy {
  refuse = false;
  readonly #pairs = new Set<{ client: Socket; upstream: Socket; frozen: boolean }>();
  readonly #target: URL;
  #server: Server | undefined;

  constructor(target: string) {
    this.#target = new URL(target);
  }

  async start(): Promise<string> {
    this.#server = createServer((client) => {
      if (this.refuse) return client.destroy();
      const upstream = connect(Number(this.#target.port), this.#target.hostname);
      const pair = { client, upstream, frozen: false };
      this.#pairs.add(pair);
      // Bytes (and the FIN) travel only while the pair is not frozen: a frozen pair is a
      // connection a middlebox keeps open while forwarding nothing.
      client.on('data', (b) => pair.frozen || upstream.write(b));
      upstream.on('data', (b) => pair.frozen || client.write(b));
      client.on('end', () => pair.frozen || upstream.end());
      upstream.on('end', () => pair.frozen || client.end());
      const close = () => {
        this.#pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', () => pair.frozen || close());
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return `https://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Resets every open connection. */
  cut(): void {
    for (const p of this.#pairs) p.client.resetAndDestroy();
  }

  /** Open connections stop forwarding but stay open; new ones work. */
  freeze(): void {
    for (const p of this.#pairs) p.frozen = true;
  }

  async stop(): Promise<void> {
    for (const p of this.#pairs) {
      p.client.destroy();
      p.upstream.destroy();
    }
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }
}

describe('Informer against a real API server (integration)', function () {
  this.timeout(600_000);
  const core = () => kubeConfig().makeApiClient(CoreV1Api);
  let ns: string;
  let proxy: TcpProxy | undefined;
  let informer: Informer<V1ConfigMap> | undefined;
  let events: string[];

  const put = (name: string, data: Record<string, string>) => core().createNamespacedConfigMap({ namespace: ns, body: { metadata: { name }, data } });
  const change = async (name: string, data: Record<string, string>) => {
    const cm = await core().readNamespacedConfigMap({ name, namespace: ns });
    await core().replaceNamespacedConfigMap({ name, namespace: ns, body: { ...cm, data } });
  };
  const remove = (name: string) => core().deleteNamespacedConfigMap({ name, namespace: ns });

  function open(kc: KubeConfig, opts: ConstructorParameters<typeof Informer<V1ConfigMap>>[2] = {}): Informer<V1ConfigMap> {
    informer = new Informer<V1ConfigMap>(kc, Kinds.ConfigMap, { namespaces: [ns], backoff: { initialMs: 100, maxMs: 500 }, ...opts });
    // The cluster publishes root certificates into every namespace: not the test's objects.
    for (const e of ['add', 'update', 'delete'] as const) informer.on(e, (o) => { if (!publishedIntoEveryNamespace(o.metadata?.name)) events.push(`${e} ${o.metadata?.name}`); });
    return informer;
  }

  beforeEach(async () => {
    ns = await freshNamespace('informer');
    events = [];
  });

  afterEach(async () => {
    informer?.stop();
    informer = undefined;
    await proxy?.stop();
    proxy = undefined;
  });

  it('syncs what exists, then delivers add, update and delete in order', async () => {
    await put('before', { v: '1' });
    const inf = open(kubeConfig());
    await inf.start();
    assert.deepEqual(events, ['add before']);
    assert.equal(inf.get(ns, 'before')?.data?.['v'], '1');
    assert.equal(inf.get(ns, 'before')?.metadata?.managedFields, undefined);

    await put('live', { v: '1' });
    await change('live', { v: '2' });
    await remove('live');
    await waitFor('three watch events', () => events.length === 4, { timeoutMs: SETTLE_MS });
    assert.deepEqual(events, ['add before', 'add live', 'update live', 'delete live']);
    assert.equal(inf.get(ns, 'live'), undefined);
    assert.equal(inf.stats.restarts, 0);
  });

  it('relists after its connection is cut and catches up with what changed meanwhile', async () => {
    await put('kept', { v: '1' });
    await put('changed', { v: '1' });
    await put('deleted', { v: '1' });
    proxy = new TcpProxy(kubeConfig().getCurrentCluster()!.server);
    const inf = open(kubeConfig(await proxy.start()));
    await inf.start();
    events = [];

    proxy.refuse = true;
    proxy.cut();
    await change('changed', { v: '2' });
    await remove('deleted');
    await put('created', { v: '1' });
    const cut = proxy;
    await assertQuietWindow({
      what: 'events arrived while the API server was unreachable', windowMs: 300, observe: () => [...events],
      control: () => { cut.refuse = false; },
    });

    await waitFor('the relist', () => events.length === 3, { timeoutMs: SETTLE_MS });
    assert.deepEqual(events.sort(), ['add created', 'delete deleted', 'update changed']);
    assert.ok(inf.stats.restarts >= 1);
    assert.equal(inf.get(ns, 'changed')?.data?.['v'], '2');
  });

  it('aborts a watch whose connection stays open but forwards nothing, and recovers', async () => {
    proxy = new TcpProxy(kubeConfig().getCurrentCluster()!.server);
    const reasons: string[] = [];
    const inf = open(kubeConfig(await proxy.start()), { watchdogMs: 5_000, hooks: { onRestart: (r) => reasons.push(r) } });
    await inf.start();
    await put('probe', {});
    await waitFor('the watch to deliver', () => events.includes('add probe'), { timeoutMs: SETTLE_MS });

    proxy.freeze();
    const frozenAt = performance.now();
    await put('during-stall', {});
    await waitFor('the object created during the stall', () => inf.get(ns, 'during-stall') !== undefined, { timeoutMs: SETTLE_MS });
    const tookMs = performance.now() - frozenAt;
    assert.ok(reasons.includes('watchdog'), `the watchdog restarted the watch (restarts: ${reasons.join(', ')})`);
    assert.ok(tookMs >= 3_000, `the frozen watch delivered nothing until the watchdog fired (${Math.round(tookMs)} ms)`);
  });

  it('keeps its cache current across an API server restart', async function () {
    // A restart is a new kube-apiserver becoming ready (up to 90 s on a loaded machine), then the informer's relist.
    this.timeout(600_000);
    await put('before', {});
    const inf = open(kubeConfig());
    await inf.start();
    await testEnv().restartApiServer();
    await put('after', {});
    await change('before', { v: '2' });
    await waitFor('the informer\'s cache to hold the changes made after the API server restarted', () => inf.get(ns, 'after') !== undefined && inf.get(ns, 'before')?.data?.['v'] === '2', { timeoutMs: 120_000 });
    assert.ok(inf.stats.restarts >= 1);
  });

  it('keeps watching a cluster-wide scope across namespaces', async () => {
    const second = await freshNamespace('informer');
    const label = { test: ns };
    const create = (namespace: string, name: string, labels?: Record<string, string>) =>
      core().createNamespacedConfigMap({ namespace, body: { metadata: { name, ...(labels ? { labels } : {}) }, data: { v: '1' } } });
    // Before the start, in both namespaces: the initial list must span them.
    for (const namespace of [ns, second]) {
      await create(namespace, 'unlabelled');
      await create(namespace, 'labelled', label);
    }
    const inf = new Informer<V1ConfigMap>(kubeConfig(), Kinds.ConfigMap, { labelSelector: `test=${ns}` });
    informer = inf;
    const held = () => inf.list().map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort();
    await inf.start();
    assert.deepEqual(held(), [`${ns}/labelled`, `${second}/labelled`].sort(), 'the initial list holds the labelled objects of both namespaces, and only those');

    // After the start, in the second namespace: the one watch must span it too. It delivers in
    // resourceVersion order, so once the last change has arrived, the objects created before it would have too.
    await create(second, 'late-unlabelled');
    await create(second, 'late-labelled', label);
    const cm = await core().readNamespacedConfigMap({ name: 'labelled', namespace: second });
    await core().replaceNamespacedConfigMap({ name: 'labelled', namespace: second, body: { ...cm, data: { v: '2' } } });
    await waitFor('the change in the second namespace', () => inf.get(second, 'labelled')?.data?.['v'] === '2', { timeoutMs: SETTLE_MS });
    assert.deepEqual(held(), [`${ns}/labelled`, `${second}/labelled`, `${second}/late-labelled`].sort(), 'the watch adds the labelled object created in the second namespace, and only that one');
  });
});
