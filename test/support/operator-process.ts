// The real operator as a child process (`node src/main.ts`, or the built
// `node dist/main.js` for the benchmarks), with the NODE_OPTIONS the image
// launches it with and, for dist/, its node flags too (image-launch.ts), for the
// benchmarks and fault tests: it can be SIGKILLed mid-reconcile, two replicas
// can elect a leader, and its RSS and CPU are its own. Loopback ports are
// chosen here so /readyz and /metrics can be polled; its log lines are kept
// (the tail) so a test can show what it said before it failed.
import { freePorts } from '../envtest/controlplane.ts';
import { imageLaunch } from './image-launch.ts';
import { quietAtTwoLooks } from './idle.ts';
import { SETTLE_MS, waitFor } from './wait.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TAIL_LINES = 400;

export interface OperatorProcessOptions {
  kubeconfigPath: string;
  /** The script node runs; default src/main.ts (type-stripped). The benchmarks pass the built dist/main.js, which is what ships. */
  script?: string;
  /** Watched namespaces (default: all). Restrict them so a test's operator ignores other tests' apps. */
  namespaces?: string[];
  concurrency?: number;
  /** Default false. With true, `leaderElectionNamespace` must exist. */
  leaderElect?: boolean;
  leaderElectionNamespace?: string;
  identity?: string;
  clockStart?: string;
  /** Default warn. */
  logLevel?: string;
  allowedGateways?: string[];
  /** Further flags, e.g. ['--watch-watchdog', '5s'] or ['--cpu-prof'] for node (use nodeArgs for those). */
  args?: string[];
  /** Flags for node itself, after the image's (dist/ only), e.g. ['--cpu-prof', '--cpu-prof-dir=/tmp/prof']. */
  nodeArgs?: string[];
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class OperatorProcess {
  readonly pid: number;
  readonly metricsPort: number;
  readonly probePort: number;
  /** When it was spawned (performance.now()). */
  readonly startedAt: number;
  /** Resolves when the process has exited, however. */
  readonly exited: Promise<Exit>;
  private readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private readonly problemCounts = new Map<string, number>();
  private exit: Exit | undefined;

  private constructor(child: ChildProcess, ports: { metrics: number; probe: number }, startedAt: number) {
    this.child = child;
    this.pid = child.pid!;
    this.metricsPort = ports.metrics;
    this.probePort = ports.probe;
    this.startedAt = startedAt;
    for (const stream of [child.stdout!, child.stderr!]) {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) this.keep(line);
      });
      stream.on('end', () => { if (partial) this.keep(partial); });
    }
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
      this.exit = { code, signal };
      resolve(this.exit);
    }));
  }

  /** Spawns the operator; it is not ready yet (see waitReady). */
  static async start(o: OperatorProcessOptions): Promise<OperatorProcess> {
    const [metrics = 0, probe = 0] = await freePorts(2);
    const launch = imageLaunch();
    const script = o.script ?? join(root, 'src', 'main.ts');
    // Type stripping needs WebAssembly, which --lite-mode removes: sources run with the image's NODE_OPTIONS only.
    const imageArgs = script.endsWith('.js') ? launch.nodeArgs : [];
    const args = [
      ...imageArgs, ...(o.nodeArgs ?? []), script,
      '--kubeconfig', o.kubeconfigPath,
      '--leader-elect', String(o.leaderElect ?? false),
      '--metrics-bind-address', `127.0.0.1:${metrics}`,
      '--health-probe-bind-address', `127.0.0.1:${probe}`,
      '--log-level', o.logLevel ?? 'warn',
      '--concurrency', String(o.concurrency ?? 4),
      ...(o.namespaces?.length ? ['--namespaces', o.namespaces.join(',')] : []),
      ...(o.leaderElectionNamespace ? ['--leader-election-namespace', o.leaderElectionNamespace] : []),
      ...(o.identity ? ['--identity', o.identity] : []),
      ...(o.clockStart ? ['--clock-start', o.clockStart] : []),
      ...(o.allowedGateways ? ['--allowed-gateways', o.allowedGateways.join(',')] : []),
      ...(o.args ?? []),
    ];
    const startedAt = performance.now();
    // The environment must not leak settings the flags do not override (LEADER_ELECT, WATCH_NAMESPACES, ...).
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_OPTIONS: launch.nodeOptions };
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    return new OperatorProcess(child, { metrics, probe }, startedAt);
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  /** The last lines it wrote (stdout and stderr interleaved). */
  output(): string[] {
    return [...this.lines];
  }

  /** Every warning, error and line that is not a JSON log entry it wrote, counted by level and message. */
  problems(): Map<string, number> {
    return new Map(this.problemCounts);
  }

  /** Resolves once /readyz answers 200 (its caches have synced); rejects if it exits first. */
  async waitReady(timeoutMs = SETTLE_MS): Promise<void> {
    await waitFor('the operator to be ready (/readyz 200)', () => this.ready(), { timeoutMs, intervalMs: 25, giveUpIf: () => this.gone() })
      .catch((e: Error) => { throw new Error(`${e.message}:\n${this.output().slice(-20).join('\n')}`); });
  }

  async ready(): Promise<boolean> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.probePort}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.text();
      return res.status === 200;
    } catch {
      return false;
    }
  }

  /**
   * Resolves once no controller has queued or running work (workqueue_depth and
   * controller_runtime_active_workers all 0) at two reads in a row, as
   * Manager.waitIdle judges an operator in this process; rejects naming what
   * was still busy after `timeoutMs`, or if the operator exits.
   */
  async waitIdle(timeoutMs = SETTLE_MS): Promise<void> {
    await quietAtTwoLooks('the operator to be idle (no queued or running work at two reads in a row)', async () => (await this.metrics())
      .filter((m) => (m.name === 'workqueue_depth' || m.name === 'controller_runtime_active_workers') && m.value > 0)
      .map((m) => `${m.name}${JSON.stringify(m.labels)} ${m.value}`), { timeoutMs, intervalMs: 25, giveUpIf: () => this.gone() }).catch((e: Error) => {
      throw new Error(`${e.message}${this.alive ? '' : `:\n${this.output().slice(-20).join('\n')}`}`);
    });
  }

  /** Why waiting on it is hopeless: it exited (how), or undefined while it runs. */
  private gone(): string | undefined {
    return this.alive ? undefined : `the operator exited (${JSON.stringify(this.exit)})`;
  }

  /** The /metrics samples, by name and labels. */
  async metrics(): Promise<Sample[]> {
    const res = await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`, { signal: AbortSignal.timeout(10_000) });
    return parsePrometheus(await res.text());
  }

  /** Sends `signal` (default SIGKILL) and waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    if (this.alive) this.child.kill(signal);
    return this.exited;
  }

  /** SIGTERM (a graceful stop), then SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<Exit> {
    if (!this.alive) return this.exited;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }

  private keep(line: string): void {
    this.lines.push(line);
    if (this.lines.length > TAIL_LINES) this.lines.shift();
    if (!line.trim()) return;
    let entry: { level?: string; message?: string } | undefined;
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      // not a log entry: Node's own messages (a crash, a warning) land here
    }
    if (entry && entry.level !== 'warn' && entry.level !== 'error') return;
    const key = entry ? `${entry.level}: ${entry.message ?? ''}` : line.slice(0, 200);
    this.problemCounts.set(key, (this.problemCounts.get(key) ?? 0) + 1);
  }
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Reads the Prometheus text format (what prom-client writes: no escapes in label values, no timestamps). */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels[k!] = v!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of every sample named `name` whose labels include `labels`. */
export function metricValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

export { freePorts };
