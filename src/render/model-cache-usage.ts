// What lands on a node's disk for each cached model, as the node-side cache
// usage reporter (src/cache-reporter/) publishes it and the operator reads it:
// one ConfigMap per node in the operator's namespace, its data a map from
// KServe's storage key (the model's folder on the node) to the bytes found in
// it. KServe 0.20 reports no size of what it downloaded (LocalModelCache and
// LocalModelNode status carry per-node states only, and
// LocalModelNodeGroupStatus.used is never written), so this is the only
// measure of it. KServe's node agent puts a model in
// `<node models volume>/models/<GetStorageKey(sourceModelUri)>`
// (pkg/controller/v1alpha1/localmodelnode/controller.go launchJob: the download
// Job mounts that subPath; file_utils.go getModelFolder), the first 16 hex
// digits of the URI's SHA-256 (pkg/apis/serving/v1alpha1/
// local_model_cache_types.go GetStorageKey): so a cache's folder follows from
// its storageUri alone, whatever the cache kind or name. Pure.

import { createHash } from 'node:crypto';

/** The label the reports carry, and the only ConfigMaps the operator reads as reports. */
export const CACHE_USAGE_LABEL = 'serverlessapp.io/model-cache-usage';
/** A folder the reporter could not measure whole (past its bounds, or unreadable): more than any model may declare. */
export const UNMEASURED = Number.MAX_SAFE_INTEGER;
/** Most folders one report holds: a node with more is reported on its largest ones only. */
export const MAX_REPORTED_FOLDERS = 1000;

const STORAGE_KEY = /^[0-9a-f]{16}$/;
const BYTES = /^(0|[1-9][0-9]{0,15})$/;

/** KServe's folder name for a model (GetStorageKey): the first 16 hex digits of the URI's SHA-256. */
export function modelStorageKey(sourceModelUri: string): string {
  return createHash('sha256').update(sourceModelUri).digest('hex').slice(0, 16);
}

/** Whether `name` can be a folder KServe made (anything else under models/ is not a model). */
export function isStorageKey(name: string): boolean {
  return STORAGE_KEY.test(name);
}

/** The report ConfigMap's name for `node` (a node name is a DNS subdomain, so the result fits a ConfigMap's). */
export function usageReportName(node: string): string {
  return `model-cache-usage.${node}`.slice(0, 253);
}

export interface UsageReport {
  node: string;
  /** Storage key -> bytes measured in its folder. */
  sizes: Map<string, number>;
}

/** The report of `node`: its largest folders first, MAX_REPORTED_FOLDERS at most, only folders KServe could have made. */
export function renderUsageReport(namespace: string, report: UsageReport) {
  const kept = [...report.sizes].filter(([key, bytes]) => isStorageKey(key) && Number.isSafeInteger(bytes) && bytes >= 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, MAX_REPORTED_FOLDERS);
  return {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: {
      name: usageReportName(report.node), namespace,
      labels: { [CACHE_USAGE_LABEL]: 'node', 'app.kubernetes.io/managed-by': 'serverlessapp-operator' },
      annotations: { [`${CACHE_USAGE_LABEL}.node`]: report.node },
    },
    data: Object.fromEntries(kept.sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([key, bytes]) => [key, String(bytes)])),
  };
}

interface ReportObject {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

/**
 * The report a ConfigMap holds, or undefined when it is none: not labelled as one, or its name not
 * the one its node's report has. Entries that are not a storage key and a byte count are skipped,
 * as are any past MAX_REPORTED_FOLDERS: what the operator keeps of a report is bounded whatever it holds.
 */
export function readUsageReport(cm: ReportObject): UsageReport | undefined {
  if (cm.metadata.labels?.[CACHE_USAGE_LABEL] !== 'node') return undefined;
  const node = cm.metadata.annotations?.[`${CACHE_USAGE_LABEL}.node`];
  if (!node || usageReportName(node) !== cm.metadata.name) return undefined;
  const sizes = new Map<string, number>();
  for (const [key, value] of Object.entries(cm.data ?? {})) {
    if (sizes.size >= MAX_REPORTED_FOLDERS) break;
    if (!isStorageKey(key) || !BYTES.test(value)) continue;
    const bytes = Number(value);
    if (Number.isSafeInteger(bytes)) sizes.set(key, bytes);
  }
  return { node, sizes };
}
