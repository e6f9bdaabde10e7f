// The real Istio control plane (istiod: pilot-discovery, built by build.sh from
// the istio.io/istio version pinned in istio/go.mod) in the data plane's main
// network namespace, out of cluster (--kubeconfig), with its validating
// webhook registered: every Istio object written to the rig (the operator's
// VirtualServices, KServe's) is admitted or refused by Istio's own validation.
// Everything it needs is read at setup from that same module version, never
// copied here: the mesh config (the `istio` ConfigMap of the istio-discovery
// chart, which its Deployment mounts at --meshConfig), its Service and the
// base chart's `istiod-default-validator` webhook configuration, rendered with
// the rig's helm. istiod serves the webhook on --httpsAddr (:15017, the
// Service's 443) with the certificate given by --tlsCertFile/--tlsKeyFile/
// --caCertFile (pilot/pkg/bootstrap/server.go initIstiodCerts, hasCustomTLSCerts),
// /validate registered by pkg/webhooks/validation/server/server.go. The base
// chart fills the caBundle itself when given base.validationCABundle, and its
// Deployment then needs no webhook controller patching it
// (manifests/charts/base/templates/defaultrevision-validatingwebhookconfiguration.yaml):
// VALIDATION_WEBHOOK_CONFIG_NAME="" turns that controller off
// (pilot/pkg/bootstrap/validation.go). Its HTTP port moves off 8080, which
// Knative's controller holds in the same namespace.
// What is not here: no Envoy (no proxy receives the configuration; none is
// packaged for this machine), no sidecar injection (no pod runs a container).
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApisApi, KubernetesObjectApi, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { EnvtestError } from './errors.ts';
import { apiMessage, applyAll, writeWebhookCertificate, type KServeRig } from './kserve.ts';
import { waitHealthy, type RunningProcess } from './supervise.ts';
import { downloadModule, installCrds, ISTIO_MODULE, UPSTREAM_CRD_SOURCES, upstreamCrds } from './upstream-crds.ts';

export const ISTIO_NAMESPACE = 'istio-system';
/** The Service the webhook configuration names, and the port (its targetPort) istiod serves webhooks on. */
export const ISTIOD_WEBHOOK = { namespace: ISTIO_NAMESPACE, name: 'istiod', port: 443, localPort: 15017 } as const;
/** istiod's listeners in the main namespace: its chart's ports, but HTTP (debug, /ready) off Knative's 8080. */
export const ISTIOD_PORTS = { http: 15080, grpcXds: 15010, secureGrpc: 15012, webhook: ISTIOD_WEBHOOK.localPort, monitoring: 15014 } as const;

/** What istiod needs of the rig: the same as KServe (binaries, a directory, the namespace and its Services). */
export type IstiodRig = KServeRig;

export interface Istiod {
  readonly process: RunningProcess;
  /** From the start of setup until the webhook answered. */
  readonly readyInMs: number;
  stop(): Promise<void>;
}

const ISTIO_API = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'istio.io/api')!;
const run = promisify(execFile);

/** Installs Istio's CRDs, namespace, mesh config, Service and webhook configuration, starts istiod and resolves once its webhook answers. */
export async function startIstiod(rig: IstiodRig): Promise<Istiod> {
  const started = performance.now();
  const [istio] = await Promise.all([downloadModule(ISTIO_MODULE.module, ISTIO_MODULE.version), ensureCrds(rig.kubeConfig)]);
  const home = join(rig.dir, 'istiod');
  const caPem = await writeWebhookCertificate(join(home, 'tls'), ISTIOD_WEBHOOK);
  const charts = join(istio, 'manifests/charts');
  const [meshConfigMap, service, webhook] = await Promise.all([
    helmTemplate(rig, 'istiod', join(charts, 'istio-control/istio-discovery'), 'templates/configmap.yaml'),
    helmTemplate(rig, 'istiod', join(charts, 'istio-control/istio-discovery'), 'templates/service.yaml'),
    helmTemplate(rig, 'istio-base', join(charts, 'base'), 'templates/defaultrevision-validatingwebhookconfiguration.yaml',
      [`base.validationCABundle=${Buffer.from(caPem).toString('base64')}`]),
  ]);
  const mesh = meshConfigMap.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === 'istio') as (KubernetesObject & { data?: { mesh?: string } }) | undefined;
  if (mesh?.data?.mesh === undefined) throw new EnvtestError(`the istio-discovery chart in ${charts} rendered no ConfigMap "istio" with a mesh config`);
  const meshPath = join(home, 'mesh');
  writeFileSync(meshPath, mesh.data.mesh);
  const api = KubernetesObjectApi.makeApiClient(rig.kubeConfig);
  await applyAll(api, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ISTIO_NAMESPACE } }, mesh, ...service]);
  await rig.exposeService(ISTIOD_WEBHOOK);

  const at = (file: string) => join(home, 'tls', file);
  const istiod = rig.launchInNs('istiod', join(rig.binDir, 'pilot-discovery'), [
    'discovery', `--kubeconfig=${rig.kubeconfigInNs}`, `--meshConfig=${meshPath}`, `--networksConfig=${join(home, 'meshNetworks')}`,
    '--domain=cluster.local', `--httpAddr=:${ISTIOD_PORTS.http}`, `--grpcAddr=:${ISTIOD_PORTS.grpcXds}`,
    `--secureGRPCAddr=:${ISTIOD_PORTS.secureGrpc}`, `--httpsAddr=:${ISTIOD_PORTS.webhook}`, `--monitoringAddr=:${ISTIOD_PORTS.monitoring}`,
    `--tlsCertFile=${at('tls.crt')}`, `--tlsKeyFile=${at('tls.key')}`, `--caCertFile=${at('ca.crt')}`,
    '--keepaliveMaxServerConnectionAge=30m', '--ctrlz_port=0', '--log_output_level=default:warn',
  ], {
    // As its Deployment sets them (manifests/charts/istio-control/istio-discovery/templates/deployment.yaml).
    REVISION: 'default', PILOT_CERT_PROVIDER: 'istiod', POD_NAME: 'istiod-rig', POD_NAMESPACE: ISTIO_NAMESPACE,
    SERVICE_ACCOUNT: 'istiod', CLUSTER_ID: 'Kubernetes', PILOT_ENABLE_ANALYSIS: 'false',
    VALIDATION_WEBHOOK_CONFIG_NAME: '',
    // Its InferencePool support (off by default, pilot/pkg/features/experimental.go), which KServe's
    // LLMInferenceService routes use: without it istiod refuses them with ResolvedRefs=False InvalidKind.
    ENABLE_GATEWAY_API_INFERENCE_EXTENSION: 'true',
  });
  try {
    await applyAll(api, webhook);
    let last = '(none)';
    await waitHealthy(istiod, rig.dir, () => webhookAnswers(api, (m) => { last = m; })).catch((err: Error) => {
      throw new EnvtestError(`${err.message}\nkube-apiserver's last answer to a dry-run VirtualService: ${last}`);
    });
  } catch (err) {
    await istiod.stop(5_000);
    throw err;
  }
  return { process: istiod, readyInMs: performance.now() - started, stop: () => istiod.stop() };
}

/** Istio's CRDs, unless installed already (KServe's setup installs them too). istiod watches only the kinds served when it starts. */
async function ensureCrds(kc: KubeConfig): Promise<void> {
  const { groups } = await kc.makeApiClient(ApisApi).getAPIVersions();
  if (groups.some((g) => g.versions.some((v) => v.groupVersion === 'networking.istio.io/v1'))) return;
  await installCrds(kc, await upstreamCrds([ISTIO_API]));
}

/** One template of a chart in the module, rendered by the rig's helm with its own (empty) config, cache and data directories. */
export async function helmTemplate(rig: IstiodRig, release: string, chart: string, template: string, set: string[] = []): Promise<KubernetesObject[]> {
  const home = join(rig.dir, 'istiod', 'helm');
  mkdirSync(home, { recursive: true });
  const args = ['template', release, chart, '--namespace', ISTIO_NAMESPACE, '--show-only', template, ...set.flatMap((s) => ['--set', s])];
  try {
    const { stdout } = await run(join(rig.binDir, 'helm'), args, {
      env: { ...process.env, HELM_CONFIG_HOME: home, HELM_CACHE_HOME: home, HELM_DATA_HOME: home }, maxBuffer: 16 << 20,
    });
    return parseAllDocuments(stdout).map((d) => d.toJS() as KubernetesObject | null).filter((o): o is KubernetesObject => Boolean(o?.kind));
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new EnvtestError(`helm template ${template} of ${chart} failed: ${(e.stderr ?? e.message).trim()}`);
  }
}

/**
 * True once istiod's webhook decides: a dry-run VirtualService Istio accepts is
 * admitted and one its validation refuses (a retryOn policy Envoy does not
 * know; the CRD's schema allows any string) is denied by `validation.istio.io`.
 * Until istiod serves, the API server answers "failed calling webhook"
 * (failurePolicy Fail), which is neither.
 */
async function webhookAnswers(api: KubernetesObjectApi, onAnswer: (message: string) => void): Promise<boolean> {
  const probe = (retryOn: string) => ({
    apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'rig-webhook-probe', namespace: ISTIO_NAMESPACE },
    spec: { hosts: ['probe.example.com'], http: [{ route: [{ destination: { host: 'probe' } }], retries: { attempts: 1, retryOn } }] },
  });
  try {
    await api.create(probe('5xx'), undefined, 'All');
  } catch (err) {
    onAnswer(apiMessage(err));
    return false;
  }
  try {
    await api.create(probe('not-a-policy'), undefined, 'All');
    onAnswer('a VirtualService with retryOn "not-a-policy" was admitted');
    return false;
  } catch (err) {
    onAnswer(apiMessage(err));
    return /admission webhook "validation\.istio\.io" denied the request/.test(apiMessage(err));
  }
}
