// The spec's defaults, in one place: the CRD's schema (serverlessapp.ts) sets them
// at admission, and every reader of a spec that may predate a default, or was
// never admitted (a unit test's, a `kubectl sapp plan` file before its dry run),
// falls back to the same values. A module of constants only, so the CLI's
// start does not load the schema to know them.

export const ROLLOUT_DEFAULTS = {
  interval: '1m',
  progressDeadline: '10m',
  failureThreshold: 2,
} as const;

export const SCALING_DEFAULTS = {
  metric: 'concurrency',
} as const;

export const WINDOW_DEFAULTS = {
  timeZone: 'UTC',
} as const;

export const WARMUP_DEFAULTS = {
  method: 'GET',
  count: 1,
  timeout: '10s',
  deadline: '5m',
} as const;

export const STICKINESS_DEFAULTS = {
  cookieName: 'sapp-version',
  maxAge: '1h',
  path: '/',
  httpOnly: true,
  sameSite: 'Lax',
} as const;
