// The KServe side of the peer comparison: the rig's real KServe 0.20 manager
// (built from test/envtest/kserve/ by build.sh, cached like the control plane)
// with no Knative running. KServe needs, of Knative, only its CRDs (installed
// with every CRD) and the config-autoscaler ConfigMap it reads before each
// reconcile; Knative's webhooks are not installed, so the Knative Services
// KServe writes are admitted by the API server alone and nobody reconciles
// them. The manager runs in the rig's network namespace because the API
// server reaches KServe's webhooks through it.
import { join } from 'node:path';
import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import type { ControlPlane } from '../test/envtest/controlplane.ts';
import { startKServe, type KServe } from '../test/envtest/kserve.ts';
import { downloadModule, UPSTREAM_CRD_SOURCES } from '../test/envtest/upstream-crds.ts';
import { childNamed } from './proc.ts';

/** client-go's default user agent starts with the binary's name. */
export const KSERVE_USER_AGENT = 'kserve-manager/';

const SERVING = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'knative.dev/serving')!;

/** Knative's namespace and its shipped config-autoscaler ConfigMap, nothing else of Knative. */
export async function installKnativeAutoscalerConfig(kc: KubeConfig): Promise<void> {
  const serving = await downloadModule(SERVING.module, SERVING.version);
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const file of ['config/core/100-namespace.yaml', 'config/core/configmaps/autoscaler.yaml']) {
    const objects = parseAllDocuments(readFileSync(join(serving, file), 'utf8')).map((d) => d.toJS() as KubernetesObject | null);
    for (const obj of objects) if (obj?.kind) await api.patch(obj, undefined, undefined, 'bench', true, PatchStrategy.ServerSideApply);
  }
}

/** Starts the manager with its webhooks and ClusterServingRuntimes; `pid` is the manager's own process. */
export async function startKServeAlone(cp: ControlPlane): Promise<{ kserve: KServe; pid: number }> {
  const dp = cp.dataPlane;
  if (!dp) throw new Error('the KServe peer needs the rig\'s data plane (its network namespace) for its webhooks');
  const kserve = await startKServe({
    binDir: cp.binDir, dir: cp.dir, kubeConfig: cp.kubeConfig(), kubeconfigInNs: dp.kubeconfigInNs,
    launchInNs: (name, binary, args, env) => dp.launchInNs(name, binary, args, env),
    exposeService: (svc) => dp.exposeService(svc),
  });
  const pid = childNamed(kserve.process.pid, 'kserve-manager');
  if (pid === undefined) {
    await kserve.stop();
    throw new Error(`no kserve-manager process under its supervisor ${kserve.process.pid}`);
  }
  return { kserve, pid };
}
