import assert from 'node:assert/strict';
import { containerApp, modelApp } from '../../testing/apps.ts';
import { DEFAULT_ALLOWED_POD_METADATA_KEYS, controlKey, keyAllowed, podMetadataProblems } from './pod-metadata.ts';
import { validateApp } from './validation.ts';

describe('pod metadata the platform allows', () => {
  const keys: Array<[string, 'label' | 'annotation', boolean]> = [
    ['sidecar.istio.io/proxyImage', 'annotation', true],
    ['sidecar.istio.io/userVolume', 'annotation', true],
    ['sidecar.istio.io/userVolumeMount', 'annotation', true],
    ['sidecar.istio.io/inject', 'label', true],
    ['traffic.sidecar.istio.io/excludeOutboundIPRanges', 'annotation', true],
    ['proxy.istio.io/config', 'annotation', true],
    ['security.istio.io/tlsMode', 'label', true],
    ['networking.istio.io/tunnel', 'label', true],
    ['istio.io/rev', 'label', true],
    ['service.istio.io/canonical-name', 'label', true],
    ['container.apparmor.security.beta.kubernetes.io/user-container', 'annotation', true],
    ['seccomp.security.alpha.kubernetes.io/pod', 'annotation', true],
    ['kubernetes.io/egress-bandwidth', 'annotation', true],
    ['cluster-autoscaler.kubernetes.io/safe-to-evict', 'annotation', true],
    ['k8s.v1.cni.cncf.io/networks', 'annotation', true],
    ['v1.multus-cni.io/default-network', 'annotation', true],
    ['Sidecar.Istio.io/inject', 'annotation', true],
    ['app', 'label', true],
    ['version', 'label', true],
    ['app', 'annotation', false],
    // An allow-list: every prefixed key is held back until the platform lists it, whoever owns the prefix.
    ['cni.projectcalico.org/ipAddrs', 'annotation', true],
    ['iam.amazonaws.com/role', 'annotation', true],
    ['linkerd.io/inject', 'annotation', true],
    ['app.kubernetes.io/version', 'label', true],
    ['prometheus.io/scrape', 'annotation', true],
    ['example.com/istio.io', 'annotation', true],
    ['team', 'label', false],
    ['team', 'annotation', false],
  ];
  for (const [key, kind, held] of keys) {
    it(`${held ? 'holds back' : 'lets through'} the ${kind} ${key}`, () => assert.equal(controlKey(key, kind) !== undefined, held));
  }

  const allowed: Array<[string, string[], boolean]> = [
    ['sidecar.istio.io/inject', ['sidecar.istio.io/inject'], true],
    ['sidecar.istio.io/proxyImage', ['sidecar.istio.io/inject'], false],
    ['prometheus.istio.io/merge-metrics', ['prometheus.istio.io/*'], true],
    ['sidecar.istio.io/inject', ['istio.io/*'], false],
    ['app', ['app'], true],
    ['app', [], false],
    ['app.kubernetes.io/version', DEFAULT_ALLOWED_POD_METADATA_KEYS as string[], true],
    // Keys other systems read as who a pod is: a tenant's pod could join another stack's selectors or series.
    ['prometheus.io/scrape', DEFAULT_ALLOWED_POD_METADATA_KEYS as string[], false],
    ['app.kubernetes.io/instance', DEFAULT_ALLOWED_POD_METADATA_KEYS as string[], false],
    ['app.kubernetes.io/component', DEFAULT_ALLOWED_POD_METADATA_KEYS as string[], false],
    ['prometheus.istio.io/merge-metrics', DEFAULT_ALLOWED_POD_METADATA_KEYS as string[], false],
    ['cni.projectcalico.org/ipAddrs', DEFAULT_ALLOWED_POD_METADATA_KEYS as string[], false],
  ];
  for (const [key, list, ok] of allowed) {
    it(`${ok ? 'allows' : 'does not allow'} ${key} with [${list.join(', ')}]`, () => assert.equal(keyAllowed(key, list), ok));
  }

  it('names the field, the key and what the platform allows (attack: carry mesh controls into the pod)', () => {
    const app = containerApp({ container: { image: 'x:1', podAnnotations: { 'sidecar.istio.io/proxyImage': 'evil:1', 'prometheus.istio.io/merge-metrics': 'true' }, podLabels: { app: 'payments', team: 'a' } } });
    const problems = podMetadataProblems(app, ['prometheus.istio.io/*']);
    assert.deepEqual(problems.map((p) => `${p.reason} ${p.field}`), [
      'PodMetadataNotAllowed spec.container.podLabels["app"]',
      'PodMetadataNotAllowed spec.container.podAnnotations["sidecar.istio.io/proxyImage"]',
    ]);
    assert.match(problems[1]!.message, /annotation "sidecar\.istio\.io\/proxyImage" is not allowed on this platform: a key with a prefix may be read as an order .*; allowed control keys \(--allowed-pod-metadata-keys\): prometheus\.istio\.io\/\*$/);
  });

  it('reads a model app\'s fields, and lets an allowed key through', () => {
    const m = modelApp();
    const app = modelApp({ model: { ...m.spec.model!, podLabels: { 'sidecar.istio.io/inject': 'true' } } });
    assert.deepEqual(podMetadataProblems(app, []).map((p) => p.field), ['spec.model.podLabels["sidecar.istio.io/inject"]']);
    assert.deepEqual(podMetadataProblems(app, ['sidecar.istio.io/inject']), []);
  });
});

describe('the default allow-list refuses the keys other systems read as who a pod is', () => {
  // Through the operator's whole validation with the platform's defaults (config.ts: DEFAULT_ALLOWED_POD_METADATA_KEYS).
  const policy = { allowedGateways: [], allowedPodMetadataKeys: [...DEFAULT_ALLOWED_POD_METADATA_KEYS] };
  const withMetadata = (podLabels: Record<string, string>, podAnnotations: Record<string, string>) =>
    containerApp({ container: { ...containerApp().spec.container!, podLabels, podAnnotations } });
  const refused = (app: ReturnType<typeof withMetadata>) => validateApp(app, policy).filter((p) => p.reason === 'PodMetadataNotAllowed').map((p) => p.field);

  it('refuses prometheus.io/scrape, port and path: a scrape job with honor_labels would let the pod\'s series name another namespace', () => {
    assert.deepEqual(refused(withMetadata({}, { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9090', 'prometheus.io/path': '/m' })),
      ['spec.container.podAnnotations["prometheus.io/scrape"]', 'spec.container.podAnnotations["prometheus.io/port"]', 'spec.container.podAnnotations["prometheus.io/path"]']);
  });

  it('refuses app.kubernetes.io/instance and component, which other stacks select their pods by; admits version', () => {
    assert.deepEqual(refused(withMetadata({ 'app.kubernetes.io/instance': 'kube-prometheus-stack', 'app.kubernetes.io/component': 'prometheus', 'app.kubernetes.io/version': '1.4.0' }, {})),
      ['spec.container.podLabels["app.kubernetes.io/instance"]', 'spec.container.podLabels["app.kubernetes.io/component"]']);
  });

  it('admits them where the platform lists them', () => {
    assert.deepEqual(validateApp(withMetadata({ 'app.kubernetes.io/instance': 'x' }, { 'prometheus.io/scrape': 'true' }), { ...policy, allowedPodMetadataKeys: ['app.kubernetes.io/*', 'prometheus.io/*'] })
      .filter((p) => p.reason === 'PodMetadataNotAllowed'), []);
  });
});
