// Network namespaces for the rig's data plane (SIMULATED NETWORK, see
// netns-bridge.ts). Each has only `lo`, up, with a non-loopback /32 that plays
// the pod IP of the components that refuse loopback, and the simulated pods'
// CIDR, so that a scrape of a pod IP ends at a closed local port. There is no
// route out: nothing inside can reach anything but itself and the unix sockets
// the harness hands it. Creating them needs root (`ip netns add`).
// A namespace outlives its harness (its processes die with it, see
// supervise.ts, but the namespace is a file under /run/netns): on a signal the
// harness removes its own as it exits (deleteNetnsOnExit); for SIGKILL each
// name carries the pid of the process that made it, and sweepLeakedNetns() removes,
// at start-up, the rig's namespaces whose owner is gone and that nothing runs
// in. A live run's namespaces are never touched: its owner is alive, or (a
// detached `npm run cluster`, whose owner exits after `up`) its processes run
// inside.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { EnvtestError } from './errors.ts';

const run = promisify(execFile);

/** The CIDR KWOK hands pod IPs from (one /24 per node), local in every namespace. */
export const POD_CIDR = '10.244.0.0/16';

const PREFIX = 'sapp';
/** `sapp-<owner pid>-<random>`: the rig's namespaces, with the pid that owns them. */
const OWNED_NAME = new RegExp(`^${PREFIX}-(\\d+)-[0-9a-f]+$`);

/** A fresh, unique namespace name owned by this process. */
export function netnsName(): string {
  return `${PREFIX}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/**
 * Removes the rig's namespaces left by runs that were killed: the owner pid in
 * the name is gone and no process runs inside. Returns the names removed.
 * Names without an owner pid (made before owners were recorded) are left alone.
 */
export async function sweepLeakedNetns(): Promise<string[]> {
  const names = await ipOutput(['netns', 'list']).then(parseNetnsList, () => []);
  const leaked: string[] = [];
  for (const name of names) {
    const owner = OWNED_NAME.exec(name)?.[1];
    if (owner === undefined || pidAlive(Number(owner))) continue;
    const inside = await ipOutput(['netns', 'pids', name]).catch(() => undefined);
    if (inside === undefined || inside.trim() !== '') continue;
    await deleteNetns(name);
    leaked.push(name);
  }
  return leaked;
}

/** Namespace names from `ip netns list` (lines like `sapp-1-ab (id: 3)`). */
export function parseNetnsList(text: string): string[] {
  return text.split('\n').map((line) => line.trim().split(/\s+/)[0] ?? '').filter(Boolean);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Creates namespace `name` with lo up, `podIp`/32 and the pod CIDR on it. */
export async function createNetns(name: string, podIp: string): Promise<void> {
  await ip(['netns', 'add', name]);
  try {
    await ip(['-n', name, 'link', 'set', 'lo', 'up']);
    await ip(['-n', name, 'addr', 'add', `${podIp}/32`, 'dev', 'lo']);
    await ip(['-n', name, 'addr', 'add', POD_CIDR.replace('.0/16', '.1/16'), 'dev', 'lo']);
  } catch (err) {
    await deleteNetns(name);
    throw err;
  }
}

/**
 * Removes `names` when this process exits however it exits short of SIGKILL
 * (supervise.ts turns Ctrl-C into process.exit). `ip netns del` is fine while
 * processes still run inside: the namespace goes with the last of them.
 * Returns a function that cancels this (once the namespaces are deleted).
 */
export function deleteNetnsOnExit(names: readonly string[]): () => void {
  const onExit = () => {
    for (const name of names) {
      try {
        execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
      } catch {
        // already gone
      }
    }
  };
  process.on('exit', onExit);
  return () => process.off('exit', onExit);
}

/** Removes namespace `name` (a no-op when it is gone). */
export async function deleteNetns(name: string): Promise<void> {
  await ip(['netns', 'del', name]).catch(() => {});
}

async function ipOutput(args: string[]): Promise<string> {
  return (await run('ip', args)).stdout;
}

async function ip(args: string[]): Promise<void> {
  try {
    await run('ip', args);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new EnvtestError('the `ip` command (iproute2) is needed for the data plane\'s network namespaces; install iproute2.');
    throw new EnvtestError(`ip ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim()}. The data plane needs root to create network namespaces; run as root or pass dataPlane: false.`);
  }
}
