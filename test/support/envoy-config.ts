// What the rig's istiod would send to a proxy: runs xds-dump (built by
// test/envtest/build.sh from the istiod module, test/envtest/istio/cmd/xds-dump),
// which connects to istiod's plaintext xDS as a sidecar or a gateway with
// Istio's own ADS client and prints the listeners, clusters and route
// configurations that proxy's Envoy would receive. It runs in the data plane's
// main network namespace, where istiod listens. No Envoy runs: this is the
// configuration, not traffic through it.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ISTIOD_PORTS } from '../envtest/istiod.ts';
import { testEnv } from './cluster.ts';
import { waitFor } from './wait.ts';

const run = promisify(execFile);

/** The parts of Envoy's RouteConfiguration (proto field names) the tests read. */
export interface EnvoyRoute {
  name?: string;
  match: { prefix?: string; path?: string; headers?: Array<{ name: string; string_match?: { exact?: string; prefix?: string; safe_regex?: { regex: string } } }> };
  route?: {
    cluster?: string;
    weighted_clusters?: { clusters: Array<{ name: string; weight: number }> };
    host_rewrite_literal?: string;
    timeout?: string;
    retry_policy?: { retry_on?: string; num_retries?: number; per_try_timeout?: string; retriable_status_codes?: number[] };
    request_mirror_policies?: Array<{ cluster: string; runtime_fraction?: { default_value: { numerator?: number; denominator?: string } }; trace_sampled?: boolean; disable_shadow_host_suffix_append?: boolean }>;
  };
}
export interface EnvoyVirtualHost { name: string; domains: string[]; routes: EnvoyRoute[] }
export interface EnvoyRouteConfiguration { name: string; virtual_hosts?: EnvoyVirtualHost[] }

export interface ProxyConfig {
  listeners: Array<{ name: string; port: number; routeConfigNames: string[] }>;
  clusters: string[];
  routes: EnvoyRouteConfiguration[];
}

export interface ProxyIdentity {
  /** `sidecar`, or `router` for a gateway. */
  type: 'sidecar' | 'router';
  namespace: string;
  /** A gateway's labels, which its Gateway's selector must match. */
  labels?: Record<string, string>;
}

/** The configuration istiod sends to a proxy of this identity now. */
export async function proxyConfig(proxy: ProxyIdentity): Promise<ProxyConfig> {
  const env = testEnv();
  const netns = env.dataPlane?.netns.main;
  if (!env.dataPlane?.istio || !netns) throw new Error('the rig runs no istiod (ENVTEST_ISTIO=off?): no proxy configuration to read');
  const labels = Object.entries(proxy.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
  const { stdout } = await run('ip', ['netns', 'exec', netns, join(env.binDir, 'xds-dump'),
    `--xds=127.0.0.1:${ISTIOD_PORTS.grpcXds}`, `--type=${proxy.type}`, `--namespace=${proxy.namespace}`, `--labels=${labels}`,
  ], { maxBuffer: 64 << 20, timeout: 60_000 });
  return JSON.parse(stdout) as ProxyConfig;
}

/** The virtual hosts, in any route configuration, that answer `domain` (Envoy's exact domain match). */
export function virtualHostsFor(config: ProxyConfig, domain: string): Array<EnvoyVirtualHost & { routeConfig: string }> {
  return config.routes.flatMap((rc) => (rc.virtual_hosts ?? [])
    .filter((vh) => vh.domains.includes(domain))
    .map((vh) => ({ ...vh, routeConfig: rc.name })));
}

/** Every cluster any route of `config` sends or mirrors requests to. */
export function routedClusters(config: ProxyConfig): string[] {
  return [...new Set(config.routes.flatMap((rc) => (rc.virtual_hosts ?? []).flatMap((vh) => vh.routes.flatMap((r) => [
    ...(r.route?.cluster ? [r.route.cluster] : []),
    ...(r.route?.weighted_clusters?.clusters.map((c) => c.name) ?? []),
    ...(r.route?.request_mirror_policies?.map((m) => m.cluster) ?? []),
  ]))))].sort();
}

/**
 * Reads the proxy's configuration until `pick` finds what it looks for (istiod pushes after a debounce);
 * on giving up, says what it waited for and what the proxy had: its listeners and route configurations.
 */
export async function untilProxy<T>(what: string, proxy: ProxyIdentity, pick: (c: ProxyConfig) => T | undefined): Promise<{ config: ProxyConfig; found: T }> {
  let last: ProxyConfig | undefined;
  return waitFor(what, async () => {
    const config = last = await proxyConfig(proxy);
    const found = pick(config);
    return found === undefined ? undefined : { config, found };
  }, { timeoutMs: 90_000, intervalMs: 1_000 }).catch((err: Error) => {
    throw new Error(`${err.message}; the proxy's listeners ${JSON.stringify(last?.listeners)} and routes: ${JSON.stringify(last?.routes)}`);
  });
}
