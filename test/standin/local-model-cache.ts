// Pure: the status KServe's LocalModelCache controller would write for a
// LocalModelCache (cluster-scoped) or LocalModelNamespaceCache, so a cache looks
// alive. There are no nodes: each node group is simulated by one node named
// `<group>-standin-node`, which "downloads" the model in `downloadDelayMs`.
// The ISVCs listed are those whose storageUri the cache covers (MatchStorageURI).

import type { KubeObject } from './kube.ts';
import { storageUri } from './kserve-render.ts';

/** kserve pkg/apis/serving/v1alpha1/storage_uri_utils.go MatchStorageURI */
export function matchStorageUri(cachedUri: string, uri: string): boolean {
  const cached = cachedUri.replace(/\/$/, '');
  const s = uri.replace(/\/$/, '');
  return s === cached || (s.startsWith(cached) && s[cached.length] === '/');
}

export function simulatedNode(group: string): string {
  return `${group}-standin-node`;
}

export interface CacheStatusInput {
  cache: KubeObject;
  /** ISVCs to match: all namespaces for a cluster cache, the cache's namespace otherwise. */
  isvcs: Iterable<KubeObject>;
  downloaded: boolean;
}

export function cacheStatus({ cache, isvcs, downloaded }: CacheStatusInput): any {
  const source: string = cache.spec?.sourceModelUri ?? '';
  const groups: string[] = cache.spec?.nodeGroups ?? [];
  const nodeStatus = Object.fromEntries(groups.map((g) => [simulatedNode(g), downloaded ? 'NodeDownloaded' : 'NodeDownloading']));
  const users: { name: string; namespace: string }[] = [];
  for (const isvc of isvcs) {
    if (cache.metadata.namespace && isvc.metadata.namespace !== cache.metadata.namespace) continue;
    const uri = storageUri(isvc);
    if (source && uri && matchStorageUri(source, uri)) users.push({ name: isvc.metadata.name, namespace: isvc.metadata.namespace! });
  }
  users.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  return {
    // kserve pkg/apis/serving/v1alpha1 ModelCopies: `failed` is omitempty, so 0 is left out.
    copies: { total: groups.length, available: downloaded ? groups.length : 0 },
    nodeStatus,
    inferenceServices: users,
  };
}
