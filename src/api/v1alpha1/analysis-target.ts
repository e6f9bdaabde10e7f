// Where an app's metric queries may go: to a Prometheus the platform names in
// the operator's configuration (as Flagger's MetricTemplate names its
// provider), or to the app's own address when the platform explicitly allows
// addresses. A spec rule judged against the platform's policy, so it sits in
// the API beside the rest of validation; the rollout sends queries there.

import type { RolloutSpec } from './serverlessapp.ts';
import { excerpt } from '../../util/excerpt.ts';

export type Analysis = NonNullable<RolloutSpec['analysis']>;

/**
 * A Prometheus server the platform lets apps query, by name. `scoped`: the platform says it confines each
 * query to the app's namespace (prom-label-proxy in front of it), so the values a query returns may be
 * shown in status and Events; elsewhere a tenant's query could read another namespace's series.
 */
export interface AnalysisProvider { name: string; url: string; scoped?: boolean }

export interface AnalysisPolicy {
  providers: AnalysisProvider[];
  /** Whether an app may give its own `prometheus.address` (off by default: the operator would fetch any URL a tenant names). */
  allowAddress: boolean;
}

/** The platform's policy unless it says otherwise: no providers, no addresses of the app's own (nothing is queried). */
export const DEFAULT_ANALYSIS_POLICY: AnalysisPolicy = { providers: [], allowAddress: false };

export type AnalysisTarget =
  | { url: URL; label: string; scoped?: boolean }
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
    return { url: new URL(found.url), label: `provider ${JSON.stringify(found.name)}`, ...(found.scoped ? { scoped: true } : {}) };
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
