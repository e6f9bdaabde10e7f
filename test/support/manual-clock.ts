// A clock that moves only when a test says so, for the runtime's timing tests:
// a queue's delay, a backoff or a watchdog fires when the test advances the
// clock past it, never because the machine was fast or slow. What a fired timer
// sets off asynchronously (a worker picking up a key) is then awaited with
// waitFor; what must not fire is shown by advancing to just before it.
import type { Timer, TimerClock } from '../../src/runtime/clock.ts';
import { waitFor, type WaitOptions } from './wait.ts';

interface Pending { at: number; seq: number; fn: () => void }

export class ManualClock implements TimerClock {
  #nowMs: number;
  #seq = 0;
  #timers: Pending[] = [];

  constructor(start = new Date('2026-06-10T12:00:00Z')) {
    this.#nowMs = start.getTime();
  }

  now(): Date {
    return new Date(this.#nowMs);
  }

  setTimer(ms: number, fn: () => void): Timer {
    const timer = { at: this.#nowMs + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return { cancel: () => { this.#timers = this.#timers.filter((t) => t !== timer); }, unref: () => {} };
  }

  /** Timers set and not yet fired or cancelled. */
  get pending(): number {
    return this.#timers.length;
  }

  /** How long until the earliest pending timer fires (undefined if none). */
  nextTimerInMs(): number | undefined {
    const next = this.#earliest();
    return next && next.at - this.#nowMs;
  }

  /** Moves time forward `ms`, firing each timer due by then in order, with now() at its due time. */
  advance(ms: number): void {
    const end = this.#nowMs + ms;
    for (let next = this.#earliest(); next && next.at <= end; next = this.#earliest()) {
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#nowMs = Math.max(this.#nowMs, next.at);
      next.fn();
    }
    this.#nowMs = end;
  }

  #earliest(): Pending | undefined {
    return this.#timers.reduce<Pending | undefined>((a, t) => (!a || t.at < a.at || (t.at === a.at && t.seq < a.seq) ? t : a), undefined);
  }
}

/**
 * Resolves once the promise callbacks already queued have run (a getter a
 * queue just resolved, a worker it woke): for checking what a synchronous
 * step set off, without waiting any time.
 */
export function callbacksRun(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export interface StepOptions extends WaitOptions {
  /** Steps only while this holds (say, only a backoff the code reported, not the deadline of a request still under way). */
  stepWhen?: () => boolean;
}

/**
 * Runs code that waits on `clock` as if time flew: at each look, returns what
 * `fn` returns once it is something (as waitFor does), else advances the clock
 * to its next timer if one is pending. Gives up after waitFor's real-time
 * deadline with an error naming `what`.
 */
export function stepUntil<T>(clock: ManualClock, what: string, fn: () => T | Promise<T>, opts: StepOptions = {}): Promise<Exclude<T, undefined | null | false>> {
  const { stepWhen = () => true, ...wait } = opts;
  return waitFor(what, async () => {
    const value = await fn();
    if (value !== undefined && value !== null && value !== false) return value;
    const next = clock.nextTimerInMs();
    if (next !== undefined && stepWhen()) clock.advance(next);
    return undefined;
  }, wait);
}
