// The settings the operator detects from the cluster at start (which Knative
// scales revisions in place, which model-cache kind KServe serves), in a module
// of their own: `kubectl sapp plan` plans with the same settings without
// loading the operator's manager.

import type { OperatorConfig } from './config.ts';
import type { CacheScope } from './render/local-model-cache.ts';
import { ApiError, type KubeClient } from './runtime/client.ts';
import { crdName, Kinds } from './util/kinds.ts';
import { versionAtLeast } from './util/version.ts';

/**
 * Knative >= 1.21 scales live Revisions in place (knative/serving PR #16186, in
 * serving v0.48.0). Release manifests label the CRDs with the release
 * (`app.kubernetes.io/version: "1.21.1"`); YAML taken from the source tree says
 * `devel`, which tells nothing, so anything but a release >= 1.21 gets the
 * template bounds that work on every Knative (the flag overrides).
 */
export function inPlaceScalingFromLabels(labels: Record<string, string>): boolean {
  const v = labels['app.kubernetes.io/version'] ?? labels['serving.knative.dev/release'] ?? '';
  return versionAtLeast(v, '1.21');
}

/**
 * Reads a CRD for auto-detection. A namespace-scoped install may not read
 * CRDs (they are cluster-scoped): a refusal is logged with the setting that
 * avoids the read, and the caller falls back to its safe default.
 */
async function readCrd<T>(client: KubeClient, name: string, log: { warn(message: string): unknown }, fallback: string): Promise<T | undefined | 'forbidden'> {
  try {
    return await client.get<T>(Kinds.CustomResourceDefinition, undefined, name);
  } catch (err) {
    // 401 is no refusal to fall back from: verifyCredentials has ended the process on it before.
    if (!(err instanceof ApiError) || err.code !== 403) throw err;
    log.warn(`cannot read CustomResourceDefinition ${name} for auto-detection (HTTP ${err.code}: ${err.message}); ${fallback}`);
    return 'forbidden';
  }
}

export async function detectInPlaceScaling(client: KubeClient, setting: OperatorConfig['knativeInPlaceScaling'], log: { warn(message: string): unknown }): Promise<boolean> {
  if (setting !== 'auto') return setting === 'true';
  const crd = await readCrd<{ metadata?: { labels?: Record<string, string> } }>(client, crdName(Kinds.KnativeService), log,
    'assuming Knative < 1.21: scale bounds go into the revision template, which works on every Knative. Set --knative-inplace-scaling=true|false (KNATIVE_INPLACE_SCALING) to choose without the read');
  return crd !== 'forbidden' && inPlaceScalingFromLabels(crd?.metadata?.labels ?? {});
}

/** The namespace-scoped cache exists in newer KServe and can be garbage-collected; prefer it. */
export async function detectCacheScope(client: KubeClient, setting: OperatorConfig['modelCacheScope'], log: { warn(message: string): unknown }): Promise<CacheScope> {
  if (setting !== 'auto') return setting;
  const crd = await readCrd(client, crdName(Kinds.LocalModelNamespaceCache), log,
    'using namespace-scoped model caches (LocalModelNamespaceCache). Set --model-cache-scope=namespace|cluster (MODEL_CACHE_SCOPE) to choose without the read');
  return crd === undefined ? 'cluster' : 'namespace';
}
