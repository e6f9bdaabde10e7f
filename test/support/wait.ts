// The one polling helper of the tests, unit and integration alike: a condition
// is awaited, never slept for. Its deadline is generous because a CI machine
// is shared and the real Knative on two busy cores takes tens of seconds for
// what takes one alone; a test that gives up says what it was waiting for and
// the last error it saw, so a slow run and a stuck one read differently.
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The deadlines of the integration tests, in one place: how long the real
 * Knative and KServe may take on two busy cores (load average about 10 has
 * been seen). Generous, because a deadline only costs time when something is
 * already broken, while a tight one fails a working build on a shared machine.
 */
/** A reconcile and its status write, or a child the controllers already have. */
export const SETTLE_MS = 120_000;
/** A new Revision or InferenceService becoming Ready, from the apply. */
export const READY_MS = 300_000;

export interface WaitOptions {
  /** Default 30 s: far above what any local condition needs, below mocha's 60 s per test, so the helper's message is the one shown. A wait on the real control plane passes SETTLE_MS or READY_MS. */
  timeoutMs?: number;
  /** The longest pause between two looks; looks start 5 ms apart and back off to it. Default 100 ms. */
  intervalMs?: number;
  /** Gives up at once when this names a reason (the process waited on has exited): no deadline can help then. */
  giveUpIf?: () => string | undefined;
}

/**
 * Calls `fn` until it returns something other than undefined, null or false,
 * and returns that; a throw counts as "not yet". Gives up after `timeoutMs`
 * with an error naming `what`, and the last error when there was one.
 */
export async function waitFor<T>(what: string, fn: () => T | Promise<T>, opts: WaitOptions = {}): Promise<Exclude<T, undefined | null | false>> {
  const { timeoutMs = 30_000, intervalMs = 100, giveUpIf } = opts;
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (let pause = Math.min(5, intervalMs); ; pause = Math.min(pause * 2, intervalMs)) {
    const hopeless = giveUpIf?.();
    if (hopeless) throw new Error(`gave up waiting for ${what}: ${hopeless}`);
    try {
      const value = await fn();
      if (value !== undefined && value !== null && value !== false) return value as Exclude<T, undefined | null | false>;
    } catch (err) {
      lastError = err;
    }
    if (performance.now() >= deadline) break;
    await sleep(pause);
  }
  const cause = lastError instanceof Error ? `; last error: ${lastError.message}` : lastError !== undefined ? `; last error: ${String(lastError)}` : '';
  throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${cause}`);
}
