// Assembles the operator: a manager with its two controllers (ServerlessApps and
// model caches), configured from OperatorConfig. Used by main.ts, and by the
// tests, demo and benchmarks, which run the same operator in-process.

import { validationPolicy, type OperatorConfig } from './config.ts';
import { HostClaimReleaser } from './controllers/host-claim-release.ts';
import { ModelCacheReconciler } from './controllers/model-cache.ts';
import { ServerlessAppReconciler } from './controllers/serverlessapp.ts';
import type { CacheScope } from './render/local-model-cache.ts';
import type { Clock } from './runtime/clock.ts';
import { ApiError, type KubeClient } from './runtime/client.ts';
import { verifyCredentials } from './runtime/credentials-check.ts';
import { Kinds } from './util/kinds.ts';
import type { KubeConfigSource } from './runtime/kubeconfig.ts';
import type { Logger } from './runtime/logging.ts';
import { Manager } from './runtime/manager.ts';

export const VERSION = '0.1.0';

export interface Operator {
  manager: Manager;
  apps: ServerlessAppReconciler;
  caches: ModelCacheReconciler;
  settings: { inPlaceBounds: boolean; cacheScope: CacheScope };
}

const CRD = { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', namespaced: false };

/**
 * Knative >= 1.21 scales live Revisions in place (knative/serving PR #16186, in
 * serving v0.48.0). Release manifests label the CRDs with the release
 * (`app.kubernetes.io/version: "1.21.1"`); YAML taken from the source tree says
 * `devel`, which tells nothing, so anything but a release >= 1.21 gets the
 * template bounds that work on every Knative (the flag overrides).
 */
export function inPlaceScalingFromLabels(labels: Record<string, string>): boolean {
  const v = labels['app.kubernetes.io/version'] ?? labels['serving.knative.dev/release'] ?? '';
  const m = /^v?(\d+)\.(\d+)/.exec(v);
  return !!m && (Number(m[1]) > 1 || (Number(m[1]) === 1 && Number(m[2]) >= 21));
}

/**
 * Reads a CRD for auto-detection. A namespace-scoped install may not read
 * CRDs (they are cluster-scoped): a refusal is logged with the setting that
 * avoids the read, and the caller falls back to its safe default.
 */
async function readCrd<T>(client: KubeClient, name: string, log: { warn(message: string): unknown }, fallback: string): Promise<T | undefined | 'forbidden'> {
  try {
    return await client.get<T>(CRD, undefined, name);
  } catch (err) {
    // 401 is no refusal to fall back from: verifyCredentials has ended the process on it before.
    if (!(err instanceof ApiError) || err.code !== 403) throw err;
    log.warn(`cannot read CustomResourceDefinition ${name} for auto-detection (HTTP ${err.code}: ${err.message}); ${fallback}`);
    return 'forbidden';
  }
}

export async function detectInPlaceScaling(client: KubeClient, setting: OperatorConfig['knativeInPlaceScaling'], log: { warn(message: string): unknown }): Promise<boolean> {
  if (setting !== 'auto') return setting === 'true';
  const crd = await readCrd<{ metadata?: { labels?: Record<string, string> } }>(client, 'services.serving.knative.dev', log,
    'assuming Knative < 1.21: scale bounds go into the revision template, which works on every Knative. Set --knative-inplace-scaling=true|false (KNATIVE_INPLACE_SCALING) to choose without the read');
  return crd !== 'forbidden' && inPlaceScalingFromLabels(crd?.metadata?.labels ?? {});
}

/** The namespace-scoped cache exists in newer KServe and can be garbage-collected; prefer it. */
export async function detectCacheScope(client: KubeClient, setting: OperatorConfig['modelCacheScope'], log: { warn(message: string): unknown }): Promise<CacheScope> {
  if (setting !== 'auto') return setting;
  const crd = await readCrd(client, `${Kinds.LocalModelNamespaceCache.plural}.${Kinds.LocalModelNamespaceCache.group}`, log,
    'using namespace-scoped model caches (LocalModelNamespaceCache). Set --model-cache-scope=namespace|cluster (MODEL_CACHE_SCOPE) to choose without the read');
  return crd === undefined ? 'cluster' : 'namespace';
}

export interface OperatorDeps {
  logger: Logger;
  clock: Clock;
  warmupBackoffMs?: number;
  /** Default: exit the process, as controller-runtime does. Tests running several operators in one process override it. */
  onLostLeadership?: () => void;
}

export async function createOperator(kc: KubeConfigSource, config: OperatorConfig, deps: OperatorDeps): Promise<Operator> {
  const manager = new Manager({
    kubeConfig: kc, namespaces: config.namespaces, identity: config.identity,
    leaderElection: { enabled: config.leaderElect, namespace: config.leaderElectionNamespace, name: config.leaderElectionId },
    metricsAddr: config.metricsAddr, probeAddr: config.probeAddr,
    logger: deps.logger, clock: deps.clock, userAgent: `serverlessapp-operator/${VERSION}`,
    ...(config.watchWatchdogMs ? { watchdogMs: config.watchWatchdogMs } : {}),
    ...(deps.onLostLeadership ? { onLostLeadership: deps.onLostLeadership } : {}),
    maxPendingEventsPerNamespace: config.budgets.pendingEventsPerNamespace,
  });
  const serverVersion = await verifyCredentials(manager.client);
  deps.logger.info('credentials accepted', { server: manager.client.config.server, user: manager.client.config.user, ...(serverVersion ? { serverVersion } : {}) });
  const inPlaceBounds = await detectInPlaceScaling(manager.client, config.knativeInPlaceScaling, deps.logger);
  const cacheScope = await detectCacheScope(manager.client, config.modelCacheScope, deps.logger);
  deps.logger.info('settings', { inPlaceBounds, cacheScope, knativeVisibility: config.knativeVisibility, namespaces: config.namespaces });
  const policy = validationPolicy(config);
  const apps = new ServerlessAppReconciler(manager, {
    policy, warmupUrlTemplate: config.warmupUrlTemplate, localGateway: config.localGateway,
    inPlaceBounds, clusterLocal: config.knativeVisibility === 'cluster-local', concurrency: config.concurrency, modelCacheScope: cacheScope,
    ...(deps.warmupBackoffMs ? { warmupBackoffMs: deps.warmupBackoffMs } : {}),
    warmupSlots: { perNamespace: config.budgets.warmupsPerNamespace, total: config.budgets.concurrentWarmups },
    analysisSlots: { perNamespace: config.budgets.analysesPerNamespace, total: config.budgets.concurrentAnalyses },
  });
  // Registers its controller with the manager: claims no app of their namespace names are released after the grace.
  new HostClaimReleaser(manager, { releaseAfterMs: config.hostClaimReleaseAfterMs, namespaces: config.namespaces });
  const caches = new ModelCacheReconciler(manager, { scope: cacheScope, nodeGroup: config.modelCacheNodeGroup, policy: { maxModelSizeBytes: policy.maxModelSizeBytes, allowedStorageUriPrefixes: policy.allowedStorageUriPrefixes, maxModelCacheBytesPerNamespace: policy.maxModelCacheBytesPerNamespace } });
  return { manager, apps, caches, settings: { inPlaceBounds, cacheScope } };
}
