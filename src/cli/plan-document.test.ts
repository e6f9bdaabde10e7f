import assert from 'node:assert/strict';
import { assertGolden } from '../../test/support/golden.ts';
import type { ServerlessApp, ServerlessAppSpec } from '../api/v1alpha1/serverlessapp.ts';
import { parseConfig, validationPolicy } from '../config.ts';
import type { Revision } from '../planner/revisions.ts';
import type { WorkloadObject } from '../planner/workloads.ts';
import { APP_LABEL, VERSION_LABEL } from '../render/metadata.ts';
import { versionOf } from '../rollout/version.ts';
import { exitCode, planChildren, planDocument, type DryRun, type PlanInput, type PlanDocument } from './plan-document.ts';
import { renderPlan } from './plan-view.ts';

const dir = new URL('testdata/plan/', import.meta.url);
const NOW = new Date('2026-11-22T12:00:00Z');
const UID = 'a5a5a5a5-0000-4000-8000-000000000001';
const SETTINGS: PlanInput['settings'] = {
  source: 'deployment serverlessapp-system/serverlessapp-operator',
  policy: validationPolicy(parseConfig([], {})), localGateway: 'knative-local-gateway.istio-system.svc.cluster.local',
  inPlaceBounds: true, clusterLocal: true, cacheScope: 'namespace',
};

const SPEC: ServerlessAppSpec = {
  container: { image: 'ghcr.io/acme/shop:1' },
  prewarm: { replicas: 1, warmup: { path: '/healthz', count: 3 } },
  rollout: { steps: [20, 50], interval: '5m', progressDeadline: '10m' },
  scaling: { minScale: 0, maxScale: 10, windows: [{ name: 'business-hours', schedule: '0 8 * * 1-5', duration: '10h', timeZone: 'Europe/Berlin', minScale: 2 }] },
};

/** A stable app whose children are exactly what the operator renders (a converged app). */
function converged(): Omit<PlanInput, 'edited' | 'source'> & { live: ServerlessApp } {
  const version = versionOf(SPEC);
  const live: ServerlessApp = {
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
    metadata: { name: 'shop', namespace: 'demo', uid: UID, generation: 3 },
    spec: SPEC,
    status: {
      observedGeneration: 3, phase: 'Stable',
      versions: { stable: { version, revision: 'shop-00001', image: 'ghcr.io/acme/shop:1', summary: 'shop:1', ready: true, warm: true, replicas: 1 } },
      traffic: [{ revision: 'shop-00001', percent: 100, tag: 'stable' }],
    },
  };
  const revision: Revision = {
    metadata: { name: 'shop-00001', namespace: 'demo', labels: { [APP_LABEL]: 'shop', [VERSION_LABEL]: version, 'serving.knative.dev/service': 'shop' }, creationTimestamp: '2026-11-20T10:00:00Z' },
    status: { conditions: [{ type: 'Ready', status: 'True' }], actualReplicas: 1 },
  };
  let input: Omit<PlanInput, 'edited' | 'source'> & { live: ServerlessApp } = { now: NOW, live, routes: {}, revisions: [revision], settings: SETTINGS };
  // Two passes: the first renders the workload, the second the revision's bounds against it.
  for (let pass = 0; pass < 2; pass++) {
    const { operations } = planChildren({ ...input, source: 'live', edited: live });
    const workload = operations.find((o) => o.id === 'workload')!.desired!;
    const bounds = operations.find((o) => o.id === 'revision-bounds/shop-00001')?.annotations ?? {};
    const knative: WorkloadObject = {
      ...workload, metadata: { ...workload.metadata, uid: 'k5k5' },
      status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True' }], url: 'http://shop.demo.svc.cluster.local', traffic: [{ revisionName: 'shop-00001', percent: 100, tag: 'stable' }] },
    };
    input = { ...input, knative, revisions: [{ ...revision, metadata: { ...revision.metadata, annotations: bounds } }] };
  }
  return input;
}

function edit(spec: ServerlessAppSpec, generation = 4): PlanInput {
  const base = converged();
  return { ...base, source: 'file', edited: { ...base.live, metadata: { ...base.live.metadata, generation }, spec } };
}

/** Every write the dry runs accept, with no object back (the diff is then against the fields the operator states). */
function plan(input: PlanInput, dryRuns: Record<string, DryRun> = {}): PlanDocument {
  const planned = planChildren(input);
  return planDocument(input, planned, new Map(planned.operations.map((o) => [o.id, dryRuns[o.id] ?? { result: 'accepted' }])));
}

function golden(name: string, doc: PlanDocument): void {
  assertGolden(new URL(`${name}.txt`, dir), renderPlan(doc));
  assertGolden(new URL(`${name}.json`, dir), `${JSON.stringify(doc, null, 2)}\n`);
}

describe('kubectl sapp plan (the plan document and its text)', () => {
  it('re-applying the same YAML: no changes, exit code 0', () => {
    const base = converged();
    const doc = plan({ ...base, source: 'file', edited: base.live });
    assert.equal(doc.changes, false, JSON.stringify(doc.operations.filter((o) => o.change !== 'none'), null, 2));
    assert.equal(exitCode(doc), 0);
    assert.equal(doc.rollout?.newVersion, false);
    golden('no-op', doc);
  });

  it('a new image starts a canary: the workload changes, the steps are listed with their waits, exit code 2', () => {
    const doc = plan(edit({ ...SPEC, container: { image: 'ghcr.io/acme/shop:2' } }));
    assert.equal(exitCode(doc), 2);
    assert.deepEqual(doc.spec.diff, [{ path: 'spec.container.image', from: 'ghcr.io/acme/shop:1', to: 'ghcr.io/acme/shop:2' }]);
    const workload = doc.operations.find((o) => o.id === 'workload')!;
    assert.equal(workload.change, 'update');
    assert.ok(workload.diff.some((c) => c.path === 'spec.template.spec.containers[0].image' && c.to === 'ghcr.io/acme/shop:2'), JSON.stringify(workload.diff));
    assert.equal(doc.rollout?.newVersion, true);
    assert.deepEqual(doc.rollout?.steps.map((s) => s.weight), [20, 50, 100]);
    assert.match(doc.rollout!.beforeTraffic.join('\n'), /prewarm: 1 ready replica[\s\S]*warmup: 3 successful GET \/healthz[\s\S]*progress deadline \(10m\)/);
    golden('canary', doc);
  });

  it('a window edit: the next transitions in the window\'s time zone, beside the ones it replaces', () => {
    const windows = [{ name: 'business-hours', schedule: '0 7 * * 1-5', duration: '12h', timeZone: 'Europe/Berlin', minScale: 3 }];
    const doc = plan(edit({ ...SPEC, scaling: { ...SPEC.scaling, windows } }));
    assert.equal(exitCode(doc), 2);
    assert.equal(doc.rollout?.newVersion, false, 'scale windows are no new version');
    assert.equal(doc.scaling?.next[0]?.local, '2026-11-23 07:00 Europe/Berlin');
    assert.equal(doc.scaling?.next[0]?.minScale, 3);
    assert.equal(doc.scaling?.before?.next[0]?.local, '2026-11-23 08:00 Europe/Berlin');
    golden('window-edit', doc);
  });

  it('a spec the platform refuses: the operator\'s own message, no child operation, exit code 1', () => {
    const doc = plan(edit({ ...SPEC, container: { image: 'ghcr.io/acme/shop:2', serviceAccountName: 'admin' } }));
    assert.equal(exitCode(doc), 1);
    assert.deepEqual(doc.operations, []);
    assert.equal(doc.refusals[0]?.by, 'operator');
    assert.equal(doc.refusals[0]?.field, 'spec.container.serviceAccountName');
    golden('refused-policy', doc);
  });

  it('a child write Knative\'s admission refuses: shown with its message, exit code 1', () => {
    const message = 'admission webhook "validation.webhook.serving.knative.dev" denied the request: validation failed: expected 0 <= 1000 <= 100: spec.template.metadata.annotations.autoscaling.knative.dev/target-utilization-percentage';
    const doc = plan(edit({ ...SPEC, container: { image: 'ghcr.io/acme/shop:2' } }), { workload: { result: 'refused', message } });
    assert.equal(exitCode(doc), 1);
    assert.deepEqual(doc.refusals.map((r) => [r.by, r.kind, r.message]), [['api-server', 'Service.serving.knative.dev', message]]);
  });

  it('an edit the API server refuses (schema, CEL): its message, and nothing planned', () => {
    const input = { ...edit(SPEC), appRefused: 'ServerlessApp.serverlessapp.io "shop" is invalid: spec.rollout.steps[0]: Invalid value: 0: should be greater than or equal to 1' };
    const doc = plan(input);
    assert.equal(exitCode(doc), 1);
    assert.deepEqual(doc.operations, []);
    assert.equal(doc.rollout, undefined);
  });

  it('plan NAME on a canary under way: the remaining steps at their earliest times', () => {
    const base = converged();
    const v2 = { ...SPEC, container: { image: 'ghcr.io/acme/shop:2' } };
    const live: ServerlessApp = {
      ...base.live, spec: v2, metadata: { ...base.live.metadata, generation: 4 },
      status: { ...base.live.status!, phase: 'Canary', canary: { version: versionOf(v2), weight: 20, step: 0, stepStartedAt: '2026-11-22T11:58:00Z', startedAt: '2026-11-22T11:55:00Z' } },
    };
    const doc = plan({ ...base, live, source: 'live', edited: live });
    assert.deepEqual(doc.rollout?.steps.map((s) => s.at), ['2026-11-22T11:58:00.000Z', '2026-11-22T12:03:00.000Z', '2026-11-22T12:08:00.000Z']);
  });
});
