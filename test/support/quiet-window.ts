// "Nothing happens" cannot be waited for, only watched for a while. A window
// that watches the wrong thing (a log that records nothing, a filter that
// matches nothing) would pass by accident, so each window ends with a positive
// control: something that must show in the same observation, awaited with a
// deadline. A window passes only when it saw nothing and could have.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { SETTLE_MS, waitFor } from './wait.ts';

export interface QuietWindow<T> {
  /** What must not happen, for messages ("the operator read the platform's Service again"). */
  what: string;
  /** How long to watch. */
  windowMs: number;
  /** The observation, compared with deepEqual before and after the window. */
  observe: () => T | Promise<T>;
  /** What the observation must be, at the start and the end of the window; default what it is at the start. */
  expect?: T;
  /** Makes the thing happen once (after the window), so the observation must change. */
  control: () => unknown;
  /** How the control shows in the observation; default: the observation differs from the expected one. */
  controlShows?: (observed: T) => boolean;
  /** How long the control may take to show; default SETTLE_MS, 120 s (the real Knative on busy cores). Tests on fakes pass less, so a control that never shows fails with this message before mocha's own timeout. */
  controlTimeoutMs?: number;
}

/** Watches `observe` for `windowMs` (it must not change), then proves with `control` that a change would have shown. */
export async function assertQuietWindow<T>(w: QuietWindow<T>): Promise<void> {
  const expected = 'expect' in w ? w.expect as T : await w.observe();
  if ('expect' in w) assert.deepEqual(await w.observe(), expected, `before the window of ${w.windowMs} ms: ${w.what}`);
  await sleep(w.windowMs);
  assert.deepEqual(await w.observe(), expected, `within ${w.windowMs} ms: ${w.what}`);
  await w.control();
  const shows = w.controlShows ?? ((observed: T) => {
    try {
      assert.deepEqual(observed, expected);
      return false;
    } catch {
      return true;
    }
  });
  const timeoutMs = w.controlTimeoutMs ?? SETTLE_MS;
  await waitFor(`the control to show (${w.what})`, async () => shows(await w.observe()), { timeoutMs }).catch(() => {
    assert.fail(`the window could not have seen it: after the control, still no change within ${timeoutMs} ms (${w.what})`);
  });
}
