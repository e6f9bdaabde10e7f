import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { LeaderElector, claimLease, heldByOther, leaseExpiryMs, releasedLease, type LeaderCallbacks, type LeaseSpec } from './leader-election.ts';
import type { TimerClock } from './clock.ts';
import { microTime } from '../util/micro-time.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';
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

  it('treats a lease as held by another only while it names another holder and has not expired', () => {
    const b: LeaseSpec = { holderIdentity: 'b', leaseDurationSeconds: 15 };
    assert.equal(heldByOther(b, 'a', false), true);
    assert.equal(heldByOther(b, 'a', true), false, 'unchanged for its duration');
    assert.equal(heldByOther(b, 'b', false), false, 'our own lease');
    assert.equal(heldByOther({ holderIdentity: '', leaseDurationSeconds: 15 }, 'a', false), false, 'a released lease');
    assert.equal(heldByOther(undefined, 'a', false), false);
  });

  it("lets a lease expire after the duration its holder wrote", () => {
    assert.equal(leaseExpiryMs({ holderIdentity: 'b', leaseDurationSeconds: 15 }), 15_000);
    assert.equal(leaseExpiryMs({ holderIdentity: 'b' }), 0);
  });
});

/** One Lease behind several ports; a port can be cut off (requests hang), partitioning one candidate. */
class FakeLeaseServer {
  lease: { metadata: Record<string, unknown>; spec?: LeaseSpec } | undefined;
  /** When (ms on the test's clock) each accepted write arrived. */
  readonly writtenAt: number[] = [];
  /** Reads of the lease, by the port (the elector) that made them. */
  readonly reads = new Map<number, number>();
  readonly #now: () => number;
  readonly #servers: Server[] = [];
  readonly #partitioned = new Set<number>();
  #rv = 1;

  constructor(now: () => number) {
    this.#now = now;
  }

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
      this.writtenAt.push(this.#now());
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

/**
 * One manual clock for all candidates, each seeing it through a view that notes
 * its pending timers, so a test can tell when a candidate is between attempts:
 * waiting out a retry period (its only timer shorter than the renew deadline),
 * with no request in flight. Time moves only when the test says.
 */
class CandidatesClock {
  readonly manual = new ManualClock();
  readonly #start = this.manual.now().getTime();
  readonly #waits = new Map<string, Set<{ ms: number }>>();

  /** Ms since the test began. */
  at(): number {
    return this.manual.now().getTime() - this.#start;
  }

  of(identity: string): TimerClock {
    const waits = new Set<{ ms: number }>();
    this.#waits.set(identity, waits);
    return {
      now: () => this.manual.now(),
      setTimer: (ms, fn) => {
        const wait = { ms };
        waits.add(wait);
        const timer = this.manual.setTimer(ms, () => {
          waits.delete(wait);
          fn();
        });
        return { cancel: () => (waits.delete(wait), timer.cancel()), unref: () => timer.unref() };
      },
    };
  }

  waitsShorterThan(identity: string, ms: number): boolean {
    return [...(this.#waits.get(identity) ?? [])].some((w) => w.ms < ms);
  }
}

describe('LeaderElector against a scripted API server, on a manual clock', () => {
  const timing = { leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 100 };
  let clock: CandidatesClock;
  let api: FakeLeaseServer;
  let electors: LeaderElector[];
  /** Leadership changes as [identity, leading, ms on the clock], in order. */
  let timeline: Array<[string, boolean, number]>;

  function elector(identity: string, port: number, callbacks: LeaderCallbacks = { onStartedLeading() {}, onStoppedLeading() {} }): LeaderElector {
    const e = new LeaderElector(kubeConfigFor(port), {
      namespace: 'ns',
      name: 'lock',
      identity,
      ...timing,
      clock: clock.of(identity),
      hooks: { onLeaderChange: (leading) => timeline.push([identity, leading, clock.at()]) },
    });
    electors.push(e);
    void e.run(callbacks);
    return e;
  }

  /** Waits (for I/O, not clock time) until each named candidate has finished its attempt and waits out a retry period. */
  async function settled(...identities: string[]): Promise<void> {
    for (const id of identities) {
      await waitFor(`${id} to finish its attempt and wait out a retry period`, () => clock.waitsShorterThan(id, timing.renewDeadlineMs));
    }
  }

  /**
   * Moves the clock from timer to timer, letting the named candidates settle after each, until `done` holds or
   * the clock reaches `untilMs`; says whether `done` held.
   */
  async function runUntil(identities: string[], untilMs: number, done: () => boolean = () => false): Promise<boolean> {
    while (!done() && clock.at() < untilMs) {
      clock.manual.advance(Math.min(clock.manual.nextTimerInMs() ?? Infinity, untilMs - clock.at()));
      await settled(...identities);
    }
    return done();
  }

  /** When `identity` last began or stopped leading, on the clock. */
  function changedAt(identity: string, leading: boolean): number | undefined {
    return timeline.findLast(([id, l]) => id === identity && l === leading)?.[2];
  }

  beforeEach(() => {
    clock = new CandidatesClock();
    api = new FakeLeaseServer(() => clock.at());
    electors = [];
    timeline = [];
  });

  afterEach(async () => {
    // The server goes first, so a cut-off candidate's release fails at once instead of hanging on a clock nobody moves.
    await api.stop();
    await Promise.all(electors.map((e) => e.stop()));
  });

  it('renews its lease every retry period while it leads', async () => {
    const a = elector('a', await api.listen());
    await settled('a');
    await runUntil(['a'], 3 * timing.retryPeriodMs);
    assert.deepEqual(api.writtenAt, [0, 100, 200, 300], 'created at once, then renewed a retry period apart');
    assert.equal(a.isLeader(), true);
  });

  it('takes over an abandoned lease only once it has seen it unchanged for its duration', async () => {
    api.lease = { metadata: { name: 'lock', namespace: 'ns', resourceVersion: '1' }, spec: { holderIdentity: 'gone', leaseDurationSeconds: 1, leaseTransitions: 0 } };
    const b = elector('b', await api.listen());
    await settled('b');
    assert.equal(await runUntil(['b'], timing.leaseDurationMs - 1, () => b.isLeader()), false, 'the lease has not yet stayed unchanged for a lease duration');
    assert.ok((api.reads.values().next().value ?? 0) >= 4, 'b kept looking at it');
    assert.ok(await runUntil(['b'], 2 * timing.leaseDurationMs, () => b.isLeader()), 'b took the lease over');
    const takeover = changedAt('b', true)!;
    assert.ok(takeover >= timing.leaseDurationMs && takeover <= timing.leaseDurationMs + 2.2 * timing.retryPeriodMs, `b took over at ${takeover} ms: at its first attempt after the lease expired`);
    assert.equal(api.lease.spec?.holderIdentity, 'b');
    assert.equal(api.lease.spec?.leaseTransitions, 1);
  });

  it('steps down at its renew deadline when it cannot reach the API server, before a standby may take over', async () => {
    const portA = await api.listen();
    const portB = await api.listen();
    const a = elector('a', portA);
    await settled('a');
    const b = elector('b', portB);
    await settled('b');
    assert.equal(await runUntil(['a', 'b'], 2 * timing.leaseDurationMs, () => b.isLeader()), false, 'a standby does not take a lease its holder keeps renewing');
    assert.ok((api.reads.get(portB) ?? 0) >= 2 * timing.leaseDurationMs / (2.2 * timing.retryPeriodMs), 'b kept looking at it');

    api.partition(portA);
    const lastRenewal = api.writtenAt.at(-1)!;
    const deadline = lastRenewal + timing.renewDeadlineMs;
    await runUntil(['b'], deadline - 1);
    assert.equal(a.isLeader(), true, 'a leads until its renew deadline, its renewals hanging');
    clock.manual.advance(1);
    await waitFor('a to step down', () => !a.isLeader());
    assert.equal(changedAt('a', false), deadline, 'a stepped down at its renew deadline');

    assert.ok(await runUntil(['b'], lastRenewal + 2 * timing.leaseDurationMs, () => b.isLeader()), 'b took the lease over');
    const takeover = changedAt('b', true)!;
    assert.ok(takeover >= lastRenewal + timing.leaseDurationMs, `b took over at ${takeover} ms, a lease duration after a's last renewal at ${lastRenewal} ms`);
    assert.equal(maxConcurrentLeaders(timeline), 1);
    assert.equal(api.lease?.spec?.holderIdentity, 'b');
    assert.equal(api.lease?.spec?.leaseTransitions, 1);
  });

  it('awaits onStoppedLeading before it releases the lease', async () => {
    const order: string[] = [];
    let started!: () => void;
    const leading = new Promise<void>((r) => (started = r));
    let stopping!: () => void;
    const stoppingCalled = new Promise<void>((r) => (stopping = r));
    let finishWork!: () => void;
    const workFinished = new Promise<void>((r) => (finishWork = r));
    const a = elector('a', await api.listen(), {
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
