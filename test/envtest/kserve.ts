// The real KServe controller (github.com/kserve/kserve/cmd/manager, the version
// pinned in kserve/go.mod) in Knative mode, inside the data plane's network
// namespace. Everything it needs is read at setup from that same module version,
// never copied into the repository: its CRDs, the inferenceservice-config
// ConfigMap (config/configmap), its webhook configurations (config/webhook,
// service reference kept, caBundle filled) and the ClusterServingRuntimes
// (config/runtimes, images as its kustomization maps them). cert-manager is not
// available, so the webhook's serving certificate is made here. The manager
// looks for optional APIs once, at start (KEDA, OpenTelemetry, Gateway API,
// Istio's VirtualService), and needs Knative's CRDs and config-autoscaler: the
// rig installs Knative first, and Istio's CRDs are in before the manager
// starts, so that KServe writes its VirtualServices as on an Istio cluster.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApisApi, KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { openssl } from './pki.ts';
import { waitHealthy, type RunningProcess } from './supervise.ts';
import { downloadModule, installCrds, UPSTREAM_CRD_SOURCES, upstreamCrds } from './upstream-crds.ts';

/** The Service KServe's webhook configurations name, and the port its webhook server listens on inside the namespace. */
export const KSERVE_WEBHOOK = { namespace: 'kserve', name: 'kserve-webhook-server-service', port: 443, localPort: 9443 } as const;

export interface KServeRig {
  /** build.sh's bin dir, holding kserve-manager (and kserve-localmodel, kserve-localmodelnode). */
  binDir: string;
  /** A directory KServe may write into (certificate, temp files); launchInNs logs to `<dir>/<name>.log`. */
  dir: string;
  /** An admin client configuration that works from this process. */
  kubeConfig: KubeConfig;
  /** Path of an admin kubeconfig that works inside the namespace (the bridge's 127.0.0.1:<port>). */
  kubeconfigInNs: string;
  /** Starts `binary args` inside the namespace with `env` added; its output goes to `<dir>/<name>.log`. */
  launchInNs(name: string, binary: string, args: string[], env: Record<string, string>): RunningProcess;
  /** Makes Service `namespace/name`'s `port` reach `localPort` inside the namespace (the rig's simulated kube-proxy). */
  exposeService(service: { namespace: string; name: string; port: number; localPort: number }): Promise<void>;
}

export interface KServeOptions {
  /** The ingress setting that decides whether KServe writes its own VirtualService per InferenceService; KServe ships false. */
  disableIstioVirtualHost?: boolean;
}

export interface KServe {
  /** The webhook Service's address as the API server dials it, and the manager's port inside the namespace. */
  readonly webhook: { host: string; port: number };
  readonly process: RunningProcess;
  /** Stops the manager; its webhook configurations stay (as after a crash), so InferenceService writes fail until it is back. */
  stop(): Promise<void>;
}

// The same pin as the CRDs; test/envtest/kserve/go.mod builds the manager from it too.
const KSERVE = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'github.com/kserve/kserve')!;
const ISTIO = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'istio.io/api')!;
const NAMESPACE = KSERVE_WEBHOOK.namespace;
const FIELD_MANAGER = 'envtest';

/** Installs KServe's CRDs and configuration, starts its manager and resolves once its webhooks answer. */
export async function startKServe(rig: KServeRig, opts: KServeOptions = {}): Promise<KServe> {
  const [moduleDir] = await Promise.all([downloadModule(KSERVE.module, KSERVE.version), ensureCrds(rig.kubeConfig)]);
  const caPem = await writeWebhookCertificate(join(rig.dir, 'kserve-tmp', 'k8s-webhook-server', 'serving-certs'), KSERVE_WEBHOOK);
  const api = KubernetesObjectApi.makeApiClient(rig.kubeConfig);
  await applyAll(api, [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
    inferenceServiceConfig(moduleDir, opts),
  ]);
  const manager = rig.launchInNs('kserve-manager', join(rig.binDir, 'kserve-manager'), [
    `--webhook-port=${KSERVE_WEBHOOK.localPort}`,
    // Its defaults (:8080, :8081) collide with Knative's fixed ports in the same namespace; nothing scrapes them here.
    '--metrics-addr=0', '--health-probe-addr=0',
  ], {
    KUBECONFIG: rig.kubeconfigInNs,
    // controller-runtime reads the serving certificate from $TMPDIR/k8s-webhook-server/serving-certs.
    TMPDIR: join(rig.dir, 'kserve-tmp'),
  });
  try {
    // The Service as shipped (a ClusterIP; the API server dials a webhook Service's ClusterIP), played by the manager.
    await applyAll(api, objectsIn(join(moduleDir, 'config/webhook/service.yaml')));
    await rig.exposeService(KSERVE_WEBHOOK);
    await applyAll(api, webhookConfigurations(moduleDir, caPem));
    await waitHealthy(manager, rig.dir, () => admitsInferenceServices(api));
    // The ClusterServingRuntime validator is one of the webhooks, so runtimes go in last.
    await applyAll(api, clusterServingRuntimes(moduleDir));
  } catch (err) {
    await manager.stop(5_000);
    throw err;
  }
  const { name, namespace, port, localPort } = KSERVE_WEBHOOK;
  return { webhook: { host: `${name}.${namespace}.svc:${port}`, port: localPort }, process: manager, stop: () => manager.stop() };
}

/**
 * KServe's and Istio's CRDs, unless the rig installed them already (parsing
 * their YAML alone takes seconds). The manager looks for Istio's VirtualService
 * once, at start: without it KServe would skip its VirtualServices for good.
 */
async function ensureCrds(kc: KubeConfig): Promise<void> {
  const { groups } = await kc.makeApiClient(ApisApi).getAPIVersions();
  const served = (gv: string) => groups.some((g) => g.versions.some((v) => v.groupVersion === gv));
  if (served('serving.kserve.io/v1beta1') && served('networking.istio.io/v1beta1')) return;
  await installCrds(kc, await upstreamCrds([KSERVE, ISTIO]));
}

/** The shipped inferenceservice-config, in Knative mode ("Serverless" is 0.20's deprecated name for it). */
export function inferenceServiceConfig(moduleDir: string, opts: KServeOptions = {}): KubernetesObject {
  const cm = parse(readFileSync(join(moduleDir, 'config/configmap/inferenceservice.yaml'), 'utf8')) as KubernetesObject & { data: Record<string, string> };
  const deploy = JSON.parse(cm.data.deploy ?? '{}') as Record<string, unknown>;
  const ingress = JSON.parse(cm.data.ingress ?? '{}') as Record<string, unknown>;
  return {
    ...cm,
    data: {
      ...cm.data,
      deploy: JSON.stringify({ ...deploy, defaultDeploymentMode: 'Knative' }),
      ...(opts.disableIstioVirtualHost !== undefined
        ? { ingress: JSON.stringify({ ...ingress, disableIstioVirtualHost: opts.disableIstioVirtualHost }) }
        : {}),
    },
  } as KubernetesObject;
}

/** A webhook manifest of the module (KServe's own unless told) with kustomize's variables resolved and the CA filled in. */
export function webhookConfigurations(moduleDir: string, caPem: string, manifest = 'config/webhook/manifests.yaml', webhook: { namespace: string; name: string } = KSERVE_WEBHOOK): KubernetesObject[] {
  const caBundle = Buffer.from(caPem).toString('base64');
  return objectsIn(join(moduleDir, manifest), webhook)
    .filter((obj) => obj.kind === 'MutatingWebhookConfiguration' || obj.kind === 'ValidatingWebhookConfiguration')
    .map((obj) => {
      const { creationTimestamp: _created, ...metadata } = obj.metadata ?? {};
      const { webhooks = [] } = obj as { webhooks?: Array<{ clientConfig: Record<string, unknown> }> };
      return { ...obj, metadata, webhooks: webhooks.map((hook) => ({ ...hook, clientConfig: { ...hook.clientConfig, caBundle } })) } as KubernetesObject;
    });
}

/** The objects in one of the module's YAML files, with kustomize's variables for the webhook Service (KServe's, unless `webhook` is given) resolved. */
export function objectsIn(path: string, webhook: { namespace: string; name: string } = KSERVE_WEBHOOK): KubernetesObject[] {
  const text = readFileSync(path, 'utf8')
    .replaceAll('$(webhookServiceName)', webhook.name)
    .replaceAll('$(kserveNamespace)', webhook.namespace);
  return parseAllDocuments(text).map((doc) => doc.toJS() as KubernetesObject | null).filter((obj): obj is KubernetesObject => Boolean(obj?.kind));
}

/** Every ClusterServingRuntime config/runtimes lists, with the images its kustomization substitutes. */
export function clusterServingRuntimes(moduleDir: string): KubernetesObject[] {
  const dir = join(moduleDir, 'config/runtimes');
  const kustomization = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as {
    resources: string[];
    images?: Array<{ name: string; newName?: string; newTag?: string }>;
  };
  const images = new Map((kustomization.images ?? []).map((i) => [i.name, i]));
  const retag = (image: string) => {
    const colon = image.lastIndexOf(':');
    const name = colon > 0 ? image.slice(0, colon) : image;
    const mapped = images.get(name);
    return mapped ? `${mapped.newName ?? name}:${mapped.newTag ?? image.slice(colon + 1)}` : image;
  };
  return kustomization.resources.flatMap((file) => parseAllDocuments(readFileSync(join(dir, file), 'utf8'))
    .map((doc) => doc.toJS() as KubernetesObject & { spec?: Record<string, unknown> })
    .filter((obj) => obj?.kind === 'ClusterServingRuntime')
    .map((obj) => JSON.parse(JSON.stringify(obj), (key, value: unknown) =>
      key === 'image' && typeof value === 'string' ? retag(value) : value) as KubernetesObject));
}

/** A CA and a serving certificate for a webhook Service's names, as tls.crt/tls.key in `certDir`; returns the CA. */
export async function writeWebhookCertificate(certDir: string, service: { namespace: string; name: string }): Promise<string> {
  mkdirSync(certDir, { recursive: true, mode: 0o700 });
  const { name, namespace } = service;
  const at = (file: string) => join(certDir, file);
  await openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3650',
    '-subj', '/CN=kserve-webhook-ca', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', at('ca.key'), '-out', at('ca.crt')]);
  const sans = [`${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`, `${name}.${namespace}`].map((dns) => `DNS:${dns}`);
  await openssl(['req', '-x509', '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-newkey', 'ec',
    '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3650', '-subj', `/CN=${name}.${namespace}.svc`,
    '-addext', `subjectAltName=${sans.join(',')}`, '-addext', 'basicConstraints=critical,CA:FALSE',
    '-addext', 'keyUsage=critical,digitalSignature', '-addext', 'extendedKeyUsage=serverAuth',
    '-keyout', at('tls.key'), '-out', at('tls.crt')]);
  return readFileSync(at('ca.crt'), 'utf8');
}

export async function applyAll(api: KubernetesObjectApi, objects: KubernetesObject[]): Promise<void> {
  for (const obj of objects) {
    try {
      await api.patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
    } catch (err) {
      throw new Error(`applying ${obj.kind} ${obj.metadata?.name} failed: ${apiMessage(err)}`);
    }
  }
}

/**
 * True once a dry-run create of a valid InferenceService passes both of KServe's
 * InferenceService webhooks; until the manager serves them the API server
 * answers "failed calling webhook".
 */
async function admitsInferenceServices(api: KubernetesObjectApi): Promise<boolean> {
  const probe = {
    apiVersion: 'serving.kserve.io/v1beta1', kind: 'InferenceService',
    metadata: { name: 'rig-webhook-probe', namespace: NAMESPACE },
    spec: { predictor: { model: { modelFormat: { name: 'sklearn' }, storageUri: 'gs://rig/probe' } } },
  };
  try {
    await api.create(probe, undefined, 'All');
    return true;
  } catch {
    return false;
  }
}

export function apiMessage(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  if (e.code === undefined) return e.message ?? String(err);
  try {
    const body = typeof e.body === 'string' ? JSON.parse(e.body) as { message?: string } : e.body as { message?: string };
    return `${e.code} ${body?.message ?? JSON.stringify(e.body)}`;
  } catch {
    return `${e.code} ${String(e.body)}`;
  }
}
