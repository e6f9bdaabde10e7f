// The one source of "now" for the operator's logic. Production code reads the
// system clock; demos and tests run a real-time clock shifted to a chosen
// instant ("the demo starts at 05:59:50 Berlin"), so window and rollout math
// can be exercised without waiting for the wall clock. Waiting (sleep) is real
// time whatever the clock says: it paces I/O, not logic.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** Runs at real speed from `start` (default: the real now); jumpTo and advance move it. */
export class OffsetClock implements Clock {
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
}

/** Waits `ms` of real time; resolves early, without error, once `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });
}
