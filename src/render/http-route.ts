// Gateway API HTTPRoute (gateway.networking.k8s.io/v1, standard channel) for
// spec.ingress, the second router beside the Istio VirtualService, rendered
// from the same traffic plan as the workload's own split. Unlike the
// VirtualService (which leaves weights to Knative and enters through its local
// gateway), an HTTPRoute carries the split itself, as Gateway API routers do.
//
// Backends are chosen as Knative's own Gateway API integration chooses them:
// each revision's public Service (named after the revision, port 80, in the
// app's namespace: no ReferenceGrant needed) with Knative-Serving-Revision and
// Knative-Serving-Namespace set on the request, so the activator finds the
// revision while it is in the path (knative.dev/net-gateway-api v0.48.0
// pkg/reconciler/ingress/resources/httproute.go makeHTTPRouteRule: one weighted
// backendRef per split with a RequestHeaderModifier; the splits and headers come
// from knative.dev/serving v0.48.1 pkg/reconciler/route/resources/ingress.go).
// Model apps are Knative revisions of the predictor's Knative Service (KServe's
// Serverless mode), so the same backends serve both kinds. KServe's own
// HTTPRoutes (Standard mode: kserve v0.20.0 pkg/controller/v1beta1/
// inferenceservice/reconcilers/ingress/httproute_reconciler.go) point at the
// predictor's Deployment Service, which Serverless mode does not have.
//
// What Gateway API v1.6.3's standard channel has (its CRD, checked):
// rules[].timeouts.request (standard since v1.2), RequestMirror with
// `percent`/`fraction` (standard since v1.3; absent from v1.2.1's standard
// CRD). rules[].retry is experimental-channel only in v1.6.3, so
// spec.ingress.retries is refused under this router (planner/route.ts).
//
// rollout.stickiness: each weighted backend adds a Set-Cookie naming its version
// to the response (a ResponseHeaderModifier filter on the backendRef, which
// istiod applies per weighted cluster), and one rule per version with weight
// matches a Cookie header naming it (RegularExpression, which istiod hands to
// Envoy as safe_regex, a full match, without checking it: session-cookie.ts
// writes it) and sends it to that version's revision alone. Rules of equal
// specificity (one header each, as the header rules) keep their list order,
// header rules first (Gateway API's HTTPRouteRule precedence). This is the
// pattern Gateway API's standard channel allows today: session persistence
// (GEP-1619) is experimental and pins endpoints, not versions.
//
// Every field the CRD defaults (parentRef group/kind, backendRef group/kind/
// weight, the "/" path match, header match type) is written explicitly: lists
// are atomic, and what we write is compared whole with what is live.

import { gatewayRef, type HeaderMatch, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { formatDuration, parseDuration } from '../api/v1alpha1/duration.ts';
import { childMetadata } from './metadata.ts';
import { PRIVATE_SERVICE_PORT, privateServiceName } from './private-service.ts';
import { routeName } from './route-name.ts';
import { sessionCookie } from './session-cookie.ts';
import { CANDIDATE_TAG, trafficSplit, type TrafficPlan } from './traffic.ts';
import { apiVersionOf, Kinds, type ApiVersion } from '../util/kinds.ts';

export const GATEWAY_API_GROUP = Kinds.HTTPRoute.group;
/** knative.dev/serving pkg/activator: activator.RevisionHeaderName, RevisionHeaderNamespace. */
export const REVISION_HEADER = 'Knative-Serving-Revision';
export const NAMESPACE_HEADER = 'Knative-Serving-Namespace';

export interface HttpRouteOptions {
  traffic: TrafficPlan;
  /** Whether the candidate may be reached at all: header routes, its weight and mirroring (ready, warm, not parked, route admitted). */
  candidateReachable: boolean;
}

export interface HttpRoute {
  apiVersion: ApiVersion<typeof Kinds.HTTPRoute>;
  kind: typeof Kinds.HTTPRoute.kind;
  metadata: ReturnType<typeof childMetadata>;
  spec: {
    parentRefs: Array<{ group: string; kind: string; namespace: string; name: string }>;
    hostnames: string[];
    rules: HttpRouteRule[];
  };
}

interface BackendRef { group: ''; kind: 'Service'; name: string; port: number }
interface HttpRouteRule {
  name: string;
  matches: Array<{ path: { type: 'PathPrefix'; value: '/' }; headers?: Array<{ type: 'Exact' | 'RegularExpression'; name: string; value: string }> }>;
  filters?: Array<{ type: 'RequestMirror'; requestMirror: { backendRef: BackendRef; percent: number } }>;
  backendRefs: Array<BackendRef & { weight: number; filters: BackendFilter[] }>;
  timeouts?: { request: string };
}

/** A ServerlessApp gateway "namespace/name" as a parentRef to a Gateway API Gateway. */
export function parentRef(gateway: string): HttpRoute['spec']['parentRefs'][number] {
  const { namespace, name } = gatewayRef(gateway);
  return { group: GATEWAY_API_GROUP, kind: 'Gateway', namespace, name };
}

const ALL_PATHS = { type: 'PathPrefix', value: '/' } as const;

/** RE2 (Envoy's safe_regex, full match): a prefix is the escaped prefix followed by anything. */
function headerMatch(m: HeaderMatch) {
  const name = m.header.toLowerCase();
  if (m.exact !== undefined) return { type: 'Exact' as const, name, value: m.exact };
  if (m.prefix !== undefined) return { type: 'RegularExpression' as const, name, value: `${m.prefix.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&')}.*` };
  return { type: 'RegularExpression' as const, name, value: m.regex ?? '' };
}

type BackendFilter =
  | { type: 'RequestHeaderModifier'; requestHeaderModifier: { set: Array<{ name: string; value: string }> } }
  | { type: 'ResponseHeaderModifier'; responseHeaderModifier: { add: Array<{ name: string; value: string }> } };

/** `setCookie`: the Set-Cookie its responses add (`add`, so the app's own cookies stay). */
function revisionBackend(namespace: string, revision: string, weight: number, setCookie?: string) {
  const filters: BackendFilter[] = [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: NAMESPACE_HEADER, value: namespace }, { name: REVISION_HEADER, value: revision }] } }];
  if (setCookie) filters.push({ type: 'ResponseHeaderModifier', responseHeaderModifier: { add: [{ name: 'Set-Cookie', value: setCookie }] } });
  return { group: '' as const, kind: 'Service' as const, name: revision, port: 80, weight, filters };
}

export function renderHttpRoute(app: ServerlessApp, o: HttpRouteOptions): HttpRoute {
  const ingress = app.spec.ingress;
  if (!ingress) throw new Error('renderHttpRoute needs spec.ingress');
  const ns = app.metadata.namespace;
  const split = trafficSplit(o.traffic, o.candidateReachable);
  // Header routes and mirroring reach the candidate exactly when the split lists it.
  const c = split.find((s) => s.tag === CANDIDATE_TAG);
  const timeouts = ingress.timeout ? { timeouts: { request: formatDuration(parseDuration(ingress.timeout)) } } : {};
  const cookie = sessionCookie(app.spec.rollout?.stickiness);
  // A backend at weight 0 carries nothing: a candidate at 0% is reached by header routes and mirroring only.
  const shares = split.filter((s) => s !== c || s.percent > 0);
  const weighted = shares.map((s) => revisionBackend(ns, s.revision, s.percent, cookie?.setCookie(s.version)));
  const mirrorPercent = app.spec.rollout?.mirrorPercent ?? 0;
  // The private Service, as the VirtualService mirrors (render/virtual-service.ts says why).
  const mirror = c && mirrorPercent > 0
    ? { filters: [{ type: 'RequestMirror' as const, requestMirror: { backendRef: { group: '' as const, kind: 'Service' as const, name: privateServiceName(c.revision), port: PRIVATE_SERVICE_PORT }, percent: mirrorPercent } }] }
    : {};
  // A request with a valid cookie goes to its version and sets nothing; the first without one is split and told
  // where it went; our cookie naming any other version goes to stable, whose cookie replaces it.
  const withWeight = shares.filter((s) => s.percent > 0);
  const sessionRule = (name: string, version: string | undefined, s: (typeof shares)[number], setCookie?: string): HttpRouteRule => ({
    name, matches: [{ path: ALL_PATHS, headers: [{ type: 'RegularExpression' as const, name: 'cookie', value: cookie!.cookieHeaderRegex(version) }] }],
    ...(s.tag === CANDIDATE_TAG ? {} : mirror),
    backendRefs: [revisionBackend(ns, s.revision, 100, setCookie)], ...timeouts,
  });
  const stable = withWeight.find((s) => s.tag !== CANDIDATE_TAG) ?? withWeight[0];
  const sessions: HttpRouteRule[] = cookie && stable ? [
    ...withWeight.map((s) => sessionRule(`session-${s.tag}`, s.version, s)),
    ...(withWeight.length > 1 ? [sessionRule('session-other', undefined, stable, cookie.setCookie(stable.version))] : []),
  ] : [];
  const matches = app.spec.rollout?.match ?? [];
  const rules: HttpRouteRule[] = [
    // Gateway API orders rules by match specificity, not position; header matches are more specific
    // than the bare "/" of the default rule, so they win as the VirtualService's first route does.
    // Each match entry is its own match (ORed), as in the VirtualService.
    ...(matches.length && c ? [{
      name: 'candidate-by-header', matches: matches.map((m) => ({ path: ALL_PATHS, headers: [headerMatch(m)] })),
      backendRefs: [revisionBackend(ns, c.revision, 100)], ...timeouts,
    }] : []),
    ...sessions,
    { name: 'default', matches: [{ path: ALL_PATHS }], ...mirror, backendRefs: weighted, ...timeouts },
  ];
  return {
    apiVersion: apiVersionOf(Kinds.HTTPRoute),
    kind: Kinds.HTTPRoute.kind,
    metadata: childMetadata(app, routeName(app)),
    spec: { parentRefs: (ingress.gateways ?? []).map(parentRef), hostnames: ingress.hosts, rules },
  };
}
