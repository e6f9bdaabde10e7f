import assert from 'node:assert/strict';
import { Service } from '@kubernetes-models/knative/serving.knative.dev/v1/Service';
import { VirtualService } from '@kubernetes-models/istio/networking.istio.io/v1/VirtualService';
import { assertGolden } from '../../test/support/golden.ts';
import { versionOf } from '../rollout/version.ts';
import { boundsAnnotations, templateAutoscaling } from './autoscaling.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { containerApp, modelApp, podTemplate } from '../testing/apps.ts';
import { renderInferenceService, requestsGpu } from './inference-service.ts';
import { knativeTemplate, renderKnativeService } from './knative-service.ts';
import { modelCacheName, renderLocalModelCache } from './local-model-cache.ts';
import { knativeRouter, kserveRouter } from './traffic.ts';
import { renderVirtualService } from './virtual-service.ts';

const golden = (name: string) => new URL(`./testdata/${name}.golden.yaml`, import.meta.url).pathname;

describe('render', () => {
  describe('Knative Service', () => {
    it('renders a container app with autoscaling annotations and a deterministic revision name (golden)', () => {
      const app = containerApp();
      const version = versionOf(app.spec);
      const template = knativeTemplate(app, version, templateAutoscaling(app.spec.scaling));
      const ksvc = renderKnativeService(app, version, template, knativeRouter.routes({ stable: { revision: 'shop-aaaa', version: 'x' }, candidate: { revision: template.revision, version, percent: 20, ready: true } }).traffic);
      assertGolden(golden('knative-service'), ksvc);
      new Service(ksvc).validate();
      assert.match(template.revision, /^shop-[0-9a-f]{8}$/);
    });

    it('gives the same version the same revision name, and a new image a new one', () => {
      const a = containerApp();
      const b = containerApp({ scaling: { minScale: 3, maxScale: 10, target: 100, metric: 'concurrency', scaleToZeroAfter: '15m' } });
      const c = containerApp({ container: { ...a.spec.container!, image: 'ghcr.io/acme/shop:1.5.0' } });
      const name = (x: typeof a) => knativeTemplate(x, versionOf(x.spec), templateAutoscaling(x.spec.scaling)).revision;
      assert.equal(versionOf(a.spec), versionOf(b.spec), 'scaling is not part of the version');
      assert.equal(name(a), name(b), 'in-place bounds: a minScale change keeps the revision');
      assert.notEqual(name(a), name(c));
    });

    it('in legacy mode bakes the bounds into the template, so a bounds change makes a new revision of the same version', () => {
      const app = containerApp();
      const v = versionOf(app.spec);
      const t1 = knativeTemplate(app, v, { ...templateAutoscaling(app.spec.scaling), ...boundsAnnotations({ minScale: 0, maxScale: 10 }) });
      const t2 = knativeTemplate(app, v, { ...templateAutoscaling(app.spec.scaling), ...boundsAnnotations({ minScale: 2, maxScale: 10 }) });
      assert.notEqual(t1.revision, t2.revision);
      assert.equal(t2.annotations['autoscaling.knative.dev/min-scale'], '2');
    });

    it('pins the first revision, then stable plus a ready candidate by name with tags', () => {
      assert.deepEqual(knativeRouter.routes({ initial: { revision: 'a', version: '1' } }).traffic, [{ revisionName: 'a', percent: 100, tag: 'stable' }]);
      assert.deepEqual(knativeRouter.routes({ stable: { revision: 'a', version: '1' }, candidate: { revision: 'b', version: '2', percent: 30, ready: false } }).traffic,
        [{ revisionName: 'a', percent: 100, tag: 'stable' }], 'a candidate that is not ready is not in traffic at all');
      assert.deepEqual(knativeRouter.routes({ stable: { revision: 'a', version: '1' }, candidate: { revision: 'b', version: '2', percent: 30, ready: true } }).traffic,
        [{ revisionName: 'a', percent: 70, tag: 'stable' }, { revisionName: 'b', percent: 30, tag: 'candidate' }]);
    });
  });

  describe('InferenceService', () => {
    it('renders a model app with GPU resources, explicit minReplicas and the version label (golden)', () => {
      const app = modelApp();
      const isvc = renderInferenceService(app, versionOf(app.spec), { minScale: 0, maxScale: 4 }, {});
      assertGolden(golden('inference-service'), isvc);
      assert.equal(isvc.spec.predictor.minReplicas, 0, 'scale-to-zero is explicit: KServe defaults to 1');
      assert.ok(requestsGpu(app));
    });

    it('maps the plan to canaryTrafficPercent: 0 until ready, P when ready, unset once promoted', () => {
      const stable = { revision: 'fraud-predictor-00001', version: '1' };
      assert.deepEqual(kserveRouter.routes({ stable, candidate: { revision: 'r2', version: '2', percent: 20, ready: false } }), { canaryTrafficPercent: 0 });
      assert.deepEqual(kserveRouter.routes({ stable, candidate: { revision: 'r2', version: '2', percent: 20, ready: true } }), { canaryTrafficPercent: 20 });
      assert.deepEqual(kserveRouter.routes({ stable }), {});
      assert.deepEqual(kserveRouter.routes({ stable, latest: 'fraud-predictor-00003' }), { canaryTrafficPercent: 0 }, 'a newer revision that is not stable gets nothing');
    });
  });

  describe('pod template fields', () => {
    const container = (extra: Partial<ReturnType<typeof podTemplate>> = podTemplate()) => containerApp({ container: { ...containerApp().spec.container!, ...extra } });
    const model = (extra: Partial<ReturnType<typeof podTemplate>> = podTemplate()) => modelApp({ model: { ...modelApp().spec.model!, ...extra } });
    const ksvcOf = (app: ServerlessApp) => {
      const version = versionOf(app.spec);
      return renderKnativeService(app, version, knativeTemplate(app, version, templateAutoscaling(app.spec.scaling)), []);
    };
    const isvcOf = (app: ServerlessApp) => renderInferenceService(app, versionOf(app.spec), { minScale: 0, maxScale: 4 }, {});

    it('renders them into the Knative Service\'s revision template (golden)', () => {
      const ksvc = ksvcOf(container());
      assertGolden(golden('knative-service-pod-template'), ksvc);
      new Service(ksvc).validate();
    });

    it('renders them into the InferenceService\'s predictor, timeoutSeconds as KServe\'s "timeout" (golden)', () => {
      const isvc = isvcOf(model());
      assertGolden(golden('inference-service-pod-template'), isvc);
      assert.equal(isvc.spec.predictor.timeout, 120);
      assert.equal(isvc.spec.predictor.containerConcurrency, 10);
    });

    it('renders none of them when unset', () => {
      const spec = ksvcOf(containerApp()).spec!.template!.spec!;
      assert.deepEqual(Object.keys(spec), ['containers']);
      assert.equal((spec.containers[0] as { volumeMounts?: unknown }).volumeMounts, undefined);
    });

    const mounts: Array<{ what: string; volume: string; readOnly?: boolean; want: boolean | undefined }> = [
      { what: 'mounts a ConfigMap read-only when readOnly is unset', volume: 'config', want: true },
      { what: 'mounts a Secret read-only when readOnly is true', volume: 'tls', readOnly: true, want: true },
      { what: 'leaves an emptyDir writable when readOnly is unset', volume: 'scratch', want: undefined },
      { what: 'mounts an emptyDir read-only when asked', volume: 'scratch', readOnly: true, want: true },
    ];
    for (const m of mounts) {
      it(m.what, () => {
        const app = container({ ...podTemplate(), volumeMounts: [{ name: m.volume, mountPath: '/m', ...(m.readOnly !== undefined ? { readOnly: m.readOnly } : {}) }] });
        const rendered = ksvcOf(app).spec!.template!.spec!.containers[0]!.volumeMounts!;
        assert.deepEqual(rendered, [{ name: m.volume, mountPath: '/m', ...(m.want !== undefined ? { readOnly: m.want } : {}) }]);
      });
    }

    it('keeps the operator\'s labels and annotations over the app\'s pod labels and annotations', () => {
      // The app asks for the operator's own keys too: the rendered object keeps the operator's values.
      const app = container({
        podLabels: { team: 'a', 'serverlessapp.io/version': 'mine' },
        podAnnotations: { 'prometheus.io/scrape': 'true', 'autoscaling.knative.dev/metric': 'rps' },
      });
      const t = ksvcOf(app).spec!.template!.metadata!;
      assert.equal(t.labels!['team'], 'a');
      assert.equal(t.labels!['serverlessapp.io/version'], versionOf(app.spec));
      assert.equal(t.annotations!['prometheus.io/scrape'], 'true');
      assert.equal(t.annotations!['autoscaling.knative.dev/metric'], 'concurrency');
      const p = isvcOf(model({ podLabels: { team: 'a', 'serverlessapp.io/app': 'other' }, podAnnotations: { x: 'y' } })).spec.predictor as { labels: Record<string, string>; annotations: Record<string, string> };
      assert.equal(p.labels['team'], 'a');
      assert.equal(p.labels['serverlessapp.io/app'], 'fraud');
      assert.deepEqual(p.annotations, { x: 'y' });
    });

    for (const [field, value] of Object.entries(podTemplate())) {
      it(`makes a new version and a new revision name when ${field} changes`, () => {
        const a = containerApp();
        const b = container({ [field]: value });
        assert.notEqual(versionOf(a.spec), versionOf(b.spec));
        assert.notEqual(ksvcOf(a).spec!.template!.metadata!.name, ksvcOf(b).spec!.template!.metadata!.name);
      });
    }
  });

  describe('VirtualService', () => {
    it('renders hosts, gateways, header routes to the candidate, timeout and retries (golden)', () => {
      const app = containerApp({
        ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'], timeout: '10s', retries: { attempts: 3, perTryTimeout: '2s', retryOn: '5xx,connect-failure' } },
        rollout: { canaryPercent: 10, match: [{ header: 'X-Canary', exact: 'always' }, { header: 'x-user', regex: '^qa-.*' }] },
      });
      const vs = renderVirtualService(app, { localGateway: 'knative-local-gateway.istio-system.svc.cluster.local', candidateReady: true, defaultHost: 'shop.team-a.svc.cluster.local', stableHost: 'stable-shop.team-a.svc.cluster.local', candidateHost: 'candidate-shop.team-a.svc.cluster.local', stableTag: 'stable', candidateTag: 'candidate', traffic: {}, inForce: [], routesReady: true });
      assertGolden(golden('virtual-service'), vs);
      new VirtualService(vs).validate();
    });

    it('has no header route while the candidate is not ready', () => {
      const app = containerApp({ ingress: { hosts: ['shop.example.com'] }, rollout: { match: [{ header: 'x-canary', exact: '1' }] } });
      const vs = renderVirtualService(app, { localGateway: 'gw', candidateReady: false, defaultHost: 'd', stableHost: 's', candidateHost: 'c', stableTag: 'stable', candidateTag: 'candidate', traffic: {}, inForce: [], routesReady: true });
      assert.deepEqual(vs.spec?.http?.map((h) => h.name), ['default']);
    });

    it('mirrors a share of the default route to the candidate revision\'s private Service once the candidate is ready and warm (golden)', () => {
      const app = containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] }, rollout: { canaryPercent: 0, mirrorPercent: 25, match: [{ header: 'x-canary', exact: 'always' }] } });
      const vs = renderVirtualService(app, { localGateway: 'knative-local-gateway.istio-system.svc.cluster.local', candidateReady: true, defaultHost: 'shop.team-a.svc.cluster.local', stableHost: 'stable-shop.team-a.svc.cluster.local', candidateHost: 'candidate-shop.team-a.svc.cluster.local', stableTag: 'stable', candidateTag: 'candidate', traffic: {}, inForce: [], routesReady: true, candidateRevision: 'shop-00002-5f2c8e1a9b' });
      assertGolden(golden('virtual-service-mirror'), vs);
      new VirtualService(vs).validate();
      assert.deepEqual(vs.spec?.http?.map((h) => [h.name, h.mirror?.host]), [['candidate-by-header', undefined], ['default', 'shop-00002-5f2c8e1a9b-private.team-a.svc.cluster.local']], 'header-matched requests already go to the candidate: only the default route is mirrored');
    });

    const noMirror: Array<{ what: string; mirrorPercent?: number; candidateReady: boolean; candidateRevision?: string }> = [
      { what: 'while the candidate is not ready and warm', mirrorPercent: 25, candidateReady: false, candidateRevision: 'shop-00002' },
      { what: 'with mirrorPercent 0', mirrorPercent: 0, candidateReady: true, candidateRevision: 'shop-00002' },
      { what: 'without mirrorPercent', candidateReady: true, candidateRevision: 'shop-00002' },
      { what: 'while the candidate has no revision yet', mirrorPercent: 25, candidateReady: true },
    ];
    for (const c of noMirror) {
      it(`mirrors nothing ${c.what}`, () => {
        const app = containerApp({ ingress: { hosts: ['shop.example.com'] }, rollout: { ...(c.mirrorPercent !== undefined ? { mirrorPercent: c.mirrorPercent } : {}) } });
        const vs = renderVirtualService(app, { localGateway: 'gw', candidateReady: c.candidateReady, defaultHost: 'd', stableHost: 's', candidateHost: 'c', stableTag: 'stable', candidateTag: 'candidate', traffic: {}, inForce: [], routesReady: true, ...(c.candidateRevision ? { candidateRevision: c.candidateRevision } : {}) });
        assert.deepEqual(vs.spec?.http?.map((h) => [h.mirror, h.mirrorPercentage]), [[undefined, undefined]]);
      });
    }

    const visibility: Array<{ what: string; gateways?: string[]; exportTo?: string[] }> = [
      { what: 'exports a mesh-bound VirtualService to its own namespace only, so other namespaces\' clients are not rerouted', exportTo: ['.'] },
      { what: 'leaves a gateway-bound VirtualService visible to the gateway\'s proxies', gateways: ['istio-system/public'] },
    ];
    for (const v of visibility) {
      it(v.what, () => {
        const app = containerApp({ ingress: { hosts: ['shop.example.com'], ...(v.gateways ? { gateways: v.gateways } : {}) } });
        const vs = renderVirtualService(app, { localGateway: 'gw', candidateReady: false, defaultHost: 'd', stableHost: 's', candidateHost: 'c', stableTag: 'stable', candidateTag: 'candidate', traffic: {}, inForce: [], routesReady: true });
        assert.deepEqual(vs.spec?.exportTo, v.exportTo);
        new VirtualService(vs).validate();
      });
    }
  });

  describe('LocalModelCache', () => {
    it('renders a cluster-scoped cache named after namespace, app and a hash of both and the model (golden)', () => {
      const app = modelApp();
      assertGolden(golden('local-model-cache'), renderLocalModelCache(app, 'cluster', 'gpu-nodes'));
    });

    for (const size of [0, '0']) {
      it(`renders a model.size of ${JSON.stringify(size)} as it is (the CRD admits it; found by the schema fuzzer, it threw)`, () => {
        const app = modelApp({ model: { ...modelApp().spec.model!, size } });
        assert.equal(renderLocalModelCache(app, 'namespace', 'gpu-nodes').spec.modelSize, String(size));
      });
    }

    it('names a new cache when the model changes', () => {
      const a = modelApp();
      const b = modelApp({ model: { ...a.spec.model!, storageUri: 'gs://models/fraud/v8' } });
      assert.notEqual(modelCacheName(a, 'cluster'), modelCacheName(b, 'cluster'));
    });

    const named = (namespace: string, name: string, storageUri = 'gs://m/x') => {
      const app = modelApp({ model: { format: { name: 'sklearn' }, storageUri, size: '1Gi' } });
      return { ...app, metadata: { ...app.metadata, namespace, name } };
    };
    const pairs: Array<{ what: string; a: ServerlessApp; b: ServerlessApp }> = [
      { what: 'team-a/chat and team/a-chat', a: named('team-a', 'chat'), b: named('team', 'a-chat') },
      { what: 'two apps whose long names share the first 46 characters', a: named('ns', `${'x'.repeat(50)}-one`), b: named('ns', `${'x'.repeat(50)}-two`) },
      { what: 'the same app name in two namespaces', a: named('team-a', 'chat'), b: named('team-b', 'chat') },
    ];
    for (const scope of ['cluster', 'namespace'] as const) {
      for (const p of pairs) {
        it(`gives ${p.what} different ${scope}-scoped cache names`, () => assert.notEqual(modelCacheName(p.a, scope), modelCacheName(p.b, scope)));
      }
    }

    it('keeps cache names within 63 characters, readable and without a trailing dash', () => {
      const name = modelCacheName(named('a'.repeat(63), 'b'.repeat(63)), 'cluster');
      assert.equal(name.length, 63);
      assert.match(name, /^a+-[0-9a-f]{16}$/);
      assert.match(modelCacheName(named('team-a', 'chat'), 'cluster'), /^team-a-chat-[0-9a-f]{16}$/);
    });
  });
});
