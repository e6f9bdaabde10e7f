// Knative's real network ingress for the rig: net-gateway-api's controller
// (knative.dev/net-gateway-api, pinned in netgw/go.mod to the release of the
// rig's Knative Serving, built by build.sh), with the rig's istiod as the
// Gateway API implementation. Knative's config-network names its class
// (INGRESS_CLASS), so every KIngress Knative writes becomes HTTPRoutes, one per
// rule, with the per-revision weights and tags, on the Gateways istiod
// translates into the gateway's Envoy routes.
//
// Everything is read at setup from the pinned modules, never copied here: the
// config-gateway ConfigMap (its defaults are Istio's two Gateways) from
// net-gateway-api's config/, its Istio Gateways and knative-local-gateway
// Service from its third_party/istio/, and the ingress gateway's Service and
// Deployment from the gateway chart of the rig's istio.io/istio (the Deployment
// gives one KWOK pod: no container, no Envoy). istiod binds both Gateways to
// that pod's proxy through their Hostname addresses and Services.
//
// What stays SIMULATED: the gateway pod's data plane. net-gateway-api's status
// path probes the gateway pods over HTTP (gateway-probe.ts says what answers
// and from what: istiod's configuration for that proxy).
//
// The controller runs in the data plane's main namespace like Knative's; its
// health port is off (netgw/main.go) and its profiling port moves off Knative's.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { EnvtestError } from './errors.ts';
import { helmTemplate, ISTIO_NAMESPACE, ISTIOD_PORTS, type IstiodRig } from './istiod.ts';
import { applyAll } from './kserve.ts';
import { KNATIVE_NAMESPACE } from './knative-serving.ts';
import { type RunningProcess } from './supervise.ts';
import { downloadModule, installCrds, ISTIO_MODULE, KNATIVE_RELEASE, UPSTREAM_CRD_SOURCES, upstreamCrds, withReleaseLabel } from './upstream-crds.ts';

const here = dirname(fileURLToPath(import.meta.url));
/** The KIngress class net-gateway-api reconciles (pkg/reconciler/ingress/controller.go), for config-network's ingress-class. */
export const INGRESS_CLASS = 'gateway-api.ingress.networking.knative.dev';
/** The ingress gateway the gateway chart renders for this release name, and the labels its pods carry (the Service's selector). */
export const GATEWAY_RELEASE = 'istio-ingressgateway';
export const GATEWAY_POD_LABELS = { app: GATEWAY_RELEASE, istio: 'ingressgateway' } as const;
/**
 * The gateway pod's ports the prober dials: the targetPorts of the Services'
 * http2 ports (the chart's istio-ingressgateway 80, net-gateway-api's
 * knative-local-gateway 8081); Envoy's listeners are on the same ports.
 */
export const GATEWAY_PROBE_PORTS = [80, 8081] as const;
/** Off the 8008/8009 of Knative's controller and webhook in the same namespace (PROFILING_PORT, knative.dev/pkg). */
const PROFILING_PORT = 8010;

const GATEWAY_API = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'sigs.k8s.io/gateway-api')!;

/** net-gateway-api's module and version, as netgw/go.mod pins it (the one place). */
export function netGatewayApiModule(goMod = readFileSync(join(here, 'netgw', 'go.mod'), 'utf8')): { module: string; version: string } {
  const version = /^\s*(?:require\s+)?knative\.dev\/net-gateway-api\s+(v\S+)/m.exec(goMod)?.[1];
  if (!version) throw new EnvtestError('test/envtest/netgw/go.mod requires no knative.dev/net-gateway-api version');
  return { module: 'knative.dev/net-gateway-api', version };
}

export interface NetGatewayApiRig extends IstiodRig {
  /** Starts a Node script of test/envtest in the main namespace, as the data plane's other simulated parts. */
  launchNodeInNs(name: string, script: string, args: string[]): RunningProcess;
  /** True once something listens on `port` in the main namespace. */
  listening(port: number): Promise<boolean>;
}

export interface NetGatewayApi {
  readonly controller: RunningProcess;
  /** The SIMULATED gateway data plane answering Knative's probes (gateway-probe.ts). */
  readonly gatewayProbe: RunningProcess;
}

/** Installs the Gateways, their Services, the gateway pod and config-gateway, then starts the controller and the probe answerer. */
export async function startNetGatewayApi(rig: NetGatewayApiRig, waitHealthy: (p: RunningProcess, check: () => Promise<boolean>) => Promise<void>): Promise<NetGatewayApi> {
  const { module, version } = netGatewayApiModule();
  const [netgw, istio] = await Promise.all([
    downloadModule(module, version), downloadModule(ISTIO_MODULE.module, ISTIO_MODULE.version),
    upstreamCrds([GATEWAY_API]).then((crds) => installCrds(rig.kubeConfig, crds)),
  ]);
  const chart = join(istio, 'manifests/charts/gateway');
  // A ClusterIP Service: no cloud gives the rig a load balancer.
  const gatewayChart = await Promise.all(['templates/service.yaml', 'templates/deployment.yaml']
    .map((t) => helmTemplate(rig, GATEWAY_RELEASE, chart, t, ['service.type=ClusterIP'])));
  const fromModule = (file: string) => objectsIn(join(netgw, file)).map((o) => withReleaseLabel(o, KNATIVE_RELEASE));
  const objects = [
    ...fromModule('config/config-gateway.yaml'),
    ...gatewayChart.flat().filter((o) => o.kind === 'Service' || o.kind === 'Deployment'),
    ...['203-local-gateway.yaml', '300-gateway.yaml', '300-gateway-local.yaml'].flatMap((f) => fromModule(`third_party/istio/${f}`)),
  ];
  const unexpected = objects.filter((o) => o.metadata?.namespace !== undefined && ![KNATIVE_NAMESPACE, ISTIO_NAMESPACE].includes(o.metadata.namespace));
  if (unexpected.length > 0) throw new EnvtestError(`net-gateway-api setup: unexpected namespace in ${unexpected.map((o) => `${o.kind} ${o.metadata?.name}`).join(', ')}`);
  await applyAll(KubernetesObjectApi.makeApiClient(rig.kubeConfig), objects);

  // As its Deployment (config/300-controller.yaml) sets them.
  const controller = rig.launchInNs('net-gateway-api-controller', join(rig.binDir, 'net-gateway-api-controller'), [`--kubeconfig=${rig.kubeconfigInNs}`], {
    SYSTEM_NAMESPACE: KNATIVE_NAMESPACE, CONFIG_LOGGING_NAME: 'config-logging', CONFIG_OBSERVABILITY_NAME: 'config-observability',
    METRICS_DOMAIN: 'knative.dev/net-gateway-api', POD_NAME: 'net-gateway-api-controller-rig', PROFILING_PORT: String(PROFILING_PORT),
  });
  const labels = Object.entries(GATEWAY_POD_LABELS).map(([k, v]) => `${k}=${v}`).join(',');
  const gatewayProbe = rig.launchNodeInNs('gateway-probe', 'gateway-probe.ts', [
    join(rig.binDir, 'xds-dump'), `127.0.0.1:${ISTIOD_PORTS.grpcXds}`, ISTIO_NAMESPACE, labels, ...GATEWAY_PROBE_PORTS.map(String),
  ]);
  await Promise.all([
    waitHealthy(controller, () => rig.listening(PROFILING_PORT)),
    ...GATEWAY_PROBE_PORTS.map((port) => waitHealthy(gatewayProbe, () => rig.listening(port))),
  ]);
  return { controller, gatewayProbe };
}

function objectsIn(path: string): KubernetesObject[] {
  return parseAllDocuments(readFileSync(path, 'utf8'))
    .map((doc) => doc.toJS() as KubernetesObject | null)
    .filter((obj): obj is KubernetesObject => Boolean(obj?.kind));
}
