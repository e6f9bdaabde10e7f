// The main thread's CPU time: what a piece of the operator's work costs the
// one event loop every namespace shares (a wall clock would also count the
// time the machine's other processes took the core).
//
// Reading it is a system call (getrusage), 2.5 us on the benchmark's VM in a
// loop and about 20 us each inside the busy operator: measuring every
// reconcile and event that way cost 0.6 s of a 5,000-app restart's 1.5 s
// first pass. So pieces are timed with the monotonic clock (0.1 us) and the
// wall time scaled by how much CPU the loop got per busy wall millisecond
// over the last window: the CPU read once per window, against the event
// loop's active time (the time it was not waiting for I/O).

import { performance } from 'node:perf_hooks';

/** The main thread's CPU time in ms; the wall clock where the runtime cannot tell (before Node 23.9). */
export function threadCpuMs(): number {
  const usage = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.();
  return usage ? (usage.user + usage.system) / 1000 : performance.now();
}

/** How often the CPU per busy wall millisecond is read again. */
const WINDOW_MS = 100;
/** A window busier than this says how much of the core the loop gets; a quieter one keeps the last figure. */
const MIN_ACTIVE_MS = 5;

/**
 * A clock of the main thread's CPU milliseconds, cheap enough to read around every piece of work:
 * between two readings it advances with the wall clock, scaled by the CPU the thread got per
 * millisecond the event loop was active in the last window (1 on an idle machine; less when other
 * processes took the core while the loop ran). Monotonic.
 */
export class ThreadCpuClock {
  #ratio = 1;
  #wallAt = performance.now();
  #readingAt = 0;
  #cpuAt = threadCpuMs();
  #activeAt = performance.eventLoopUtilization().active;

  /** The estimated main-thread CPU in ms since the clock was made. */
  now(): number {
    const wall = performance.now();
    const reading = this.#readingAt + (wall - this.#wallAt) * this.#ratio;
    if (wall - this.#wallAt >= WINDOW_MS) this.#calibrate(wall, reading);
    return reading;
  }

  #calibrate(wall: number, reading: number): void {
    const cpu = threadCpuMs();
    const active = performance.eventLoopUtilization().active;
    const busy = active - this.#activeAt;
    if (busy >= MIN_ACTIVE_MS) this.#ratio = Math.min(1, Math.max(0, (cpu - this.#cpuAt) / busy));
    this.#cpuAt = cpu;
    this.#activeAt = active;
    this.#wallAt = wall;
    this.#readingAt = reading;
  }
}

const shared = new ThreadCpuClock();

/** The process's one ThreadCpuClock reading, in ms: what pieces of work are timed with (NamespaceShare, KubeClient). */
export function estimatedThreadCpuMs(): number {
  return shared.now();
}
