// What the rig's istiod would send to a proxy: runs xds-dump (built by
// test/envtest/build.sh from the istiod module, test/envtest/istio/cmd/xds-dump),
// which connects to istiod's plaintext xDS as a sidecar or a gateway with
// Istio's own ADS client and prints the listeners, clusters and route
// configurations that proxy's Envoy would receive. It runs in the data plane's
// main network namespace, where istiod listens. No Envoy runs: this is the
// configuration, not traffic through it. Also here, for tests under either of
// the operator's routers: a Gateway each router's routes bind to, with the
// proxy that receives them (gatewayWithProxy), and an app's routes reduced to
// what they do (appRoutes), to compare with what each router should make of
// the app's traffic (expectedAppRoutes).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { isDeepStrictEqual, promisify } from 'node:util';
import type { ControlPlane } from '../envtest/controlplane.ts';
import { ISTIOD_PORTS } from '../envtest/istiod.ts';
import { GATEWAY_POD_LABELS } from '../envtest/net-gateway-api.ts';
import { applyYaml, testEnv } from './cluster.ts';
import { ensureKnativeLocalGateway } from './knative-local-gateway.ts';
import { SETTLE_MS, waitFor } from './wait.ts';
import { seededDraws, traceRequest, type NextHop } from './route-eval.ts';

const run = promisify(execFile);

/** Envoy's StringMatcher (type/matcher/v3/string.proto), as istiod writes it in JSON. */
export interface EnvoyStringMatch { exact?: string; prefix?: string; suffix?: string; contains?: string; safe_regex?: { regex: string }; ignore_case?: boolean }
/** Envoy's HeaderMatcher (config/route/v3/route_components.proto), the forms istiod writes. */
export interface EnvoyHeaderMatch { name: string; string_match?: EnvoyStringMatch; present_match?: boolean; invert_match?: boolean; treat_missing_header_as_empty?: boolean }
/** A HeaderValueOption: a header a route adds to the request or the response (`append`: the deprecated form of append_action). */
export interface EnvoyHeaderValue { header: { key: string; value?: string }; append_action?: string; append?: boolean }
/** The request-header mutations of one level: weighted-cluster entry, route, virtual host or route configuration. */
export interface EnvoyRequestMutations { request_headers_to_add?: EnvoyHeaderValue[]; request_headers_to_remove?: string[] }

/** The parts of Envoy's RouteConfiguration (proto field names) the tests read. */
export interface EnvoyRoute extends EnvoyRequestMutations {
  name?: string;
  match: { prefix?: string; path?: string; path_separated_prefix?: string; safe_regex?: { regex: string }; headers?: EnvoyHeaderMatch[]; case_sensitive?: boolean };
  response_headers_to_add?: EnvoyHeaderValue[];
  direct_response?: { status: number };
  redirect?: object;
  route?: {
    cluster?: string;
    weighted_clusters?: { clusters: Array<EnvoyRequestMutations & { name: string; weight?: number; host_rewrite_literal?: string; response_headers_to_add?: EnvoyHeaderValue[] }>; total_weight?: number };
    host_rewrite_literal?: string;
    timeout?: string;
    retry_policy?: { retry_on?: string; num_retries?: number; per_try_timeout?: string; retriable_status_codes?: number[] };
    request_mirror_policies?: Array<{ cluster: string; runtime_fraction?: { default_value: { numerator?: number; denominator?: string } }; trace_sampled?: boolean; disable_shadow_host_suffix_append?: boolean }>;
  };
}
export interface EnvoyVirtualHost extends EnvoyRequestMutations { name: string; domains: string[]; routes: EnvoyRoute[]; response_headers_to_add?: EnvoyHeaderValue[] }
export interface EnvoyRouteConfiguration extends EnvoyRequestMutations { name: string; virtual_hosts?: EnvoyVirtualHost[]; ignore_port_in_host_matching?: boolean; response_headers_to_add?: EnvoyHeaderValue[] }

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

/** The configuration istiod sends to a proxy of this identity now (of the tests' rig, or `env`'s: the demo's). */
export async function proxyConfig(proxy: ProxyIdentity, env: ControlPlane = testEnv()): Promise<ProxyConfig> {
  const netns = env.dataPlane?.netns.main;
  if (!env.dataPlane?.istio || !netns) throw new Error('the rig runs no istiod (ENVTEST_ISTIO=off?): no proxy configuration to read');
  const labels = Object.entries(proxy.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
  const { stdout } = await run('ip', ['netns', 'exec', netns, join(env.binDir, 'xds-dump'),
    `--xds=127.0.0.1:${ISTIOD_PORTS.grpcXds}`, `--type=${proxy.type}`, `--namespace=${proxy.namespace}`, `--labels=${labels}`,
  ], { maxBuffer: 64 << 20, timeout: SETTLE_MS });
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
export async function untilProxy<T>(what: string, proxy: ProxyIdentity, pick: (c: ProxyConfig) => T | undefined, env?: ControlPlane): Promise<{ config: ProxyConfig; found: T }> {
  let last: ProxyConfig | undefined;
  return waitFor(what, async () => {
    const config = last = await proxyConfig(proxy, env);
    const found = pick(config);
    return found === undefined ? undefined : { config, found };
  }, { timeoutMs: 90_000, intervalMs: 1_000 }).catch((err: Error) => {
    throw new Error(`${err.message}; the proxy's listeners ${JSON.stringify(last?.listeners)} and routes: ${JSON.stringify(last?.routes)}`);
  });
}

// An app's routes on a gateway proxy, compared the same way whichever router wrote them: each test
// states the traffic it expects once (expectedAppRoutes) and reads it in Envoy's routes (untilAppRoutes).

/** One Envoy route of an app, reduced to what the canary tests compare; keys with nothing to say are left out. */
export interface AppRoute {
  /** Header conditions, Envoy's lower-cased names: `name=value` (exact); empty on the default route. */
  headers: string[];
  /** Cluster -> weight; a route to one cluster is that cluster at 100 (istiod writes weighted_clusters only for two or more). */
  to: Record<string, number>;
  /** The Host the request is rewritten to (the Istio router's Knative host behind the local gateway). */
  authority?: string;
  mirror?: { cluster: string; percent: number };
  timeout?: string;
  retries?: { attempts?: number; retryOn?: string; perTryTimeout?: string };
}

/** Envoy's FractionalPercent denominators (HUNDRED is the enum's zero, left out of the JSON). */
const PER_PERCENT: Record<string, number> = { HUNDRED: 1, TEN_THOUSAND: 100, MILLION: 10_000 };

function appRoute(r: EnvoyRoute): AppRoute {
  const headers = (r.match.headers ?? []).map((h) => {
    const m = h.string_match ?? {};
    return m.exact !== undefined ? `${h.name}=${m.exact}` : m.prefix !== undefined ? `${h.name}^=${m.prefix}` : `${h.name}~=${m.safe_regex?.regex}`;
  });
  const to = r.route?.weighted_clusters ? Object.fromEntries(r.route.weighted_clusters.clusters.map((c) => [c.name, c.weight ?? 0])) : r.route?.cluster ? { [r.route.cluster]: 100 } : {};
  const mirrors = r.route?.request_mirror_policies ?? [];
  if (mirrors.length > 1) throw new Error(`more than one mirror on a route: ${JSON.stringify(mirrors)}`);
  const [m] = mirrors;
  const fraction = m?.runtime_fraction?.default_value;
  const retry = r.route?.retry_policy;
  return {
    headers, to,
    ...(r.route?.host_rewrite_literal ? { authority: r.route.host_rewrite_literal } : {}),
    ...(m ? { mirror: { cluster: m.cluster, percent: (fraction?.numerator ?? 0) / PER_PERCENT[fraction?.denominator ?? 'HUNDRED']! } } : {}),
    ...(r.route?.timeout ? { timeout: r.route.timeout } : {}),
    ...(retry ? { retries: { attempts: retry.num_retries, retryOn: retry.retry_on, ...(retry.per_try_timeout ? { perTryTimeout: retry.per_try_timeout } : {}) } } : {}),
  };
}

/** The routes, in order, of the one virtual host answering `host`; undefined while there is none (two is an error). */
export function appRoutes(config: ProxyConfig, host: string): AppRoute[] | undefined {
  const vhs = virtualHostsFor(config, host);
  if (vhs.length > 1) throw new Error(`${vhs.length} virtual hosts answer ${host}: ${vhs.map((v) => `${v.routeConfig}/${v.name}`).join(', ')}`);
  return vhs[0]?.routes.map(appRoute);
}

/**
 * Waits until `proxy` routes `host` exactly as `want` (routes in order: the first match wins in Envoy);
 * on giving up, says what it wanted and what the proxy had for the host.
 */
export async function untilAppRoutes(what: string, proxy: ProxyIdentity, host: string, want: AppRoute[]): Promise<ProxyConfig> {
  let had: AppRoute[] | undefined;
  return waitFor(what, async () => {
    const config = await proxyConfig(proxy);
    had = appRoutes(config, host);
    return isDeepStrictEqual(had, want) ? config : undefined;
  }, { timeoutMs: 90_000, intervalMs: 1_000 }).catch((err: Error) => {
    throw new Error(`${err.message}: wanted ${JSON.stringify(want)}; the proxy routes ${host} as ${JSON.stringify(had)}`);
  });
}

/** istiod's retry policy for a route that names none (pilot/pkg/networking/core/route/retry/retry.go DefaultPolicy). */
export const ISTIOD_DEFAULT_RETRIES = { attempts: 2, retryOn: 'connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes' };

/** The traffic a test expects for a Knative-backed app, in the app's terms (revisions and percentages). */
export interface AppTraffic {
  namespace: string;
  app: string;
  /** The revision serving the rest (all of it without a candidate). */
  stable: string;
  candidate?: { revision: string; percent: number; headers?: string[]; mirrorPercent?: number };
  /** spec.ingress's timeout and retries (retryOn is not modelled: istiod rewrites it, retry.go parseRetryOn). */
  ingress: { timeout?: string; retries?: { attempts: number; perTryTimeout?: string } };
}

/** The Envoy cluster of a Service's port 80 in `namespace`: a Knative revision's public Service, its `-private` one, Knative's local gateway. */
export const serviceCluster = (namespace: string, service: string) => `outbound|80||${service}.${namespace}.svc.cluster.local`;

/**
 * The routes a gateway proxy should receive for `t` under each router.
 *  - istio: the operator's VirtualService sends everything to Knative's local gateway (its default, config.ts) with the
 *    Host rewritten to the app's or the candidate tag's cluster-local host; the per-revision split is in Knative's own
 *    KIngress (with ENVTEST_NETGW=on the rig's net-gateway-api turns it into routes on the local gateway, and
 *    untilKnativeSplit reads them there), so the percentages are not in these routes. Header route, mirror, timeout and retries are.
 *  - gateway-api: the HTTPRoute names each revision's Service with its weight, so the split is in Envoy's weighted
 *    clusters. Retries cannot be asked for (the router refuses spec.ingress.retries), so istiod's default applies.
 */
export function expectedAppRoutes(router: 'istio' | 'gateway-api', t: AppTraffic): AppRoute[] {
  const { namespace: ns, app, stable, candidate: c } = t;
  const timeout = t.ingress.timeout ? { timeout: t.ingress.timeout } : {};
  const mirror = c?.mirrorPercent ? { mirror: { cluster: serviceCluster(ns, `${c.revision}-private`), percent: c.mirrorPercent } } : {};
  if (router === 'istio') {
    const localGateway = serviceCluster('istio-system', 'knative-local-gateway');
    const r = t.ingress.retries;
    const retries = r ? { attempts: r.attempts, retryOn: ISTIOD_DEFAULT_RETRIES.retryOn, ...(r.perTryTimeout ? { perTryTimeout: r.perTryTimeout } : {}) } : ISTIOD_DEFAULT_RETRIES;
    const to = (authority: string) => ({ to: { [localGateway]: 100 }, authority, ...timeout, retries });
    return [
      ...(c?.headers?.length ? [{ headers: c.headers, ...to(`candidate-${app}.${ns}.svc.cluster.local`) }] : []),
      { headers: [], ...to(`${app}.${ns}.svc.cluster.local`), ...mirror },
    ];
  }
  if (t.ingress.retries) throw new Error('the gateway-api router refuses spec.ingress.retries: no routes to expect');
  const policy = { ...timeout, retries: ISTIOD_DEFAULT_RETRIES };
  const split = c?.percent ? { [serviceCluster(ns, stable)]: 100 - c.percent, [serviceCluster(ns, c.revision)]: c.percent } : { [serviceCluster(ns, stable)]: 100 };
  return [
    ...(c?.headers?.length ? [{ headers: c.headers, to: { [serviceCluster(ns, c.revision)]: 100 }, ...policy }] : []),
    { headers: [], to: split, ...mirror, ...policy },
  ];
}


/**
 * A Gateway `edge` in `namespace` for the router, whose routes a gateway proxy of the returned identity (and no other) receives:
 *  - istio: an Istio Gateway selecting the proxy's labels, port 80, every host; and Knative's local gateway Service,
 *    which every route of the operator's VirtualServices goes to (knative-local-gateway.ts).
 *  - gateway-api: a Gateway of istiod's class with one Hostname address, taking routes from every namespace, and the
 *    Service that address names, selecting the proxy's labels (gateway-api-proxy.test.ts says why that binds it).
 *    Envoy listens on the Service's targetPort, 8080.
 */
export async function gatewayWithProxy(router: 'istio' | 'gateway-api', namespace: string): Promise<{ gateway: string; proxy: ProxyIdentity }> {
  const labels = { 'serverlessapp.io/test-gateway': namespace };
  if (router === 'istio') {
    await ensureKnativeLocalGateway();
    await applyYaml(`
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: { name: edge }
spec:
  selector: ${JSON.stringify(labels)}
  servers: [{ port: { number: 80, name: http, protocol: HTTP }, hosts: ['*'] }]
`, { namespace });
  } else {
    await applyYaml(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: edge }
spec:
  gatewayClassName: istio
  addresses: [{ type: Hostname, value: edge.${namespace}.svc.cluster.local }]
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: All } } }]
---
apiVersion: v1
kind: Service
metadata: { name: edge }
spec:
  selector: ${JSON.stringify(labels)}
  ports: [{ name: http, port: 80, targetPort: 8080 }]
`, { namespace });
  }
  return { gateway: `${namespace}/edge`, proxy: { type: 'router', namespace, labels } };
}

/**
 * The ingress gateway pod's proxy, which both of Knative's own Gateways bind: net-gateway-api turns each
 * KIngress into HTTPRoutes on them (test/envtest/net-gateway-api.ts; istio-system, the gateway chart's labels).
 */
export const KNATIVE_GATEWAY: ProxyIdentity = { type: 'router', namespace: 'istio-system', labels: GATEWAY_POD_LABELS };
/** knative-local-gateway's listener: its Service's port 80 translated to the targetPort 8081 (net-gateway-api third_party/istio). */
export const KNATIVE_LOCAL_ROUTES = 'http.8081';

/** The clusters a route sends to, with their weights (one backend is a plain cluster in Envoy: 100). */
export const weightsOf = (r: EnvoyRoute | undefined): Record<string, number> => (r?.route?.cluster ? { [r.route.cluster]: 100 }
  : Object.fromEntries(r?.route?.weighted_clusters?.clusters.map((c) => [c.name, c.weight ?? 0]) ?? []));

/** The traffic route for `host` on Knative's local gateway: the catch-all, after Knative's header-matched (probe) routes. */
export function knativeTrafficRoute(c: ProxyConfig, host: string): EnvoyRoute | undefined {
  const vh = virtualHostsFor(c, host).find((v) => v.routeConfig === KNATIVE_LOCAL_ROUTES);
  return vh?.routes.find((r) => r.match.prefix === '/' && (r.match.headers ?? []).length === 0);
}

/**
 * Waits until Knative's own route for `app` on the local gateway splits as `want` (revision -> percent, zeros
 * left out, as Envoy leaves out a backend of weight 0): the per-revision weights where the proxy sees them.
 */
export async function untilKnativeSplit(what: string, namespace: string, app: string, want: Record<string, number>): Promise<void> {
  const expected = Object.fromEntries(Object.entries(want).filter(([, w]) => w > 0).map(([rev, w]) => [serviceCluster(namespace, rev), w]));
  let last: Record<string, number> | undefined;
  await untilProxy(`${what}: Knative's local gateway splitting ${app}.${namespace} as ${JSON.stringify(expected)}`, KNATIVE_GATEWAY, (c) => {
    last = Object.fromEntries(Object.entries(weightsOf(knativeTrafficRoute(c, `${app}.${namespace}.svc.cluster.local`))).filter(([, w]) => w > 0));
    return isDeepStrictEqual(last, expected) ? last : undefined;
  }).catch((err: Error) => { throw new Error(`${err.message}; last seen ${JSON.stringify(last)}`); });
}

/**
 * The hop after the Istio router's: Knative's local gateway's own routes, read from its proxy now, where the rig has
 * them (ENVTEST_NETGW=on); without them a request ends on the local gateway's cluster.
 */
export async function knativeNextHop(): Promise<NextHop> {
  const localGateway = serviceCluster('istio-system', 'knative-local-gateway');
  const knative = testEnv().dataPlane?.netGatewayApi ? await proxyConfig(KNATIVE_GATEWAY) : undefined;
  return (cluster) => (cluster === localGateway && knative ? { config: knative, routeConfig: KNATIVE_LOCAL_ROUTES } : undefined);
}

/**
 * Where `count` requests for `host` (with `headers`) end, by cluster, evaluated over the routes the gateway
 * proxy receives now (route-eval.ts: an evaluation of istiod's configuration, not traffic through an Envoy),
 * following the Istio router's hop to Knative's local gateway when the rig has Knative's routes there
 * (ENVTEST_NETGW=on; without them such a request ends on the local gateway's cluster). `unrouted` says why
 * any request found no route.
 */
export async function routedPopulation(proxy: ProxyIdentity, host: string, count: number, headers: Record<string, string> = {}): Promise<{ byCluster: Record<string, number>; unrouted: string[] }> {
  const config = await proxyConfig(proxy);
  const first = virtualHostsFor(config, host)[0]?.routeConfig;
  if (!first) return { byCluster: {}, unrouted: [`no route configuration of the proxy answers ${host}`] };
  const next = await knativeNextHop();
  const random = seededDraws(count);
  const byCluster: Record<string, number> = {};
  const unrouted: string[] = [];
  for (let i = 0; i < count; i++) {
    const t = traceRequest(config, first, { authority: host, path: '/', headers }, next, random);
    if ('noRoute' in t) unrouted.push(t.noRoute);
    else byCluster[t.cluster] = (byCluster[t.cluster] ?? 0) + 1;
  }
  return { byCluster, unrouted };
}
