// Error-budget arithmetic for SLO-gated releases, after the SRE workbook
// ("Alerting on SLOs", multiwindow, multi-burn-rate alerts): a version's burn
// rate over a window is its error ratio there divided by the error ratio the
// objective allows; a gate fires when both windows of a pair burn faster than
// the pair's factor, the long window showing the burn is real and the short
// one that it is still going on (a spike that ended does not fire). The
// remaining budget is what the objective allows over its window, less what was
// spent. Pure: the queries are effects/analysis-checks.ts's.

import type { RolloutSpec } from '../api/v1alpha1/serverlessapp.ts';
import { SLO_DEFAULTS } from '../api/v1alpha1/defaults.ts';

export type Slo = NonNullable<NonNullable<RolloutSpec['analysis']>['slo']>;
export interface BurnRatePair { long: string; short: string; factor: number }

/** The pairs in force: the spec's, or the workbook's. */
export function burnRatePairs(slo: Slo): readonly BurnRatePair[] {
  return slo.burnRates ?? SLO_DEFAULTS.burnRates;
}

/** Every window a gate round reads, each once, shortest first as written ("5m", "1h"). */
export function gateWindows(slo: Slo): string[] {
  return [...new Set(burnRatePairs(slo).flatMap((p) => [p.short, p.long]))];
}

/** The error ratio the objective allows (0.001 for 99.9%). */
export function allowedErrorRatio(objective: number): number {
  return 1 - objective / 100;
}

/** How many times faster than sustainable a budget burns at `errorRatio` (to 9 decimals: 0.0144 at 99.9% is 14.4, not 14.400000000000002). */
export function burnRate(errorRatio: number, objective: number): number {
  return Math.round((errorRatio / allowedErrorRatio(objective)) * 1e9) / 1e9;
}

export interface BurnVerdict {
  /** The first pair whose windows both burn above its factor. */
  fired?: { pair: BurnRatePair; long: number; short: number };
}

/** Judges a round: `ratios` holds the error ratio of each window gateWindows named. */
export function judgeBurn(slo: Slo, ratios: ReadonlyMap<string, number>): BurnVerdict {
  for (const pair of burnRatePairs(slo)) {
    const long = burnRate(ratios.get(pair.long)!, slo.objective);
    const short = burnRate(ratios.get(pair.short)!, slo.objective);
    if (long > pair.factor && short > pair.factor) return { fired: { pair, long, short } };
  }
  return {};
}

/** Percent of the error budget left after spending `errorRatio` over the whole window (negative once overspent). */
export function remainingBudget(errorRatio: number, objective: number): number {
  return 100 * (1 - burnRate(errorRatio, objective));
}

/** The freeze policy in force: the higher of the app's and the platform's floor for its namespace (a tenant cannot lower it). */
export function freezeFloor(slo: Slo | undefined, platformFloor: number | undefined): number {
  if (!slo) return 0;
  return Math.max(slo.freezeBelow ?? 0, platformFloor ?? 0);
}

/** The platform's release-freeze floor for a namespace (--release-freeze-below): its own entry, else "*", else none. */
export function freezeFloorFor(floors: Readonly<Record<string, number>>, namespace: string): number {
  return Object.hasOwn(floors, namespace) ? floors[namespace]! : floors['*'] ?? 0;
}

/** The error ratio from good and total counts; undefined when there were no requests (no data). */
export function errorRatioOf(good: number, total: number): number | undefined {
  if (!(total > 0)) return undefined;
  return Math.min(1, Math.max(0, 1 - good / total));
}

/** A burn rate for messages: "15.2x". */
export function formatBurn(rate: number): string {
  return `${rate >= 100 ? Math.round(rate) : rate.toFixed(1)}x`;
}
