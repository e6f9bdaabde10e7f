import assert from 'node:assert/strict';
import { ConfigError, parseConfig, usage, validationPolicy } from './config.ts';

describe('operator flags', () => {
  it('leaves the watch watchdog to the informer unless --watch-watchdog is given', () => {
    assert.equal(parseConfig([], {}).watchWatchdogMs, undefined);
  });

  it('reads --watch-watchdog as a duration', () => {
    assert.equal(parseConfig(['--watch-watchdog', '5s'], {}).watchWatchdogMs, 5_000);
    assert.equal(parseConfig(['--watch-watchdog=1m30s'], {}).watchWatchdogMs, 90_000);
  });

  it('refuses a watchdog the server-side watch timeout could not fit inside', () => {
    assert.throws(() => parseConfig(['--watch-watchdog', '2s'], {}), (e: unknown) => e instanceof ConfigError && /shorter than 3s/.test(e.message));
  });

  it('bounds the host claims of a namespace (default 64) and releases unnamed hosts after a grace of at least a minute (default 1h)', () => {
    const d = parseConfig([], {});
    assert.deepEqual([d.maxHostClaimsPerNamespace, d.hostClaimReleaseAfterMs], [64, 3_600_000]);
    const c = parseConfig(['--max-host-claims-per-namespace', '10'], { HOST_CLAIM_RELEASE_AFTER: '24h' });
    assert.deepEqual([c.maxHostClaimsPerNamespace, c.hostClaimReleaseAfterMs], [10, 86_400_000]);
    assert.deepEqual([validationPolicy(c).maxHostClaimsPerNamespace, validationPolicy(c).hostClaimReleaseAfterMs], [10, 86_400_000]);
    assert.throws(() => parseConfig(['--host-claim-release-after', '30s'], {}), (e: unknown) => e instanceof ConfigError && /at least 1m/.test(e.message));
    assert.throws(() => parseConfig(['--max-host-claims-per-namespace', '0'], {}), (e: unknown) => e instanceof ConfigError && /--max-host-claims-per-namespace/.test(e.message));
  });

  it('names the flag when the duration does not parse', () => {
    assert.throws(() => parseConfig(['--watch-watchdog', '5'], {}), (e: unknown) => e instanceof ConfigError && /^--watch-watchdog: .*has no unit/.test(e.message));
  });

  it('documents --watch-watchdog as a flag without an environment variable', () => {
    const line = usage().split('\n').find((l) => l.includes('--watch-watchdog'));
    assert.ok(line, 'listed in the usage');
    assert.doesNotMatch(line, /\[\$/);
  });

  describe('leader election', () => {
    const cases: Array<{ what: string; argv: string[]; env: Record<string, string>; want: boolean }> = [
      { what: 'is on by default in a pod (KUBERNETES_SERVICE_HOST set by the kubelet)', argv: [], env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, want: true },
      { what: 'is off by default outside a cluster, so npm start needs no Lease namespace', argv: [], env: {}, want: false },
      { what: 'is forced on outside a cluster by --leader-elect true', argv: ['--leader-elect', 'true'], env: {}, want: true },
      { what: 'is forced on outside a cluster by LEADER_ELECT=true', argv: [], env: { LEADER_ELECT: 'true' }, want: true },
      { what: 'is turned off in a pod by LEADER_ELECT=false', argv: [], env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', LEADER_ELECT: 'false' }, want: false },
    ];
    for (const c of cases) it(c.what, () => assert.equal(parseConfig(c.argv, c.env).leaderElect, c.want));
  });

  describe('tenant-safety settings', () => {
    it('defaults to the safe side: no providers, no addresses, no wildcards, namespace-scoped caches, 100Gi models and 200Gi of caches per namespace, no service accounts, only descriptive prefixed keys on pods, no Secrets, any host and storage URI, GPU taints only, no cross-namespace pod affinity, no node pinning', () => {
      const c = parseConfig([], {});
      assert.deepEqual(
        [c.analysisProviders, c.allowAnalysisAddress, c.allowWildcardHosts, c.modelCacheScope, c.maxModelSizeBytes, c.maxModelCacheBytesPerNamespace, c.allowedServiceAccounts, c.allowedPodMetadataKeys, c.allowSecretReferences, c.allowedHostSuffixes, c.allowedStorageUriPrefixes, c.allowedTolerationKeys, c.allowCrossNamespacePodAffinity, c.allowNodePinning],
        [[], false, false, 'namespace', 100 * 2 ** 30, 200 * 2 ** 30, [], ['app.kubernetes.io/version'], false, [], [], ['nvidia.com/gpu'], false, false],
      );
    });

    const accepted: Array<{ what: string; argv: string[]; env?: Record<string, string>; pick: (c: ReturnType<typeof parseConfig>) => unknown; want: unknown }> = [
      { what: 'scoped analysis providers', argv: ['--analysis-providers', 'main=http://p:9090,team=http://t:9090', '--analysis-scoped-providers', 'team'], pick: (c) => c.analysisProviders, want: [{ name: 'main', url: 'http://p:9090' }, { name: 'team', url: 'http://t:9090', scoped: true }] },
      { what: 'release-freeze floors per namespace', argv: ['--release-freeze-below', 'payments=50, *=10'], pick: (c) => c.releaseFreezeBelow, want: { payments: 50, '*': 10 } },
      { what: 'analysis providers as name=url', argv: ['--analysis-providers', 'main=http://prometheus.monitoring:9090, team=https://thanos.example.com/q/'], pick: (c) => c.analysisProviders, want: [{ name: 'main', url: 'http://prometheus.monitoring:9090' }, { name: 'team', url: 'https://thanos.example.com/q/' }] },
      { what: 'analysis providers from the environment', argv: [], env: { ANALYSIS_PROVIDERS: 'main=http://p:9090' }, pick: (c) => c.analysisProviders.map((p) => p.name), want: ['main'] },
      { what: '--allow-analysis-address', argv: ['--allow-analysis-address', 'true'], pick: (c) => c.allowAnalysisAddress, want: true },
      { what: 'host suffixes, lower-cased, a leading dot dropped', argv: ['--allowed-host-suffixes', '{namespace}.Apps.example.com,.shared.example.com'], pick: (c) => c.allowedHostSuffixes, want: ['{namespace}.apps.example.com', 'shared.example.com'] },
      { what: '--allow-wildcard-hosts', argv: [], env: { ALLOW_WILDCARD_HOSTS: 'true' }, pick: (c) => c.allowWildcardHosts, want: true },
      { what: '--max-model-size as a quantity', argv: ['--max-model-size', '500Gi'], pick: (c) => c.maxModelSizeBytes, want: 500 * 2 ** 30 },
      { what: 'storage URI prefixes', argv: ['--allowed-storage-uri-prefixes', 's3://models/{namespace}/,hf://acme/'], pick: (c) => c.allowedStorageUriPrefixes, want: ['s3://models/{namespace}/', 'hf://acme/'] },
      { what: 'prefixes with {namespace} that keep namespaces apart, each in its own store or the same segment', argv: [], env: { ALLOWED_STORAGE_URI_PREFIXES: 's3://models/{namespace}/,s3://models/{namespace},gs://m/{namespace}/,s3://models/shared/' }, pick: (c) => c.allowedStorageUriPrefixes, want: ['s3://models/{namespace}/', 's3://models/{namespace}', 'gs://m/{namespace}/', 's3://models/shared/'] },
      { what: 'service accounts apps may run as', argv: [], env: { ALLOWED_SERVICE_ACCOUNTS: 'model-reader, shop.runner' }, pick: (c) => c.allowedServiceAccounts, want: ['model-reader', 'shop.runner'] },
      { what: 'any service account as *', argv: ['--allowed-service-accounts', '*'], pick: (c) => c.allowedServiceAccounts, want: ['*'] },
      { what: 'no prefixed pod keys at all when the chart renders an empty list', argv: [], env: { ALLOWED_POD_METADATA_KEYS: '' }, pick: (c) => c.allowedPodMetadataKeys, want: [] },
      { what: 'taint keys apps may tolerate, * for any', argv: ['--allowed-toleration-keys', 'nvidia.com/gpu, dedicated,*'], pick: (c) => c.allowedTolerationKeys, want: ['nvidia.com/gpu', 'dedicated', '*'] },
      { what: 'no tolerations at all when the chart renders an empty list', argv: [], env: { ALLOWED_TOLERATION_KEYS: '' }, pick: (c) => c.allowedTolerationKeys, want: [] },
      { what: 'cross-namespace pod affinity and node pinning switched on', argv: ['--allow-cross-namespace-pod-affinity', 'true', '--allow-node-pinning', 'true'], pick: (c) => [c.allowCrossNamespacePodAffinity, c.allowNodePinning], want: [true, true] },
      { what: 'control keys pods may carry: exact keys and prefix/*', argv: ['--allowed-pod-metadata-keys', 'sidecar.istio.io/inject, prometheus.istio.io/*,app'], pick: (c) => c.allowedPodMetadataKeys, want: ['sidecar.istio.io/inject', 'prometheus.istio.io/*', 'app'] },
      { what: '--allow-secret-references', argv: [], env: { ALLOW_SECRET_REFERENCES: 'true' }, pick: (c) => c.allowSecretReferences, want: true },
      { what: '--max-model-cache-bytes-per-namespace as a quantity', argv: ['--max-model-cache-bytes-per-namespace', '1Ti'], pick: (c) => c.maxModelCacheBytesPerNamespace, want: 2 ** 40 },
      { what: 'a namespace\'s model caches capped at 50 and each charged at least 1Gi by default', argv: [], pick: (c) => [c.maxModelCachesPerNamespace, c.modelCacheMinChargeBytes], want: [50, 2 ** 30] },
      { what: '--max-model-caches-per-namespace and --model-cache-min-charge', argv: ['--max-model-caches-per-namespace', '5'], env: { MODEL_CACHE_MIN_CHARGE: '512Mi' }, pick: (c) => [c.maxModelCachesPerNamespace, c.modelCacheMinChargeBytes], want: [5, 2 ** 29] },
      { what: 'cluster-scoped caches as an opt-in', argv: ['--model-cache-scope', 'cluster'], pick: (c) => c.modelCacheScope, want: 'cluster' },
      { what: 'the istio router by default', argv: [], pick: (c) => c.router, want: 'istio' },
      { what: '--router gateway-api', argv: ['--router', 'gateway-api'], pick: (c) => c.router, want: 'gateway-api' },
      { what: 'the router from $ROUTER', argv: [], env: { ROUTER: 'gateway-api' }, pick: (c) => c.router, want: 'gateway-api' },
    ];
    for (const c of accepted) it(`reads ${c.what}`, () => assert.deepEqual(c.pick(parseConfig(c.argv, c.env ?? {})), c.want));

    const refused: Array<[string[], RegExp]> = [
      [['--analysis-providers', 'http://p:9090'], /--analysis-providers: "http:\/\/p:9090" is not name=url/],
      [['--analysis-providers', 'Main=http://p:9090'], /is not name=url with a lower-case DNS label/],
      [['--analysis-providers', 'main=http://p:9090/#'], /provider "main": a query or fragment/],
      [['--analysis-providers', 'main=http://a:1,main=http://b:2'], /defined twice/],
      [['--analysis-providers', 'main=http://a:1', '--analysis-scoped-providers', 'other'], /--analysis-scoped-providers: "other" is not a provider of --analysis-providers \(main\)/],
      [['--release-freeze-below', 'payments'], /--release-freeze-below: "payments" is not namespace=percent/],
      [['--release-freeze-below', 'payments=101'], /the percent must be a number from 0 to 100/],
      [['--release-freeze-below', 'payments='], /the percent must be a number from 0 to 100/],
      [['--release-freeze-below', '*=5,*=6'], /"\*" is given twice/],
      [['--allowed-host-suffixes', '*.example.com'], /--allowed-host-suffixes: "\*.example.com" is not a DNS suffix/],
      [['--max-model-size', '12GB'], /--max-model-size: invalid quantity/],
      [['--allowed-service-accounts', 'team-a/runner'], /--allowed-service-accounts: "team-a\/runner" is not a service account name or \*/],
      [['--allow-wildcard-hosts', 'yes'], /--allow-wildcard-hosts: "yes" is not one of true, false/],
      [['--allowed-pod-metadata-keys', 'sidecar.istio.io/*x'], /--allowed-pod-metadata-keys: "sidecar.istio.io\/\*x" is not a label or annotation key/],
      [['--allowed-pod-metadata-keys', '*'], /--allowed-pod-metadata-keys: "\*" is not/],
      [['--allowed-toleration-keys', 'nvidia.com/*'], /--allowed-toleration-keys: "nvidia.com\/\*" is not a taint key/],
      // A key's name part is at most 63 characters: a pod could never carry a longer one.
      [['--allowed-pod-metadata-keys', `example.com/${'a'.repeat(64)}`], /--allowed-pod-metadata-keys: "example.com\/a{64}" is not a label or annotation key/],
      [['--allowed-toleration-keys', 'b'.repeat(64)], /--allowed-toleration-keys: "b{64}" is not a taint key/],
      [['--allow-secret-references', 'on'], /--allow-secret-references: "on" is not one of true, false/],
      [['--max-model-cache-bytes-per-namespace', 'lots'], /--max-model-cache-bytes-per-namespace: invalid quantity/],
      [['--router', 'nginx'], /--router: "nginx" is not one of istio, gateway-api/],
      [['--max-model-caches-per-namespace', '0'], /--max-model-caches-per-namespace must be a whole number from 1 to 100000/],
      [['--model-cache-min-charge', '300Gi'], /--model-cache-min-charge \(300Gi\) is more than --max-model-cache-bytes-per-namespace \(200Gi\): no model cache would fit/],
      // Namespace "x" would own s3://m/x/, which holds every namespace's s3://m/x/<namespace>/.
      [['--allowed-storage-uri-prefixes', 's3://m/{namespace}/,s3://m/x/{namespace}/'], /--allowed-storage-uri-prefixes: "s3:\/\/m\/\{namespace\}\/" and "s3:\/\/m\/x\/\{namespace\}\/" can give one namespace another's storage/],
      // Namespace "a-x" of the first and namespace "a" of the second both have s3://m/a-x/.
      [['--allowed-storage-uri-prefixes', 's3://m/{namespace}/,s3://m/{namespace}-x/'], /"s3:\/\/m\/\{namespace\}\/" and "s3:\/\/m\/\{namespace\}-x\/" can give one namespace another's storage/],
    ];
    for (const [argv, message] of refused) {
      it(`refuses ${argv.join(' ')}, naming the flag`, () => assert.throws(() => parseConfig(argv, {}), (e: unknown) => e instanceof ConfigError && message.test(e.message)));
    }

    it('hands validation the policy it reads', () => {
      const p = validationPolicy(parseConfig(['--analysis-providers', 'main=http://p:9090', '--allowed-gateways', 'istio-system/public'], {}));
      assert.deepEqual(p.analysis, { providers: [{ name: 'main', url: 'http://p:9090' }], allowAddress: false });
      assert.deepEqual(p.allowedGateways, ['istio-system/public']);
    });
  });

  describe('budgets for background work', () => {
    it('defaults to a fair share: 8 warmups per namespace of 64, 4 analysis rounds of 16, 20 analysis queries a second per namespace, 1000 pending Events per namespace, 30m of a core after 2 s of CPU', () => {
      assert.deepEqual(parseConfig([], {}).budgets, { warmupsPerNamespace: 8, concurrentWarmups: 64, analysesPerNamespace: 4, concurrentAnalyses: 16, analysisQueriesPerNamespace: 20, pendingEventsPerNamespace: 1000, namespaceShare: { cpuMsPerSecond: 30, burstMs: 2_000 } });
    });

    it('reads each from its flag or environment variable', () => {
      const c = parseConfig(['--max-warmups-per-namespace', '2', '--max-concurrent-analyses', '9', '--namespace-cpu-share', '250m', '--analysis-queries-per-namespace', '2.5'], { MAX_CONCURRENT_WARMUPS: '10', MAX_ANALYSES_PER_NAMESPACE: '1', MAX_PENDING_EVENTS_PER_NAMESPACE: '50', NAMESPACE_CPU_BURST: '2s' });
      assert.deepEqual(c.budgets, { warmupsPerNamespace: 2, concurrentWarmups: 10, analysesPerNamespace: 1, concurrentAnalyses: 9, analysisQueriesPerNamespace: 2.5, pendingEventsPerNamespace: 50, namespaceShare: { cpuMsPerSecond: 250, burstMs: 2_000 } });
      assert.equal(parseConfig(['--analysis-queries-per-namespace', '0'], {}).budgets.analysisQueriesPerNamespace, 0, '0: no limit');
      assert.throws(() => parseConfig(['--analysis-queries-per-namespace', '0.01'], {}), /--analysis-queries-per-namespace must be a number of queries per second from 0.1 to 10000, or 0/);
    });

    for (const [flag, bad, why] of [['namespace-cpu-share', '5m', 'must be a CPU quantity from 10m to 64'], ['namespace-cpu-share', 'lots', 'invalid quantity'], ['namespace-cpu-burst', '0s', 'must be a duration from 10ms to 10m']] as const) {
      it(`refuses --${flag} ${bad}, naming the flag`, () => {
        assert.throws(() => parseConfig([`--${flag}`, bad], {}), (e: unknown) => e instanceof ConfigError && e.message.startsWith(`--${flag}`) && e.message.includes(why));
      });
    }

    for (const bad of ['0', '1.5', 'many', '100001']) {
      it(`refuses --max-warmups-per-namespace ${bad}, naming the flag`, () => {
        assert.throws(() => parseConfig(['--max-warmups-per-namespace', bad], {}), (e: unknown) => e instanceof ConfigError && /--max-warmups-per-namespace must be a whole number from 1 to 100000/.test(e.message));
      });
    }
  });
});
