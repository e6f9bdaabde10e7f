// One rule for every child kind: a refused app gets no child of any kind (workload, route, host
// claim, revision bounds, warmup, analysis, node model cache), whatever the reason; one that was
// serving keeps what runs, except a route the platform revoked. Shown over generated apps and every
// refusal reason (PROBLEM_REASONS), through the plans the controllers execute.
import assert from 'node:assert/strict';
import { hostClaimFor } from '../api/v1alpha1/hostclaim.ts';
import { PROBLEM_REASONS, type ProblemReason } from '../api/v1alpha1/problem-reasons.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import { renderLocalModelCache } from '../render/local-model-cache.ts';
import { servedAs } from '../testing/admission.ts';
import { containerApp, modelApp } from '../testing/apps.ts';
import { admission, revokedBy, type AdmissionObservation } from './admission.ts';
import { planModelCache, type CacheObservation } from './model-cache-plan.ts';
import type { Plan } from './plan.ts';
import { planReconcile, ROUTE_WITHDRAWN, type ReconcileObservation } from './reconcile.ts';
import { gatewayApiRoute, istioRoute } from './route.ts';
import { knativeWorkload, kserveWorkload, type WorkloadObject } from './workloads.ts';
import { findCondition } from '../util/conditions.ts';

const now = new Date('2026-11-23T09:00:00Z');

/** A small seeded generator (mulberry32): the same apps on every run, many shapes. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Apps of both kinds, with and without ingress (hosts, gateways), cached models, canaries and windows. */
function generatedApps(n: number): ServerlessApp[] {
  const r = random(34);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  return Array.from({ length: n }, (_, i) => {
    const base = r() < 0.5 ? containerApp() : modelApp();
    const hosts = Array.from({ length: 1 + Math.floor(r() * 3) }, (_, h) => `${pick(['shop', 'api', 'fraud', 'prometheus'])}-${i}-${h}.example.com`);
    const spec: ServerlessApp['spec'] = {
      ...base.spec,
      ...(r() < 0.7 ? { ingress: { hosts, ...(r() < 0.6 ? { gateways: [pick(['istio-system/public', 'istio-system/internal'])] } : {}) } } : {}),
      ...(base.spec.model ? { prewarm: { ...base.spec.prewarm, cacheModel: r() < 0.8 } } : {}),
      ...(r() < 0.3 ? { rollout: { canaryPercent: pick([10, 50]) } } : {}),
    };
    return { ...base, metadata: { ...base.metadata, name: `${base.metadata.name}-${i}`, generation: 1 + Math.floor(r() * 5) }, spec };
  });
}

const noHostIssues = { problems: [], conflicts: [], missing: [] };
const observe = (app: ServerlessApp, o: Partial<ReconcileObservation> = {}): ReconcileObservation => ({
  ...servedAs(app, { allowedGateways: ['*'] }), route: istioRoute('gw'), now, cacheScope: 'namespace',
  knative: { workload: knativeWorkload(true) }, kserve: { workload: kserveWorkload(true) }, revisions: [], routes: {}, ...o,
});
const cacheObservation = (a: AdmissionObservation, caches: CacheObservation['caches'] = []): CacheObservation => ({
  request: { namespace: a.app.metadata.namespace, name: a.app.metadata.name }, app: a.app, now, scope: 'namespace', nodeGroup: 'gpu',
  policy: {}, served: true, caches, cacheNamed: (_ns, name) => caches.find((c) => c.metadata.name === name), inferenceService: undefined, quota: undefined, admission: a,
});
const problem = (reason: ProblemReason, field = 'spec'): SpecProblem => ({ reason, field, message: `refused: ${reason}` });

/** What a plan makes or changes: every operation but the removal of a route. */
const makes = (p: Plan) => p.operations.filter((op) => !(op.action === 'remove' && op.id.endsWith('route'))).map((op) => `${op.action} ${op.id}`);

/**
 * Every refusal reason, each as the observation that refuses `app` with it: through the input that
 * really yields it where one does for any app (policy, host verdict, data plane), else through the
 * namespace's budgets (the verdict treats every problem alike: that is what this test shows).
 */
function refusals(app: ServerlessApp): Array<[ProblemReason, Partial<ReconcileObservation>]> {
  const ingress = app.spec.ingress;
  const genuine: Partial<Record<ProblemReason, Partial<ReconcileObservation>>> = {
    ...(ingress?.gateways ? { GatewayNotAllowed: { policy: { allowedGateways: [] } } } : {}),
    ...(ingress ? {
      HostConflict: { hosts: { ...noHostIssues, conflicts: [problem('HostConflict', 'spec.ingress.hosts[0]')] } },
      HostNotAllowed: { policy: { allowedGateways: ['*'], allowedHostSuffixes: ['.elsewhere.test'] } },
      IstioNotInstalled: { unserved: { knative: [], kserve: [], istio: ['virtualservices.networking.istio.io/v1'], gatewayApi: [], llm: [] } },
    } : {}),
    ...(app.spec.model ? { KServeNotInstalled: { unserved: { knative: [], kserve: ['inferenceservices.serving.kserve.io/v1beta1'], istio: [], gatewayApi: [], llm: [] } } } : {}),
    KnativeNotInstalled: { unserved: { knative: ['services.serving.knative.dev/v1'], kserve: [], istio: [], gatewayApi: [], llm: [] } },
    ...(ingress && !ingress.gateways ? { RouterUnsupported: { route: gatewayApiRoute() } } : {}),
  };
  return PROBLEM_REASONS.map((reason) => [reason, genuine[reason] ?? { budgets: [problem(reason)] }]);
}

describe('admission: a refused app has no child of any kind (generated apps x every refusal reason)', () => {
  const apps = generatedApps(40);

  it('the generated apps are admitted as they are (each refusal below is the reason\'s own)', () => {
    for (const app of apps) assert.equal(admission(observe(app)).verdict, 'admitted', app.metadata.name);
  });

  it('an app never admitted: no operation and no effect in its plan, no cache in the model-cache plan', () => {
    let checked = 0;
    for (const app of apps) {
      for (const [reason, refusal] of refusals(app)) {
        const o = observe(app, refusal);
        const verdict = admission(o);
        assert.equal(verdict.verdict, 'refused', `${app.metadata.name} ${reason}`);
        assert.ok(verdict.verdict === 'refused' && verdict.problems.some((p) => p.reason === reason), `${app.metadata.name}: refused for ${reason}`);
        const plan = planReconcile(o);
        assert.deepEqual([plan.operations, plan.effects], [[], []], `${app.metadata.name} ${reason}`);
        assert.deepEqual(planModelCache(cacheObservation(o)).operations, [], `${app.metadata.name} ${reason}: model cache`);
        checked++;
      }
    }
    assert.equal(checked, apps.length * PROBLEM_REASONS.length);
  });

  it('an app that was serving: nothing made or changed, no effect; its node model cache goes (no budget, no disk)', () => {
    for (const app of apps) {
      const live = liveChildren(app);
      const cache = app.spec.model ? [renderLocalModelCache(app, 'namespace', 'gpu')] : [];
      for (const [reason, refusal] of refusals(app)) {
        const o = observe(app, { ...live, ...refusal });
        const plan = planReconcile(o);
        assert.deepEqual([makes(plan), plan.effects], [[], []], `${app.metadata.name} ${reason}`);
        const cachePlan = planModelCache(cacheObservation(o, cache));
        assert.deepEqual(cachePlan.operations.map((op) => `${op.action} ${op.id}`), cache.map((c) => `remove remove/${c.metadata.name}`), `${app.metadata.name} ${reason}: model cache`);
      }
    }
  });

  it('an app claiming its hosts: only the claims; its cache is neither made nor removed until the claims show', () => {
    const app = apps.find((a) => a.spec.model && a.spec.ingress && a.spec.prewarm?.cacheModel)!;
    const o = observe(app, { hosts: { ...noHostIssues, missing: [hostClaimFor(app.spec.ingress!.hosts[0]!, app.metadata.namespace)!] } });
    assert.deepEqual(planReconcile(o).operations.map((op) => op.action), ['claim']);
    assert.deepEqual(planModelCache(cacheObservation(o)).operations, []);
    assert.deepEqual(planModelCache(cacheObservation(o, [renderLocalModelCache(app, 'namespace', 'gpu')])).operations, []);
  });

  it('an admitted app with cacheModel gets its cache: the rule refuses only what it should', () => {
    const app = apps.find((a) => a.spec.model && a.spec.prewarm?.cacheModel)!;
    assert.deepEqual(planModelCache(cacheObservation(observe(app))).operations.map((op) => op.action), ['ensure']);
  });
});

/** What an app that was serving has: its workload and its route, as last written. */
function liveChildren(app: ServerlessApp): Partial<ReconcileObservation> {
  const served = planReconcile(observe(app));
  const desired = (id: string) => served.operations.find((op) => op.id === id)?.desired;
  const workload = desired('workload')!;
  const route = desired('route');
  return {
    ...(app.spec.model ? { kserve: { workload: kserveWorkload(true), live: workload } } : { knative: { workload: knativeWorkload(true), live: workload } }),
    routes: route ? { live: route } : {},
  };
}

describe('admission: what the platform revokes is withdrawn', () => {
  const app = containerApp({ ingress: { hosts: ['shop.example.com', 'api.example.com'], gateways: ['istio-system/public'] } });
  const serving = liveChildren(app);
  const ops = (p: Plan) => p.operations.map((op) => `${op.action} ${op.id}`);

  it('A platform\'s revocation does not take effect: a gateway removed from --allowed-gateways withdraws the route, the workload stays', () => {
    const plan = planReconcile(observe(app, { ...serving, policy: { allowedGateways: ['istio-system/internal'] } }));
    assert.deepEqual(ops(plan), ['remove route']);
    assert.equal(plan.operations[0]!.live, serving.routes!.live);
    const status = plan.report({ operations: [] }).status;
    assert.equal(findCondition(status.conditions, 'Ready')?.reason, 'GatewayNotAllowed');
    const withdrawn = findCondition(status.conditions, ROUTE_WITHDRAWN);
    assert.equal(withdrawn?.status, 'True');
    assert.equal(withdrawn?.reason, 'GatewayNotAllowed');
    assert.match(withdrawn!.message!, /VirtualService shop-routes withdrawn; the workload keeps serving/);
  });

  it('a host another namespace now holds withdraws the route, even when the spec has other problems of the tenant\'s own', () => {
    const conflict = { ...noHostIssues, conflicts: [problem('HostConflict', 'spec.ingress.hosts[1]')] };
    assert.deepEqual(ops(planReconcile(observe(app, { ...serving, hosts: conflict }))), ['remove route']);
    assert.deepEqual(ops(planReconcile(observe(app, { ...serving, hosts: conflict, budgets: [problem('InvalidSpec')] }))), ['remove route']);
  });

  it('a host the platform\'s allowed suffixes no longer cover withdraws the route', () => {
    assert.deepEqual(ops(planReconcile(observe(app, { ...serving, policy: { allowedGateways: ['*'], allowedHostSuffixes: ['.shop.example.com'] } }))), ['remove route']);
  });

  it('a tenant\'s own edit adding a refused gateway or host keeps the route as last written (a bad edit never takes down what runs)', () => {
    const edited = { ...app, spec: { ...app.spec, ingress: { hosts: [...app.spec.ingress!.hosts, 'taken.example.com'], gateways: [...app.spec.ingress!.gateways!, 'istio-system/admin'] } } };
    const plan = planReconcile(observe(edited, {
      ...serving, policy: { allowedGateways: ['istio-system/public'] },
      hosts: { ...noHostIssues, conflicts: [problem('HostConflict', 'spec.ingress.hosts[2]')] },
    }));
    assert.deepEqual(ops(plan), []);
    assert.equal(findCondition(plan.report({ operations: [] }).status.conditions, ROUTE_WITHDRAWN), undefined);
  });

  it('RouteWithdrawn stays True while the app is refused and its route gone (the reconcile the route\'s deletion brings does not drop it)', () => {
    const revoked = { allowedGateways: ['istio-system/internal'] };
    const withdrawnStatus = planReconcile(observe(app, { ...serving, policy: revoked })).report({ operations: [] }).status;
    const after = planReconcile(observe({ ...app, metadata: { ...app.metadata, generation: 2 }, status: withdrawnStatus }, { ...serving, routes: {}, policy: revoked, now: new Date('2030-01-01T00:00:00Z') }));
    assert.deepEqual(ops(after), []);
    const kept = findCondition(after.report({ operations: [] }).status.conditions, ROUTE_WITHDRAWN);
    assert.equal(kept?.status, 'True');
    assert.equal(kept?.reason, 'GatewayNotAllowed');
    assert.equal(kept?.observedGeneration, 2);
    assert.equal(kept?.lastTransitionTime, findCondition(withdrawnStatus.conditions, ROUTE_WITHDRAWN)!.lastTransitionTime);
  });

  it('a withdrawal whose status write is refused as stale (409) is still reported: the next pass, its route gone, writes RouteWithdrawn and announces it once', () => {
    const served = { ...app, status: { phase: 'Stable' as const, versions: { stable: { version: 'a1b2c3d4e5', ready: true, warm: true } } } };
    const revoked = { allowedGateways: ['istio-system/internal'] };
    const first = planReconcile(observe(served, { ...serving, policy: revoked }));
    assert.deepEqual(ops(first), ['remove route']);
    const lost = first.report({ operations: [{ op: first.operations[0]!, outcome: 'removed' }] });
    // The write was refused: planned again from the fresh app, whose status does not say it, and the route gone.
    const again = planReconcile(observe(served, { ...serving, routes: {}, policy: revoked }));
    assert.deepEqual(ops(again), []);
    const report = again.report({ operations: [] });
    const withdrawn = findCondition(report.status.conditions, ROUTE_WITHDRAWN);
    assert.deepEqual([withdrawn?.status, withdrawn?.reason, withdrawn?.message], ['True', 'GatewayNotAllowed', findCondition(lost.status.conditions, ROUTE_WITHDRAWN)!.message], 'the same condition the lost write carried');
    assert.deepEqual(report.eventsFor(true).filter((e) => e.reason === ROUTE_WITHDRAWN).length, 1, 'announced with the write that records it');
    // Recorded: later passes (an edit moving the generation) neither announce it again nor move its transition time.
    const recorded = { ...served, metadata: { ...served.metadata, generation: 3 }, status: report.status };
    const later = planReconcile(observe(recorded, { ...serving, routes: {}, policy: revoked, now: new Date('2030-01-01T00:00:00Z') })).report({ operations: [] });
    assert.deepEqual(later.eventsFor(true).map((e) => e.reason), ['GatewayNotAllowed']);
    assert.equal(findCondition(later.status.conditions, ROUTE_WITHDRAWN)?.lastTransitionTime, withdrawn!.lastTransitionTime);
  });

  it('an app that never served, refused for a gateway the platform does not allow, has nothing withdrawn', () => {
    const report = planReconcile(observe(app, { policy: { allowedGateways: [] } })).report({ operations: [] });
    assert.equal(findCondition(report.status.conditions, ROUTE_WITHDRAWN), undefined);
    assert.deepEqual(report.eventsFor(true).map((e) => e.reason), ['GatewayNotAllowed']);
  });

  it('a host another app of the same namespace holds withdraws nothing: only the platform revokes (a bad edit never takes down what runs)', () => {
    const taken = [problem('HostConflict', 'spec.ingress.hosts[1]')];
    const plan = planReconcile(observe(app, { ...serving, hosts: { ...noHostIssues, problems: taken } }));
    assert.deepEqual(ops(plan), []);
    assert.equal(findCondition(plan.report({ operations: [] }).status.conditions, 'Ready')?.reason, 'HostConflict');
    assert.equal(findCondition(plan.report({ operations: [] }).status.conditions, ROUTE_WITHDRAWN), undefined);
    // The same host claimed by another namespace: the platform's decision, withdrawn.
    assert.deepEqual(ops(planReconcile(observe(app, { ...serving, hosts: { ...noHostIssues, problems: taken, conflicts: [problem('HostConflict', 'spec.ingress.hosts[1]')] } }))), ['remove route']);
  });

  it('served again: the route is back and RouteWithdrawn goes', () => {
    const withdrawnStatus = planReconcile(observe(app, { ...serving, policy: { allowedGateways: [] } })).report({ operations: [] }).status;
    const again = planReconcile(observe({ ...app, status: withdrawnStatus }));
    assert.deepEqual(ops(again), ['ensure workload', 'ensure route']);
    const status = again.report({ operations: again.operations.map((op) => ({ op, outcome: 'written' })) }).status;
    assert.equal(findCondition(status.conditions, ROUTE_WITHDRAWN), undefined);
  });

  it('an HTTPRoute\'s parents and hostnames are read as the VirtualService\'s gateways and hosts', () => {
    const route = gatewayApiRoute().render(app, knativeWorkload(true), { reachable: false }, { entries: [] } as never, { inForce: [], routesReady: true }) as WorkloadObject;
    const problems = [problem('GatewayNotAllowed', 'spec.ingress.gateways[0]'), problem('HostConflict', 'spec.ingress.hosts[1]'), problem('InvalidSpec', 'spec.ingress.hosts[0]')];
    assert.deepEqual(revokedBy(app, problems, route).map((p) => p.reason), ['GatewayNotAllowed', 'HostConflict']);
    assert.deepEqual(revokedBy(app, problems, istioRoute('gw').render(app, knativeWorkload(true), { reachable: false }, { entries: [] } as never, { inForce: [], routesReady: true })).map((p) => p.reason), ['GatewayNotAllowed', 'HostConflict']);
  });
});
