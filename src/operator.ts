// Assembles the operator: a manager with its two controllers (ServerlessApps and
// model caches), configured from OperatorConfig. Used by main.ts, and by the
// tests, demo and benchmarks, which run the same operator in-process.

import { validationPolicy, type OperatorConfig } from './config.ts';
import { ModelCacheReconciler } from './controllers/model-cache.ts';
import { ModelCacheQuota } from './controllers/model-cache-quota.ts';
import { ModelCacheUsage } from './controllers/model-cache-usage.ts';
import type { ServerlessApp } from './api/v1alpha1/serverlessapp.ts';
import { HostClaimReleaser } from './controllers/host-claim-release.ts';
import { ServerlessAppReconciler } from './controllers/serverlessapp.ts';
import { admission } from './planner/admission.ts';
import { routerFor } from './planner/route.ts';
import type { CacheScope } from './render/local-model-cache.ts';
import { detectCacheScope, detectInPlaceScaling } from './data-plane-settings.ts';
import { systemClock, type TimerClock } from './runtime/clock.ts';
import { NamespaceShare } from './runtime/namespace-share.ts';
import { splitKey } from './util/object-key.ts';
import { verifyCredentials } from './runtime/credentials-check.ts';
import { appInformer } from './controllers/app-caches.ts';
import type { KubeConfigSource } from './runtime/kubeconfig.ts';
import type { Informer } from './runtime/informer.ts';
import type { Logger } from './runtime/logging.ts';
import { Manager } from './runtime/manager.ts';
import { queryRateLimits } from './util/query-rate.ts';
import { POLICY_CONFIGMAP, publishPolicy, withdrawPolicy, type EnforcedSettings } from './runtime/policy-publication.ts';

export { detectCacheScope, detectInPlaceScaling, inPlaceScalingFromLabels } from './data-plane-settings.ts';


export interface Operator {
  manager: Manager;
  apps: ServerlessAppReconciler;
  caches: ModelCacheReconciler;
  settings: { inPlaceBounds: boolean; cacheScope: CacheScope };
  /** The graceful stop: the manager's (in-flight work drained, the Lease released), its published policy withdrawn when no Lease tells whether it runs. */
  stop(): Promise<void>;
}

export interface OperatorDeps {
  logger: Logger;
  clock: TimerClock;
  warmupBackoffMs?: number;
  /** Default: exit the process, as controller-runtime does. Tests running several operators in one process override it. */
  onLostLeadership?: () => void;
}

export async function createOperator(kc: KubeConfigSource, config: OperatorConfig, deps: OperatorDeps): Promise<Operator> {
  const manager = new Manager({
    kubeConfig: kc, namespaces: config.namespaces, identity: config.identity,
    leaderElection: { enabled: config.leaderElect, namespace: config.leaderElectionNamespace, name: config.leaderElectionId },
    metricsAddr: config.metricsAddr, probeAddr: config.probeAddr,
    logger: deps.logger, clock: deps.clock,
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
  const clusterLocal = config.knativeVisibility === 'cluster-local';
  const appEvents = appInformer(manager);
  const share = namespaceShare(manager, config, appEvents);
  // Reading and writing a tenant's objects is its namespace's work too: a label storm on large apps, or the
  // status writes and Events of a storm of refused apps, pay from its own share.
  manager.chargeNamespaces(share);
  // One budget for both controllers: the app controller refuses what the cache controller will not cache.
  // Only apps the admission verdict refuses for no other reason count (one claiming its hosts keeps its cache,
  // so it counts); the verdict's inputs are the app controller's, built next (no event comes before start).
  let apps: ServerlessAppReconciler | undefined;
  const admitted = (app: ServerlessApp) => !apps || admission(apps.admissionButForCacheBudget(app)).verdict !== 'refused';
  // Its bookkeeping of an app's event is charged to the app's namespace.
  // What the nodes hold of each model (the node-side usage reports in the operator's namespace): a cache is charged
  // at least that, and refused when it is more than declared.
  let usage: ModelCacheUsage | undefined;
  const cacheQuota = new ModelCacheQuota(policy, cacheScope, { admitted, measured: (key) => usage?.measured(key) }).track({
    on: (event, handler) => appEvents.on(event, (a: ServerlessApp) => share.measure(a.metadata.namespace, () => handler(a))),
  });
  usage = new ModelCacheUsage(manager, config.leaderElectionNamespace, (keys) => cacheQuota.remeasured(keys));
  apps = new ServerlessAppReconciler(manager, {
    policy, warmupUrlTemplate: config.warmupUrlTemplate, llmWarmupUrlTemplate: config.llmWarmupUrlTemplate, route: routerFor(config.router, config.localGateway),
    inPlaceBounds, clusterLocal, concurrency: config.concurrency, modelCacheScope: cacheScope,
    ...(deps.warmupBackoffMs ? { warmupBackoffMs: deps.warmupBackoffMs } : {}),
    warmupSlots: { perNamespace: config.budgets.warmupsPerNamespace, total: config.budgets.concurrentWarmups },
    analysisSlots: { perNamespace: config.budgets.analysesPerNamespace, total: config.budgets.concurrentAnalyses },
    ...(config.budgets.analysisQueriesPerNamespace > 0 ? { analysisRates: queryRateLimits(config.budgets.analysisQueriesPerNamespace) } : {}),
    cacheQuota, share, releaseFreezeBelow: config.releaseFreezeBelow,
  });
  // Registers its controller with the manager: claims no app of their namespace names are released after the grace.
  new HostClaimReleaser(manager, { releaseAfterMs: config.hostClaimReleaseAfterMs, namespaces: config.namespaces });
  const caches = new ModelCacheReconciler(manager, { scope: cacheScope, nodeGroup: config.modelCacheNodeGroup, policy: { maxModelSizeBytes: policy.maxModelSizeBytes, allowedStorageUriPrefixes: policy.allowedStorageUriPrefixes, maxModelCacheBytesPerNamespace: policy.maxModelCacheBytesPerNamespace }, quota: cacheQuota, admissionOf: (app) => apps!.admissionOf(app), share });
  const enforced: EnforcedSettings = { policy, localGateway: config.localGateway, router: config.router, inPlaceBounds, clusterLocal, cacheScope };
  const policyNamespace = config.leaderElectionNamespace;
  // For `kubectl sapp plan`: the policy this process enforces, published by the leader only (a standby
  // writes nothing). Without it the plan falls back to the Deployment's flags, and says so.
  manager.whenLeading(() => publishPolicy(manager.client, policyNamespace, {
    identity: manager.identity, publishedAt: deps.clock.now().toISOString(), settings: enforced,
    ...(config.leaderElect ? { lease: `${policyNamespace}/${config.leaderElectionId}` } : {}),
  }).then(
    () => deps.logger.info('policy published', { configMap: `${policyNamespace}/${POLICY_CONFIGMAP}` }),
    (err: unknown) => deps.logger.warn('policy not published: kubectl sapp plan falls back to the Deployment\'s flags', { configMap: `${policyNamespace}/${POLICY_CONFIGMAP}`, err: String(err) }),
  ));
  const stop = async () => {
    // Before the manager closes its client; without leader election nothing else tells a plan this operator stopped.
    if (!config.leaderElect) await withdrawPolicy(manager.client, policyNamespace, manager.identity).catch((err: unknown) => deps.logger.warn('policy not withdrawn', { err: String(err) }));
    await manager.stop();
  };
  return { manager, apps, caches, settings: { inPlaceBounds, cacheScope }, stop };
}

/**
 * Each namespace's share of the operator's time, on real time (as the queues' delays): its CPU is counted in
 * the metrics, and when a namespace goes past its share the app whose reconcile it deferred gets an Event.
 */
function namespaceShare(manager: Manager, config: OperatorConfig, apps: Informer<ServerlessApp>): NamespaceShare {
  const hooks = manager.metrics.shareHooks();
  const { cpuMsPerSecond, burstMs } = config.budgets.namespaceShare;
  return new NamespaceShare(config.budgets.namespaceShare, systemClock, {
    hooks: {
      ...hooks,
      onOverShare: (namespace, key, waitMs) => {
        hooks.onOverShare(namespace, key, waitMs);
        manager.logger.info('namespace past its share of the operator: its reconciles wait', { namespace, waitMs });
        const app = apps.get(namespace, splitKey(key).name);
        if (app) {
          manager.events.record(app, 'Warning', 'NamespaceOverShare',
            `namespace ${namespace} used more than its share of the operator's CPU (${cpuMsPerSecond}m, after a burst of ${burstMs / 1000}s): its reconciles wait behind its own keys, this one ${waitMs} ms (--namespace-cpu-share, --namespace-cpu-burst)`);
        }
      },
    },
  });
}
