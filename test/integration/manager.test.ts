// The manager against a real API server: probes and metrics, shared informers
// feeding controllers, and leader election between two replicas.
import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest, type RequestOptions as HttpsRequestOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { KubeClient } from '../../src/runtime/client.ts';
import { RestConfig } from '../../src/runtime/kubeconfig.ts';
import { Controller, type Request } from '../../src/runtime/controller.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { createLogger } from '../../src/runtime/logging.ts';
import { Manager, type ManagerOptions } from '../../src/runtime/manager.ts';
import { freshNamespace, publishedIntoEveryNamespace, testEnv } from '../support/cluster.ts';
import { assertQuietWindow } from '../support/quiet-window.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';
import { waitIdle } from '../support/idle.ts';

interface ConfigMap {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  data?: Record<string, string>;
}

interface Lease {
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

const logger = createLogger({ level: process.env.OPERATOR_LOG_LEVEL ?? 'info', silent: !process.env.OPERATOR_LOG_LEVEL });

const kubeConfig = (): KubeConfig => testEnv().kubeConfig();

const managers: Manager[] = [];

function newManager(opts: Partial<ManagerOptions> = {}): Manager {
  const m = new Manager({ kubeConfig: kubeConfig(), metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0', logger, ...opts });
  managers.push(m);
  return m;
}

/** A controller that records the ConfigMaps it reconciles. */
function recordingController(mgr: Manager, name = 'configmaps') {
  const seen: Request[] = [];
  const controller = new Controller({
    name, logger: mgr.logger, metrics: mgr.metrics, concurrency: 2,
    reconcile: async (req) => {
      seen.push(req);
    },
  }).watches(mgr.informer<ConfigMap>(Kinds.ConfigMap), (cm) => [{ namespace: cm.metadata.namespace, name: cm.metadata.name }]);
  mgr.add(controller);
  return seen;
}

/**
 * A plain-HTTP reverse proxy on loopback to the API server, with the test's credentials, that holds a
 * write of a ConfigMap named held-* (a slow admission webhook, an overloaded server): sent on when the
 * test releases it, and only if its client is still waiting for it.
 */
class HoldingProxy {
  held: { cut: boolean; release: () => Promise<boolean> } | undefined;
  readonly url: string;
  private readonly server: Server;

  private constructor(url: string, server: Server) {
    this.url = url;
    this.server = server;
  }

  static async start(kc: KubeConfig): Promise<HoldingProxy> {
    const target = new URL(kc.getCurrentCluster()!.server);
    const tls: HttpsRequestOptions = {};
    await kc.applyToHTTPSOptions(tls);
    let proxy!: HoldingProxy;
    const forward = (req: IncomingMessage, res: ServerResponse, body?: Buffer) => new Promise<void>((resolve) => {
      const up = httpsRequest({ ...tls, protocol: target.protocol, hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, ...tls.headers, host: target.host } }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
        answer.on('end', resolve);
      });
      up.on('error', () => { res.destroy(); resolve(); });
      res.on('close', () => up.destroy());
      if (body) up.end(body);
      else req.pipe(up);
    });
    const server = createServer((req, res) => {
      if (req.method !== 'PATCH' || !/\/configmaps\/held-/.test(req.url ?? '')) return void forward(req, res);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const held = { cut: false, release: async () => { if (held.cut) return false; await forward(req, res, Buffer.concat(chunks)); return true; } };
        res.on('close', () => { if (!res.writableFinished) held.cut = true; });
        proxy.held = held;
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new HoldingProxy(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, server);
    return proxy;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
}

describe('Manager against the API server', function () {
  this.timeout(600_000);
  let ns: string;
  let client: KubeClient;

  beforeEach(async () => {
    ns = await freshNamespace('rt-manager');
    client = new KubeClient(kubeConfig());
  });

  afterEach(async () => {
    await Promise.all(managers.splice(0).map((m) => m.stop()));
    client.close();
  });

  it('serves /healthz, /readyz once caches synced, and the operator metrics', async () => {
    const mgr = newManager({ namespaces: [ns] });
    recordingController(mgr);
    await mgr.start();
    assert.ok(mgr.ports.metrics > 0 && mgr.ports.probe > 0);
    assert.equal((await get(mgr.ports.probe, '/healthz')).status, 200);
    assert.equal((await get(mgr.ports.probe, '/readyz')).status, 200);
    const metrics = await get(mgr.ports.metrics, '/metrics');
    assert.equal(metrics.status, 200);
    for (const name of ['controller_runtime_reconcile_total{controller="configmaps"', 'workqueue_depth{name="configmaps"}', 'process_resident_memory_bytes']) {
      assert.ok(metrics.body.includes(name), `metrics lack ${name}`);
    }
  });

  it('is live but not ready while an informer cannot sync, and still stops cleanly', async () => {
    const missing = { group: 'nothing.example.com', version: 'v1', kind: 'Nothing', plural: 'nothings', namespaced: true };
    const mgr = newManager();
    mgr.informer(missing);
    const starting = mgr.start();
    await waitFor('probe listener', () => mgr.ports.probe > 0, { timeoutMs: SETTLE_MS, intervalMs: 25 });
    assert.equal((await get(mgr.ports.probe, '/healthz')).status, 200);
    assert.equal((await get(mgr.ports.probe, '/readyz')).status, 503);
    await mgr.stop();
    await starting;
  });

  it('feeds informer events to its controllers, and waitIdle waits for the work', async () => {
    const mgr = newManager({ namespaces: [ns] });
    const seen = recordingController(mgr);
    await mgr.start();
    assert.equal(mgr.isLeader(), true, 'without leader election a manager leads');
    for (const name of ['a', 'b', 'c']) await client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { x: '1' } });
    await waitFor('three reconciles', () => seen.filter((r) => !publishedIntoEveryNamespace(r.name)).length >= 3, { timeoutMs: SETTLE_MS, intervalMs: 25 });
    await waitIdle(mgr);
    // The cluster publishes root certificates into every namespace: not the test's objects.
    const mine = seen.filter((r) => !publishedIntoEveryNamespace(r.name));
    assert.deepEqual([...new Set(mine.map((r) => `${r.namespace}/${r.name}`))].sort(), [`${ns}/a`, `${ns}/b`, `${ns}/c`]);
  });

  it('shares one informer per kind and selector', () => {
    const mgr = newManager();
    assert.equal(mgr.informer(Kinds.ConfigMap), mgr.informer(Kinds.ConfigMap));
    assert.notEqual(mgr.informer(Kinds.ConfigMap), mgr.informer(Kinds.ConfigMap, { labelSelector: 'app=x' }));
  });

  it('elects one leader of two; only it reconciles; stop() hands the lease over quickly', async () => {
    const election = { enabled: true, namespace: ns, name: 'rt-test', leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 250 };
    const lost: string[] = [];
    const a = newManager({ namespaces: [ns], identity: 'replica-a', leaderElection: election, onLostLeadership: () => lost.push('replica-a') });
    const b = newManager({ namespaces: [ns], identity: 'replica-b', leaderElection: election, onLostLeadership: () => lost.push('replica-b') });
    const seenA = recordingController(a);
    const seenB = recordingController(b);
    await Promise.all([a.start(), b.start()]);

    const leader = await waitFor('a leader', () => [a, b].find((m) => m.isLeader()), { timeoutMs: SETTLE_MS, intervalMs: 25 });
    // Renewed a retry period past now: the other replica has tried since, and found the lease held.
    const since = Date.now() + election.retryPeriodMs;
    await waitFor('a renewal of the lease', async () => Date.parse((await client.get<Lease>(Kinds.Lease, ns, 'rt-test'))?.spec.renewTime ?? '') > since, { timeoutMs: SETTLE_MS });
    assert.equal([a, b].filter((m) => m.isLeader()).length, 1, 'exactly one leader');
    const standby = leader === a ? b : a;
    const lease = await client.get<Lease>(Kinds.Lease, ns, 'rt-test');
    assert.equal(lease?.spec.holderIdentity, leader.identity);
    assert.match((await get(leader.ports.metrics, '/metrics')).body, /leader_election_master_status\{name="rt-test"\} 1/);
    assert.match((await get(standby.ports.metrics, '/metrics')).body, /leader_election_master_status\{name="rt-test"\} 0/);
    // Standbys keep warm caches, so they are ready too.
    assert.equal((await get(standby.ports.probe, '/readyz')).status, 200);

    await client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one', namespace: ns }, data: {} });
    const [leaderSeen, standbySeen] = leader === a ? [seenA, seenB] : [seenB, seenA];
    await waitFor('the leader reconciles', () => leaderSeen.some((r) => r.name === 'one'), { timeoutMs: SETTLE_MS, intervalMs: 25 });
    // The standby does not reconcile; the window's control is the handover, after which it must.
    let stoppedAt = 0;
    let stopped: Promise<void> | undefined;
    await assertQuietWindow({
      what: 'the standby reconciled while the other replica led', windowMs: 500, observe: () => standbySeen.length,
      control: () => { stoppedAt = Date.now(); stopped = leader.stop(); },
    });
    await stopped;
    await waitFor('the standby takes over', () => standby.isLeader(), { timeoutMs: SETTLE_MS, intervalMs: 25 });
    // When the standby took the lease, as the API server stored it.
    const tookMs = Date.parse((await client.get<Lease>(Kinds.Lease, ns, 'rt-test'))?.spec.acquireTime ?? '') - stoppedAt;
    assert.ok(tookMs < 2_000, `took over ${tookMs} ms after a release; a lease that expired would take ${election.leaseDurationMs} ms`);
    // On taking over, the new leader reconciles everything it already has cached.
    assert.ok(standbySeen.some((r) => r.name === 'one'), 'the new leader reconciled what it had cached');
    assert.deepEqual(lost, [], 'a voluntary release is not a lost leadership');
    await leader.stop();
  });

  it('losing the lease in the middle of a slow write aborts the write (it never reaches the API server) and reports at once', async () => {
    const proxy = await HoldingProxy.start(kubeConfig());
    try {
      let lost: number | undefined;
      const election = { enabled: true, namespace: ns, name: 'rt-slow', leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 200 };
      const mgr = newManager({ kubeConfig: new RestConfig({ server: proxy.url }), namespaces: [ns], identity: 'replica-a', leaderElection: election, onLostLeadership: () => { lost = performance.now(); } });
      const writer = new Controller({
        name: 'writer', logger: mgr.logger, metrics: mgr.metrics,
        reconcile: async (req, ctx) => {
          await mgr.client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: req.name, namespace: req.namespace }, data: { by: 'the old leader' } }, { signal: ctx.signal });
        },
      });
      mgr.add(writer);
      await mgr.start();
      await waitFor('leadership', () => mgr.isLeader(), { timeoutMs: SETTLE_MS, intervalMs: 25 });
      writer.enqueue({ namespace: ns, name: 'held-write' });
      const held = await waitFor('the write to be held on its way', () => proxy.held, { timeoutMs: SETTLE_MS, intervalMs: 25 });
      const stolen = performance.now();
      await client.mergePatch(Kinds.Lease, ns, 'rt-slow', { spec: { holderIdentity: 'usurper', renewTime: new Date(Date.now() + 60_000).toISOString().replace(/Z$/, '000Z') } });
      await waitFor('onLostLeadership', () => lost, { intervalMs: 25, timeoutMs: SETTLE_MS });
      assert.ok(lost! - stolen < election.renewDeadlineMs, `reported ${Math.round(lost! - stolen)} ms after the lease was taken, the write still held`);
      await waitFor('the client to cut the held write', () => held.cut, { intervalMs: 25, timeoutMs: SETTLE_MS });
      assert.equal(await held.release(), false, 'the held write is not sent on: its client is gone');
      assert.equal(await client.get(Kinds.ConfigMap, ns, 'held-write'), undefined, 'the old leader\'s write never reached the API server');
    } finally {
      await proxy.close();
    }
  });

  it('stops its controllers and reports when another holder takes the lease', async () => {
    let lost = 0;
    const election = { enabled: true, namespace: ns, name: 'rt-stolen', leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 200 };
    const mgr = newManager({ namespaces: [ns], identity: 'replica-a', leaderElection: election, onLostLeadership: () => lost++ });
    recordingController(mgr);
    await mgr.start();
    await waitFor('leadership', () => mgr.isLeader(), { timeoutMs: SETTLE_MS, intervalMs: 25 });

    // Another replica (that does not honour the lease) writes itself in as holder.
    await client.mergePatch(Kinds.Lease, ns, 'rt-stolen', { spec: { holderIdentity: 'usurper', renewTime: new Date(Date.now() + 60_000).toISOString().replace(/Z$/, '000Z') } });
    await waitFor('onLostLeadership', () => lost > 0, { intervalMs: 25, timeoutMs: SETTLE_MS });
    assert.equal(mgr.isLeader(), false);
  });
});
