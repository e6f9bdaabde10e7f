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

import type { IVirtualService } from '@kubernetes-models/istio/networking.istio.io/v1/VirtualService';
import type { HeaderMatch, ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { childMetadata } from './metadata.ts';
import { PRIVATE_SERVICE_PORT, privateServiceHost } from './private-service.ts';
import { routeName } from './route-name.ts';
import { apiVersionOf, Kinds } from '../util/kinds.ts';

export interface VirtualServiceOptions {
  /** Knative's cluster-local gateway Service. */
  localGateway: string;
  /** Whether the candidate is ready to receive header-matched requests. */
  candidateReady: boolean;
  /** Cluster-local hosts of the app's default route and of the candidate tag. */
  defaultHost: string;
  candidateHost: string;
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
  const to = (host: string) => ({
    rewrite: { authority: host },
    route: [{ destination: { host: o.localGateway, port: { number: 80 } }, weight: 100 }],
    ...policy,
  });
  const matches = app.spec.rollout?.match ?? [];
  const mirrorPercent = app.spec.rollout?.mirrorPercent ?? 0;
  const mirror = mirrorPercent > 0 && o.candidateReady && o.candidateRevision ? {
    mirror: { host: privateServiceHost(o.candidateRevision, app.metadata.namespace), port: { number: PRIVATE_SERVICE_PORT } },
    mirrorPercentage: { value: mirrorPercent },
  } : {};
  const http = [
    // Any matching rule sends the request to the candidate (match entries are ORed).
    ...(matches.length && o.candidateReady ? [{ name: 'candidate-by-header', match: matches.map(headerMatch), ...to(o.candidateHost) }] : []),
    { name: 'default', ...to(o.defaultHost), ...mirror },
  ];
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
