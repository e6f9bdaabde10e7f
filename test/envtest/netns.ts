// Network namespaces for the rig's data plane (SIMULATED NETWORK, see
// netns-bridge.ts). Each has only `lo`, up, with a non-loopback /32 that plays
// the pod IP of the components that refuse loopback, and the simulated pods'
// CIDR, so that a scrape of a pod IP ends at a closed local port. There is no
// route out: nothing inside can reach anything but itself and the unix sockets
// the harness hands it. Creating them needs root (`ip netns add`).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { EnvtestError } from './errors.ts';

const run = promisify(execFile);

/** The CIDR KWOK hands pod IPs from (one /24 per node), local in every namespace. */
export const POD_CIDR = '10.244.0.0/16';

/** A fresh, unique namespace name with `prefix` (`sapp-` names are this rig's). */
export function netnsName(prefix = 'sapp'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
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

/** Removes namespace `name` (a no-op when it is gone). */
export async function deleteNetns(name: string): Promise<void> {
  await ip(['netns', 'del', name]).catch(() => {});
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
