import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { ThreadCpuClock, threadCpuMs } from './thread-cpu.ts';

/** Lets the event loop turn once (its I/O phase, where it counts as not active). */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Keeps the loop active for `ms` of wall time, half of it on the CPU and half blocked (as if the core were taken away). */
function halfOnCore(ms: number): void {
  const blocked = new Int32Array(new SharedArrayBuffer(4));
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const spinUntil = performance.now() + 2;
    while (performance.now() < spinUntil) { /* on the CPU */ }
    Atomics.wait(blocked, 0, 0, 2); // off it: active, not waiting for I/O
  }
}

describe('ThreadCpuClock', () => {
  it('follows the thread\'s CPU, not the wall clock, when the loop is kept off the core half the time', async () => {
    const clock = new ThreadCpuClock();
    // Windows in which the loop got half a core while active: the clock learns the ratio.
    for (let i = 0; i < 4; i++) {
      halfOnCore(60);
      clock.now();
      await nextTurn();
    }
    const wall0 = performance.now(), cpu0 = threadCpuMs(), read0 = clock.now();
    for (let i = 0; i < 3; i++) {
      halfOnCore(60);
      clock.now();
      await nextTurn();
    }
    const wall = performance.now() - wall0, cpu = threadCpuMs() - cpu0, read = clock.now() - read0;
    assert.ok(read < 0.8 * wall, `the clock (${read.toFixed(1)} ms) counts less than the wall time (${wall.toFixed(1)} ms)`);
    // Within a factor of 2: the ratio is learned from the window before, and on a busy machine the spin gets less
    // than its half of the core from one window to the next (1.51x was seen beside a benchmark).
    assert.ok(read > 0.5 * cpu && read < 2 * cpu, `the clock (${read.toFixed(1)} ms) is near the CPU the thread used (${cpu.toFixed(1)} ms)`);
  });

  it('never goes back', async () => {
    const clock = new ThreadCpuClock();
    let last = clock.now();
    for (let i = 0; i < 50; i++) {
      halfOnCore(5);
      const now = clock.now();
      assert.ok(now >= last, `reading ${i}: ${now} after ${last}`);
      last = now;
      if (i % 10 === 0) await nextTurn();
    }
  });
});
