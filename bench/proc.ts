// What one process costs, read from Linux's /proc: resident memory (now and
// peak) and CPU time (user + system), so the operator child is measured
// apart from the API server, the stand-ins and the benchmark itself.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface ProcessSample {
  rssBytes: number;
  peakRssBytes: number;
  cpuSeconds: number;
}

let ticks: number | undefined;
/** Clock ticks per second of /proc/<pid>/stat times (almost always 100). */
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

export function sampleProcess(pid: number): ProcessSample {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  // The command name may contain spaces and parentheses: fields are counted after the last ')'.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, i.e. 12 and 13 after the name.
  const cpu = (Number(fields[11]) + Number(fields[12])) / clockTicks();
  return { rssBytes: kib('VmRSS'), peakRssBytes: kib('VmHWM'), cpuSeconds: cpu };
}

/** The child of `parent` whose command line contains `name` (the binary under an envtest supervisor shell). */
export function childNamed(parent: number, name: string): number | undefined {
  let children: string;
  try {
    children = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8');
  } catch {
    return undefined;
  }
  return children.trim().split(/\s+/).filter(Boolean).map(Number).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(name);
    } catch {
      return false;
    }
  });
}

/** CPU seconds each named process used while `work` ran (processes that cannot be read count 0). */
export async function cpuDuring<T>(pids: Record<string, number | undefined>, work: () => Promise<T>): Promise<{ result: T; cpuSeconds: Record<string, number> }> {
  const read = () => Object.fromEntries(Object.entries(pids).map(([k, pid]) => {
    try {
      return [k, pid ? sampleProcess(pid).cpuSeconds : 0];
    } catch {
      return [k, 0];
    }
  })) as Record<string, number>;
  const before = read();
  const result = await work();
  const after = read();
  return { result, cpuSeconds: Object.fromEntries(Object.keys(pids).map((k) => [k, after[k]! - before[k]!])) };
}

export const MiB = 1024 * 1024;

/** The machine's CPU time so far (all cores, /proc/stat): busy (everything but idle and iowait) and in all, in seconds. */
export function machineCpu(stat = readFileSync('/proc/stat', 'utf8')): { busySeconds: number; totalSeconds: number } {
  const fields = stat.split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((a, b) => a + b, 0), idle = fields[3]! + fields[4]!;
  return { busySeconds: (total - idle) / clockTicks(), totalSeconds: total / clockTicks() };
}

/** CPU seconds so far of each named group of processes (a process that cannot be read counts 0). */
export function groupCpu(groups: Record<string, Array<number | undefined>>): Record<string, number> {
  const of = (pid: number | undefined) => {
    try {
      return pid ? sampleProcess(pid).cpuSeconds : 0;
    } catch {
      return 0;
    }
  };
  return Object.fromEntries(Object.entries(groups).map(([k, pids]) => [k, pids.reduce((sum: number, pid) => sum + of(pid), 0)]));
}
