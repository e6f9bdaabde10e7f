// Lease-based leader election, as client-go and controller-runtime do it, so
// only one replica reconciles while standbys wait. Every write to the Lease
// carries the resourceVersion last read, so two candidates can never both
// win: the API server accepts one update and answers 409 to the other. A
// lease counts as expired only after this process has seen it unchanged for
// leaseDuration, timed by its own timer, never by comparing renewTime with
// the local wall clock, so clock skew between nodes cannot cause two leaders.
// A leader that cannot renew for renewDeadline (< leaseDuration) steps down
// before any standby may take over. Every wait (retry period, renew deadline,
// lease expiry, request timeout) is a timer on the elector's TimerClock: real,
// monotonic timers in production, whatever a shifted clock's offset, and a
// manual clock in tests. The Lease is read and written through
// KubeClient, on connections outside its write pool, so a renewal never waits
// behind a burst of writes.

import { ApiError, KubeClient } from './client.ts';
import { type Deadline, type Timer, type TimerClock, deadlineIn, sleep, systemClock } from './clock.ts';
import { createLogger, type Logger } from './logging.ts';
import { Kinds, apiVersionOf } from '../util/kinds.ts';
import { microTime } from '../util/micro-time.ts';
import type { KubeConfigSource } from './kubeconfig.ts';

export interface LeaderElectorOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** What the waits are timed on (default: real time); tests step a manual clock. Only its timers count, never its now(). */
  clock?: TimerClock;
  logger?: Logger;
  /** For leader_election_master_status. */
  hooks?: { onLeaderChange?(isLeader: boolean): void };
}

export interface LeaderCallbacks {
  onStartedLeading(): void;
  /** Awaited (when it returns a promise) before the lease is released, so work stops before a standby starts. */
  onStoppedLeading(): void | Promise<void>;
}

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** Whether another candidate holds the lease: it names a holder that is not us, and has not `expired` (stayed unchanged for its duration) since we saw it change. */
export function heldByOther(spec: LeaseSpec | undefined, identity: string, expired: boolean): boolean {
  const holder = spec?.holderIdentity;
  return Boolean(holder) && holder !== identity && !expired;
}

/** How long a lease must stay unchanged before another candidate may take it: the duration its holder wrote. */
export function leaseExpiryMs(spec: LeaseSpec | undefined): number {
  return (spec?.leaseDurationSeconds ?? 0) * 1000;
}

/** The spec to write to acquire or renew: a renewal keeps acquireTime, a takeover counts one more transition. */
export function claimLease(spec: LeaseSpec | undefined, identity: string, now: Date, leaseDurationMs: number): LeaseSpec {
  const stamp = microTime(now);
  const leaseDurationSeconds = Math.ceil(leaseDurationMs / 1000);
  if (spec?.holderIdentity === identity) return { ...spec, leaseDurationSeconds, renewTime: stamp };
  return {
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: stamp,
    renewTime: stamp,
    leaseTransitions: spec === undefined ? 0 : (spec.leaseTransitions ?? 0) + 1,
  };
}

/** What client-go writes on ReleaseOnCancel: no holder, a 1 s lease, so any standby may take it at once. */
export function releasedLease(spec: LeaseSpec | undefined, now: Date): LeaseSpec {
  const stamp = microTime(now);
  return { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: stamp, renewTime: stamp, leaseTransitions: spec?.leaseTransitions ?? 0 };
}

const noopLogger: Logger = createLogger({ silent: true });

export class LeaderElector {
  readonly #client: KubeClient;
  /** A client made from a kubeconfig here (not shared), closed once the lease is released. */
  readonly #ownsClient: boolean;
  readonly #namespace: string;
  readonly #name: string;
  readonly #identity: string;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #clock: TimerClock;
  readonly #log: Logger;
  readonly #hooks: { onLeaderChange?(isLeader: boolean): void };
  readonly #stop = new AbortController();
  /** The lease as last read or written, and whether it has stayed unchanged for its duration since. */
  #observed: { lease: Lease; expired: boolean } | undefined;
  /** Sets #observed.expired once the lease's duration has passed without a change. */
  #leaseExpiry: Timer | undefined;
  #leading = false;
  #running: Promise<void> | undefined;

  /** `client`: the manager's KubeClient; a kubeconfig (tests) gets a client of its own. */
  constructor(client: KubeClient | KubeConfigSource, opts: LeaderElectorOptions) {
    this.#ownsClient = !(client instanceof KubeClient);
    this.#client = client instanceof KubeClient ? client : new KubeClient(client);
    this.#namespace = opts.namespace;
    this.#name = opts.name;
    this.#identity = opts.identity;
    this.#leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.#retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger ?? noopLogger;
    this.#hooks = opts.hooks ?? {};
    if (this.#renewDeadlineMs >= this.#leaseDurationMs) throw new Error('leader election: renewDeadline must be shorter than leaseDuration');
  }

  isLeader(): boolean {
    return this.#leading;
  }

  /** Campaigns, leads while it can renew, and campaigns again after losing the lease, until stop(). */
  run(callbacks: LeaderCallbacks): Promise<void> {
    this.#running ??= this.#loop(callbacks);
    return this.#running;
  }

  /** Stops campaigning; a leader calls onStoppedLeading, then releases the lease so a standby takes over at once. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  async #loop(callbacks: LeaderCallbacks): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      // A leader's renew deadline runs from the start of the attempt that won the lease.
      const deadline = deadlineIn(this.#renewDeadlineMs, this.#clock);
      if (!(await this.#tryAcquireOrRenew(deadline.signal))) {
        deadline.cancel();
        await sleep(this.#retryPeriodMs * (1 + Math.random() * 1.2), signal, this.#clock);
        continue;
      }
      this.#setLeading(true);
      this.#log.info('acquired the leader lease', { lease: `${this.#namespace}/${this.#name}`, identity: this.#identity });
      try {
        callbacks.onStartedLeading();
      } catch (err) {
        this.#log.error('onStartedLeading failed', { error: String(err) });
      }
      await this.#renewWhileLeading(deadline);
      this.#setLeading(false);
      try {
        await callbacks.onStoppedLeading();
      } catch (err) {
        this.#log.error('onStoppedLeading failed', { error: String(err) });
      }
    }
    await this.#release();
    this.#leaseExpiry?.cancel();
    if (this.#ownsClient) this.#client.close();
  }

  /**
   * Renews every retryPeriod; returns on stop, when the lease is taken, or when `deadline` (renewDeadline from
   * the start of the last successful renewal) passes first. A renewal still in flight then is aborted.
   */
  async #renewWhileLeading(deadline: Deadline): Promise<void> {
    const signal = this.#stop.signal;
    let current = deadline;
    try {
      while (!signal.aborted) {
        await sleep(this.#retryPeriodMs, signal, this.#clock);
        if (signal.aborted) return;
        const next = deadlineIn(this.#renewDeadlineMs, this.#clock);
        if (!current.signal.aborted && (await this.#tryAcquireOrRenew(current.signal))) {
          current.cancel();
          current = next;
          continue;
        }
        next.cancel();
        if (signal.aborted) return;
        const holder = this.#observed?.lease.spec?.holderIdentity;
        if (holder && holder !== this.#identity) {
          this.#log.warn('lost the leader lease to another candidate', { holder });
          return;
        }
        if (current.signal.aborted) {
          this.#log.error('failed to renew the leader lease within the renew deadline; stepping down', { renewDeadlineMs: this.#renewDeadlineMs });
          return;
        }
      }
    } finally {
      current.cancel();
    }
  }

  /** One read-then-write round, abandoned when `deadline` aborts; true when this candidate holds the lease afterwards. */
  async #tryAcquireOrRenew(deadline: AbortSignal): Promise<boolean> {
    try {
      const signal = AbortSignal.any([this.#stop.signal, deadline]);
      // Lease times are real time whatever the clock: other candidates' operators and kubectl read them.
      const now = systemClock.now();
      const current = await this.#getLease(signal);
      if (current === undefined) {
        const lease: Lease = {
          apiVersion: apiVersionOf(Kinds.Lease),
          kind: Kinds.Lease.kind,
          metadata: { name: this.#name, namespace: this.#namespace },
          spec: claimLease(undefined, this.#identity, now, this.#leaseDurationMs),
        };
        return await this.#write('create', lease, signal);
      }
      if (heldByOther(current.spec, this.#identity, this.#observed!.expired)) return false;
      const claimed: Lease = { ...current, spec: claimLease(current.spec, this.#identity, now, this.#leaseDurationMs) };
      return await this.#write('update', claimed, signal);
    } catch (err) {
      // A missing Lease reads as absent, so a 404 here is the create: the namespace does not exist.
      const hint = err instanceof ApiError && err.code === 404 ? { hint: `create namespace ${this.#namespace}, or set --leader-election-namespace, or run with --leader-elect=false` } : {};
      if (!this.#stop.signal.aborted) this.#log.warn('leader election request failed', { lease: `${this.#namespace}/${this.#name}`, error: String(err), ...hint });
      return false;
    }
  }

  /** Gives the lease up if (and only if) the server says we hold it. */
  async #release(): Promise<void> {
    const deadline = deadlineIn(this.#renewDeadlineMs, this.#clock);
    try {
      const { signal } = deadline;
      const current = await this.#getLease(signal);
      if (current?.spec?.holderIdentity !== this.#identity) return;
      const released: Lease = { ...current, spec: releasedLease(current.spec, systemClock.now()) };
      if (await this.#write('update', released, signal)) {
        this.#log.info('released the leader lease', { lease: `${this.#namespace}/${this.#name}` });
      }
    } catch (err) {
      this.#log.warn('could not release the leader lease; standbys take over once it expires', { error: String(err) });
    } finally {
      deadline.cancel();
    }
  }

  async #getLease(signal: AbortSignal): Promise<Lease | undefined> {
    const lease = await this.#client.get<Lease>(Kinds.Lease, this.#namespace, this.#name, { signal, unpooled: true });
    if (lease) this.#observe(lease);
    return lease;
  }

  /** Creates or updates the lease; false on a conflict (someone else wrote first). */
  async #write(verb: 'create' | 'update', lease: Lease, signal: AbortSignal): Promise<boolean> {
    try {
      this.#observe(await this.#client[verb](Kinds.Lease, lease, { signal, unpooled: true }));
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) return false;
      throw err;
    }
  }

  /** Records the lease; a change (new resourceVersion) restarts the wait for it to expire. */
  #observe(lease: Lease): void {
    if (this.#observed?.lease.metadata.resourceVersion === lease.metadata.resourceVersion) return;
    this.#leaseExpiry?.cancel();
    const expiresInMs = leaseExpiryMs(lease.spec);
    const observed = { lease, expired: expiresInMs <= 0 };
    this.#leaseExpiry = this.#clock.setTimer(expiresInMs, () => (observed.expired = true));
    this.#leaseExpiry.unref();
    this.#observed = observed;
  }

  #setLeading(leading: boolean): void {
    this.#leading = leading;
    this.#hooks.onLeaderChange?.(leading);
  }
}
