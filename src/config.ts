// Operator configuration from flags and environment variables (flags win).
// Everything a cluster admin may tune lives here, with the Helm chart's values
// mapping onto the environment variables.

import { parseArgs } from 'node:util';
import { parseDuration } from './api/v1alpha1/duration.ts';
import { formatBytes, parseQuantity } from './api/v1alpha1/quantity.ts';
import { DEFAULT_ALLOWED_POD_METADATA_KEYS } from './api/v1alpha1/pod-metadata.ts';
import { DEFAULT_ALLOWED_TOLERATION_KEYS } from './api/v1alpha1/scheduling-policy.ts';
import { DEFAULT_HOST_CLAIM_RELEASE_AFTER, DEFAULT_MAX_HOST_CLAIMS_PER_NAMESPACE, DEFAULT_MAX_MODEL_CACHE_PER_NAMESPACE, DEFAULT_MAX_MODEL_CACHES_PER_NAMESPACE, DEFAULT_MAX_MODEL_SIZE, DEFAULT_MODEL_CACHE_MIN_CHARGE, storageUriPrefixOverlap, type ValidationPolicy } from './api/v1alpha1/validation.ts';
import { baseUrlProblem, type AnalysisProvider } from './api/v1alpha1/analysis-target.ts';
import { privateServiceHost } from './render/private-service.ts';
import { ANALYSIS_BURST_SECONDS, DEFAULT_ANALYSIS_QUERIES_PER_NAMESPACE, DEFAULT_ANALYSIS_SLOTS, DEFAULT_MAX_PENDING_EVENTS_PER_NAMESPACE, DEFAULT_WARMUP_SLOTS, MAX_PENDING_EVENTS } from './util/budget-defaults.ts';
import { DEFAULT_LEASE_NAME, DEFAULT_METRICS_ADDR, DEFAULT_PROBE_ADDR, newReplicaIdentity } from './runtime/manager-defaults.ts';
import { DEFAULT_SHARE, type ShareSettings } from './runtime/namespace-share.ts';
import { DNS_LABEL, DNS_SUBDOMAIN, KEY_PREFIX_WILDCARD, QUALIFIED_KEY } from './util/k8s-names.ts';

export type InPlaceScaling = 'auto' | 'true' | 'false';
export const ROUTERS = ['istio', 'gateway-api'] as const;
export type Router = (typeof ROUTERS)[number];

export interface OperatorConfig {
  kubeconfig?: string;
  /** Watched namespaces; empty = all. */
  namespaces: string[];
  concurrency: number;
  logLevel: string;
  metricsAddr: string;
  probeAddr: string;
  leaderElect: boolean;
  leaderElectionNamespace: string;
  leaderElectionId: string;
  identity: string;
  /** Gateways apps may use: "ns/name", "ns/*", "*"; "{namespace}" = the app's own. */
  allowedGateways: string[];
  /** Host suffixes apps may claim ("{namespace}" = the app's own); empty = any host. */
  allowedHostSuffixes: string[];
  /** Whether apps may claim wildcard hosts ("*.example.com"). */
  allowWildcardHosts: boolean;
  /** Prometheus servers apps may name in rollout.analysis.prometheus.provider. */
  analysisProviders: AnalysisProvider[];
  /** Whether apps may give their own rollout.analysis.prometheus.address. */
  allowAnalysisAddress: boolean;
  /** The release-freeze floor per namespace in percent of the error budget, "*" for every other (apps with an SLO only). */
  releaseFreezeBelow: Record<string, number>;
  /** Largest model.size accepted for a model cache, in bytes. */
  maxModelSizeBytes: number;
  /** Prefixes model.storageUri must start with; empty = any. */
  allowedStorageUriPrefixes: string[];
  /** Service accounts apps may name in serviceAccountName ("*" = any); empty = none. */
  allowedServiceAccounts: string[];
  /** Prefixed keys and selector labels apps may put on their pods: exact keys or "prefix/*"; empty = none (default DEFAULT_ALLOWED_POD_METADATA_KEYS). */
  allowedPodMetadataKeys: string[];
  /** Taint keys apps may tolerate ("*" = any, even every taint); empty = none. */
  allowedTolerationKeys: string[];
  /** Whether pod (anti-)affinity terms may select pods of other namespaces. */
  allowCrossNamespacePodAffinity: boolean;
  /** Whether apps may pin pods to a named node (kubernetes.io/hostname). */
  allowNodePinning: boolean;
  /** Whether apps' pods may read Secrets of their namespace (env secretKeyRef, envFrom secretRef, secret volumes). */
  allowSecretReferences: boolean;
  /** Most bytes the model caches of one namespace's apps may reserve on each node (the sum of what each is charged). */
  maxModelCacheBytesPerNamespace: number;
  /** Most model caches one namespace's apps may hold. */
  maxModelCachesPerNamespace: number;
  /** Least bytes each model cache is charged against its namespace's budget, whatever model.size declares. */
  modelCacheMinChargeBytes: number;
  /** Most HostClaims one namespace may hold (controllers/host-claim-budget.ts). */
  maxHostClaimsPerNamespace: number;
  /** How long a HostClaim no app of its namespace names is kept before it is released (controllers/host-claim-release.ts). */
  hostClaimReleaseAfterMs: number;
  /** How the operator reaches one revision for warmup requests. */
  warmupUrlTemplate: string;
  llmWarmupUrlTemplate: string;
  modelCacheNodeGroup: string;
  /** namespace (default); cluster or auto (cluster when KServe lacks the namespaced kind) are the platform's opt-in to cluster-scoped caches. */
  modelCacheScope: 'auto' | 'cluster' | 'namespace';
  /** Knative >= 1.21 changes a live Revision's scale bounds in place; older ones need a new revision. */
  knativeInPlaceScaling: InPlaceScaling;
  /** Knative visibility of every workload: cluster-local (reached only through the app's VirtualService) or external. */
  knativeVisibility: 'cluster-local' | 'external';
  /** Knative's cluster-local gateway Service that VirtualServices route to. */
  localGateway: string;
  /** What spec.ingress becomes: an Istio VirtualService, or a Gateway API HTTPRoute (planner/route.ts). */
  router: Router;
  /** Start the clock here (demo/tests): time then runs in real time from this instant. */
  clockStart?: string;
  /** Restart a watch that carried nothing for this long (default: the informer's, 60 s). */
  watchWatchdogMs?: number;
  /** Background work's fair share: warmup tasks and analysis rounds running at once per namespace and in all, Events waiting per namespace. */
  budgets: Budgets;
}

export interface Budgets {
  warmupsPerNamespace: number;
  concurrentWarmups: number;
  analysesPerNamespace: number;
  concurrentAnalyses: number;
  /** Analysis queries one namespace may send per second (0: no limit). */
  analysisQueriesPerNamespace: number;
  pendingEventsPerNamespace: number;
  /** Each namespace's share of the operator's CPU (runtime/namespace-share.ts). */
  namespaceShare: ShareSettings;
}

/** The flags' defaults, stated once: the help shows them and parseConfig uses them. */
const DEFAULTS = {
  concurrency: 4,
  // KServe's LLM workload Service, on vLLM's port (plain HTTP unless KServe's enableLLMInferenceServiceTLS is on).
  llmWarmupUrlTemplate: 'http://{service}.{namespace}.svc.cluster.local:8000{path}',
  logLevel: 'info',
  leaderElectionNamespace: 'serverlessapp-system',
  maxModelSize: DEFAULT_MAX_MODEL_SIZE,
  hostClaimReleaseAfter: DEFAULT_HOST_CLAIM_RELEASE_AFTER,
  modelCacheNodeGroup: 'default',
  modelCacheScope: 'namespace',
  knativeInPlaceScaling: 'auto',
  knativeVisibility: 'cluster-local',
  localGateway: 'knative-local-gateway.istio-system.svc.cluster.local',
  router: 'istio',
  /** An idle watch's restart: the informer's default (runtime/informer.ts), and the shortest allowed. */
  watchWatchdog: '60s',
  watchWatchdogMinMs: 3_000,
} as const;

const OPTIONS = {
  kubeconfig: { type: 'string', env: 'KUBECONFIG', help: 'kubeconfig path (default: in-cluster, then $KUBECONFIG, ~/.kube/config)' },
  namespaces: { type: 'string', env: 'WATCH_NAMESPACES', help: 'comma-separated namespaces to watch (default: all)' },
  concurrency: { type: 'string', env: 'MAX_CONCURRENT_RECONCILES', help: `reconcile workers (default ${DEFAULTS.concurrency})` },
  'log-level': { type: 'string', env: 'LOG_LEVEL', help: `error|warn|info|debug (default ${DEFAULTS.logLevel})` },
  'metrics-bind-address': { type: 'string', env: 'METRICS_BIND_ADDRESS', help: `metrics listen address (default ${DEFAULT_METRICS_ADDR})` },
  'health-probe-bind-address': { type: 'string', env: 'HEALTH_PROBE_BIND_ADDRESS', help: `probe listen address (default ${DEFAULT_PROBE_ADDR})` },
  'leader-elect': { type: 'string', env: 'LEADER_ELECT', help: 'true|false (default true in a pod, false outside a cluster, e.g. npm start)' },
  'leader-election-namespace': { type: 'string', env: 'POD_NAMESPACE', help: `namespace of the Lease (default ${DEFAULTS.leaderElectionNamespace})` },
  'leader-election-id': { type: 'string', env: 'LEADER_ELECTION_ID', help: `Lease name (default ${DEFAULT_LEASE_NAME})` },
  identity: { type: 'string', env: 'POD_NAME', help: 'this replica\'s identity (default hostname_uuid, new at each start)' },
  'allowed-gateways': { type: 'string', env: 'ALLOWED_GATEWAYS', help: 'comma-separated gateways apps may use: ns/name, ns/*, *, {namespace}/* (default: none, mesh only)' },
  'allowed-host-suffixes': { type: 'string', env: 'ALLOWED_HOST_SUFFIXES', help: 'comma-separated host suffixes apps may claim, {namespace} = the app\'s own, e.g. {namespace}.apps.example.com (default: any host)' },
  'allow-wildcard-hosts': { type: 'string', env: 'ALLOW_WILDCARD_HOSTS', help: 'true|false: apps may claim *.domain hosts (default false)' },
  'analysis-providers': { type: 'string', env: 'ANALYSIS_PROVIDERS', help: 'comma-separated Prometheus providers apps may name: name=url,... (default: none)' },
  'allow-analysis-address': { type: 'string', env: 'ALLOW_ANALYSIS_ADDRESS', help: 'true|false: apps may give their own Prometheus address, which the operator will fetch (default false)' },
  'analysis-scoped-providers': { type: 'string', env: 'ANALYSIS_SCOPED_PROVIDERS', help: 'comma-separated providers (of --analysis-providers) that confine each query to the app\'s namespace (prom-label-proxy reading the namespace parameter): the values their queries return may be shown in status and Events (default: none; elsewhere a check says only passed or failed, since a tenant writes the query)' },
  'release-freeze-below': { type: 'string', env: 'RELEASE_FREEZE_BELOW', help: 'the platform\'s release-freeze floor, in percent of the error budget, for apps with rollout.analysis.slo: namespace=percent,...,*=percent for every other namespace; an app\'s own freezeBelow may raise it, never lower it (default: none)' },
  'max-model-size': { type: 'string', env: 'MAX_MODEL_SIZE', help: `largest model.size a model cache may reserve on each node (default ${DEFAULTS.maxModelSize})` },
  'allowed-storage-uri-prefixes': { type: 'string', env: 'ALLOWED_STORAGE_URI_PREFIXES', help: 'comma-separated prefixes model.storageUri must start with, e.g. s3://models/,pvc://{namespace}/ (default: any)' },
  'allowed-service-accounts': { type: 'string', env: 'ALLOWED_SERVICE_ACCOUNTS', help: 'comma-separated service accounts apps may run their pods as (serviceAccountName), * for any (default: none)' },
  'allowed-pod-metadata-keys': { type: 'string', env: 'ALLOWED_POD_METADATA_KEYS', help: `comma-separated pod label/annotation keys with a prefix (x.y/name), or the labels app, version, that apps may set: exact keys or prefix/*, e.g. app.kubernetes.io/version,sidecar.istio.io/inject; any other prefixed key is refused; replaces the default (default ${DEFAULT_ALLOWED_POD_METADATA_KEYS.join(',')}; empty: none)` },
  'allowed-toleration-keys': { type: 'string', env: 'ALLOWED_TOLERATION_KEYS', help: `comma-separated taint keys apps may tolerate, * for any (even a toleration of every taint); replaces the default (default ${DEFAULT_ALLOWED_TOLERATION_KEYS.join(',')}; empty: none)` },
  'allow-cross-namespace-pod-affinity': { type: 'string', env: 'ALLOW_CROSS_NAMESPACE_POD_AFFINITY', help: 'true|false: pod (anti-)affinity terms may select pods of other namespaces (namespaces, namespaceSelector) (default false)' },
  'allow-node-pinning': { type: 'string', env: 'ALLOW_NODE_PINNING', help: 'true|false: apps may pin pods to a named node (kubernetes.io/hostname, metadata.name) (default false)' },
  'allow-secret-references': { type: 'string', env: 'ALLOW_SECRET_REFERENCES', help: 'true|false: apps\' pods may read Secrets of their namespace through env, envFrom and volumes (default false)' },
  'max-model-cache-bytes-per-namespace': { type: 'string', env: 'MAX_MODEL_CACHE_BYTES_PER_NAMESPACE', help: `most the model caches of one namespace may reserve on each node, the sum of what each is charged (default ${DEFAULT_MAX_MODEL_CACHE_PER_NAMESPACE})` },
  'max-model-caches-per-namespace': { type: 'string', env: 'MAX_MODEL_CACHES_PER_NAMESPACE', help: `most model caches one namespace may hold, whatever their sizes (default ${DEFAULT_MAX_MODEL_CACHES_PER_NAMESPACE})` },
  'model-cache-min-charge': { type: 'string', env: 'MODEL_CACHE_MIN_CHARGE', help: `least each model cache is charged against its namespace's bytes, whatever its model.size says: KServe downloads whatever the URI holds and reports no size (default ${DEFAULT_MODEL_CACHE_MIN_CHARGE})` },
  'max-host-claims-per-namespace': { type: 'string', env: 'MAX_HOST_CLAIMS_PER_NAMESPACE', help: `most hosts (HostClaims) one namespace may hold (default ${DEFAULT_MAX_HOST_CLAIMS_PER_NAMESPACE})` },
  'host-claim-release-after': { type: 'string', env: 'HOST_CLAIM_RELEASE_AFTER', help: `how long a host no app of its namespace names stays the namespace's before its HostClaim is released, e.g. 1h, 24h (default ${DEFAULTS.hostClaimReleaseAfter}): an app deleted and re-created within it keeps its host` },
  'warmup-url-template': { type: 'string', env: 'WARMUP_URL_TEMPLATE', help: 'URL of one revision, with {revision} {namespace} {app} {version} {path}' },
  'llm-warmup-url-template': { type: 'string', env: 'LLM_WARMUP_URL_TEMPLATE', help: 'URL of one LLM version (serving llm), with {service} (its KServe workload Service) {revision} {namespace} {app} {version} {path}' },
  'model-cache-node-group': { type: 'string', env: 'MODEL_CACHE_NODE_GROUP', help: `LocalModelNodeGroup for model caches (default "${DEFAULTS.modelCacheNodeGroup}")` },
  'model-cache-scope': { type: 'string', env: 'MODEL_CACHE_SCOPE', help: `namespace|cluster|auto (default ${DEFAULTS.modelCacheScope}; cluster and auto opt in to cluster-scoped caches)` },
  'knative-inplace-scaling': { type: 'string', env: 'KNATIVE_INPLACE_SCALING', help: `auto|true|false (default ${DEFAULTS.knativeInPlaceScaling}: detect Knative >= 1.21)` },
  'knative-visibility': { type: 'string', env: 'KNATIVE_VISIBILITY', help: `cluster-local|external: whether Knative also exposes apps on its external domain (default ${DEFAULTS.knativeVisibility}: only the hosts an app claims in spec.ingress, which the platform allows)` },
  'local-gateway': { type: 'string', env: 'KNATIVE_LOCAL_GATEWAY', help: `Knative local gateway host (default ${DEFAULTS.localGateway})` },
  router: { type: 'string', env: 'ROUTER', help: `istio|gateway-api: spec.ingress as an Istio VirtualService or a Gateway API HTTPRoute (gateway.networking.k8s.io/v1) whose parents are the app's gateways (default ${DEFAULTS.router})` },
  'max-warmups-per-namespace': { type: 'string', env: 'MAX_WARMUPS_PER_NAMESPACE', help: `warmup tasks one namespace runs at once; more wait their turn (default ${DEFAULT_WARMUP_SLOTS.perNamespace})` },
  'max-concurrent-warmups': { type: 'string', env: 'MAX_CONCURRENT_WARMUPS', help: `warmup tasks the operator runs at once, shared round-robin by namespaces (default ${DEFAULT_WARMUP_SLOTS.total})` },
  'max-analyses-per-namespace': { type: 'string', env: 'MAX_ANALYSES_PER_NAMESPACE', help: `analysis rounds one namespace runs at once (default ${DEFAULT_ANALYSIS_SLOTS.perNamespace})` },
  'analysis-queries-per-namespace': { type: 'string', env: 'ANALYSIS_QUERIES_PER_NAMESPACE', help: `Prometheus queries one namespace's analysis rounds may send per second, bursts of ${ANALYSIS_BURST_SECONDS} s allowed; past it its rounds wait (Event AnalysisBudgetExceeded, budget metric) and come less often than their cadence; 0 for no limit (default ${DEFAULT_ANALYSIS_QUERIES_PER_NAMESPACE})` },
  'max-concurrent-analyses': { type: 'string', env: 'MAX_CONCURRENT_ANALYSES', help: `analysis rounds the operator runs at once, shared round-robin by namespaces (default ${DEFAULT_ANALYSIS_SLOTS.total})` },
  'max-pending-events-per-namespace': { type: 'string', env: 'MAX_PENDING_EVENTS_PER_NAMESPACE', help: `Events one namespace may have waiting to be written; more are dropped and counted (default ${DEFAULT_MAX_PENDING_EVENTS_PER_NAMESPACE}; ${MAX_PENDING_EVENTS} for all)` },
  'namespace-cpu-share': { type: 'string', env: 'NAMESPACE_CPU_SHARE', help: `CPU of the operator one namespace may use in the long run, as a Kubernetes CPU quantity (default ${DEFAULT_SHARE.cpuMsPerSecond}m); past it (and its burst) its reconciles wait behind its own keys` },
  'namespace-cpu-burst': { type: 'string', env: 'NAMESPACE_CPU_BURST', help: `operator CPU one namespace may use at once before its share applies, e.g. 5s (default ${DEFAULT_SHARE.burstMs / 1000}s)` },
  'clock-start': { type: 'string', env: 'CLOCK_START', help: 'demo clock: start time (RFC 3339); time runs from there' },
  'watch-watchdog': { type: 'string', env: '', help: `restart a watch that carried no traffic for this long, e.g. 30s (default ${DEFAULTS.watchWatchdog}, at least ${DEFAULTS.watchWatchdogMinMs / 1000}s)` },
  help: { type: 'boolean', env: '', help: 'show this help' },
} as const;

export class ConfigError extends Error {}

export function usage(): string {
  return ['Usage: serverlessapp-operator [flags]', '', ...Object.entries(OPTIONS).map(([k, o]) => `  --${k.padEnd(28)} ${o.help}${o.env ? ` [$${o.env}]` : ''}`)].join('\n');
}

const list = (s: string | undefined) => (s ?? '').split(',').map((x) => x.trim()).filter(Boolean);

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw new ConfigError(`--${name}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
  return value as T;
}

export function parseConfig(argv: string[], env: NodeJS.ProcessEnv): OperatorConfig & { help: boolean } {
  const { values } = parseArgs({ args: argv, options: Object.fromEntries(Object.entries(OPTIONS).map(([k, o]) => [k, { type: o.type }])), strict: true, allowPositionals: false });
  const get = (k: keyof typeof OPTIONS): string | undefined => {
    const v = values[k];
    if (typeof v === 'string') return v;
    const e = OPTIONS[k].env;
    return e ? env[e] || undefined : undefined;
  };
  // For the lists whose default is not empty: set but empty (the chart's []) means none, not the default.
  const getList = (k: keyof typeof OPTIONS, fallback: readonly string[]): string[] => {
    const v = values[k];
    const e = OPTIONS[k].env;
    const raw = typeof v === 'string' ? v : e ? env[e] : undefined;
    return raw === undefined ? [...fallback] : list(raw);
  };
  const concurrency = Number(get('concurrency') ?? DEFAULTS.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256) throw new ConfigError('--concurrency must be an integer from 1 to 256');
  const clockStart = get('clock-start');
  if (clockStart && Number.isNaN(Date.parse(clockStart))) throw new ConfigError(`--clock-start: ${JSON.stringify(clockStart)} is not an RFC 3339 time`);
  const cacheBytes = size('max-model-cache-bytes-per-namespace', get('max-model-cache-bytes-per-namespace') ?? DEFAULT_MAX_MODEL_CACHE_PER_NAMESPACE);
  const minCharge = size('model-cache-min-charge', get('model-cache-min-charge') ?? DEFAULT_MODEL_CACHE_MIN_CHARGE);
  // A charge past the budget would refuse every cache without saying the platform set it so.
  if (minCharge > cacheBytes) throw new ConfigError(`--model-cache-min-charge (${formatBytes(minCharge)}) is more than --max-model-cache-bytes-per-namespace (${formatBytes(cacheBytes)}): no model cache would fit`);
  const watchdog = get('watch-watchdog');
  const watchWatchdogMs = watchdog === undefined ? undefined : watchdogMs(watchdog);
  return {
    help: values.help === true,
    ...(get('kubeconfig') ? { kubeconfig: get('kubeconfig')! } : {}),
    namespaces: list(get('namespaces')),
    concurrency,
    logLevel: oneOf('log-level', get('log-level') ?? DEFAULTS.logLevel, ['error', 'warn', 'info', 'debug'] as const),
    metricsAddr: get('metrics-bind-address') ?? DEFAULT_METRICS_ADDR,
    probeAddr: get('health-probe-bind-address') ?? DEFAULT_PROBE_ADDR,
    leaderElect: bool('leader-elect', get('leader-elect'), inPod(env)),
    leaderElectionNamespace: get('leader-election-namespace') ?? DEFAULTS.leaderElectionNamespace,
    leaderElectionId: get('leader-election-id') ?? DEFAULT_LEASE_NAME,
    identity: get('identity') ?? newReplicaIdentity(),
    allowedGateways: list(get('allowed-gateways')),
    allowedHostSuffixes: list(get('allowed-host-suffixes')).map(hostSuffix),
    allowWildcardHosts: bool('allow-wildcard-hosts', get('allow-wildcard-hosts'), false),
    analysisProviders: scoped(providers(get('analysis-providers')), list(get('analysis-scoped-providers'))),
    releaseFreezeBelow: freezeFloors(list(get('release-freeze-below'))),
    allowAnalysisAddress: bool('allow-analysis-address', get('allow-analysis-address'), false),
    maxModelSizeBytes: size('max-model-size', get('max-model-size') ?? DEFAULTS.maxModelSize),
    allowedStorageUriPrefixes: storageUriPrefixes(list(get('allowed-storage-uri-prefixes'))),
    allowedServiceAccounts: list(get('allowed-service-accounts')).map(serviceAccount),
    allowedPodMetadataKeys: getList('allowed-pod-metadata-keys', DEFAULT_ALLOWED_POD_METADATA_KEYS).map(podMetadataKey),
    allowedTolerationKeys: getList('allowed-toleration-keys', DEFAULT_ALLOWED_TOLERATION_KEYS).map(tolerationKey),
    allowCrossNamespacePodAffinity: bool('allow-cross-namespace-pod-affinity', get('allow-cross-namespace-pod-affinity'), false),
    allowNodePinning: bool('allow-node-pinning', get('allow-node-pinning'), false),
    allowSecretReferences: bool('allow-secret-references', get('allow-secret-references'), false),
    maxModelCacheBytesPerNamespace: cacheBytes,
    maxModelCachesPerNamespace: count('max-model-caches-per-namespace', get('max-model-caches-per-namespace'), DEFAULT_MAX_MODEL_CACHES_PER_NAMESPACE),
    modelCacheMinChargeBytes: minCharge,
    maxHostClaimsPerNamespace: count('max-host-claims-per-namespace', get('max-host-claims-per-namespace'), DEFAULT_MAX_HOST_CLAIMS_PER_NAMESPACE),
    hostClaimReleaseAfterMs: releaseAfter(get('host-claim-release-after') ?? DEFAULTS.hostClaimReleaseAfter),
    warmupUrlTemplate: get('warmup-url-template') ?? `http://${privateServiceHost('{revision}', '{namespace}')}{path}`,
    llmWarmupUrlTemplate: get('llm-warmup-url-template') ?? DEFAULTS.llmWarmupUrlTemplate,
    modelCacheNodeGroup: get('model-cache-node-group') ?? DEFAULTS.modelCacheNodeGroup,
    modelCacheScope: oneOf('model-cache-scope', get('model-cache-scope') ?? DEFAULTS.modelCacheScope, ['namespace', 'cluster', 'auto'] as const),
    knativeInPlaceScaling: oneOf('knative-inplace-scaling', get('knative-inplace-scaling') ?? DEFAULTS.knativeInPlaceScaling, ['auto', 'true', 'false'] as const),
    knativeVisibility: oneOf('knative-visibility', get('knative-visibility') ?? DEFAULTS.knativeVisibility, ['cluster-local', 'external'] as const),
    localGateway: get('local-gateway') ?? DEFAULTS.localGateway,
    router: oneOf('router', get('router') ?? DEFAULTS.router, ROUTERS),
    ...(clockStart ? { clockStart } : {}),
    ...(watchWatchdogMs !== undefined ? { watchWatchdogMs } : {}),
    budgets: {
      warmupsPerNamespace: count('max-warmups-per-namespace', get('max-warmups-per-namespace'), DEFAULT_WARMUP_SLOTS.perNamespace),
      concurrentWarmups: count('max-concurrent-warmups', get('max-concurrent-warmups'), DEFAULT_WARMUP_SLOTS.total),
      analysesPerNamespace: count('max-analyses-per-namespace', get('max-analyses-per-namespace'), DEFAULT_ANALYSIS_SLOTS.perNamespace),
      concurrentAnalyses: count('max-concurrent-analyses', get('max-concurrent-analyses'), DEFAULT_ANALYSIS_SLOTS.total),
      analysisQueriesPerNamespace: queryRate(get('analysis-queries-per-namespace')),
      pendingEventsPerNamespace: count('max-pending-events-per-namespace', get('max-pending-events-per-namespace'), DEFAULT_MAX_PENDING_EVENTS_PER_NAMESPACE),
      namespaceShare: namespaceShare(get('namespace-cpu-share'), get('namespace-cpu-burst')),
    },
  };
}

/** --namespace-cpu-share (a CPU quantity from 10m to 64) and --namespace-cpu-burst (a duration from 10ms to 10m). */
function namespaceShare(share: string | undefined, burst: string | undefined): ShareSettings {
  const read = <T>(flag: string, parse: () => T): T => {
    try {
      return parse();
    } catch (e) {
      throw new ConfigError(`--${flag}: ${(e as Error).message}`);
    }
  };
  const cores = share === undefined ? DEFAULT_SHARE.cpuMsPerSecond / 1000 : read('namespace-cpu-share', () => parseQuantity(share));
  const burstMs = burst === undefined ? DEFAULT_SHARE.burstMs : read('namespace-cpu-burst', () => parseDuration(burst));
  if (!(cores >= 0.01 && cores <= 64)) throw new ConfigError(`--namespace-cpu-share must be a CPU quantity from 10m to 64, got ${JSON.stringify(share)}`);
  if (!(burstMs >= 10 && burstMs <= 600_000)) throw new ConfigError(`--namespace-cpu-burst must be a duration from 10ms to 10m, got ${JSON.stringify(burst)}`);
  return { cpuMsPerSecond: cores * 1000, burstMs };
}

/** --analysis-queries-per-namespace: queries per second from 0.1 to 10,000, or 0 for no limit. */
function queryRate(value: string | undefined): number {
  if (value === undefined) return DEFAULT_ANALYSIS_QUERIES_PER_NAMESPACE;
  const n = Number(value);
  if (value.trim() === '' || !(n === 0 || (n >= 0.1 && n <= 10_000))) throw new ConfigError(`--analysis-queries-per-namespace must be a number of queries per second from 0.1 to 10000, or 0 for no limit, got ${JSON.stringify(value)}`);
  return n;
}

/** A whole number from 1 to 100,000, for the budgets. */
function count(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new ConfigError(`--${name} must be a whole number from 1 to 100000, got ${JSON.stringify(value)}`);
  return n;
}

/** The tenant-safety settings validation reads, from the operator's configuration. */
export function validationPolicy(c: OperatorConfig): Required<ValidationPolicy> {
  return {
    allowedGateways: c.allowedGateways, allowedHostSuffixes: c.allowedHostSuffixes, allowWildcardHosts: c.allowWildcardHosts,
    analysis: { providers: c.analysisProviders, allowAddress: c.allowAnalysisAddress },
    maxModelSizeBytes: c.maxModelSizeBytes, allowedStorageUriPrefixes: c.allowedStorageUriPrefixes,
    allowedServiceAccounts: c.allowedServiceAccounts,
    allowedPodMetadataKeys: c.allowedPodMetadataKeys, allowSecretReferences: c.allowSecretReferences,
    allowedTolerationKeys: c.allowedTolerationKeys, allowCrossNamespacePodAffinity: c.allowCrossNamespacePodAffinity, allowNodePinning: c.allowNodePinning,
    maxModelCacheBytesPerNamespace: c.maxModelCacheBytesPerNamespace, maxModelCachesPerNamespace: c.maxModelCachesPerNamespace, modelCacheMinChargeBytes: c.modelCacheMinChargeBytes,
    maxHostClaimsPerNamespace: c.maxHostClaimsPerNamespace, hostClaimReleaseAfterMs: c.hostClaimReleaseAfterMs,
  };
}

/**
 * The kubelet sets KUBERNETES_SERVICE_HOST in every pod. Outside one (a local
 * run) there is no second replica to stand by, and the Lease's namespace
 * usually does not exist, so leader election is on by default only in a pod,
 * as kubebuilder's `make run` has it off and its Deployment passes it on.
 */
/** A duration of at least a minute: a shorter grace would release a host between a delete and a re-create. */
function releaseAfter(value: string): number {
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch (e) {
    throw new ConfigError(`--host-claim-release-after: ${(e as Error).message}`);
  }
  if (ms < 60_000) throw new ConfigError(`--host-claim-release-after must be at least 1m, got ${JSON.stringify(value)}`);
  return ms;
}

function inPod(env: NodeJS.ProcessEnv): boolean {
  return !!env.KUBERNETES_SERVICE_HOST;
}

function bool(name: string, value: string | undefined, fallback: boolean): boolean {
  return value === undefined ? fallback : oneOf(name, value, ['true', 'false'] as const) === 'true';
}

function size(name: string, value: string): number {
  try {
    return parseQuantity(value);
  } catch (e) {
    throw new ConfigError(`--${name}: ${(e as Error).message}`);
  }
}

/** "name=url,...": names are DNS labels, URLs plain http(s) base URLs. */
function providers(value: string | undefined): AnalysisProvider[] {
  const out: AnalysisProvider[] = [];
  for (const entry of list(value)) {
    const at = entry.indexOf('=');
    const name = entry.slice(0, at).trim();
    const url = entry.slice(at + 1).trim();
    if (at < 1 || !new RegExp(DNS_LABEL).test(name)) throw new ConfigError(`--analysis-providers: ${JSON.stringify(entry)} is not name=url with a lower-case DNS label as name`);
    const why = baseUrlProblem(url);
    if (why) throw new ConfigError(`--analysis-providers: provider ${JSON.stringify(name)}: ${why}`);
    if (out.some((p) => p.name === name)) throw new ConfigError(`--analysis-providers: provider ${JSON.stringify(name)} is defined twice`);
    out.push({ name, url });
  }
  return out;
}

/** --analysis-scoped-providers: names of providers defined by --analysis-providers. */
function scoped(all: AnalysisProvider[], names: string[]): AnalysisProvider[] {
  for (const name of names) {
    if (!all.some((p) => p.name === name)) throw new ConfigError(`--analysis-scoped-providers: ${JSON.stringify(name)} is not a provider of --analysis-providers (${all.map((p) => p.name).join(', ') || 'none'})`);
  }
  return all.map((p) => (names.includes(p.name) ? { ...p, scoped: true } : p));
}

/** --release-freeze-below: namespace=percent entries (a DNS label, or * for every other namespace), percent from 0 to 100. */
function freezeFloors(entries: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const entry of entries) {
    const at = entry.indexOf('=');
    const namespace = entry.slice(0, at).trim();
    const percent = Number(entry.slice(at + 1).trim());
    if (at < 1 || (namespace !== '*' && !new RegExp(DNS_LABEL).test(namespace))) throw new ConfigError(`--release-freeze-below: ${JSON.stringify(entry)} is not namespace=percent (a namespace name, or * for every other)`);
    if (!(percent >= 0 && percent <= 100) || entry.slice(at + 1).trim() === '') throw new ConfigError(`--release-freeze-below: ${JSON.stringify(entry)}: the percent must be a number from 0 to 100`);
    if (namespace in out) throw new ConfigError(`--release-freeze-below: ${JSON.stringify(namespace)} is given twice`);
    out[namespace] = percent;
  }
  return out;
}

/**
 * Storage URI prefixes, refused when two with {namespace} can give one namespace another's storage
 * (validation.ts storageUriPrefixOverlap): each namespace's paths must be its own, which validation
 * and the cluster-scoped model cache both rely on.
 */
function storageUriPrefixes(prefixes: string[]): string[] {
  const overlap = storageUriPrefixOverlap(prefixes);
  if (overlap) {
    const [a, b] = overlap;
    throw new ConfigError(`--allowed-storage-uri-prefixes: ${JSON.stringify(a)} and ${JSON.stringify(b)} can give one namespace another's storage: the text before {namespace} in one starts with the other's, and a namespace's name can fill the rest (namespace "x" of s3://m/{namespace}/ holds every namespace's s3://m/x/{namespace}/); keep one of them, or make them differ before {namespace}`);
  }
  return prefixes;
}

/** A host suffix: lower-case DNS labels, {namespace} allowed in place of a label; a leading dot is implied. */
function hostSuffix(value: string): string {
  const s = value.toLowerCase().replace(/^\.+/, '');
  if (!/^(\{namespace\}|[a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.(\{namespace\}|[a-z0-9]([-a-z0-9]*[a-z0-9])?))*$/.test(s)) {
    throw new ConfigError(`--allowed-host-suffixes: ${JSON.stringify(value)} is not a DNS suffix such as {namespace}.apps.example.com`);
  }
  return s;
}

/** A service account name (a DNS subdomain) or "*". */
function serviceAccount(value: string): string {
  if (value !== '*' && !new RegExp(DNS_SUBDOMAIN).test(value)) {
    throw new ConfigError(`--allowed-service-accounts: ${JSON.stringify(value)} is not a service account name or *`);
  }
  return value;
}

/** A pod label or annotation key ([prefix/]name) or "prefix/*". */
function podMetadataKey(value: string): string {
  if (!new RegExp(QUALIFIED_KEY).test(value) && !new RegExp(KEY_PREFIX_WILDCARD).test(value)) {
    throw new ConfigError(`--allowed-pod-metadata-keys: ${JSON.stringify(value)} is not a label or annotation key ([prefix/]name) or prefix/*`);
  }
  return value;
}

/** A taint key ([prefix/]name, as a label key) or "*". */
function tolerationKey(value: string): string {
  if (value !== '*' && !new RegExp(QUALIFIED_KEY).test(value)) {
    throw new ConfigError(`--allowed-toleration-keys: ${JSON.stringify(value)} is not a taint key ([prefix/]name) or *`);
  }
  return value;
}

/** A watch's server-side timeout is kept inside the watchdog, and is at least 2 s: below 3 s the two would race. */
function watchdogMs(value: string): number {
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch (e) {
    throw new ConfigError(`--watch-watchdog: ${(e as Error).message}`);
  }
  if (ms < DEFAULTS.watchWatchdogMinMs) throw new ConfigError(`--watch-watchdog: ${JSON.stringify(value)} is shorter than ${DEFAULTS.watchWatchdogMinMs / 1000}s`);
  return ms;
}
