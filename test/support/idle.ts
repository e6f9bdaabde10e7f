// Waiting until an operator running in this process has nothing left to do:
// no controller with queued or running work and every recorded Event written,
// at two looks in a row (a reconcile that enqueues another would otherwise
// look idle between the two). An operator in a child process is judged by its
// metrics instead (operator-process.ts waitIdle).
import type { Manager } from '../../src/runtime/manager.ts';
import { SETTLE_MS, waitFor } from './wait.ts';

/** Resolves once `manager` is idle at two looks in a row; rejects after `timeoutMs` naming what was still busy. */
export async function waitIdle(manager: Pick<Manager, 'busy'>, timeoutMs = SETTLE_MS): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let quiet = 0;
  let busy: string[] = [];
  await waitFor('the controllers to be idle (nothing queued or running, every event written)', async () => {
    busy = await manager.busy(deadline - performance.now());
    quiet = busy.length === 0 ? quiet + 1 : 0;
    return quiet >= 2;
  }, { timeoutMs, intervalMs: 10 }).catch((e: Error) => {
    throw new Error(`${e.message}; still busy: ${busy.join(', ') || 'none at the last look'}`);
  });
}
