// Metric checks for automated rollout steps: instant PromQL queries over the
// Prometheus HTTP API. An empty result, NaN or an unreachable server is
// "no data", which halts the rollout: no data is not a pass (flagger#1035).
// Queries go only where the platform allows (api/v1alpha1/analysis-target.ts,
// which admission's validation shares). Each query is one bounded outbound call
// (effects/analysis-checks.ts over runtime/outbound.ts).
// A tenant writes the query, and a Prometheus holds every namespace's series, so
// nothing a query returns reaches status or Events: a check is reported as
// passed or failed with its bounds, never with its value, and an error is
// quoted only when Prometheus says the query itself is malformed (errorType
// bad_data), since execution errors can name other series' labels. Every query
// also carries the app's namespace as a `namespace` URL parameter, the one
// prom-label-proxy (-label namespace) reads to confine a query to a namespace:
// a platform that puts one in front of its provider enforces the scope.

import type { Analysis } from '../api/v1alpha1/analysis-target.ts';
import { gateWindows } from './slo.ts';

export interface QueryVars { app: string; namespace: string; revision: string; version: string; window?: string }

export interface AnalysisLimits {
  /** Total time for one query, body included. */
  timeoutMs?: number;
  maxBytes?: number;
}

/** One number needs a few hundred bytes; a 1 MiB cap leaves room for a wide vector and bounds memory per query. */
export const ANALYSIS_MAX_BYTES = 1 << 20;
export const ANALYSIS_TIMEOUT_MS = 5_000;

/** The instant-query URL under a base URL (its path kept: Prometheus may sit under a prefix). */
export function queryUrl(base: URL, query: string, namespace: string): URL {
  const u = new URL(base.href);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/api/v1/query`;
  u.search = new URLSearchParams({ query, namespace }).toString();
  u.hash = '';
  return u;
}

/** Queries one round sends: a check each, and per distinct burn-rate window one error ratio (or good and total). */
export function roundQueries(analysis: Analysis): number {
  const slo = analysis.slo;
  return (analysis.checks?.length ?? 0) + (slo ? gateWindows(slo).length * (slo.errorRatio !== undefined ? 1 : 2) : 0);
}

/** Queries one reading of the error budget sends. */
export function budgetQueries(analysis: Analysis): number {
  const slo = analysis.slo;
  return slo?.budgetErrorRatio !== undefined || slo?.errorRatio !== undefined ? 1 : 2;
}

export function renderQuery(query: string, vars: QueryVars): string {
  return query.replace(/\{\{\s*(app|namespace|revision|version|window)\s*\}\}/g, (all: string, k: keyof QueryVars) => vars[k] ?? all);
}
