import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { LeaderElector, claimLease, heldByOther, releasedLease, type LeaseSpec } from './leader-election.ts';
import { microTime } from '../util/micro-time.ts';
import { waitFor } from '../../test/support/wait.ts';
import { maxConcurrentLeaders } from '../testing/leadership.ts';

const t0 = new Date('2026-01-02T03:04:05.123Z');
const t1 = new Date('2026-01-02T03:04:07.456Z');

describe('Lease records', () => {
  it('writes times as RFC 3339 with microseconds, as metav1.MicroTime requires', () => {
    assert.equal(microTime(t0), '2026-01-02T03:04:05.123000Z');
  });

  it('claims a new lease with no transitions yet', () => {
    assert.deepEqual(claimLease(undefined, 'a', t0, 15_000), {
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2026-01-02T03:04:05.123000Z',
      renewTime: '2026-01-02T03:04:05.123000Z',
      leaseTransitions: 0,
    });
  });

  it('renews its own lease without touching acquireTime or the transition count', () => {
    const held = claimLease({ holderIdentity: 'a', leaseTransitions: 3, acquireTime: 'then' }, 'a', t1, 15_000);
    assert.equal(held.acquireTime, 'then');
    assert.equal(held.renewTime, '2026-01-02T03:04:07.456000Z');
    assert.equal(held.leaseTransitions, 3);
  });

  it('counts a takeover, from another holder or from a released lease, as one more transition', () => {
    assert.equal(claimLease({ holderIdentity: 'b', leaseTransitions: 3 }, 'a', t1, 15_000).leaseTransitions, 4);
    assert.equal(claimLease(releasedLease({ leaseTransitions: 4 }, t0), 'a', t1, 15_000).leaseTransitions, 5);
  });

  it('rounds the lease duration up to whole seconds', () => {
    assert.equal(claimLease(undefined, 'a', t0, 1_500).leaseDurationSeconds, 2);
  });

  it('releases as client-go does: no holder and a one-second lease', () => {
    const released = releasedLease({ holderIdentity: 'a', leaseTransitions: 2, leaseDurationSeconds: 15 }, t0);
    assert.equal(released.holderIdentity, '');
    assert.equal(released.leaseDurationSeconds, 1);
    assert.equal(released.leaseTransitions, 2);
  });

  it('treats a lease as held by another only while it has stayed unchanged for less than its duration', () => {
    const b: LeaseSpec = { holderIdentity: 'b', leaseDurationSeconds: 15 };
    assert.equal(heldByOther(b, 'a', 14_999), true);
    assert.equal(heldByOther(b, 'a', 15_000), false);
    assert.equal(heldByOther(b, 'b', 0), false, 'our own lease');
    assert.equal(heldByOther({ holderIdentity: '', leaseDurationSeconds: 15 }, 'a', 0), false, 'a released lease');
    assert.equal(heldByOther(undefined, 'a', 0), false);
  });
});

/** One Lease behind several ports; a port can be cut off (requests hang), partitioning one candidate. */
class FakeLeaseServer {
  lease: { metadata: Record<string, unknown>; spec?: LeaseSpec } | undefined;
  writes = 0;
  /** Reads of the lease, by the port (the elector) that made them. */
  readonly reads = new Map<number, number>();
  readonly #servers: Server[] = [];
  readonly #partitioned = new Set<number>();
  #rv = 1;

  async listen(): Promise<number> {
    const server = createServer((req, res) => this.#handle(port, req, res));
    this.#servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    return port;
  }

  partition(port: number): void {
    this.#partitioned.add(port);
  }

  async stop(): Promise<void> {
    for (const s of this.#servers) {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
  }

  #handle(port: number, req: IncomingMessage, res: ServerResponse): void {
    if (this.#partitioned.has(port)) return;
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method === 'GET') this.reads.set(port, (this.reads.get(port) ?? 0) + 1);
      if (req.method === 'GET') return this.lease ? send(res, 200, this.lease) : send(res, 404, { kind: 'Status', code: 404 });
      const sent = JSON.parse(body) as { metadata: Record<string, unknown>; spec?: LeaseSpec };
      if (req.method === 'POST' && this.lease) return send(res, 409, { kind: 'Status', code: 409, reason: 'AlreadyExists' });
      if (req.method === 'PUT' && sent.metadata['resourceVersion'] !== this.lease?.metadata['resourceVersion']) {
        return send(res, 409, { kind: 'Status', code: 409, reason: 'Conflict' });
      }
      this.writes++;
      this.lease = { ...sent, metadata: { ...sent.metadata, resourceVersion: String(++this.#rv) } };
      send(res, req.method === 'POST' ? 201 : 200, this.lease);
    });
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function kubeConfigFor(port: number): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'u' }],
    currentContext: 'fake',
  });
  return kc;
}

describe('LeaderElector against a scripted API server', () => {
  let api: FakeLeaseServer;
  let electors: LeaderElector[];
  /** Leadership changes as [identity, leading, ms], in order. */
  let timeline: Array<[string, boolean, number]>;

  const timing = { leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 100 };

  function elector(identity: string, port: number): LeaderElector {
    const e = new LeaderElector(kubeConfigFor(port), {
      namespace: 'ns',
      name: 'lock',
      identity,
      ...timing,
      hooks: { onLeaderChange: (leading) => timeline.push([identity, leading, performance.now()]) },
    });
    electors.push(e);
    void e.run({ onStartedLeading() {}, onStoppedLeading() {} });
    return e;
  }

  beforeEach(() => {
    api = new FakeLeaseServer();
    electors = [];
    timeline = [];
  });

  afterEach(async () => {
    await Promise.all(electors.map((e) => e.stop()));
    await api.stop();
  });

  it('steps down within the renew deadline when it cannot reach the API server, before a standby may take over', async () => {
    const portA = await api.listen();
    const portB = await api.listen();
    const a = elector('a', portA);
    await waitFor('a to lead', () => a.isLeader());
    const b = elector('b', portB);
    await waitFor('b to look at the lease twice, a retry period apart', () => (api.reads.get(portB) ?? 0) >= 2);
    assert.equal(b.isLeader(), false, 'a standby does not take a lease its holder renews');

    api.partition(portA);
    const cutAt = performance.now();
    await waitFor('b to take over', () => b.isLeader());
    const stepDown = timeline.find(([id, leading]) => id === 'a' && !leading);
    assert.ok(stepDown, 'a stepped down');
    assert.ok(stepDown[2] - cutAt <= timing.renewDeadlineMs + timing.retryPeriodMs + 50, `a stepped down ${Math.round(stepDown[2] - cutAt)} ms after the cut`);
    assert.equal(maxConcurrentLeaders(timeline), 1);
    assert.equal(api.lease?.spec?.holderIdentity, 'b');
    assert.equal(api.lease?.spec?.leaseTransitions, 1);
  });

  it('keeps renewing its lease while it leads', async () => {
    const port = await api.listen();
    const a = elector('a', port);
    await waitFor('a to lead', () => a.isLeader());
    const renewed = api.lease?.spec?.renewTime;
    const writes = api.writes;
    await waitFor('two renewals', () => api.writes >= writes + 2);
    assert.notEqual(api.lease?.spec?.renewTime, renewed);
    assert.equal(a.isLeader(), true);
  });

  it('awaits onStoppedLeading before it releases the lease', async () => {
    const port = await api.listen();
    const order: string[] = [];
    const a = new LeaderElector(kubeConfigFor(port), { namespace: 'ns', name: 'lock', identity: 'a', ...timing });
    electors.push(a);
    let started!: () => void;
    const leading = new Promise<void>((r) => (started = r));
    let stopping!: () => void;
    const stoppingCalled = new Promise<void>((r) => (stopping = r));
    let finishWork!: () => void;
    const workFinished = new Promise<void>((r) => (finishWork = r));
    void a.run({
      onStartedLeading: () => started(),
      onStoppedLeading: async () => {
        stopping();
        await workFinished;
        order.push(`stopped work; holder still ${api.lease?.spec?.holderIdentity}`);
      },
    });
    await leading;
    const stopped = a.stop();
    await stoppingCalled;
    finishWork();
    await stopped;
    order.push(`released; holder '${api.lease?.spec?.holderIdentity}'`);
    assert.deepEqual(order, ['stopped work; holder still a', "released; holder ''"]);
    assert.equal(a.isLeader(), false);
  });

  it('refuses a renew deadline that is not shorter than the lease duration', () => {
    assert.throws(() => new LeaderElector(kubeConfigFor(1), { namespace: 'ns', name: 'l', identity: 'a', leaseDurationMs: 1_000, renewDeadlineMs: 1_000 }), /renewDeadline/);
  });
});
