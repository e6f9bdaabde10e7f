// The one source of "now" for the operator's logic. Production code reads the
// system clock; demos and tests run a real-time clock shifted to a chosen
// instant ("the demo starts at 05:59:50 Berlin"), so window and rollout math
// can be exercised without waiting for the wall clock. The runtime's own
// timing (a queue's delays, a watch's watchdog, a relist's backoff, the leader
// lease's deadlines) sets its timers on a TimerClock, so its tests step a
// manual clock instead of sleeping (test/support/manual-clock.ts); the system
// and offset clocks wait in real time.

export interface Clock {
  now(): Date;
}

/** A pending wake-up. */
export interface Timer {
  /** It will not fire (safe after it fired, and twice). */
  cancel(): void;
  /** A real timer no longer keeps the process alive. */
  unref(): void;
}

/** A clock that can also wake code once time has passed on it. */
export interface TimerClock extends Clock {
  /** Calls `fn` once, `ms` from now on this clock. */
  setTimer(ms: number, fn: () => void): Timer;
}

/** A real timer: delays are real time whatever a clock's offset. */
function realTimer(ms: number, fn: () => void): Timer {
  const t = setTimeout(fn, ms);
  return { cancel: () => clearTimeout(t), unref: () => void t.unref() };
}

export const systemClock: TimerClock = { now: () => new Date(), setTimer: realTimer };

/** Runs at real speed from `start` (default: the real now); jumpTo and advance move it. */
export class OffsetClock implements TimerClock {
  #offsetMs: number;

  constructor(start?: Date) {
    this.#offsetMs = start ? start.getTime() - Date.now() : 0;
  }

  now(): Date {
    return new Date(Date.now() + this.#offsetMs);
  }

  jumpTo(d: Date): void {
    this.#offsetMs = d.getTime() - Date.now();
  }

  advance(ms: number): void {
    this.#offsetMs += ms;
  }

  setTimer(ms: number, fn: () => void): Timer {
    return realTimer(ms, fn);
  }
}

/** Waits `ms` on `clock` (real time by default); resolves early, without error, once `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal, clock: TimerClock = systemClock): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      timer.cancel();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = clock.setTimer(ms, done);
    signal.addEventListener('abort', done);
  });
}

/** A deadline `ms` from now on `clock`: AbortSignal.timeout, but steppable; cancel it once it no longer matters. */
export interface Deadline {
  /** Aborts, with a TimeoutError as AbortSignal.timeout does, when the deadline passes. */
  readonly signal: AbortSignal;
  cancel(): void;
}

export function deadlineIn(ms: number, clock: TimerClock = systemClock): Deadline {
  const controller = new AbortController();
  const timer = clock.setTimer(ms, () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')));
  timer.unref(); // like AbortSignal.timeout: a deadline alone does not keep the process alive
  return { signal: controller.signal, cancel: () => timer.cancel() };
}
