import assert from 'node:assert/strict';
import { containerApp, modelApp } from '../testing/apps.ts';
import type { Revision } from './revisions.ts';
import { knativeWorkload, kserveWorkload, madeBy, type Workload, type WorkloadObject } from './workloads.ts';

const revision = (name: string, labels: Record<string, string>, creationTimestamp: string): Revision =>
  ({ metadata: { name, namespace: 'team-a', labels, creationTimestamp } });

const ksvc = (uid: string, creationTimestamp: string, conditions: WorkloadObject['status'] = {}): WorkloadObject =>
  ({ apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'shop', uid, creationTimestamp }, status: conditions });

describe('workloads: revisions an earlier workload of the same name left behind', () => {
  const knative = knativeWorkload(true);
  const kserve = kserveWorkload(true);
  const shop = containerApp();
  const fraud = modelApp();

  it('a Knative revision belongs to the live Service with its UID, whatever its name', () => {
    const live = ksvc('uid-2', '2026-11-22T10:00:05Z');
    const old = revision('shop-1f67968b', { 'serving.knative.dev/service': 'shop', 'serving.knative.dev/serviceUID': 'uid-1' }, '2026-11-22T09:00:00Z');
    const current = revision('shop-1f67968b', { 'serving.knative.dev/service': 'shop', 'serving.knative.dev/serviceUID': 'uid-2' }, '2026-11-22T10:00:06Z');
    assert.equal(knative.isStale(old, shop, live), true);
    assert.equal(knative.isStale(current, shop, live), false);
  });

  it('every revision of a Knative Service that does not exist (any more) is stale', () => {
    const old = revision('shop-1f67968b', { 'serving.knative.dev/service': 'shop', 'serving.knative.dev/serviceUID': 'uid-1' }, '2026-11-22T09:00:00Z');
    assert.equal(knative.isStale(old, shop, undefined), true);
  });

  it('a predictor revision created before the live InferenceService is stale (KServe reuses <app>-predictor-00001)', () => {
    const live: WorkloadObject = { apiVersion: 'serving.kserve.io/v1beta1', kind: 'InferenceService', metadata: { name: 'fraud', creationTimestamp: '2026-11-22T10:00:05Z' } };
    const labels = { 'serving.knative.dev/service': 'fraud-predictor' };
    assert.equal(kserve.isStale(revision('fraud-predictor-00001', labels, '2026-11-22T09:00:00Z'), fraud, live), true);
    assert.equal(kserve.isStale(revision('fraud-predictor-00001', labels, '2026-11-22T10:00:05Z'), fraud, live), false);
  });

  it('leaves the other kind\'s revisions alone', () => {
    const predictor = revision('shop-predictor-00001', { 'serving.knative.dev/service': 'shop-predictor' }, '2026-11-22T09:00:00Z');
    assert.equal(knative.isStale(predictor, shop, undefined), false);
    const container = revision('fraud-1f67968b', { 'serving.knative.dev/service': 'fraud' }, '2026-11-22T09:00:00Z');
    assert.equal(kserve.isStale(container, fraud, undefined), false);
  });
});

describe('workloads: the Knative Service that runs the app\'s revisions', () => {
  const cases: { it: string; workload: Workload; app: ReturnType<typeof containerApp>; service: string; host: string }[] = [
    { it: 'a container app\'s is its own, named after the app', workload: knativeWorkload(true), app: containerApp(), service: 'shop', host: 'shop.team-a.svc.cluster.local' },
    { it: 'a model app\'s is KServe\'s predictor, <app>-predictor', workload: kserveWorkload(true), app: modelApp(), service: 'fraud-predictor', host: 'fraud-predictor.ml.svc.cluster.local' },
  ];
  for (const c of cases) {
    it(c.it, () => {
      assert.equal(c.workload.knativeServiceName(c.app), c.service);
      assert.equal(c.workload.hosts(c.app).defaultHost, c.host);
    });
  }

  it('a revision is made by the Knative Service its label names, and by no other', () => {
    const r = revision('fraud-predictor-00001', { 'serving.knative.dev/service': 'fraud-predictor' }, '2026-11-22T09:00:00Z');
    assert.equal(madeBy(r, 'fraud-predictor'), true);
    assert.equal(madeBy(r, 'fraud'), false);
    assert.equal(madeBy(revision('fraud-00001', {}, '2026-11-22T09:00:00Z'), 'fraud'), false);
  });
});

describe('workloads: whether the host the VirtualService points at answers', () => {
  const condition = (type: string, status: string) => ({ type, status });

  it('a Knative Service: its Ready (its Route reports traffic before the ingress is programmed)', () => {
    const notYet = ksvc('u', '', { conditions: [condition('Ready', 'Unknown')], traffic: [{ revisionName: 'shop-1', percent: 100 }] });
    const summary = knativeWorkload(true).summarize(notYet, () => 'v1');
    assert.equal(summary.routeReady, false);
    assert.equal(summary.traffic.length, 1);
    assert.equal(knativeWorkload(true).summarize(ksvc('u', '', { conditions: [condition('Ready', 'True')] }), () => 'v1').routeReady, true);
  });

  it('an InferenceService: its predictor, not its own Ready (which also waits for KServe\'s ingress)', () => {
    const isvc: WorkloadObject = {
      apiVersion: 'serving.kserve.io/v1beta1', kind: 'InferenceService', metadata: { name: 'fraud' },
      status: { conditions: [condition('Ready', 'False'), condition('IngressReady', 'False'), condition('PredictorReady', 'True')] },
    };
    const summary = kserveWorkload(true).summarize(isvc, () => 'v1');
    assert.equal(summary.ready, false);
    assert.equal(summary.routeReady, true);
  });
});

describe('workloads: the cluster-local hosts the VirtualService rewrites to', () => {
  it('a Knative Service: its own host, and its candidate tag\'s', () => {
    assert.deepEqual(knativeWorkload(true).hosts(containerApp()), { defaultHost: 'shop.team-a.svc.cluster.local', stableHost: 'stable-shop.team-a.svc.cluster.local', candidateHost: 'candidate-shop.team-a.svc.cluster.local', stableTag: 'stable', candidateTag: 'candidate' });
  });

  it('an InferenceService: its predictor\'s host, and the tag KServe gives its latest revision', () => {
    assert.deepEqual(kserveWorkload(true).hosts(modelApp()), { defaultHost: 'fraud-predictor.ml.svc.cluster.local', stableHost: 'prev-fraud-predictor.ml.svc.cluster.local', candidateHost: 'latest-fraud-predictor.ml.svc.cluster.local', stableTag: 'prev', candidateTag: 'latest' });
  });
});

describe('workloads: Knative visibility', () => {
  const plan = { phase: 'Pending' as const, events: [], initial: { version: 'v1', ready: false, warm: false },
    promoted: { status: 'False' as const, reason: 'x', message: 'x' }, progressing: { status: 'False' as const, reason: 'x', message: 'x' } };
  const ctx = (app: ReturnType<typeof containerApp>) => ({ app, version: 'v1', plan, effective: { minScale: 0 }, prewarmReplicas: 0, revisions: [] });
  const cases: Array<[string, WorkloadObject, string | undefined]> = [
    ['a Knative Service, cluster-local by default', knativeWorkload(true).render(ctx(containerApp())), 'cluster-local'],
    ['an InferenceService, cluster-local by default (KServe passes the label to its Knative Service)', kserveWorkload(true).render(ctx(modelApp())), 'cluster-local'],
    ['a Knative Service when the platform chose external', knativeWorkload(true, false).render(ctx(containerApp())), undefined],
    ['an InferenceService when the platform chose external', kserveWorkload(true, false).render(ctx(modelApp())), undefined],
  ];
  for (const [what, rendered, want] of cases) {
    it(`labels ${what}: ${want ?? 'no label'}`, () => {
      assert.equal(rendered.metadata.labels?.['networking.knative.dev/visibility'], want);
      assert.ok(rendered.metadata.labels?.['app.kubernetes.io/managed-by'], 'the app\'s own labels stay');
    });
  }
});

describe('workloads: a Knative revision is born with its bounds (Knative >= 1.21)', () => {
  const app = containerApp();
  const annotationsOf = (o: WorkloadObject) => (o.spec as { template: { metadata: { name: string; annotations: Record<string, string> } } }).template.metadata;
  const render = (minScale: number, prewarmReplicas: number) => {
    const name = knativeWorkload(true).desiredRevision(app, 'v1', { minScale: 0 }, []);
    const plan = { phase: 'Pending' as const, events: [], initial: { version: 'v1', ...(name ? { revision: name } : {}), ready: false, warm: false },
      promoted: { status: 'False' as const, reason: 'x', message: 'x' }, progressing: { status: 'False' as const, reason: 'x', message: 'x' } };
    return annotationsOf(knativeWorkload(true).render({ app, version: 'v1', plan, effective: { minScale, maxScale: 10 }, prewarmReplicas, revisions: [] }));
  };

  const cases: Array<[string, number, number, string]> = [
    ['the bounds in force', 0, 0, '0'],
    ['a window\'s minimum', 2, 0, '2'],
    ['a prewarm buffer above the bounds while it is not warm', 0, 3, '3'],
  ];
  for (const [what, minScale, buffer, want] of cases) {
    it(`starts with ${what}: min-scale ${want}`, () => {
      const t = render(minScale, buffer);
      assert.equal(t.annotations['autoscaling.knative.dev/min-scale'], want);
      assert.equal(t.annotations['autoscaling.knative.dev/max-scale'], '10');
    });
  }

  it('the bounds do not name the revision: a later window keeps the same revision', () => {
    assert.equal(render(0, 0).name, render(2, 3).name);
  });
});
