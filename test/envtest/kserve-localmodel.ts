// KServe's local model cache, real: its controller (github.com/kserve/kserve
// cmd/localmodel, the version pinned in kserve/go.mod) inside the data plane's
// main network namespace, and its node agent (cmd/localmodelnode) once per
// simulated node, each in a network namespace of its own (the agent binds
// :8080 and :8081 with no flag to move them) where the node's models directory
// is mounted at the agent's fixed /mnt/models, as the localmodel chart's
// DaemonSet mounts the node's hostPath. What the module ships is read at setup:
// the LocalModelCache webhook configuration (config/webhook/localmodel, which
// registers no webhook for LocalModelNamespaceCache) and the
// inferenceservice-config's `localModel` section as shipped (`enabled` false:
// the manager does not point InferenceServices at cached copies), whose
// jobNamespace the download Jobs run in. The rig adds what a cluster admin
// would: one LocalModelNodeGroup per kind of node, a PersistentVolume spec
// pinned to those nodes. A download Job's pod runs on a KWOK node, so nothing
// downloads: model-download.ts (SIMULATED) plays its one effect on the node's
// disk, and KWOK completes the pod.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { applyAll, objectsIn, webhookConfigurations, writeWebhookCertificate, type KServeRig } from './kserve.ts';
import { waitHealthy, type RunningProcess } from './supervise.ts';
import { downloadModule, UPSTREAM_CRD_SOURCES } from './upstream-crds.ts';

/** The Service the LocalModelCache webhook configuration names, and the controller's webhook port (the manager has 9443). */
export const LOCALMODEL_WEBHOOK = { namespace: 'kserve', name: 'localmodel-webhook-server-service', port: 443, localPort: 9444 } as const;
/** The shipped inferenceservice-config's localModel.jobNamespace: where download Jobs and their PVCs live. */
export const LOCALMODEL_JOB_NAMESPACE = 'kserve-localmodel-jobs';
/** The rig's LocalModelNodeGroups, by which of the rig's nodes they hold (see dataplane.ts rigNodes). */
export const NODE_GROUPS = { default: 'default', gpu: 'gpu-nodes' } as const;

export interface LocalModelRig extends KServeRig {
  /**
   * Starts `binary args` in `node`'s own namespace (its API server is at the same address as in the main one).
   * `execs`: the program `binary` execs into, which its pid runs from then on.
   */
  launchOnNode(node: string, name: string, binary: string, args: string[], env: Record<string, string>, execs?: string): RunningProcess;
  nodes: readonly string[];
}

export interface LocalModel {
  /** The controller, then one agent per node. */
  readonly processes: readonly RunningProcess[];
}

const KSERVE = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'github.com/kserve/kserve')!;

/** `<dir>/localmodel-nodes/<node>`: the node's disk as its agent sees it at /mnt/models. */
export function nodeModelsDir(dir: string, node: string): string {
  return join(dir, 'localmodel-nodes', node);
}

/**
 * Two node groups over the rig's nodes: `default` the plain node, `gpu-nodes`
 * the GPU one. A local PersistentVolume must name its nodes; the path is the
 * chart's agent hostPath. KServe's download Job carries no toleration, so on
 * the tainted GPU node it never schedules and that copy stays pending, as on a
 * real cluster with tainted GPU nodes.
 */
export function rigNodeGroups(): KubernetesObject[] {
  const group = (name: string, expression: Record<string, unknown>) => ({
    apiVersion: 'serving.kserve.io/v1alpha1', kind: 'LocalModelNodeGroup', metadata: { name },
    spec: {
      storageLimit: '100Gi',
      persistentVolumeSpec: {
        accessModes: ['ReadWriteOnce'], volumeMode: 'Filesystem', capacity: { storage: '100Gi' },
        storageClassName: 'local-storage', persistentVolumeReclaimPolicy: 'Retain', local: { path: '/mnt/models' },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [expression] }] } },
      },
      persistentVolumeClaimSpec: {
        accessModes: ['ReadWriteOnce'], volumeMode: 'Filesystem', resources: { requests: { storage: '100Gi' } }, storageClassName: 'local-storage',
      },
    },
  });
  return [
    group(NODE_GROUPS.default, { key: 'nvidia.com/gpu.present', operator: 'DoesNotExist' }),
    group(NODE_GROUPS.gpu, { key: 'nvidia.com/gpu.present', operator: 'In', values: ['true'] }),
  ];
}

/** Installs the node groups, the jobs namespace and the webhook; starts the controller and an agent per node once its webhook answers. */
export async function startLocalModel(rig: LocalModelRig): Promise<LocalModel> {
  const moduleDir = await downloadModule(KSERVE.module, KSERVE.version);
  const tmp = join(rig.dir, 'kserve-localmodel-tmp');
  const caPem = await writeWebhookCertificate(join(tmp, 'k8s-webhook-server', 'serving-certs'), LOCALMODEL_WEBHOOK);
  const api = KubernetesObjectApi.makeApiClient(rig.kubeConfig);
  await applyAll(api, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: LOCALMODEL_JOB_NAMESPACE } }, ...rigNodeGroups()]);
  const env = { KUBECONFIG: rig.kubeconfigInNs, POD_NAMESPACE: LOCALMODEL_WEBHOOK.namespace };
  const controller = rig.launchInNs('kserve-localmodel', join(rig.binDir, 'kserve-localmodel'), [
    `--webhook-port=${LOCALMODEL_WEBHOOK.localPort}`, '--metrics-addr=0', '--health-probe-addr=0',
  ], { ...env, TMPDIR: tmp });
  const processes: RunningProcess[] = [controller];
  try {
    await applyAll(api, objectsIn(join(moduleDir, 'config/webhook/localmodel/service.yaml'), LOCALMODEL_WEBHOOK));
    await rig.exposeService(LOCALMODEL_WEBHOOK);
    await applyAll(api, webhookConfigurations(moduleDir, caPem, 'config/webhook/localmodel/manifests.yaml', LOCALMODEL_WEBHOOK));
    await waitHealthy(controller, rig.dir, () => admitsLocalModelCaches(api));
    for (const node of rig.nodes) {
      const models = nodeModelsDir(rig.dir, node);
      mkdirSync(models, { recursive: true });
      // ip netns exec gives the agent a mount namespace of its own: a tmpfs over /mnt keeps the host's untouched.
      // The shell execs the agent: the pid is the agent's, and `cluster down` must look for the agent, not the shell.
      const agent = join(rig.binDir, 'kserve-localmodelnode');
      processes.push(rig.launchOnNode(node, `kserve-localmodelnode-${node}`, '/bin/sh', [
        '-c', 'mount -t tmpfs rig-node /mnt && mkdir /mnt/models && mount --bind "$0" /mnt/models && exec "$@"',
        models, agent,
      ], { ...env, NODE_NAME: node }, agent));
    }
  } catch (err) {
    await Promise.all(processes.map((p) => p.stop(5_000)));
    throw err;
  }
  return { processes };
}

/** True once a dry-run create of a LocalModelCache passes the controller's webhook. */
async function admitsLocalModelCaches(api: KubernetesObjectApi): Promise<boolean> {
  const probe = {
    apiVersion: 'serving.kserve.io/v1alpha1', kind: 'LocalModelCache', metadata: { name: 'rig-webhook-probe' },
    spec: { sourceModelUri: 'gs://rig/probe', modelSize: '1Gi', nodeGroups: [NODE_GROUPS.default] },
  };
  try {
    await api.create(probe, undefined, 'All');
    return true;
  } catch {
    return false;
  }
}
