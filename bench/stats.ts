// Small statistics for benchmark figures: nearest-rank percentiles, and
// rounding for the report. The machine is shared and noisy, so the report
// leans on medians and ratios rather than single timings.

/** The nearest-rank percentile (p in 0..100) of `values`; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export const median = (values: readonly number[]) => percentile(values, 50);

/** Rounds to `digits` decimals (keeps the JSON readable). */
export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Seconds elapsed since `start` (a performance.now() value). */
export const secondsSince = (start: number) => (performance.now() - start) / 1000;
