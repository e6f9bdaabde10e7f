// An evaluation of the Envoy routes istiod generates, not a proxy: for a request
// (authority, path, headers, cookies), which virtual host, route and cluster
// Envoy would pick from the configuration a gateway receives (envoy-config.ts
// reads it from the rig's istiod; no Envoy runs), what it rewrites and which
// headers it adds to the request and the response, followed through every hop
// the rig's routing takes: the public gateway's route, then, when that route
// goes to Knative's local gateway (the Istio router), Knative's own route there
// (net-gateway-api's, ENVTEST_NETGW=on) to the revision's Service.
//
// The semantics it reproduces, from Envoy's source (envoyproxy/envoy):
//  - the virtual host (source/common/router/config_impl.cc, RouteMatcher::findVirtualHost): an exact
//    domain first, then suffix wildcards (`*.foo.com`, the longest first, matching at least one more
//    character), then prefix wildcards (`foo.*`, the longest first), then `*`; the host lower-cased;
//  - the route (config_impl.cc, RouteEntryImplBase::matchRoute and the Prefix/Path/Regex route entries):
//    routes in order, the first whose path matcher and every header matcher match; the path without its
//    query; a regular expression matches the whole path (RE2's FullMatch);
//  - the headers (source/common/http/header_utility.cc, HeaderUtility::matchHeaders and
//    HeaderDataBaseImpl::matchesHeaders): every matcher must match; several values of one header are
//    joined by ',' (the `cookie` header by '; ', as the HTTP/2 codec joins it); names case-insensitive; an
//    absent header fails a value matcher, inverted or not, unless treat_missing_header_as_empty; invert_match
//    inverts the result (of a present_match too); a matcher field it does not know is an error, not a match;
//  - the weighted clusters (config_impl.cc, RouteEntryImplBase::pickWeightedCluster): a random value modulo
//    the total weight, the first cluster whose running total exceeds it; a cluster of weight 0 is never picked;
//  - host_rewrite_literal: the weighted-cluster entry's, then the route's over it (RouteEntryImplBase::
//    finalizeRequestHeaders applies the route's host rewrite after the entry's headers), so the route's wins;
//  - the request headers (source/common/router/header_parser.cc, HeaderParser::evaluateHeaders, and the
//    route's finalizeRequestHeaders): level by level, the weighted-cluster entry, the route, the virtual host,
//    then the route configuration (the most specific first, so a less specific level's value wins a
//    conflict), each removing its headers_to_remove, then adding by append_action: APPEND_IF_EXISTS_OR_ADD
//    (the default; a second value joined by ','), OVERWRITE_IF_EXISTS_OR_ADD, ADD_IF_ABSENT, OVERWRITE_IF_EXISTS;
//  - the response headers to add of the same levels, in the same order, as a list (no upstream response is
//    simulated, so nothing is overwritten);
//  - a route that answers itself (direct_response, redirect) ends the request there.
// Regular expressions are evaluated with JavaScript's RegExp: the same as RE2 for the expressions the
// operator and istiod write (anchors, classes, alternation, no back-references).

import type { EnvoyHeaderMatch, EnvoyHeaderValue, EnvoyRequestMutations, EnvoyRoute, EnvoyRouteConfiguration, EnvoyStringMatch, EnvoyVirtualHost, ProxyConfig } from './envoy-config.ts';

export interface EvalRequest {
  authority: string;
  path: string;
  /** Request headers, lower-case names; `cookie` as a browser sends it (`a=1; b=2`). */
  headers?: Record<string, string>;
}

/** One proxy's decision on a request. */
export interface Hop {
  routeConfig: string;
  virtualHost: string;
  /** The route's name, or its index in the virtual host when it has none. */
  route: string;
  cluster: string;
  /** The authority the request goes on with (host_rewrite_literal, else the one it came with). */
  authority: string;
  requestHeaders: Record<string, string>;
  /** Headers the proxy adds to the response (`set-cookie` among them), in the order Envoy appends them. */
  responseHeaders: Array<[string, string]>;
}

/** `answered`: the route answered itself (a direct response or a redirect) with this status. */
export type RouteOutcome = { hop: Hop } | { noRoute: string } | { answered: { status: number; route: string } };

/** The virtual host of `config` answering `authority`, by Envoy's search order (see the file's comment). */
export function findVirtualHost(config: EnvoyRouteConfiguration, authority: string): EnvoyVirtualHost | undefined {
  // istiod's gateway listeners set ignore_port_in_host_matching and write their domains without a port.
  const host = (config.ignore_port_in_host_matching ? authority.replace(/:\d+$/, '') : authority).toLowerCase();
  const hosts = config.virtual_hosts ?? [];
  const exact = hosts.find((vh) => vh.domains.some((d) => d.toLowerCase() === host));
  if (exact) return exact;
  const wildcards = (kind: 'suffix' | 'prefix') => hosts.flatMap((vh) => vh.domains
    .filter((d) => d !== '*' && (kind === 'suffix' ? d.startsWith('*') : d.endsWith('*')))
    .map((d) => ({ vh, part: (kind === 'suffix' ? d.slice(1) : d.slice(0, -1)).toLowerCase() })))
    .sort((a, b) => b.part.length - a.part.length);
  for (const { vh, part } of wildcards('suffix')) if (host.length > part.length && host.endsWith(part)) return vh;
  for (const { vh, part } of wildcards('prefix')) if (host.length > part.length && host.startsWith(part)) return vh;
  return hosts.find((vh) => vh.domains.includes('*'));
}

function stringMatches(m: EnvoyStringMatch, value: string): boolean {
  const fold = (s: string) => (m.ignore_case ? s.toLowerCase() : s);
  const v = fold(value);
  if (m.exact !== undefined) return v === fold(m.exact);
  if (m.prefix !== undefined) return v.startsWith(fold(m.prefix));
  if (m.suffix !== undefined) return v.endsWith(fold(m.suffix));
  if (m.contains !== undefined) return v.includes(fold(m.contains));
  if (m.safe_regex !== undefined) return fullMatch(m.safe_regex.regex, value);
  throw new Error(`a string matcher this evaluation does not know: ${JSON.stringify(m)}`);
}

/** RE2's FullMatch: the whole value, not a part of it. */
function fullMatch(regex: string, value: string): boolean {
  return new RegExp(`^(?:${regex})$`).test(value);
}

/** `headers` by lower-case name: header names are case-insensitive (istiod keeps an HTTPRoute's `Cookie` as written). */
function headerMatches(h: EnvoyHeaderMatch, headers: Record<string, string>): boolean {
  const unknown = Object.keys(h).filter((k) => !['name', 'string_match', 'present_match', 'invert_match', 'treat_missing_header_as_empty'].includes(k));
  if (unknown.length) throw new Error(`a header matcher this evaluation does not know (${unknown.join(', ')}): ${JSON.stringify(h)}`);
  const name = h.name.toLowerCase();
  const present = Object.hasOwn(headers, name);
  if (h.present_match !== undefined) return (present === h.present_match) !== !!h.invert_match;
  // An absent header fails a value matcher, inverted or not, unless it is to be read as empty.
  if (!present && !h.treat_missing_header_as_empty) return false;
  const result = h.string_match ? stringMatches(h.string_match, headers[name] ?? '') : present;
  return h.invert_match ? !result : result;
}

const KNOWN_MATCH = ['prefix', 'path', 'path_separated_prefix', 'safe_regex', 'headers', 'case_sensitive'];

function pathMatches(r: EnvoyRoute, path: string): boolean {
  const unknown = Object.keys(r.match).filter((k) => !KNOWN_MATCH.includes(k));
  if (unknown.length) throw new Error(`a route matcher this evaluation does not know (${unknown.join(', ')}): ${JSON.stringify(r.match)}`);
  const p = path.split('?')[0]!;
  const caseSensitive = r.match.case_sensitive ?? true;
  const fold = (s: string) => (caseSensitive ? s : s.toLowerCase());
  if (r.match.prefix !== undefined) return fold(p).startsWith(fold(r.match.prefix));
  if (r.match.path !== undefined) return fold(p) === fold(r.match.path);
  // The prefix as a whole path segment: itself, or followed by "/" (a query is already cut off).
  if (r.match.path_separated_prefix !== undefined) return fold(p) === fold(r.match.path_separated_prefix) || fold(p).startsWith(`${fold(r.match.path_separated_prefix)}/`);
  if (r.match.safe_regex !== undefined) return fullMatch(r.match.safe_regex.regex, p);
  throw new Error(`a path matcher this evaluation does not know: ${JSON.stringify(r.match)}`);
}

const added = (values: EnvoyHeaderValue[] | undefined): Array<[string, string]> => (values ?? []).map((v) => [v.header.key.toLowerCase(), v.header.value ?? '']);

/** The request headers after each level's removals and additions, in the order the levels are given (see the file's comment). */
function mutateRequest(incoming: Record<string, string>, levels: Array<EnvoyRequestMutations | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(incoming)) out[k.toLowerCase()] = v;
  for (const level of levels) {
    for (const k of level?.request_headers_to_remove ?? []) delete out[k.toLowerCase()];
    for (const { header, append_action: action, append } of level?.request_headers_to_add ?? []) {
      const k = header.key.toLowerCase(), value = header.value ?? '';
      const present = Object.hasOwn(out, k);
      const mode = action ?? (append === false ? 'OVERWRITE_IF_EXISTS_OR_ADD' : 'APPEND_IF_EXISTS_OR_ADD');
      if (mode === 'ADD_IF_ABSENT' && present) continue;
      if (mode === 'OVERWRITE_IF_EXISTS' && !present) continue;
      out[k] = mode === 'APPEND_IF_EXISTS_OR_ADD' && present ? `${out[k]},${value}` : value;
    }
  }
  return out;
}

/**
 * Envoy's decision on `req` with the route configuration `config`. `random` stands for Envoy's random value
 * (any non-negative integer): the tests draw it, so a population of requests splits as Envoy's would.
 */
export function routeRequest(config: EnvoyRouteConfiguration, req: EvalRequest, random: number): RouteOutcome {
  const vh = findVirtualHost(config, req.authority);
  if (!vh) return { noRoute: `no virtual host of ${config.name} answers ${req.authority}` };
  const headers: Record<string, string> = { ':authority': req.authority, ':path': req.path };
  for (const [k, v] of Object.entries(req.headers ?? {})) headers[k.toLowerCase()] = v;
  const index = vh.routes.findIndex((r) => pathMatches(r, req.path) && (r.match.headers ?? []).every((h) => headerMatches(h, headers)));
  const route = vh.routes[index];
  if (!route) return { noRoute: `no route of ${config.name}/${vh.name} matches ${req.path} with ${JSON.stringify(req.headers ?? {})}` };
  const name = route.name ?? `#${index}`;
  if (route.direct_response) return { answered: { status: route.direct_response.status, route: name } };
  if (route.redirect) return { answered: { status: 301, route: name } };
  let cluster = route.route?.cluster;
  let entry: (EnvoyRequestMutations & { host_rewrite_literal?: string; response_headers_to_add?: EnvoyHeaderValue[] }) | undefined;
  const weighted = route.route?.weighted_clusters?.clusters;
  if (weighted) {
    // A weight left out of the configuration is 0 (proto3's default).
    const total = weighted.reduce((sum, c) => sum + (c.weight ?? 0), 0);
    if (total <= 0) return { noRoute: `route ${name} of ${config.name}/${vh.name} has no weight on any cluster` };
    const selected = random % total;
    let end = 0;
    entry = weighted.find((c) => selected < (end += c.weight ?? 0));
    cluster = (entry as { name: string }).name;
  }
  if (!cluster) return { noRoute: `route ${name} of ${config.name}/${vh.name} sends nowhere (a redirect or a direct response)` };
  const requestHeaders = mutateRequest(req.headers ?? {}, [entry, route, vh, config]);
  return {
    hop: {
      routeConfig: config.name, virtualHost: vh.name, route: name, cluster,
      // A VirtualService destination's own authority lands on its weighted-cluster entry (istiod route.go processWeightedDestination).
      authority: route.route?.host_rewrite_literal ?? entry?.host_rewrite_literal ?? req.authority,
      requestHeaders,
      responseHeaders: [entry, route, vh, config].flatMap((level) => added(level?.response_headers_to_add)),
    },
  };
}

/**
 * A seeded generator of Envoy's random values (mulberry32: an LCG's low bits alternate, and a second hop's
 * pick would always draw even values), so a population of requests is the same on every run.
 */
export function seededDraws(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x + 0x6d2b79f5) >>> 0;
    let t = Math.imul(x ^ (x >>> 15), x | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** Where a cluster leads on: another proxy's route configuration (Knative's local gateway), or nowhere (a revision's Service). */
export type NextHop = (cluster: string) => { config: ProxyConfig; routeConfig: string } | undefined;

export interface Trace {
  hops: Hop[];
  /** The cluster the request ends on. */
  cluster: string;
  /** Every header the proxies add to the response, first hop's last (the outer proxy's mutations apply last). */
  responseHeaders: Array<[string, string]>;
}

/**
 * Follows `req` from the route configuration `first` of `config` through every hop `next` names, each proxy
 * deciding on the request as the one before passed it on (its authority and headers), to the cluster it
 * ends on. `random()` is drawn once per hop.
 */
export function traceRequest(config: ProxyConfig, first: string, req: EvalRequest, next: NextHop, random: () => number): Trace | { noRoute: string } {
  const hops: Hop[] = [];
  let at: { config: ProxyConfig; routeConfig: string } | undefined = { config, routeConfig: first };
  let request = req;
  while (at) {
    if (hops.length >= 4) return { noRoute: `more than 4 hops: ${hops.map((h) => h.cluster).join(' -> ')}` };
    const rc = at.config.routes.find((r) => r.name === at!.routeConfig);
    if (!rc) return { noRoute: `the proxy has no route configuration ${at.routeConfig} (it has ${at.config.routes.map((r) => r.name).join(', ')})` };
    const outcome = routeRequest(rc, request, random());
    if ('noRoute' in outcome) return outcome;
    if ('answered' in outcome) return { noRoute: `route ${outcome.answered.route} of ${rc.name} answers itself (${outcome.answered.status})` };
    hops.push(outcome.hop);
    request = { authority: outcome.hop.authority, path: request.path, headers: outcome.hop.requestHeaders };
    at = next(outcome.hop.cluster);
  }
  return { hops, cluster: hops.at(-1)!.cluster, responseHeaders: hops.toReversed().flatMap((h) => h.responseHeaders) };
}
