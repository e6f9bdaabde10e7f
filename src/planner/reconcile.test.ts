// planReconcile on single observations: what a plan holds before anything is
// written (problems, claims, guards), and what its report makes of outcomes
// (a refusal, an object the app does not own, a namespace going away).
import assert from 'node:assert/strict';
import { hostClaimFor } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { modelCacheName, type CacheScope } from '../render/local-model-cache.ts';
import { containerApp, llmApp, modelApp } from '../testing/apps.ts';
import { versionOf } from '../rollout/version.ts';
import { llmWorkload, memberRevision, routingMember } from './llm-workload.ts';
import { renderLlmMember } from '../render/llm-inference-service.ts';
import type { WorkloadObject } from './workloads.ts';
import { withStatusWrite, type ExecutedOperation, type Plan, type PlannedEvent, type Refusal } from './plan.ts';
import { CLAIM_RECHECK_MS, nextLookMs, planApp, planReconcile, type AppObservation, type AppPlan, type ReconcileObservation } from './reconcile.ts';
import { gatewayApiRoute, istioRoute } from './route.ts';
import { findCondition } from '../util/conditions.ts';
import { knativeWorkload, kserveWorkload } from './workloads.ts';

const now = new Date('2026-11-23T09:00:00Z');
const observe = (app: ServerlessApp, o: Partial<ReconcileObservation> = {}): ReconcileObservation => ({
  app, now, policy: { allowedGateways: ['*'] }, cacheScope: 'namespace',
  knative: { workload: knativeWorkload(true) }, kserve: { workload: kserveWorkload(true) }, revisions: [],
  hosts: { problems: [], conflicts: [], missing: [] }, unserved: { knative: [], kserve: [], istio: [], gatewayApi: [], llm: [] },
  route: istioRoute('gw'), routes: {}, ...o,
});
const ops = (p: Plan) => p.operations.map((op) => `${op.action} ${op.id}${op.when ? ` when ${op.when.op} ${op.when.outcome.join('|')}` : ''}`);
const refused = (p: Plan, refusal: Refusal): ExecutedOperation[] => p.operations.map((op, i) => (i === 0 ? { op, outcome: 'rejected', refusal } : { op, outcome: 'unchanged' }));
const refusal = (reason: Refusal['reason'], more: Partial<Refusal> = {}): Refusal => ({ kind: 'Service', object: 'team-a/shop', reason, message: 'no', summary: 'refused', retry: reason === 'ApplyRejected', ...more });
const withIngress = containerApp({ ingress: { hosts: ['shop.example.com'] } });

describe('planApp', () => {
  const deletingOf = (app: ServerlessApp) => ({ ...app, metadata: { ...app.metadata, deletionTimestamp: '2026-11-23T08:59:00Z', finalizers: ['serverlessapp.io/model-cache'] } });
  const deleting = deletingOf(withIngress), badGateway = containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] } });
  /** What the controller does with the answer: the farewell's list, or the plan's operations. */
  const answer = (p: AppPlan) => ('farewell' in p ? { forget: p.farewell.forget } : { operations: ops(p.plan) });
  const cases: Array<[string, AppObservation, ReturnType<typeof answer>]> = [
    ['an app the cache no longer holds: its in-memory work and what status and metrics remember of it go, nothing is written', { leaving: true }, { forget: ['work', 'records'] }],
    ['an app being deleted, observed as leaving (nothing but the app read): the same farewell', { leaving: true, app: deleting }, { forget: ['work'] }],
    ['an app being deleted: its in-memory work goes, nothing is written (its children go with it), its records stay while it is listed', observe(deleting), { forget: ['work'] }],
    ['an app being deleted with a spec problem: still only a farewell, no Ready=False written', observe(deletingOf(badGateway), { policy: { allowedGateways: [] } }), { forget: ['work'] }],
    ['an app to serve: its plan', observe(withIngress), { operations: ['ensure workload', 'ensure route'] }],
    ['an app to serve with a spec problem: its plan, which touches no child', observe(badGateway, { policy: { allowedGateways: [] } }), { operations: [] }],
  ];
  for (const [name, o, want] of cases) {
    it(name, () => assert.deepEqual(answer(planApp(o)), want));
  }
});

describe('the model cache status names (from the cache scope)', () => {
  // A cluster-scoped cache only of the namespace's own storage path (storageUriShared, validation.ts).
  const own = ['gs://models/{namespace}/'];
  const isolated = modelApp({ model: { format: { name: 'sklearn', version: '1' }, storageUri: 'gs://models/ml/fraud/v7', size: '2Gi' } });
  const cases: Array<[string, ServerlessApp, CacheScope, string[], string | undefined]> = [
    ['a cached model, namespaced caches: the app\'s LocalModelNamespaceCache', modelApp(), 'namespace', [], modelCacheName(modelApp(), 'namespace')],
    ['a cached model, cluster caches, the namespace\'s own storage path: the app\'s LocalModelCache', isolated, 'cluster', own, modelCacheName(isolated, 'cluster')],
    ['a cached model, cluster caches, a storage path any namespace may name: none (ModelCacheNotIsolated)', modelApp(), 'cluster', [], undefined],
    ['a model not cached: none', modelApp({ prewarm: { replicas: 1 } }), 'namespace', [], undefined],
    ['a container: none', containerApp(), 'namespace', [], undefined],
  ];
  for (const [name, app, cacheScope, allowedStorageUriPrefixes, want] of cases) {
    it(name, () => {
      const p = planReconcile(observe(app, { cacheScope, policy: { allowedGateways: ['*'], maxModelSizeBytes: 2 ** 40, allowedStorageUriPrefixes } }));
      const r = p.report({ operations: p.operations.map((op) => ({ op, outcome: 'unchanged' })) });
      assert.equal(r.status.modelCache, want);
    });
  }
});

describe('planReconcile', () => {
  const cases: Array<[string, ReconcileObservation, string[], number | undefined]> = [
    ['first start: the workload and the route, no guard', observe(withIngress), ['ensure workload', 'ensure route'], undefined],
    ['no ingress: the workload only', observe(containerApp()), ['ensure workload'], undefined],
    ['a spec problem: no child touched', observe(containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] } }), { policy: { allowedGateways: [] } }), [], undefined],
    ['a data plane not served: no child touched', observe(withIngress, { unserved: { knative: [], kserve: [], istio: ['virtualservices.networking.istio.io/v1'], gatewayApi: [], llm: [] } }), [], undefined],
    ['another namespace holds a host: no claim, no child', observe(withIngress, { hosts: { problems: [], conflicts: [{ reason: 'HostConflict', field: 'spec.ingress.hosts[0]', message: 'held' }], missing: [hostClaimFor('shop.example.com', 'team-a')!] } }), [], undefined],
    ['a free host: claimed first, and nothing else until the claim shows', observe(withIngress, { hosts: { problems: [], conflicts: [], missing: [hostClaimFor('shop.example.com', 'team-a')!] } }), ['claim host-claim/shop.example.com'], CLAIM_RECHECK_MS],
    ['our VirtualService of the app\'s name (before 0.2): removed', observe(withIngress, { routes: { legacy: { apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'shop', namespace: 'team-a' } } } }), ['ensure workload', 'remove legacy-route', 'ensure route'], undefined],
  ];
  for (const [name, o, want, requeue] of cases) {
    it(name, () => {
      const p = planReconcile(o);
      assert.deepEqual([ops(p), p.requeueAfterMs], [want, requeue]);
    });
  }

  it('a spec problem keeps the phase, says Ready=False naming the field, and writes at once', () => {
    const app = containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] } });
    const p = planReconcile(observe({ ...app, status: { phase: 'Stable' } }, { policy: { allowedGateways: [] } }));
    const r = p.report({ operations: [] });
    assert.deepEqual([p.decision, p.effects], [undefined, []]);
    assert.equal(r.status.phase, 'Stable');
    assert.deepEqual([r.write, r.retry, r.eventsFor(true).map((e) => e.reason)], [{ mode: 'now' }, undefined, ['GatewayNotAllowed']]);
    assert.match(findCondition(r.status.conditions, 'Ready')!.message, /spec\.ingress\.gateways\[0\]/);
  });

  it('refuses on spec, touching no child, an app whose spec the cache kept unparsed for its size (finding: large apps crash the operator)', () => {
    const app: ServerlessApp = { ...containerApp(), spec: {} as ServerlessApp['spec'], specTooLarge: { bytes: 1_344_926, limit: 65_536 } };
    const p = planReconcile(observe(app));
    const r = p.report({ operations: [] });
    assert.deepEqual([p.operations, p.effects, p.problems.map((x) => `${x.reason} ${x.field}`)], [[], [], ['InvalidSpec spec']]);
    assert.match(findCondition(r.status.conditions, 'Ready')!.message, /1344926 bytes of JSON, more than the 65536/);
  });

  it('an object the app does not own: shown at once, not retried, and the plan\'s requeue is kept', () => {
    const app = containerApp({ scaling: { minScale: 0, windows: [{ name: 'day', schedule: '0 8 * * *', duration: '8h', minScale: 2 }] } });
    const p = planReconcile(observe(app));
    const r = p.report({ operations: refused(p, refusal('NotOwned')) });
    assert.deepEqual([r.write, r.retry, findCondition(r.status.conditions, 'Ready')?.reason], [{ mode: 'now' }, undefined, 'NotOwned']);
    assert.ok(p.requeueAfterMs !== undefined && nextLookMs(p) !== undefined, 'the next window transition is still looked at');
  });

  it('a refused write: shown at once and retried with backoff', () => {
    const p = planReconcile(observe(withIngress));
    const r = p.report({ operations: refused(p, refusal('ApplyRejected')) });
    assert.deepEqual([r.write, r.retry?.reason, r.eventsFor(true).map((e) => e.reason), r.metrics.rejectedKind], [{ mode: 'now' }, 'ApplyRejected', ['ApplyRejected'], 'Service']);
  });

  describe('a HostClaim create the API server refuses (admission, RBAC)', () => {
    const claiming = () => planReconcile(observe(withIngress, { hosts: { problems: [], conflicts: [], missing: [hostClaimFor('shop.example.com', 'team-a')!] } }));
    const claimRefusal = (more: Partial<Refusal> = {}) => refusal('ApplyRejected', { kind: 'HostClaim', object: 'shop.example.com', message: 'denied by policy hostclaims', summary: 'the API server refused the HostClaim shop.example.com: denied', ...more });

    it('is a refusal like any other write: Ready=False ApplyRejected at once, a Warning, the rejection metric, a retry with backoff', () => {
      const p = claiming();
      const r = p.report({ operations: refused(p, claimRefusal()) });
      const ready = findCondition(r.status.conditions, 'Ready');
      assert.deepEqual([r.write, r.retry?.kind, r.eventsFor(true).map((e) => `${e.type} ${e.reason}`), r.metrics.rejectedKind, ready?.status, ready?.reason],
        [{ mode: 'now' }, 'HostClaim', ['Warning ApplyRejected'], 'HostClaim', 'False', 'ApplyRejected']);
      assert.match(ready!.message, /HostClaim shop\.example\.com: denied by policy hostclaims/);
      assert.deepEqual([findCondition(r.status.conditions, 'Reconciling')?.reason, findCondition(r.status.conditions, 'Stalled')], ['ApplyRejected', undefined], 'in progress while retried, not stalled');
    });

    it('a claim made, or lost to a concurrent create, is no refusal: nothing announced, counted or retried', () => {
      const p = claiming();
      for (const operations of [p.operations.map((op) => ({ op, outcome: 'written' as const })), p.operations.map((op) => ({ op, outcome: 'unchanged' as const }))]) {
        const r = p.report({ operations });
        assert.deepEqual([r.retry, r.eventsFor(true), r.metrics.rejectedKind, findCondition(r.status.conditions, 'Reconciling')?.reason], [undefined, [], undefined, 'Claiming']);
      }
    });

    it('a refusal in a namespace being deleted: nothing to write or retry', () => {
      const p = claiming();
      const r = p.report({ operations: refused(p, claimRefusal({ namespaceTerminating: true })) });
      assert.deepEqual([r.write, r.retry, r.eventsFor(true), r.metrics.rejectedKind], [{ mode: 'none' }, undefined, [], undefined]);
    });
  });

  it('a namespace being deleted: nothing to write or retry', () => {
    const p = planReconcile(observe(withIngress));
    const r = p.report({ operations: refused(p, refusal('ApplyRejected', { namespaceTerminating: true })) });
    assert.deepEqual([r.write, r.retry, r.eventsFor(true)], [{ mode: 'none' }, undefined, []]);
  });

  it('a new app\'s first reconcile reports at once: Ready Unknown and Reconciling, the generation observed', () => {
    const live = { apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'shop' }, status: { conditions: [{ type: 'Ready', status: 'Unknown' }] } };
    const p = planReconcile(observe(containerApp(), { knative: { workload: knativeWorkload(true), live } }));
    const r = p.report({ operations: p.operations.map((op) => ({ op, outcome: 'unchanged' })) });
    assert.equal(r.write.mode, 'coalesce');
    const defaulted = { observedGeneration: 0, phase: 'Pending' };
    assert.ok(r.write.mode === 'coalesce' && JSON.stringify(r.write.significant(r.status)) !== JSON.stringify(r.write.significant(defaulted)), 'differs from the default status in what is written at once');
    const said = (type: string) => { const c = findCondition(r.status.conditions, type); return c && [c.status, c.reason, c.observedGeneration]; };
    assert.deepEqual([r.status.observedGeneration, said('Ready'), said('Reconciling'), said('Stalled')], [3, ['Unknown', 'Deploying', 3], ['True', 'Deploying', 3], undefined]);
    assert.equal(nextLookMs(p, 250), 250, 'the earlier of the plan\'s requeue and the status writer\'s');
  });

  it('a new app whose hosts are claimed first: its first status says so; an app reported on before is left for the next pass', () => {
    const claiming = { hosts: { problems: [], conflicts: [], missing: [hostClaimFor('shop.example.com', 'team-a')!] } };
    const p = planReconcile(observe(withIngress, claiming));
    const r = p.report({ operations: [] });
    const said = (type: string) => { const c = findCondition(r.status.conditions, type); return c && [c.status, c.reason]; };
    assert.deepEqual([r.write.mode, r.status.phase, said('Ready'), said('Reconciling')], ['coalesce', 'Pending', ['Unknown', 'Claiming'], ['True', 'Claiming']]);
    const reported = { ...withIngress, status: r.status };
    assert.deepEqual(planReconcile(observe(reported, claiming)).report({ operations: [] }).write, { mode: 'none' });
  });

  describe('with the gateway-api router', () => {
    const gwApp = containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['gw/public'] } });
    const vs = { apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'shop-routes', namespace: 'team-a' } };
    const accepted = (generation: number, observed = generation) => ({
      apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name: 'shop-routes', namespace: 'team-a', generation },
      status: { parents: [{ parentRef: { name: 'public', namespace: 'gw' }, conditions: [{ type: 'Accepted', status: 'True', observedGeneration: observed }, { type: 'ResolvedRefs', status: 'True', observedGeneration: observed }] }] },
    }) as unknown as ReconcileObservation['routes']['live'];

    it('writes an HTTPRoute; the VirtualService a router switch leaves stays until the HTTPRoute is admitted, then goes once it is unchanged', () => {
      const before = planReconcile(observe(gwApp, { route: gatewayApiRoute(), routes: { retired: vs } }));
      assert.deepEqual(ops(before), ['ensure workload', 'ensure route']);
      assert.equal(before.operations[1]!.kind.kind, 'HTTPRoute');
      const after = planReconcile(observe(gwApp, { route: gatewayApiRoute(), routes: { live: accepted(1), retired: vs } }));
      assert.deepEqual(ops(after), ['ensure workload', 'ensure route', 'remove retired-route when route unchanged']);
      assert.equal(after.operations[2]!.kind.kind, 'VirtualService');
    });

    const refused: Array<[string, ServerlessApp, string]> = [
      ['a mesh-only route (no gateway): refused on spec.ingress.gateways', withIngress, 'spec.ingress.gateways'],
      ['retries: refused on spec.ingress.retries (experimental channel only in v1.6.3)', containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['gw/public'], retries: { attempts: 2 } } }), 'spec.ingress.retries'],
    ];
    for (const [name, app, field] of refused) {
      it(name, () => {
        const p = planReconcile(observe(app, { route: gatewayApiRoute() }));
        assert.deepEqual([p.operations, p.problems.map((x) => [x.reason, x.field])], [[], [['RouterUnsupported', field]]]);
      });
    }

    it('needs the Gateway API CRDs, not Istio\'s', () => {
      const p = planReconcile(observe(gwApp, { route: gatewayApiRoute(), unserved: { knative: [], kserve: [], istio: ['virtualservices.networking.istio.io/v1'], gatewayApi: [], llm: [] } }));
      assert.deepEqual(ops(p), ['ensure workload', 'ensure route']);
      const q = planReconcile(observe(gwApp, { route: gatewayApiRoute(), unserved: { knative: [], kserve: [], istio: [], gatewayApi: ['httproutes.gateway.networking.k8s.io/v1'], llm: [] } }));
      assert.deepEqual(q.problems.map((x) => x.reason), ['GatewayAPINotInstalled']);
    });
  });
});

describe('an app report\'s Events go with its status write (an Event belongs to the transition it reports)', () => {
  const opened: PlannedEvent = { type: 'Normal', reason: 'WindowOpened', message: 'scale window day opened' };
  const cases: Array<[string, PlannedEvent[], boolean, PlannedEvent[]]> = [
    ['recorded with the write', [opened], true, [opened]],
    ['none without it (not needed, held or failed)', [opened], false, []],
    ['none to record, written or not', [], true, []],
  ];
  for (const [what, events, wrote, want] of cases) it(what, () => assert.deepEqual(withStatusWrite(events).eventsFor(wrote), want));

  it('a spec problem\'s Warning is recorded only with the status that shows it', () => {
    const p = planReconcile(observe(containerApp({ ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] } }), { policy: { allowedGateways: [] } }));
    const r = p.report({ operations: [] });
    assert.deepEqual([r.eventsFor(true).map((e) => e.reason), r.eventsFor(false)], [['GatewayNotAllowed'], []]);
  });
});

describe('an LLM app\'s plan (model.serving llm)', () => {
  const llm = { workload: llmWorkload(), members: [], objects: [] };
  it('writes one LLMInferenceService for its first version and no route of ours, whatever the router: KServe routes it', () => {
    for (const route of [istioRoute('gw'), gatewayApiRoute()]) {
      const p = planReconcile(observe(llmApp(), { llm, route, policy: { allowedGateways: ['*'] } }));
      assert.deepEqual(p.problems, []);
      assert.deepEqual(ops(p), [`ensure llm/chat-${versionOf(llmApp().spec)}`]);
      assert.equal((p.operations[0]!.desired!.spec as { router: { route: { weight: number } } }).router.route.weight, 100);
    }
  });

  it('is served on KServe\'s own ingress Gateway by path without spec.ingress, under either router', () => {
    const app = llmApp({ ingress: undefined });
    const p = planReconcile(observe(app, { llm, route: gatewayApiRoute() }));
    assert.deepEqual(p.problems, []);
    assert.deepEqual((p.operations[0]!.desired!.spec as { router: { gateway: unknown } }).router.gateway, {});
  });

  it('is refused, naming model.serving, where KServe\'s LLMInferenceService is not installed: nothing written', () => {
    const p = planReconcile(observe(llmApp(), { llm, unserved: { knative: [], kserve: [], istio: [], gatewayApi: [], llm: ['llminferenceservices.serving.kserve.io/v1alpha2'] } }));
    assert.deepEqual(p.problems.map((x) => [x.reason, x.field]), [['LLMInferenceServiceNotInstalled', 'spec.model.serving']]);
    assert.deepEqual(ops(p), []);
  });
});

describe('an LLM app\'s members across an edit', () => {
  const v1 = llmApp({ prewarm: undefined });
  const v2 = llmApp({ prewarm: undefined, model: { ...v1.spec.model!, storageUri: 'hf://Qwen/Qwen2.5-14B-Instruct' }, rollout: { canaryPercent: 100 } });
  const [h1, h2] = [versionOf(v1.spec), versionOf(v2.spec)];
  /** A live member as KServe left it: Ready with a ready replica, in the group with `weight`, rendered from `app`'s version. */
  const member = (app: ServerlessApp, weight: number, created: string): WorkloadObject => {
    const obj = renderLlmMember(app, { version: versionOf(app.spec), weight, replicas: 2, stopped: false }) as unknown as WorkloadObject;
    return { ...obj, metadata: { ...obj.metadata, creationTimestamp: created, uid: `uid-${versionOf(app.spec)}` }, status: { conditions: [{ type: 'Ready', status: 'True' }, { type: 'RouterReady', status: 'True' }], workloads: { primary: { readyReplicas: 2 } }, router: { group: { name: 'chat', members: [{ name: `chat-${h1}`, weight: 100 }, { name: `chat-${h2}`, weight: 0 }] } } } as WorkloadObject['status'] };
  };
  const objects = [member(v1, 100, '2026-11-23T08:00:00Z'), member(v2, 0, '2026-11-23T08:30:00Z')];
  const observed = (app: ServerlessApp) => observe({ ...app, status: { phase: 'Stable', versions: { stable: { version: h1, revision: `chat-${h1}` } } } as ServerlessApp['status'] }, {
    llm: { workload: llmWorkload(), members: objects.map(memberRevision), objects, live: routingMember(objects)! },
  });
  const uri = (p: Plan, member: string) => ((p.operations.find((op) => op.id === `llm/${member}`)?.desired?.spec as { model: { uri: string } }).model.uri);

  it('keeps each version\'s own model: the stable member is never re-rendered from the edited spec', () => {
    const p = planReconcile(observed(v2));
    assert.equal(uri(p, `chat-${h1}`), v1.spec.model!.storageUri);
    assert.equal(uri(p, `chat-${h2}`), v2.spec.model!.storageUri);
  });

  it('writes the member gaining weight first, so the group never passes through weights that add up to 0 (Istio answers 500)', () => {
    const p = planReconcile(observed(v2));
    const weights = p.operations.filter((op) => op.action === 'ensure').map((op) => [op.id, (op.desired!.spec as { router: { route: { weight: number } } }).router.route.weight]);
    assert.deepEqual(weights, [[`llm/chat-${h2}`, 100], [`llm/chat-${h1}`, 0]], 'the candidate to 100 before the stable to 0');
  });
});
