// A fault test's timeline: edits, kills and writers' pauses at seeded instants.
// These instants are the test's input (where in a flow the operator dies, how
// writers interleave), not waits for a condition, so they live here, the one
// place besides wait.ts, manual-clock.ts and quiet-window.ts a test may hold a
// timer (see the sleep rule in src/architecture.test.ts).
import { setTimeout as sleep } from 'node:timers/promises';

/** Resolves at `instant` (performance.now() time), at once if it has passed. */
export function atInstant(instant: number): Promise<void> {
  return sleep(Math.max(0, instant - performance.now())).then(() => undefined);
}

/** Resolves after a seeded pause of `ms`: one step of a schedule. */
export function pause(ms: number): Promise<void> {
  return atInstant(performance.now() + ms);
}
