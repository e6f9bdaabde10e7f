// The spec's defaults, in one place: the CRD's schema (serverlessapp.ts) sets them
// at admission, and every reader of a spec that may predate a default, or was
// never admitted (a unit test's, a `kubectl sapp plan` file before its dry run),
// falls back to the same values. A module of constants only, so the CLI's
// start does not load the schema to know them.

export const ROLLOUT_DEFAULTS = {
  interval: '1m',
  progressDeadline: '10m',
  failureThreshold: 2,
  /** How often checks and burn-rate gates run during a step or a bake. */
  cadence: '30s',
  /** LLM apps: how long a replaced version is kept stopped. */
  retainPrevious: '1h',
} as const;

/** LLM apps: replicas of a version when spec.scaling sets no minScale (an LLM has no activator to wake it from zero). */
export const LLM_DEFAULT_REPLICAS = 1;

/**
 * The SRE workbook's multi-window, multi-burn-rate pairs for a page ("Alerting on SLOs", table 5-8):
 * 2% of a 30-day budget spent in 1 hour, or 5% in 6 hours, each confirmed by a window a twelfth as long.
 */
export const SLO_DEFAULTS = {
  window: '720h',
  burnRates: [
    { long: '1h', short: '5m', factor: 14.4 },
    { long: '6h', short: '30m', factor: 6 },
  ],
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
