// An environment problem the user can fix (no Go, no openssl, no free port, a
// binary that will not start). Entry points print its message alone, without a
// stack trace, because the message already says what is missing and what to do.
export class EnvtestError extends Error {
  override name = 'EnvtestError';
}

/** Prints an EnvtestError as its message alone; anything else with its stack. */
export function describeFailure(err: unknown): string {
  if (err instanceof EnvtestError) return `envtest: ${err.message}`;
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}
