// Waiting until an operator has nothing left to do: no controller with queued
// or running work (and, in this process, every recorded Event written), at two
// looks in a row, since a reconcile that enqueues another would otherwise look
// idle between the two. An operator in this process is asked directly
// (Manager.busy); one in a child process is judged by its metrics
// (operator-process.ts waitIdle). Both wait through quietAtTwoLooks.
import type { Manager } from '../../src/runtime/manager.ts';
import { SETTLE_MS, waitFor, type WaitOptions } from './wait.ts';

/**
 * Resolves once `busy()` names nothing at two looks in a row; rejects after the deadline naming
 * what it waited for (`what`) and what was still busy at the last look.
 */
export async function quietAtTwoLooks(what: string, busy: () => Promise<string[]>, opts: WaitOptions): Promise<void> {
  let quiet = 0;
  let last: string[] = [];
  await waitFor(what, async () => {
    last = await busy();
    quiet = last.length === 0 ? quiet + 1 : 0;
    return quiet >= 2;
  }, opts).catch((e: Error) => {
    throw new Error(`${e.message}; still busy: ${last.join(', ') || 'none at the last look'}`);
  });
}

/** Resolves once `manager` is idle at two looks in a row; rejects after `timeoutMs` naming what was still busy. */
export async function waitIdle(manager: Pick<Manager, 'busy'>, timeoutMs = SETTLE_MS): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  await quietAtTwoLooks('the controllers to be idle (nothing queued or running, every event written)',
    () => manager.busy(deadline - performance.now()), { timeoutMs, intervalMs: 10 });
}
