// KServe LocalModelCache (serving.kserve.io/v1alpha1) for a model app with
// prewarm.cacheModel: the model is downloaded to the nodes of a node group once,
// instead of by every pod (kserve#3869). The namespace-scoped variant is the
// default: it is owned by the app and garbage-collected with it. The
// cluster-scoped kind (only where the platform opts in) cannot be owned by a
// namespaced app, so it is cleaned up by a finalizer, and its name must not let
// one tenant's app land on another's cache: "team-a/chat" and "team/a-chat"
// both read "team-a-chat", so the name ends in a hash of the namespace, name
// and model as a JSON array, whose encoding cannot make two triples equal.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { shortHash } from '../rollout/version.ts';
import { apiVersionOf, Kinds } from '../util/kinds.ts';
import { APP_NAMESPACE_LABEL, appLabels, ownerReference } from './metadata.ts';

export type CacheScope = 'cluster' | 'namespace';

/** The cache kind of a scope: KServe's cluster-scoped LocalModelCache, or its LocalModelNamespaceCache. */
export function cacheKind(scope: CacheScope): typeof Kinds.LocalModelCache | typeof Kinds.LocalModelNamespaceCache {
  return scope === 'cluster' ? Kinds.LocalModelCache : Kinds.LocalModelNamespaceCache;
}

/** KServe derives further names (per node group) from the cache's, so it is held to a DNS label's 63 characters. */
const MAX_NAME = 63;
const HASH_LENGTH = 16;

/** One cache object per (namespace, app, storageUri): a model change means a new object and the old one removed. */
export function modelCacheName(app: ServerlessApp, scope: CacheScope): string {
  const { namespace, name } = app.metadata;
  const hash = shortHash([namespace, name, app.spec.model?.storageUri ?? ''], HASH_LENGTH);
  // The readable part is for people only; uniqueness comes from the hash.
  const readable = (scope === 'cluster' ? `${namespace}-${name}` : name).slice(0, MAX_NAME - HASH_LENGTH - 1).replace(/[-.]+$/, '');
  return `${readable}-${hash}`;
}

export function renderLocalModelCache(app: ServerlessApp, scope: CacheScope, nodeGroup: string) {
  const model = app.spec.model;
  if (model?.size === undefined) throw new Error('renderLocalModelCache needs spec.model.size');
  const name = modelCacheName(app, scope);
  const kind = cacheKind(scope);
  return {
    apiVersion: apiVersionOf(kind),
    kind: kind.kind,
    metadata: !kind.namespaced
      ? { name, labels: { ...appLabels(app), [APP_NAMESPACE_LABEL]: app.metadata.namespace } }
      : { name, namespace: app.metadata.namespace, labels: appLabels(app), ownerReferences: [ownerReference(app)] },
    spec: { sourceModelUri: model.storageUri, modelSize: String(model.size), nodeGroups: [nodeGroup] },
  };
}
