// KServe LocalModelCache (serving.kserve.io/v1alpha1) for a model app with
// prewarm.cacheModel: the model is downloaded to the nodes of a node group once,
// instead of by every pod (kserve#3869). The cluster-scoped kind cannot be owned
// by a namespaced app, so it is named after the app and the model and cleaned up
// by a finalizer; the namespace-scoped variant is owned and garbage-collected.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { shortHash } from '../rollout/version.ts';
import { appLabels, ownerReference } from './metadata.ts';

export const CACHE_NAMESPACE_LABEL = 'serverlessapp.io/namespace';

export type CacheScope = 'cluster' | 'namespace';

/** One cache object per (app, storageUri): a model change means a new object and the old one removed. */
export function modelCacheName(app: ServerlessApp, scope: CacheScope): string {
  const hash = shortHash(app.spec.model?.storageUri ?? '', 8);
  const base = scope === 'cluster' ? `${app.metadata.namespace}-${app.metadata.name}` : app.metadata.name;
  return `${base.slice(0, 240)}-${hash}`;
}

export function renderLocalModelCache(app: ServerlessApp, scope: CacheScope, nodeGroup: string) {
  const model = app.spec.model;
  if (!model?.size) throw new Error('renderLocalModelCache needs spec.model.size');
  const name = modelCacheName(app, scope);
  return {
    apiVersion: 'serving.kserve.io/v1alpha1',
    kind: scope === 'cluster' ? 'LocalModelCache' : 'LocalModelNamespaceCache',
    metadata: scope === 'cluster'
      ? { name, labels: { ...appLabels(app), [CACHE_NAMESPACE_LABEL]: app.metadata.namespace } }
      : { name, namespace: app.metadata.namespace, labels: appLabels(app), ownerReferences: [ownerReference(app)] },
    spec: { sourceModelUri: model.storageUri, modelSize: String(model.size), nodeGroups: [nodeGroup] },
  };
}
