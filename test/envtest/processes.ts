// The machine's processes as /proc shows them, to prove nothing was left
// running: a process's descendants, whether a pid still runs the same
// program, and the processes a rig left running.
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

/**
 * The processes of one rig: programs from `programDirs` (the rig's binaries,
 * its Node scripts), and the supervisors that run them, that name a path in
 * the rig's `dir` in their arguments or environment (every rig process does:
 * a kubeconfig, data or socket path). A user's shell or kubectl pointed at the
 * rig names it too, but runs no program of the rig's, so it is never matched.
 */
export function rigProcesses(dir: string, programDirs: string[]): ProcessInfo[] {
  const under = (path: string | undefined, d: string) => !!path && path.startsWith(d.endsWith('/') ? d : `${d}/`);
  const inDir = dir.endsWith('/') ? dir : `${dir}/`;
  return processes().filter((p) => {
    if (p.pid === process.pid) return false;
    if (!programDirs.some((d) => under(p.exe, d) || p.argv.some((a) => under(a, d)))) return false;
    if (p.argv.some((a) => a.includes(inDir))) return true;
    try {
      return readFileSync(`/proc/${p.pid}/environ`, 'utf8').includes(inDir);
    } catch {
      return false;
    }
  });
}

/** SIGKILLs each of `left` that still runs the same program; returns how each was described. */
export function killLeftovers(left: ProcessInfo[]): string[] {
  return left.filter(stillRunning).map((p) => {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
    return `${p.pid} ${p.argv.join(' ').slice(0, 160)}`;
  });
}
