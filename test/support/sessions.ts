// A population of synthetic browser sessions replayed over route evaluations
// (route-eval.ts): each client keeps the cookies the responses set, as a
// browser does, and sends its next request with them. What a user asks of a
// canary is measured per session, not per request: did my session ever change
// version while both versions held weight?

import { traceRequest, type EvalRequest, type NextHop, type Trace } from './route-eval.ts';
import { serviceCluster, type ProxyConfig } from './envoy-config.ts';

/** Where one request ends (a cluster) and the cookies its response sets, `name=value` by name. */
export type Route = (req: EvalRequest) => { cluster: string; setCookies: Record<string, string | null> } | { noRoute: string };

/** The Set-Cookie headers of a response as a browser reads them: name -> value (attributes aside), or null when it deletes the cookie. */
export function cookiesSet(responseHeaders: Array<[string, string]>): Record<string, string | null> {
  const jar: Record<string, string | null> = {};
  for (const [k, v] of responseHeaders) {
    if (k !== 'set-cookie') continue;
    const [pair, ...attributes] = v.split(';');
    const eq = pair!.indexOf('=');
    if (eq <= 0) continue;
    const name = pair!.slice(0, eq).trim();
    // Max-Age=0 (or less) deletes the cookie, as a browser does.
    jar[name] = attributes.some((a) => /^\s*max-age\s*=\s*(0|-\d+)\s*$/i.test(a)) ? null : pair!.slice(eq + 1).trim();
  }
  return jar;
}

/** A Route over a gateway's configuration: its route configuration `first`, then every hop `next` names. */
export function routeOver(config: ProxyConfig, first: string, next: NextHop, random: () => number): Route {
  return (req) => {
    const t: Trace | { noRoute: string } = traceRequest(config, first, req, next, random);
    return 'noRoute' in t ? t : { cluster: t.cluster, setCookies: cookiesSet(t.responseHeaders) };
  };
}

/** A Knative traffic target as its Service (or KServe's predictor Service) reports it. */
export interface ReportedTarget { revisionName?: string; percent?: number; tag?: string; url?: string }

/**
 * A Route whose requests end on revisions, over the routes a gateway (or sidecar) proxy receives, as the rig can tell
 * them: a revision's own Service cluster (Gateway API's backends, or Knative's local gateway's routes when `next`
 * follows them), or Knative's local gateway reached with a tag host as the authority, which the Knative Service's
 * reported traffic maps to one revision (its tag URLs; its own host while one revision serves). A request ending
 * anywhere else, or on a revision not in `ready`, is unrouted.
 */
export function revisionRoute(o: {
  config: ProxyConfig; host: string; namespace: string; knativeService: string; traffic: ReportedTarget[]; ready: Set<string>; next: NextHop; random: () => number;
}): Route {
  const first = o.config.routes.find((rc) => (rc.virtual_hosts ?? []).some((vh) => vh.domains.includes(o.host)))?.name;
  const revisions = [...new Set(o.traffic.map((t) => t.revisionName).filter((r): r is string => !!r))];
  const byHost = new Map(o.traffic.filter((t) => t.url && t.revisionName).map((t) => [new URL(t.url!).host, t.revisionName!]));
  const serving = o.traffic.filter((t) => (t.percent ?? 0) > 0);
  if (serving.length === 1 && serving[0]!.revisionName) byHost.set(`${o.knativeService}.${o.namespace}.svc.cluster.local`, serving[0]!.revisionName);
  const localGateway = serviceCluster('istio-system', 'knative-local-gateway');
  return (req) => {
    if (!first) return { noRoute: `no route configuration of the proxy answers ${o.host}` };
    const t = traceRequest(o.config, first, req, o.next, o.random);
    if ('noRoute' in t) return t;
    const authority = t.hops.at(-1)!.authority;
    const revision = revisions.find((r) => serviceCluster(o.namespace, r) === t.cluster) ?? (t.cluster === localGateway ? byHost.get(authority) : undefined);
    if (!revision) return { noRoute: `ended on ${t.cluster} as ${authority}, which is no one revision Knative reports (${JSON.stringify(o.traffic)})` };
    if (!o.ready.has(revision)) return { noRoute: `reached ${revision}, which Knative does not report Ready` };
    return { cluster: revision, setCookies: cookiesSet(t.responseHeaders) };
  };
}

/** The Set-Cookie versions of `cookie` the routes of `host` in `config` add to responses, sorted: what the proxy has been told so far. */
export function cookieVersions(config: ProxyConfig, host: string, cookie: string): string[] | undefined {
  const vh = config.routes.flatMap((rc) => rc.virtual_hosts ?? []).find((v) => v.domains.includes(host));
  if (!vh) return undefined;
  const headers = vh.routes.flatMap((r) => [...(r.response_headers_to_add ?? []), ...(r.route?.weighted_clusters?.clusters.flatMap((c) => c.response_headers_to_add ?? []) ?? [])]);
  const versions = headers.filter((h) => h.header.key.toLowerCase() === 'set-cookie').map((h) => cookiesSet([['set-cookie', h.header.value ?? '']])[cookie]).filter((v): v is string => !!v);
  return [...new Set(versions)].sort();
}

export interface Session {
  cookies: Record<string, string>;
  /** The cluster each of its requests ended on, in order. */
  reached: string[];
}

/** `count` new sessions: no cookies yet. */
export const newSessions = (count: number): Session[] => Array.from({ length: count }, () => ({ cookies: {}, reached: [] }));

/** One request from each session to `authority` (with `headers`), its cookies sent and the response's kept. */
export function step(sessions: Session[], route: Route, authority: string, headers: Record<string, string> = {}): { unrouted: string[] } {
  const unrouted: string[] = [];
  for (const s of sessions) {
    const cookie = Object.entries(s.cookies).map(([k, v]) => `${k}=${v}`).join('; ');
    const out = route({ authority, path: '/', headers: { ...headers, ...(cookie ? { cookie } : {}) } });
    if ('noRoute' in out) {
      unrouted.push(out.noRoute);
      continue;
    }
    s.reached.push(out.cluster);
    for (const [name, value] of Object.entries(out.setCookies)) {
      if (value === null) delete s.cookies[name];
      else s.cookies[name] = value;
    }
  }
  return { unrouted };
}

/** The share of sessions that reached more than one cluster among `fromRequest` onwards. */
export function flippedShare(sessions: Session[], fromRequest = 0): number {
  if (sessions.length === 0) return 0;
  const flipped = sessions.filter((s) => new Set(s.reached.slice(fromRequest)).size > 1).length;
  return flipped / sessions.length;
}

/** How the first requests of the sessions split: cluster -> share. */
export function firstSplit(sessions: Session[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of sessions) if (s.reached[0] !== undefined) counts[s.reached[0]] = (counts[s.reached[0]] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).map(([c, n]) => [c, n / sessions.length]));
}
