// Starts the control-plane binaries so they can never outlive whoever started
// them. A supervised process runs under a tiny bash wrapper whose stdin is a pipe
// held by this Node process: when the pipe reaches EOF (we close it, or the kernel
// does because Node died, even by SIGKILL) the wrapper terminates the binary.
// A detached process (for `npm run cluster up`) instead gets its own session and
// lives until someone kills its pid from the state file.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../support/wait.ts';
import { EnvtestError } from './errors.ts';

export interface RunningProcess {
  readonly name: string;
  readonly pid: number;
  /** Resolves with the exit code (or the signal name) once the binary is gone. */
  readonly exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the binary is gone. */
  stop(graceMs?: number): Promise<void>;
}

// The watcher reads fd 3 (our pipe) in the background: a line means "stop
// gracefully" (SIGTERM, SIGKILL after 20 s); EOF means Node is gone, so the
// binary is killed at once and the run's directory removed. The wrapper exits with
// the binary's status, so Node sees when the binary itself is gone.
const WRAPPER = [
  'dir=$1; shift',
  'exec 3<&0',
  '"$@" </dev/null & c=$!',
  '{ if read -r -u 3 _; then kill -TERM "$c"; sleep 20; kill -KILL "$c";',
  '  else [ -n "$dir" ] && : > "$dir/.abandoned"; kill -KILL "$c"; fi; } 2>/dev/null &',
  'w=$!',
  'wait "$c"; rc=$?',
  'kill "$w" 2>/dev/null',
  '[ -n "$dir" ] && [ -e "$dir/.abandoned" ] && rm -rf "$dir"',
  'exit "$rc"',
].join('\n');

/** Where and with what environment a binary runs. */
export interface LaunchOptions {
  /** A network namespace (`ip netns exec`, which execs, so the pid is still the binary's). */
  netns?: string;
  /** Added to this process's environment. */
  env?: Record<string, string>;
}

function commandLine(binary: string, args: string[], opts: LaunchOptions): string[] {
  return opts.netns ? ['ip', 'netns', 'exec', opts.netns, binary, ...args] : [binary, ...args];
}

const live = new Set<{ pid: number; dir: string | undefined; detached: boolean }>();
let handlersInstalled = false;

/** Runs `binary args` with output appended to `logPath`, tied to this process's lifetime. */
export function supervise(name: string, binary: string, args: string[], logPath: string, cleanupDir?: string, opts: LaunchOptions = {}): RunningProcess {
  const log = openSync(logPath, 'a');
  const child = spawn('bash', ['-c', WRAPPER, `${name}-supervisor`, cleanupDir ?? '', ...commandLine(binary, args, opts)], {
    stdio: ['pipe', log, log],
    env: { ...process.env, ...opts.env },
    detached: true, // its own process group, so Ctrl-C reaches us first and we kill the group
  });
  closeSync(log);
  const entry = { pid: child.pid ?? -1, dir: cleanupDir, detached: false };
  live.add(entry);
  installExitHandlers();
  const exited = exitOf(child).finally(() => live.delete(entry));
  child.stdin?.on('error', () => {});
  return {
    name,
    pid: entry.pid,
    exited,
    async stop(graceMs = 20_000) {
      child.stdin?.end('stop\n');
      if (await settlesWithin(exited, graceMs)) return;
      killGroup(entry.pid, 'SIGKILL');
      await exited;
    },
  };
}

/**
 * Runs `binary args` in its own session so it can outlive this process; output
 * goes to `logPath`. Until releaseDetached() it still dies with us, so a start
 * interrupted by Ctrl-C leaves nothing behind.
 */
export function spawnDetached(name: string, binary: string, args: string[], logPath: string, cleanupDir?: string, opts: LaunchOptions = {}): RunningProcess {
  const log = openSync(logPath, 'a');
  const [command = binary, ...argv] = commandLine(binary, args, opts);
  const child = spawn(command, argv, { stdio: ['ignore', log, log], detached: true, env: { ...process.env, ...opts.env } });
  closeSync(log);
  child.unref();
  const entry = { pid: child.pid ?? -1, dir: cleanupDir, detached: true };
  live.add(entry);
  installExitHandlers();
  const exited = exitOf(child).finally(() => live.delete(entry));
  return { name, pid: entry.pid, exited, stop: (graceMs) => terminate(entry.pid, binary, graceMs) };
}

/** Lets the detached processes started so far outlive this process. */
export function releaseDetached(): void {
  for (const entry of live) if (entry.detached) live.delete(entry);
}

/** Stops a detached process found in a state file, if it is still the binary we started. */
export async function terminate(pid: number, binary: string, graceMs = 20_000): Promise<void> {
  if (!isRunning(pid, binary)) return;
  killGroup(pid, 'SIGTERM');
  const deadline = performance.now() + graceMs;
  while (isRunning(pid, binary) && performance.now() < deadline) await sleep(100);
  if (isRunning(pid, binary)) killGroup(pid, 'SIGKILL');
  while (isRunning(pid, binary)) await sleep(50);
}

/** True when `pid` is alive and runs `binary` (guards against a recycled pid). */
export function isRunning(pid: number, binary: string): boolean {
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return argv0 === binary && !/\) Z /.test(stat);
  } catch {
    return false;
  }
}

function exitOf(child: ChildProcess): Promise<number | string> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
    child.once('error', (err) => resolve(err.message));
  });
}

async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = sleep(ms, false, { ref: false });
  return Promise.race([p.then(() => true), timer]);
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

// Last resort when Node is about to die without running our teardown: kill every
// supervised group at once and remove its directory.
function killAllNow(): void {
  for (const entry of live) {
    killGroup(entry.pid, 'SIGKILL');
    if (entry.dir) rmSync(entry.dir, { recursive: true, force: true });
  }
  live.clear();
}

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killAllNow);
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    process.on(signal, () => {
      killAllNow();
      process.exit(code);
    });
  }
}

/**
 * Polls `check` until it returns true; fails early, naming the process and
 * quoting the tail of its log (`logDir/<name>.log`), when the process exits or
 * `timeoutMs` passes.
 */
export async function waitHealthy(proc: RunningProcess, logDir: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  let exit: number | string | undefined;
  void proc.exited.then((code) => { exit = code; });
  await waitFor(`${proc.name} to be ready`, check, { timeoutMs, intervalMs: 250, giveUpIf: () => (exit !== undefined ? `exited (${exit})` : undefined) }).catch((e: Error) => {
    // The wait's message keeps the health check's last error, if it had one.
    throw startFailure(proc.name, logDir, exit !== undefined ? `exited (${exit}) before it was ready` : `was not ready after ${timeoutMs / 1000}s (${e.message})`);
  });
}

/** An EnvtestError naming `name` with the last lines of its log. */
export function startFailure(name: string, logDir: string, what: string): EnvtestError {
  let tail = '';
  try {
    tail = readFileSync(join(logDir, `${name}.log`), 'utf8').trimEnd().split('\n').slice(-30).join('\n');
  } catch {
    tail = '(no log written)';
  }
  return new EnvtestError(`${name} ${what}; last lines of its log:\n${tail}`);
}
