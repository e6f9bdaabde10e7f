// How long `npm test` lets mocha take to exit after its summary (test/run.ts ends
// it then) and when it lists what keeps it alive (global-setup.ts, a third of it).
// One reading of TEST_EXIT_GRACE_MS for both, refused when it is not a duration:
// an empty or mistyped value would otherwise end every run at its summary.

export const DEFAULT_EXIT_GRACE_MS = 60_000;

export function exitGraceMs(value = process.env.TEST_EXIT_GRACE_MS): number {
  if (value === undefined) return DEFAULT_EXIT_GRACE_MS;
  const ms = Number(value);
  if (value.trim() === '' || !Number.isInteger(ms) || ms < 1_000 || ms > 3_600_000) {
    throw new Error(`TEST_EXIT_GRACE_MS=${JSON.stringify(value)}: must be whole milliseconds from 1000 to 3600000 (default ${DEFAULT_EXIT_GRACE_MS})`);
  }
  return ms;
}
