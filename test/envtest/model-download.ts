// SIMULATED MODEL DOWNLOAD: the one effect KServe's download Job has that no
// KWOK node can produce. The real node agent (kserve pkg/controller/v1alpha1/
// localmodelnode/controller.go, launchJob) runs kserve/storage-initializer with
// the node's models volume mounted at subPath `models/<storage key>`; once the
// Job succeeds it checks that folder on the node's disk (downloadModels:
// fsHelper.hasModelFolder) and, without it, downloads again. KWOK runs no
// container, so when such a pod is bound to a node this writes the folder, empty
// but for a marker, into that node's models directory (kserve-localmodel.ts);
// KWOK completes the pod and kube-controller-manager the Job. No byte of any
// model is fetched. A test may ask for a model of a given size
// (setSimulatedDownloadSize): the folder then also holds a sparse file of that
// many bytes, as a download of a model larger than its app declared would
// leave there, which the cache usage reporter (src/cache-reporter/) measures.
// Run as a program: node model-download.ts KUBECONFIG RIG_DIR
import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { listAndWatch } from './list-watch.ts';
import { LOCALMODEL_JOB_NAMESPACE, nodeModelsDir } from './kserve-localmodel.ts';

/** kserve localmodelnode controller.go DownloadContainerName and PvcSourceMountName. */
const DOWNLOAD_CONTAINER = 'kserve-localmodel-download';
const MODELS_VOLUME = 'kserve-pvc-source';

/** The folder a download pod fills on its node's disk, relative to the node's models directory; undefined for any other pod. */
export function downloadFolder(pod: V1Pod): string | undefined {
  const container = pod.spec?.containers.find((c) => c.name === DOWNLOAD_CONTAINER);
  const subPath = container?.volumeMounts?.find((m) => m.name === MODELS_VOLUME)?.subPath;
  if (!pod.spec?.nodeName || !subPath) return undefined;
  const folder = normalize(subPath);
  return folder.startsWith('..') || folder.startsWith('/') ? undefined : folder;
}

/** The knob's file in the rig's directory: source model URI -> bytes the simulated download writes. */
const sizesFile = (rigDir: string) => join(rigDir, 'model-download-sizes.json');

/** Makes the simulated download of `sourceModelUri` write `bytes` (a sparse file); undefined: the marker only again. */
export function setSimulatedDownloadSize(rigDir: string, sourceModelUri: string, bytes: number | undefined): void {
  const sizes = simulatedDownloadSizes(rigDir);
  if (bytes === undefined) delete sizes[sourceModelUri];
  else sizes[sourceModelUri] = bytes;
  // Written whole and renamed: the download process never reads half a file.
  writeFileSync(`${sizesFile(rigDir)}.tmp`, JSON.stringify(sizes));
  renameSync(`${sizesFile(rigDir)}.tmp`, sizesFile(rigDir));
}

function simulatedDownloadSizes(rigDir: string): Record<string, number> {
  return existsSync(sizesFile(rigDir)) ? JSON.parse(readFileSync(sizesFile(rigDir), 'utf8')) as Record<string, number> : {};
}

/** The model a download pod fetches: storage-initializer's first argument (controller.go launchJob: Args = [SourceModelUri, MountPath]). */
function sourceModelUri(pod: V1Pod): string | undefined {
  return pod.spec?.containers.find((c) => c.name === DOWNLOAD_CONTAINER)?.args?.[0];
}

/** Watches the download Jobs' pods until `signal` aborts, writing each one's folder on its node. */
export async function runModelDownload(kc: KubeConfig, rigDir: string, signal: AbortSignal): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const done = new Set<string>();
  const download = (pod: V1Pod) => {
    const folder = downloadFolder(pod);
    const key = `${pod.metadata?.uid}`;
    if (!folder || done.has(key)) return;
    done.add(key);
    const path = join(nodeModelsDir(rigDir, pod.spec!.nodeName!), folder);
    mkdirSync(path, { recursive: true });
    const marker = `written by the rig for pod ${pod.metadata?.name}: no model was downloaded\n`;
    writeFileSync(join(path, 'SIMULATED'), marker);
    const uri = sourceModelUri(pod);
    const bytes = uri === undefined ? undefined : simulatedDownloadSizes(rigDir)[uri];
    if (bytes !== undefined) {
      // The folder holds `bytes` in all, the marker's included.
      const fd = openSync(join(path, 'SIMULATED-model.bin'), 'w');
      try {
        ftruncateSync(fd, Math.max(0, bytes - Buffer.byteLength(marker)));
      } finally {
        closeSync(fd);
      }
    }
  };
  await listAndWatch(kc, `/api/v1/namespaces/${LOCALMODEL_JOB_NAMESPACE}/pods`, () => core.listNamespacedPod({ namespace: LOCALMODEL_JOB_NAMESPACE }), download, signal);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const kc = new KubeConfig();
  kc.loadFromFile(process.argv[2] ?? '');
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => { stop.abort(); process.exit(0); });
  console.log('model-download: SIMULATED model download (writes the folders KServe\'s download Jobs would fill) running');
  await runModelDownload(kc, process.argv[3] ?? '', stop.signal);
}
