// Metric checks for automated rollout steps: instant PromQL queries over the
// Prometheus HTTP API. An empty result, NaN or an unreachable server is
// "no data", which halts the rollout: no data is not a pass (flagger#1035).
// Queries go only where the platform allows: to a provider named in the
// operator's configuration (as Flagger's MetricTemplate names its provider), or
// to an app's own address when the platform explicitly allows addresses. Each
// query is one bounded outbound call (runtime/outbound.ts).
// A tenant writes the query, and a Prometheus holds every namespace's series, so
// nothing a query returns reaches status or Events: a check is reported as
// passed or failed with its bounds, never with its value, and an error is
// quoted only when Prometheus says the query itself is malformed (errorType
// bad_data), since execution errors can name other series' labels. Every query
// also carries the app's namespace as a `namespace` URL parameter, the one
// prom-label-proxy (-label namespace) reads to confine a query to a namespace:
// a platform that puts one in front of its provider enforces the scope.

import type { RolloutSpec } from '../api/v1alpha1/serverlessapp.ts';
import { excerpt } from '../util/excerpt.ts';

export type Analysis = NonNullable<RolloutSpec['analysis']>;

export interface QueryVars { app: string; namespace: string; revision: string; version: string }

/** A Prometheus server the platform lets apps query, by name. */
export interface AnalysisProvider { name: string; url: string }

export interface AnalysisPolicy {
  providers: AnalysisProvider[];
  /** Whether an app may give its own `prometheus.address` (off by default: the operator would fetch any URL a tenant names). */
  allowAddress: boolean;
}

export interface AnalysisLimits {
  /** Total time for one query, body included. */
  timeoutMs?: number;
  maxBytes?: number;
}

/** One number needs a few hundred bytes; a 1 MiB cap leaves room for a wide vector and bounds memory per query. */
export const ANALYSIS_MAX_BYTES = 1 << 20;
export const ANALYSIS_TIMEOUT_MS = 5_000;

export type AnalysisTarget =
  | { url: URL; label: string }
  | { reason: 'AnalysisProviderNotFound' | 'AnalysisAddressNotAllowed' | 'InvalidSpec'; field: string; message: string };

/** Where an app's queries go, or why they may go nowhere (a user's mistake, reported on the field). */
export function analysisTarget(analysis: Analysis, policy: AnalysisPolicy): AnalysisTarget {
  const { provider, address } = analysis.prometheus;
  if (provider !== undefined) {
    const found = policy.providers.find((p) => p.name === provider);
    if (!found) {
      return {
        reason: 'AnalysisProviderNotFound', field: 'spec.rollout.analysis.prometheus.provider',
        message: `analysis provider ${JSON.stringify(provider)} is not defined by the platform; defined: ${policy.providers.map((p) => p.name).join(', ') || '(none)'}`,
      };
    }
    return { url: new URL(found.url), label: `provider ${JSON.stringify(found.name)}` };
  }
  if (address === undefined) return { reason: 'InvalidSpec', field: 'spec.rollout.analysis.prometheus', message: 'set provider (a Prometheus the platform defines)' };
  if (!policy.allowAddress) {
    return {
      reason: 'AnalysisAddressNotAllowed', field: 'spec.rollout.analysis.prometheus.address',
      message: `this platform does not allow analysis addresses; use provider with one of: ${policy.providers.map((p) => p.name).join(', ') || '(none defined)'}`,
    };
  }
  const why = baseUrlProblem(address);
  if (why) return { reason: 'InvalidSpec', field: 'spec.rollout.analysis.prometheus.address', message: why };
  return { url: new URL(address), label: new URL(address).origin };
}

/** Why a Prometheus base URL cannot be used: only http(s), no credentials, query or fragment (a "#" would cut off the API path). */
export function baseUrlProblem(address: string): string | undefined {
  let u: URL;
  try {
    u = new URL(address);
  } catch {
    return `${JSON.stringify(excerpt(address, 64))} is not a URL`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `${u.protocol} is not allowed: use http:// or https://`;
  if (u.username || u.password) return 'credentials in the URL are not allowed';
  if (address.includes('?') || address.includes('#')) return 'a query or fragment (? or #) is not allowed in a base URL';
  return undefined;
}

/** The instant-query URL under a base URL (its path kept: Prometheus may sit under a prefix). */
export function queryUrl(base: URL, query: string, namespace: string): URL {
  const u = new URL(base.href);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/api/v1/query`;
  u.search = new URLSearchParams({ query, namespace }).toString();
  u.hash = '';
  return u;
}

export function renderQuery(query: string, vars: QueryVars): string {
  return query.replace(/\{\{\s*(app|namespace|revision|version)\s*\}\}/g, (_, k: keyof QueryVars) => vars[k]);
}
