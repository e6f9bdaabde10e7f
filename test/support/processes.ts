// The machine's processes as /proc shows them, for tests that prove nothing
// was left running: a process's descendants, whether a pid still runs the
// same program, and every process running a binary from a directory.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** argv, NUL-split. */
  argv: string[];
  /** The program's path (/proc/<pid>/exe), when readable. */
  exe: string | undefined;
}

/** Every live (not zombie) process. */
export function processes(): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const info = processInfo(Number(entry));
    if (info) out.push(info);
  }
  return out;
}

/** The process `pid`, or undefined when it is gone or a zombie. */
export function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces: the fields after it are fixed.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state === 'Z' || state === 'X') return undefined;
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    let exe: string | undefined;
    try {
      exe = readlinkSync(`/proc/${pid}/exe`);
    } catch {
      exe = undefined;
    }
    return { pid, ppid: Number(ppid), argv, exe };
  } catch {
    return undefined;
  }
}

/** `pid`'s children, their children, and so on. */
export function descendants(pid: number): ProcessInfo[] {
  const all = processes();
  const found: ProcessInfo[] = [];
  let parents = new Set([pid]);
  while (parents.size > 0) {
    const children = all.filter((p) => parents.has(p.ppid));
    found.push(...children);
    parents = new Set(children.map((c) => c.pid));
  }
  return found;
}

/** Whether `p` still runs (the same pid with the same argv: a recycled pid is another process). */
export function stillRunning(p: ProcessInfo): boolean {
  const now = processInfo(p.pid);
  return !!now && now.argv.join('\0') === p.argv.join('\0');
}

/** Processes whose program (exe, argv[0] or any argument that is a path) lies in `dir`. */
export function runningFrom(dir: string): ProcessInfo[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return processes().filter((p) => p.exe?.startsWith(prefix) || p.argv.some((a) => a.startsWith(prefix)));
}
