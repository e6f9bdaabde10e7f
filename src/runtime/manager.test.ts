import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller } from './controller.ts';
import { RestConfig } from './kubeconfig.ts';
import { createLogger, type Logger } from './logging.ts';
import { Manager } from './manager.ts';
import { reply } from '../testing/http.ts';
import { waitIdle } from '../../test/support/idle.ts';
import { waitFor } from '../../test/support/wait.ts';

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, child: () => quiet } as unknown as Logger;
/** A registered controller that is never started: only its name and whether it is idle are read. */
const controller = (name: string, idle: () => boolean) => ({ name, isIdle: idle }) as unknown as Controller;

describe('Manager.busy, as waitIdle (test/support/idle.ts) waits on it', () => {
  let manager: Manager;
  beforeEach(() => {
    manager = new Manager({ kubeConfig: new RestConfig({ server: 'https://127.0.0.1:1' }), logger: quiet });
  });

  it('resolves once every controller is idle', async () => {
    let looks = 0;
    manager.add(controller('apps', () => ++looks > 3));
    await waitIdle(manager, 5_000);
    assert.ok(looks >= 5, `two idle looks in a row after three busy ones (${looks} looks)`);
  });

  it('gives up after its deadline, saying what it waited for and which controller is still busy', async () => {
    manager.add(controller('apps', () => true));
    manager.add(controller('model-caches', () => false));
    await assert.rejects(waitIdle(manager, 50),
      /^Error: timed out after 0 s waiting for the controllers to be idle \(nothing queued or running, every event written\); still busy: model-caches$/);
  });

  it('gives up at its deadline when an Event write never ends, saying so', async () => {
    manager.add(controller('apps', () => true));
    manager.events.flush = () => new Promise(() => {});
    await assert.rejects(waitIdle(manager, 50), /timed out after 0 s .*; still busy: the Event recorder, writing its queued Events$/);
  });
});

/**
 * An API server holding one Lease, and a ConfigMap write it holds until the test releases it (a slow
 * admission webhook, an overloaded server): the write is stored only if its client is still there.
 */
class SlowWriteServer {
  lease: { metadata: Record<string, unknown>; spec?: Record<string, unknown> } | undefined;
  /** The held write: whether its client went away before the release, and whether it was stored. */
  held: { aborted: boolean; stored: boolean; release: () => void } | undefined;
  /** How often a replica read the Lease. */
  leaseReads = 0;
  private readonly server = createServer((req, res) => this.handle(req, res));
  private rv = 1;

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Another replica writes itself in as the holder (it does not honour the lease). */
  steal(): void {
    this.lease = { ...this.lease, metadata: { ...this.lease?.metadata, resourceVersion: String(++this.rv) }, spec: { ...this.lease?.spec, holderIdentity: 'usurper', renewTime: new Date(Date.now() + 60_000).toISOString().replace(/Z$/, '000Z'), leaseDurationSeconds: 60 } };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.url?.includes('/configmaps/')) {
        const held = { aborted: false, stored: false, release: () => { if (!held.aborted) { held.stored = true; reply(res, 200, JSON.parse(body)); } } };
        res.on('close', () => { if (!res.writableFinished) held.aborted = true; });
        this.held = held;
        return;
      }
      if (req.method === 'GET') this.leaseReads += 1;
      if (req.method === 'GET') return this.lease ? reply(res, 200, this.lease) : reply(res, 404, { kind: 'Status', code: 404, reason: 'NotFound' });
      const sent = JSON.parse(body) as { metadata: Record<string, unknown>; spec?: Record<string, unknown> };
      if (req.method === 'POST' && this.lease) return reply(res, 409, { kind: 'Status', code: 409, reason: 'AlreadyExists' });
      if (req.method === 'PUT' && sent.metadata['resourceVersion'] !== this.lease?.metadata['resourceVersion']) return reply(res, 409, { kind: 'Status', code: 409, reason: 'Conflict' });
      this.lease = { ...sent, metadata: { ...sent.metadata, resourceVersion: String(++this.rv) } };
      reply(res, req.method === 'POST' ? 201 : 200, this.lease);
    });
  }
}

describe('Manager, when its lease is lost in the middle of a slow write', () => {
  const silent = createLogger({ silent: true });
  let api: SlowWriteServer;
  beforeEach(() => { api = new SlowWriteServer(); });
  afterEach(() => api.close());

  it('aborts the write (the server never stores it) and stops without waiting for the reconcile', async () => {
    const election = { enabled: true, namespace: 'ns', name: 'lock', leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 50 };
    let lostAt: number | undefined;
    const mgr = new Manager({
      kubeConfig: new RestConfig({ server: await api.listen() }), logger: silent, metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0',
      leaderElection: election, onLostLeadership: () => { lostAt = performance.now(); },
    });
    let ended: unknown;
    const writer = new Controller({
      name: 'writer', logger: silent, metrics: mgr.metrics,
      reconcile: async (req, ctx) => {
        await mgr.client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: req.name, namespace: req.namespace }, data: { written: 'by the old leader' } }, { signal: ctx.signal })
          .then(() => { ended = 'written'; }, (err: unknown) => { ended = err; throw err; });
      },
    });
    mgr.add(writer);
    await mgr.start();
    try {
      await waitFor('leadership', () => mgr.isLeader(), { timeoutMs: 5_000 });
      writer.enqueue({ namespace: 'ns', name: 'status-of-record' });
      const held = await waitFor('the write to reach the API server', () => api.held, { timeoutMs: 5_000 });
      const stolenAt = performance.now();
      api.steal();
      await waitFor('the lost leadership to be reported', () => lostAt, { timeoutMs: 5_000 });
      // Reported within a few renewals, while the write is still held: nothing waited for it.
      assert.ok(lostAt! - stolenAt < 2_000, `stopped ${Math.round(lostAt! - stolenAt)} ms after the lease was taken`);
      // The term's Events end with it: one recorded now (a reconcile on its way out) is dropped and counted, never posted.
      mgr.events.record({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'status-of-record', namespace: 'ns' } }, 'Normal', 'Written', 'by the old leader');
      const dropped = (await mgr.metrics.registry.getSingleMetric('serverlessapp_events_dropped_total')!.get()).values.find((v) => v.labels['reason'] === 'term_ended')?.value;
      assert.equal(dropped, 1);
      await waitFor('the write to be cut by its client', () => held.aborted, { timeoutMs: 5_000 });
      held.release();
      assert.equal(held.stored, false, 'the old leader\'s write is never stored');
      await waitFor('the reconcile to end', () => ended, { timeoutMs: 5_000 });
      assert.ok(ended instanceof Error && ended.name === 'AbortError', `the reconcile ended with its request aborted (${String(ended)})`);
    } finally {
      await mgr.stop();
    }
  });
});

describe('Manager.whenLeading', () => {
  const silent = createLogger({ silent: true });
  const unreachable = () => new RestConfig({ server: 'https://127.0.0.1:1' });

  it('runs the task once this replica leads (at start, without leader election)', async () => {
    const mgr = new Manager({ kubeConfig: unreachable(), logger: silent, metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0' });
    let runs = 0;
    mgr.whenLeading(async () => { runs += 1; });
    try {
      await mgr.start();
      await waitFor('the task to run', () => runs === 1, { timeoutMs: 5_000 });
    } finally {
      await mgr.stop();
    }
  });

  it('never runs it on a standby: while another replica holds the lease it writes nothing', async () => {
    const api = new SlowWriteServer();
    api.steal();
    const election = { enabled: true, namespace: 'ns', name: 'lock', leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 50 };
    const mgr = new Manager({ kubeConfig: new RestConfig({ server: await api.listen() }), logger: silent, metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0', leaderElection: election });
    let runs = 0;
    mgr.whenLeading(async () => { runs += 1; });
    try {
      await mgr.start();
      await waitFor('the standby to find the lease held three times', () => api.leaseReads >= 3, { timeoutMs: 5_000 });
      assert.deepEqual([mgr.isLeader(), runs], [false, 0]);
    } finally {
      await mgr.stop();
      await api.close();
    }
  });
});
