// Istio VirtualService (networking.istio.io/v1) for spec.ingress: the app's
// hosts and gateways, header-matched routes to the candidate, the default route,
// timeout and retries. Weights stay in Knative/KServe; the VirtualService adds
// what they cannot do: routing on any header (knative/serving#4736). Requests
// enter Knative through its local gateway with the authority rewritten to the
// target's cluster-local host (a tag host for the candidate), as KServe does.
// A VirtualService bound to the mesh only (no gateways) is exported to its own
// namespace only (exportTo "."): by default Istio exports it everywhere, and
// its hosts would then reroute clients in every namespace (Istio's
// multi-tenancy guidance). Gateway-bound ones stay visible to the gateways'
// proxies, which run in other namespaces; what they may claim is the host and
// gateway policy's business (api/v1alpha1/validation.ts).
//
// rollout.mirrorPercent copies that share of the default route's requests to
// the candidate revision's private Service (render/private-service.ts), which
// reaches its pods' queue-proxy whatever the Host. Not the Knative gateway: Envoy
// can append "-shadow" to a mirrored request's Host (envoy config/route/v3
// RouteAction.RequestMirrorPolicy, disable_shadow_host_suffix_append), which no
// Knative route answers; the pinned istiod turns that off by default
// (DISABLE_SHADOW_HOST_SUFFIX, pilot/pkg/features/pilot.go), older ones and
// other meshes do not, so the private Service stays the target. Not the
// revision's public Service either: while the activator is in its path (SKS
// proxy mode) its endpoints are the activator's, which finds the revision from
// the Host or Knative-Serving-* headers (pkg/activator/handler/context_handler.go),
// and a copy carries neither.
//
// rollout.stickiness makes the VirtualService carry the split itself, as the
// HTTPRoute does: a session must be held where the split is made. The default
// route then has one weighted destination per version with weight, each
// entering the local gateway with its version's tag host as the authority
// (istiod turns a destination's `:authority` into that weighted cluster's
// host_rewrite_literal: pilot/pkg/networking/core/route/route.go,
// processWeightedDestination) and adding a Set-Cookie naming its version to the
// response (`add`, so the app's own cookies stay). A request carrying a cookie
// for a version with weight is routed to that version's tag host by a cookie
// route before the split. Knative's tag hosts each route to one revision.

import type { IVirtualService } from '@kubernetes-models/istio/networking.istio.io/v1/VirtualService';
import type { HeaderMatch, ServerlessApp, TrafficStatus } from '../api/v1alpha1/serverlessapp.ts';
import { sessionCookie, type SessionCookie } from './session-cookie.ts';
import { CANDIDATE_TAG, trafficSplit, type TrafficPlan, type TrafficShare } from './traffic.ts';
import { childMetadata } from './metadata.ts';
import { PRIVATE_SERVICE_PORT, privateServiceHost } from './private-service.ts';
import { routeName } from './route-name.ts';
import { apiVersionOf, Kinds } from '../util/kinds.ts';

export interface VirtualServiceOptions {
  /** Knative's cluster-local gateway Service. */
  localGateway: string;
  /** Whether the candidate is ready to receive header-matched requests. */
  candidateReady: boolean;
  /** Cluster-local hosts of the app's default route and of its stable and candidate versions' tags, and those tags. */
  defaultHost: string;
  stableHost: string;
  candidateHost: string;
  stableTag: string;
  candidateTag: string;
  /** The split, which the VirtualService carries itself when sessions are sticky. */
  traffic: TrafficPlan;
  /** The split the data plane reports, with its tags: a tag host is a version's only while it reports the tag on its revision. */
  inForce: TrafficStatus[];
  /**
   * Whether the data plane's routes carry what it reports (Knative's RoutesReady): Knative reports a tag before its
   * gateway routes it. Until then a tag host counts only where `live` (the VirtualService as it is) already sends that
   * version's sessions: make before break.
   */
  routesReady: boolean;
  live?: { spec?: { http?: unknown[] } };
  /** The candidate's revision, the target of rollout.mirrorPercent (mirrored only while candidateReady). */
  candidateRevision?: string;
}

function headerMatch(m: HeaderMatch) {
  const value = m.exact !== undefined ? { exact: m.exact } : m.prefix !== undefined ? { prefix: m.prefix } : { regex: m.regex ?? '' };
  return { headers: { [m.header.toLowerCase()]: value } };
}

export function renderVirtualService(app: ServerlessApp, o: VirtualServiceOptions): IVirtualService {
  const ingress = app.spec.ingress;
  if (!ingress) throw new Error('renderVirtualService needs spec.ingress');
  const policy = {
    ...(ingress.timeout ? { timeout: ingress.timeout } : {}),
    ...(ingress.retries ? {
      retries: {
        attempts: ingress.retries.attempts,
        ...(ingress.retries.perTryTimeout ? { perTryTimeout: ingress.retries.perTryTimeout } : {}),
        ...(ingress.retries.retryOn ? { retryOn: ingress.retries.retryOn } : {}),
      },
    } : {}),
  };
  const gateway = { host: o.localGateway, port: { number: 80 } };
  const to = (host: string, response?: { add: Record<string, string> }) => ({
    rewrite: { authority: host },
    route: [{ destination: gateway, weight: 100, ...(response ? { headers: { response } } : {}) }],
    ...policy,
  });
  const matches = app.spec.rollout?.match ?? [];
  const mirrorPercent = app.spec.rollout?.mirrorPercent ?? 0;
  const mirror = mirrorPercent > 0 && o.candidateReady && o.candidateRevision ? {
    mirror: { host: privateServiceHost(o.candidateRevision, app.metadata.namespace), port: { number: PRIVATE_SERVICE_PORT } },
    mirrorPercentage: { value: mirrorPercent },
  } : {};
  // Any matching rule sends the request to the candidate (match entries are ORed).
  const byHeader = matches.length && o.candidateReady ? [{ name: 'candidate-by-header', match: matches.map(headerMatch), ...to(o.candidateHost) }] : [];
  const cookie = sessionCookie(app.spec.rollout?.stickiness);
  if (!cookie) return virtualService(app, [...byHeader, { name: 'default', ...to(o.defaultHost), ...mirror }]);

  const weighted = trafficSplit(o.traffic, o.candidateReady).filter((s) => s.percent > 0);
  const setCookie = (version: string) => ({ add: { 'set-cookie': cookie.setCookie(version) } });
  const sessionMatch = (version: string | undefined) => [{ headers: { cookie: { regex: cookie.cookieHeaderRegex(version) } } }];
  const hostOf = sessionHosts(o, cookie, weighted.map((s) => s.version));
  const reached = weighted.map((s) => ({ share: s, host: hostOf(s, weighted.length === 1) }));
  // A request with a valid cookie goes to its version and sets nothing; the first without one is split and
  // told where it went. Stable's session first, then the candidate's; mirroring copies stable traffic
  // wherever it is routed.
  const sessions = reached.filter((r) => r.host).map(({ share, host }) => ({
    name: `session-${share.tag}`, match: sessionMatch(share.version), ...to(host!), ...(share.tag === CANDIDATE_TAG ? {} : mirror),
  }));
  if (reached.length && reached.every((r) => r.host)) {
    const stable = reached.find((r) => r.share.tag !== CANDIDATE_TAG) ?? reached[0]!;
    const split = reached.length === 1 ? to(stable.host!, setCookie(stable.share.version)) : {
      route: reached.map(({ share, host }) => ({
        destination: gateway, weight: share.percent,
        headers: { request: { set: { ':authority': host! } }, response: setCookie(share.version) },
      })),
      ...policy,
    };
    // Our cookie naming any other version (an earlier candidate, a version that never was): stable, whose cookie replaces it.
    const stray = reached.length > 1 ? [{ name: 'session-other', match: sessionMatch(undefined), ...to(stable.host!, setCookie(stable.share.version)), ...mirror }] : [];
    return virtualService(app, [...byHeader, ...sessions, ...stray, { name: 'default', ...split, ...mirror }]);
  }
  // The data plane does not yet report a tag on the version it should hold (a step just written): the sessions it
  // does report keep their version, and the rest goes to the default host, where the data plane splits,
  // without naming a version it cannot be sure of.
  return virtualService(app, [...byHeader, ...sessions, { name: 'default', ...to(o.defaultHost), ...mirror }]);
}

/**
 * Where a version's sessions go: its tag host while the data plane reports that tag on the version's revision
 * (Knative's stable/candidate, which the operator pins; KServe's prev/latest, which KServe moves itself). A
 * version serving alone may also be reached at the default host while the data plane reports it there at 100%.
 */
function sessionHosts(o: VirtualServiceOptions, cookie: SessionCookie, versions: string[]): (share: TrafficShare, alone: boolean) => string | undefined {
  const routed = liveSessionHosts(o.live, cookie, versions);
  const trusted = (version: string, host: string) => o.routesReady || routed.has(`${version} ${host}`);
  return (share, alone) => {
    const [host, tag] = share.tag === CANDIDATE_TAG ? [o.candidateHost, o.candidateTag] : [o.stableHost, o.stableTag];
    if (o.inForce.some((t) => t.tag === tag && t.revision === share.revision) && trusted(share.version, host)) return host;
    if (alone && o.inForce.some((t) => t.revision === share.revision && t.percent === 100) && trusted(share.version, o.defaultHost)) return o.defaultHost;
    return undefined;
  };
}

/**
 * "version host" for each of `versions` wherever the live VirtualService sends its sessions (a session rule) or
 * names it in a Set-Cookie: what this renderer would have written for it, compared as written.
 */
function liveSessionHosts(live: VirtualServiceOptions['live'], cookie: SessionCookie, versions: string[]): Set<string> {
  const out = new Set<string>();
  type Destination = { headers?: { request?: { set?: Record<string, string> }; response?: { add?: Record<string, string> } } };
  type Rule = { match?: Array<{ headers?: { cookie?: { regex?: string } } }>; rewrite?: { authority?: string }; route?: Destination[] };
  for (const rule of (live?.spec?.http ?? []) as Rule[]) {
    const matched = versions.find((v) => rule.match?.[0]?.headers?.cookie?.regex === cookie.cookieHeaderRegex(v));
    if (matched && rule.rewrite?.authority) out.add(`${matched} ${rule.rewrite.authority}`);
    for (const d of rule.route ?? []) {
      const named = versions.find((v) => d.headers?.response?.add?.['set-cookie'] === cookie.setCookie(v));
      const host = d.headers?.request?.set?.[':authority'] ?? rule.rewrite?.authority;
      if (named && host) out.add(`${named} ${host}`);
    }
  }
  return out;
}

function virtualService(app: ServerlessApp, http: unknown[]): IVirtualService {
  const ingress = app.spec.ingress!;
  return {
    apiVersion: apiVersionOf(Kinds.VirtualService),
    kind: Kinds.VirtualService.kind,
    metadata: childMetadata(app, routeName(app)),
    spec: {
      hosts: ingress.hosts,
      ...(ingress.gateways?.length ? { gateways: ingress.gateways } : { exportTo: ['.'] }),
      http,
    },
  } as IVirtualService;
}
