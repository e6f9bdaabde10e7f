// "Nothing happens" cannot be waited for, only watched for a while. A window
// that watches the wrong thing (a log that records nothing, a filter that
// matches nothing) would pass by accident, so each window ends with a positive
// control: something that must show in the same observation, awaited with a
// deadline. A window passes only when it saw nothing and could have.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

export interface QuietWindow<T> {
  /** What must not happen, for messages ("the operator read the platform's Service again"). */
  what: string;
  /** How long to watch. */
  windowMs: number;
  /** The observation, compared with deepEqual before and after the window. */
  observe: () => T | Promise<T>;
  /** Makes the thing happen once (after the window), so the observation must change. */
  control: () => unknown;
  /** How long the control may take to show; default 60 s. */
  controlTimeoutMs?: number;
}

/** Watches `observe` for `windowMs` (it must not change), then proves with `control` that a change would have shown. */
export async function assertQuietWindow<T>(w: QuietWindow<T>): Promise<void> {
  const before = await w.observe();
  await sleep(w.windowMs);
  const after = await w.observe();
  assert.deepEqual(after, before, `within ${w.windowMs} ms: ${w.what}`);
  await w.control();
  const deadline = performance.now() + (w.controlTimeoutMs ?? 60_000);
  for (;;) {
    try {
      assert.deepEqual(await w.observe(), before);
    } catch {
      return;
    }
    if (performance.now() > deadline) {
      assert.fail(`the window could not have seen it: after the control, still no change within ${w.controlTimeoutMs ?? 60_000} ms (${w.what})`);
    }
    await sleep(50);
  }
}
