// KServe's LLMInferenceService manager (github.com/kserve/kserve/cmd/llmisvc, the
// version pinned in kserve/go.mod, built beside the KServe manager) inside the
// data plane's main network namespace, with its own webhooks (defaulting,
// validation and conversion of LLMInferenceService and its configs are served
// by this binary, not by the KServe manager: cmd/llmisvc/main.go). Read at
// setup from that module version, never copied: its webhook configurations
// and Service (config/webhook/llmisvc, caBundle filled) and the preset
// LLMInferenceServiceConfigs (config/llmisvcconfig, into the `kserve`
// namespace as their kustomization puts them). Its CRDs and the Inference
// Extension's are installed with the rig's (upstream-crds.ts), before it
// starts: the manager looks for the optional ones (Gateway API, InferencePool)
// once, at start, and caches the answer for its life (pkg/utils/utils.go).
// The Gateway its managed routes attach to (inferenceservice-config's
// `kserveIngressGateway`, kserve/kserve-ingress-gateway) is one of istiod's
// class with a Hostname address, so istiod programs it and writes route and
// pool status, and deploys nothing (no Envoy runs). KWOK pods stand in for
// the vLLM workers and the endpoint picker: no model is loaded, no token is
// generated (SIMULATED).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { EnvtestError } from './errors.ts';
import { apiMessage, applyAll, objectsIn, webhookConfigurations, writeWebhookCertificate, type KServeRig } from './kserve.ts';
import { waitHealthy, type RunningProcess } from './supervise.ts';
import { downloadModule, UPSTREAM_CRD_SOURCES } from './upstream-crds.ts';

/** The Service llmisvc's webhook configurations name, and the port its webhook server listens on (off the KServe manager's 9443). */
export const LLMISVC_WEBHOOK = { namespace: 'kserve', name: 'llmisvc-webhook-server-service', port: 443, localPort: 9445 } as const;
/** inferenceservice-config's `kserveIngressGateway`: where a managed LLM route attaches unless the service names gateways. */
export const KSERVE_INGRESS_GATEWAY = { namespace: 'kserve', name: 'kserve-ingress-gateway' } as const;
/** The address a simulated gateway's Service resolves to: the rig's main network namespace (dataplane.ts MAIN_POD_IP), where no proxy listens. */
const SIMULATED_GATEWAY_IP = '10.250.0.2';

export interface LlmIsvc {
  readonly process: RunningProcess;
  stop(): Promise<void>;
}

const KSERVE = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'github.com/kserve/kserve')!;

/** Starts the llmisvc manager (KServe must be set up: its namespace and inferenceservice-config) and resolves once its webhooks decide and its presets are in. */
export async function startLlmIsvc(rig: KServeRig): Promise<LlmIsvc> {
  const moduleDir = await downloadModule(KSERVE.module, KSERVE.version);
  const tmp = join(rig.dir, 'llmisvc-tmp');
  const caPem = await writeWebhookCertificate(join(tmp, 'k8s-webhook-server', 'serving-certs'), LLMISVC_WEBHOOK);
  const api = KubernetesObjectApi.makeApiClient(rig.kubeConfig);
  await applyAll(api, ingressGateway());
  const manager = rig.launchInNs('kserve-llmisvc', join(rig.binDir, 'kserve-llmisvc'), [
    `--webhook-port=${LLMISVC_WEBHOOK.localPort}`,
    // Its defaults (:8443, :8081) are other processes' in the same namespace; nothing scrapes them here.
    '--metrics-addr=0', '--health-probe-addr=0',
  ], {
    KUBECONFIG: rig.kubeconfigInNs,
    // The namespace of inferenceservice-config and the presets, as its Deployment gets it from the downward API.
    POD_NAMESPACE: LLMISVC_WEBHOOK.namespace,
    // controller-runtime reads the serving certificate from $TMPDIR/k8s-webhook-server/serving-certs.
    TMPDIR: tmp,
  });
  try {
    await applyAll(api, objectsIn(join(moduleDir, 'config/webhook/llmisvc/service.yaml'), LLMISVC_WEBHOOK));
    await rig.exposeService(LLMISVC_WEBHOOK);
    await applyAll(api, webhookConfigurations(moduleDir, caPem, 'config/webhook/llmisvc/manifests.yaml', LLMISVC_WEBHOOK));
    let last = '(none)';
    await waitHealthy(manager, rig.dir, () => admitsLlmInferenceServices(api, (m) => { last = m; })).catch((err: Error) => {
      throw new EnvtestError(`${err.message}\nkube-apiserver's last answer to a dry-run LLMInferenceService: ${last}`);
    });
    // The presets are validated by the manager's own LLMInferenceServiceConfig webhook, so they go in last.
    await applyAll(api, presets(moduleDir));
  } catch (err) {
    await manager.stop(5_000);
    throw err;
  }
  return { process: manager, stop: () => manager.stop() };
}

/** The Gateway the managed routes attach to (inferenceservice-config's kserveIngressGateway), open to every namespace. */
function ingressGateway(): KubernetesObject[] {
  return istioGateway(KSERVE_INGRESS_GATEWAY.namespace, KSERVE_INGRESS_GATEWAY.name, 'All');
}

/**
 * A Gateway of istiod's class that istiod marks Programmed (what KServe waits for on a gateway an
 * LLMInferenceService names, router_discovery.go IsGatewayReady): a Hostname address, so istiod treats it as
 * manually deployed and starts nothing, and the Service that address names with one ready endpoint, which
 * istiod must find to assign the address. The endpoint is SIMULATED (the main network namespace's address:
 * no Envoy listens there, no request is proxied).
 */
export function istioGateway(namespace: string, name: string, from: 'All' | 'Same'): KubernetesObject[] {
  return [
    { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { ports: [{ name: 'http', port: 80 }] } },
    {
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: `${name}-simulated`, namespace, labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4', endpoints: [{ addresses: [SIMULATED_GATEWAY_IP], conditions: { ready: true } }], ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name, namespace },
      spec: {
        gatewayClassName: 'istio',
        addresses: [{ type: 'Hostname', value: `${name}.${namespace}.svc.cluster.local` }],
        listeners: [{ name: 'http', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from } } }],
      },
    },
  ] as unknown as KubernetesObject[];
}

/** The preset LLMInferenceServiceConfigs config/llmisvcconfig's kustomization lists, in its namespace. */
export function presets(moduleDir: string): KubernetesObject[] {
  const dir = join(moduleDir, 'config/llmisvcconfig');
  const kustomization = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as { namespace: string; resources: string[] };
  return kustomization.resources.flatMap((file) => objectsIn(join(dir, file), LLMISVC_WEBHOOK))
    .map((obj) => ({ ...obj, metadata: { ...obj.metadata, namespace: kustomization.namespace } }));
}

/** True once a dry-run create of a valid LLMInferenceService passes the manager's defaulting and validating webhooks. */
async function admitsLlmInferenceServices(api: KubernetesObjectApi, onAnswer: (message: string) => void): Promise<boolean> {
  const probe = {
    apiVersion: 'serving.kserve.io/v1alpha2', kind: 'LLMInferenceService',
    metadata: { name: 'rig-webhook-probe', namespace: LLMISVC_WEBHOOK.namespace },
    spec: { model: { uri: 'hf://rig/probe' } },
  };
  try {
    await api.create(probe, undefined, 'All');
    return true;
  } catch (err) {
    onAnswer(apiMessage(err));
    return false;
  }
}
