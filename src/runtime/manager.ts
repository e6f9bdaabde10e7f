// Wires the runtime together and owns the process-level concerns, like
// controller-runtime's manager: the health and metrics listeners, one shared
// informer per (kind, selector), leader election, and an orderly shutdown.
// Informers run on every replica so a standby has warm caches; controllers run
// only on the leader. Losing the lease aborts what the controllers have in
// flight, drops the Events not yet written, and ends the process (a restarted
// pod is the simplest proof that two leaders never reconcile at once); a
// graceful stop lets it finish first.

import { KubeClient } from './client.ts';
import { systemClock, type TimerClock } from './clock.ts';
import type { Controller } from './controller.ts';
import { EventRecorder } from './events.ts';
import { startHealthServers, type HealthServers } from './health.ts';
import { Informer, type KubeObject } from './informer.ts';
import type { Projection } from './object-decode.ts';
import type { ResourceKind } from '../util/kinds.ts';
import type { KubeConfigSource } from './kubeconfig.ts';
import { LeaderElector } from './leader-election.ts';
import { DEFAULT_LEASE_NAME, DEFAULT_METRICS_ADDR, DEFAULT_PROBE_ADDR, newReplicaIdentity } from './manager-defaults.ts';
import { flushLogger, type Logger } from './logging.ts';
import { OperatorMetrics } from './metrics.ts';
import type { NamespaceShare } from './namespace-share.ts';

export interface LeaderElectionOptions {
  enabled: boolean;
  namespace: string;
  name?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export interface ManagerOptions {
  /** A RestConfig (kubeconfig.ts), or a client-node KubeConfig from the tests, demo and benchmarks. */
  kubeConfig: KubeConfigSource;
  /** Namespaces to watch; empty or unset = all. */
  namespaces?: string[];
  /** This replica's name in the Lease and in events; default newReplicaIdentity(). */
  identity?: string;
  leaderElection?: LeaderElectionOptions;
  metricsAddr?: string;
  probeAddr?: string;
  logger: Logger;
  clock?: TimerClock;
  userAgent?: string;
  /** Restart a watch that carried nothing for this long; default: the informer's. */
  watchdogMs?: number;
  /** Called after the controllers have stopped because the lease was lost; default: flush logs and exit(1). */
  onLostLeadership?: () => void;
  /** Events one namespace may have waiting to be written; default: the recorder's. */
  maxPendingEventsPerNamespace?: number;
}

type State = 'new' | 'running' | 'stopping' | 'stopped';

export class Manager {
  readonly client: KubeClient;
  readonly events: EventRecorder;
  readonly metrics: OperatorMetrics;
  readonly clock: TimerClock;
  readonly logger: Logger;
  readonly identity: string;
  readonly ports = { metrics: 0, probe: 0 };

  private readonly opts: ManagerOptions;
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private readonly controllers: Controller[] = [];
  /** What charges the cost of reading or writing a namespaced object to its namespace (chargeNamespaces). */
  private meter: Pick<NamespaceShare, 'measure' | 'charge'> | undefined;
  /** One-shot work of each leadership term (see whenLeading). */
  private readonly leaderTasks: Array<() => Promise<void>> = [];
  private elector: LeaderElector | undefined;
  private servers: HealthServers | undefined;
  private state: State = 'new';
  private leading = false;
  private stopping: Promise<void> | undefined;

  constructor(opts: ManagerOptions) {
    this.opts = opts;
    this.logger = opts.logger;
    this.clock = opts.clock ?? systemClock;
    this.identity = opts.identity || newReplicaIdentity();
    this.metrics = new OperatorMetrics();
    this.client = new KubeClient(opts.kubeConfig, {
      metrics: this.metrics, ...(opts.userAgent ? { userAgent: opts.userAgent } : {}),
      measure: (namespace, fn) => (this.meter ? this.meter.measure(namespace, fn) : fn()),
    });
    // Events carry real time whatever clock the controllers use: the API server and kubectl compare them with their own.
    this.events = new EventRecorder(this.client, {
      identity: this.identity, clock: systemClock, logger: this.logger,
      ...(opts.maxPendingEventsPerNamespace ? { maxPendingPerNamespace: opts.maxPendingEventsPerNamespace } : {}),
      onDrop: (why, namespace) => {
        this.metrics.eventDropped(why);
        if (why === 'namespace_full') this.metrics.budgetRefused(namespace, 'events');
      },
    });
  }

  /**
   * The shared informer of `kind` with `labelSelector`, created on first use.
   * The first caller's transform (projection and index) wins, so callers of one (kind, selector)
   * must agree on it. `optional`: the kind's CRD may be missing, which then
   * holds back neither the caches' sync nor any controller (see Informer.served).
   */
  informer<T extends KubeObject>(kind: ResourceKind, opts: { labelSelector?: string; namespaces?: string[]; transform?: (o: T) => T; projection?: Projection; optional?: boolean; indexBy?: (o: T) => string | undefined } = {}): Informer<T> {
    const key = `${kind.group}/${kind.version}/${kind.plural}?${opts.labelSelector ?? ''}${opts.namespaces ? `@${opts.namespaces.join(',')}` : ''}`;
    let informer = this.informers.get(key);
    if (!informer) {
      // `namespaces`: the operator's own objects, in its own namespace whatever namespaces it watches apps in.
      const namespaces = opts.namespaces ?? (kind.namespaced ? this.opts.namespaces : undefined);
      informer = new Informer<T>(this.client, kind, {
        ...(namespaces?.length ? { namespaces } : {}),
        ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
        ...(opts.transform ? { transform: opts.transform } : {}),
        ...(opts.projection ? { projection: opts.projection } : {}),
        ...(opts.optional ? { optional: true } : {}),
        ...(opts.indexBy ? { indexBy: opts.indexBy } : {}),
        hooks: { onParse: (namespace, ms) => { if (namespace) this.meter?.charge(namespace, ms); } },
        ...(this.opts.watchdogMs ? { watchdogMs: this.opts.watchdogMs } : {}),
        logger: this.logger.child({ informer: kind.plural }),
        clock: this.clock,
      }) as unknown as Informer<KubeObject>;
      this.informers.set(key, informer);
      if (this.state === 'running') this.startInformer(informer);
    }
    return informer as unknown as Informer<T>;
  }

  /**
   * Charges the main-thread cost of each namespaced object its informers decode and of each request its
   * client makes about one (writing it, decoding the answer) to `meter`, by the object's namespace (a
   * namespace's share).
   */
  chargeNamespaces(meter: Pick<NamespaceShare, 'measure' | 'charge'>): void {
    this.meter = meter;
  }

  /**
   * Runs `task` each time this replica starts leading (at start, without leader election): work only the
   * leader may do that is not a controller, such as publishing what it enforces. A standby writes nothing.
   * Its failure is the task's to report.
   */
  whenLeading(task: () => Promise<void>): void {
    this.leaderTasks.push(task);
    if (this.state === 'running' && this.leading) void task();
  }

  add(controller: Controller): void {
    this.controllers.push(controller);
    if (this.state === 'running' && this.leading) controller.start();
  }

  /**
   * Serves probes and metrics, syncs every informer, then starts the
   * controllers, at once or when this replica becomes the leader. Resolves
   * once the caches have synced; a standby's controllers start later.
   */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`manager cannot start: it is ${this.state}`);
    this.state = 'running';
    this.servers = await startHealthServers({
      metricsAddr: this.opts.metricsAddr ?? DEFAULT_METRICS_ADDR,
      probeAddr: this.opts.probeAddr ?? DEFAULT_PROBE_ADDR,
      registry: this.metrics.registry,
      readyCheck: () => this.hasSynced(),
    });
    if (this.state !== 'running') {
      // stop() ran while the listeners were opening.
      await this.servers.close();
      return;
    }
    this.ports.metrics = this.servers.metricsPort;
    this.ports.probe = this.servers.probePort;
    this.logger.info('starting manager', { identity: this.identity, metricsPort: this.ports.metrics, probePort: this.ports.probe, namespaces: this.opts.namespaces ?? [] });

    try {
      await Promise.all([...this.informers.values()].map((i) => this.startInformer(i)));
    } catch (err) {
      if (this.state !== 'running') return;
      throw err;
    }
    if (this.state !== 'running') return;
    this.servers.refresh(); // ready from this moment, not from the next heartbeat
    this.logger.info('caches synced', { informers: this.informers.size });

    const le = this.opts.leaderElection;
    if (!le?.enabled) {
      this.startControllers();
      return;
    }
    const name = le.name || DEFAULT_LEASE_NAME;
    this.metrics.leaderStatus(name, false);
    this.elector = new LeaderElector(this.client, {
      namespace: le.namespace, name, identity: this.identity, logger: this.logger.child({ lease: `${le.namespace}/${name}` }),
      ...(le.leaseDurationMs ? { leaseDurationMs: le.leaseDurationMs } : {}),
      ...(le.renewDeadlineMs ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
      ...(le.retryPeriodMs ? { retryPeriodMs: le.retryPeriodMs } : {}),
      clock: this.clock,
      hooks: { onLeaderChange: (isLeader) => this.metrics.leaderStatus(name, isLeader) },
    });
    this.elector
      .run({ onStartedLeading: () => this.startControllers(), onStoppedLeading: () => this.lostLeadership() })
      .catch((err: unknown) => {
        this.logger.error('leader election failed', { err: String(err) });
        void this.lostLeadership();
      });
  }

  /** Graceful: no new work, in-flight reconciles finish, the lease is released, then everything closes. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * What still has work: the controllers with queued or running keys, or the Event recorder when its
   * queued Events are not written within `withinMs` (an Event write the API server never answers must
   * not hold a caller past its deadline). Empty when idle. Tests and benchmarks wait on it
   * (test/support/idle.ts): an app requeued in a loop never goes idle.
   */
  async busy(withinMs: number): Promise<string[]> {
    if (!await settlesWithin(this.events.flush(), withinMs)) return ['the Event recorder, writing its queued Events'];
    return this.controllers.filter((c) => !c.isIdle()).map((c) => c.name);
  }

  private hasSynced(): boolean {
    return [...this.informers.values()].every((i) => i.hasSynced());
  }

  private startInformer(informer: Informer<KubeObject>): Promise<void> {
    const started = informer.start();
    // Stopping before the first sync rejects; the caller that awaits decides what that means.
    started.catch(() => {});
    return started;
  }

  private startControllers(): void {
    if (this.state !== 'running' || this.leading) return;
    this.leading = true;
    this.events.beginTerm();
    this.logger.info('starting controllers', { controllers: this.controllers.map((c) => c.name) });
    for (const c of this.controllers) c.start();
    for (const task of this.leaderTasks) void task();
  }

  /**
   * The lease is lost: another replica may lead already, so in-flight reconciles are aborted (their
   * requests cut, so no write of theirs lands after the successor's) and not waited for, as
   * controller-runtime cancels the reconcile context and skips the graceful wait on lease loss.
   */
  private async lostLeadership(): Promise<void> {
    // During stop() the controllers are already stopped and losing the lease is the plan.
    if (!this.leading || this.state !== 'running') return;
    this.leading = false;
    this.logger.error('leader election lost: abandoning in-flight reconciles', { identity: this.identity });
    // First, so that nothing the abandoned reconciles or effects record on their way out is posted either.
    this.events.endTerm();
    for (const c of this.controllers) c.abandon();
    if (this.opts.onLostLeadership) return this.opts.onLostLeadership();
    await flushLogger(this.logger);
    process.exit(1);
  }

  private async shutDown(): Promise<void> {
    const wasRunning = this.state === 'running';
    this.state = 'stopping';
    if (wasRunning) {
      await Promise.all(this.controllers.map((c) => c.stop()));
      this.leading = false;
      // Released only after in-flight work is done, so a successor never overlaps with it.
      await this.elector?.stop();
      for (const i of this.informers.values()) i.stop();
      await this.events.flush();
      await this.servers?.close();
    }
    this.client.close();
    this.state = 'stopped';
    this.logger.info('manager stopped');
    await flushLogger(this.logger);
  }
}

/** Whether `p` settles within `ms` (it is left running if not). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), Math.max(0, ms)); });
  try {
    return await Promise.race([p.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
