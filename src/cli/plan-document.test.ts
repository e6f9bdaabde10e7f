import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { assertGolden } from '../../test/support/golden.ts';
import { hostClaimFor, type HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp, ServerlessAppSpec } from '../api/v1alpha1/serverlessapp.ts';
import { parseConfig, validationPolicy } from '../config.ts';
import type { Revision } from '../planner/revisions.ts';
import type { WorkloadObject } from '../planner/workloads.ts';
import { APP_LABEL, VERSION_LABEL } from '../render/metadata.ts';
import { versionOf } from '../rollout/version.ts';
import { EFFECTS_NOTE, exitCode, planChildren, planDocument, type DryRun, type PlanInput, type PlanDocument } from './plan-document.ts';
import { PLAN_USAGE } from './args.ts';
import type { NamespaceView } from './plan-namespace.ts';
import { everyRouteRef } from '../planner/route.ts';
import { apiVersionOf } from '../util/kinds.ts';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../util/managed-by.ts';
import { renderPlan } from './plan-view.ts';

const dir = new URL('testdata/plan/', import.meta.url);
const NOW = new Date('2026-11-22T12:00:00Z');
const UID = 'a5a5a5a5-0000-4000-8000-000000000001';
const SETTINGS: PlanInput['settings'] = {
  source: 'deployment serverlessapp-system/serverlessapp-operator',
  policy: validationPolicy(parseConfig([], {})), localGateway: 'knative-local-gateway.istio-system.svc.cluster.local',
  router: 'istio', inPlaceBounds: true, clusterLocal: true, cacheScope: 'namespace',
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

  const pausedCases: Array<[string, ServerlessAppSpec['rollout'], RegExp]> = [
    ['paused with canaryPercent 100: the operator holds the pause (promotion waits for it to be removed)', { paused: true, canaryPercent: 100 }, /^paused \(rollout\.paused\) at 0%/],
    ['paused with promote of this version: the promotion overrides the pause', { paused: true, promote: versionOf({ ...SPEC, container: { image: 'ghcr.io/acme/shop:2' } }) }, /^promotion of /],
  ];
  for (const [what, rollout, summary] of pausedCases) {
    it(`a new image ${what}`, () => {
      const doc = plan(edit({ ...SPEC, container: { image: 'ghcr.io/acme/shop:2' }, rollout: { ...SPEC.rollout, ...rollout } }));
      assert.match(doc.rollout!.summary, summary);
    });
  }

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

  it('SLO gates: the plan shows the burn-rate gates, the continuous checks and the bake; for an app in a release freeze, that the edit will wait and why', () => {
    const slo = { objective: 99.9, errorRatio: '(sum(increase(requests_total{version="{{version}}",code=~"5.."}[{{window}}])) or vector(0)) / sum(increase(requests_total{version="{{version}}"}[{{window}}]))', freezeBelow: 25 };
    const gatedSpec: ServerlessAppSpec = { ...SPEC, container: { image: 'ghcr.io/acme/shop:2' }, rollout: { ...SPEC.rollout, bake: '30m', analysis: { prometheus: { provider: 'main' }, slo } } };
    const withProvider = (input: PlanInput): PlanInput => ({ ...input, settings: { ...SETTINGS, policy: { ...SETTINGS.policy, analysis: { providers: [{ name: 'main', url: 'http://prometheus.monitoring:9090' }], allowAddress: false } } } });
    const doc = plan(withProvider(edit(gatedSpec)));
    assert.equal(doc.refused, false);
    const stable = doc.rollout!.stable!.version;
    assert.deepEqual(doc.rollout!.gates, [
      'objective 99.9% over 720h; the candidate\'s burn rate is read every 30s during each step and the bake',
      'fails at once (BurnRateExceeded) when it burns faster than 14.4x over both 1h and 5m',
      'fails at once (BurnRateExceeded) when it burns faster than 6x over both 6h and 30m',
      'release freeze: a new version waits while less than 25% of the error budget remains (rollout.releaseOverride lets one version through)',
    ]);
    assert.match(doc.rollout!.bake!, new RegExp(`^after promotion, a bake of 30m: \\w+ serves all traffic while ${stable} is held warm at 0% and the analysis keeps running every 30s; a failure in it moves all traffic back to ${stable} at once`));
    assert.match(doc.rollout!.steps[1]!.after, /^5m after 20%, if its burn rate stays under the gates \(read every 30s\)$/);
    assert.match(doc.rollout!.onFailure, /or a burn-rate gate fires/);
    golden('slo-gated', doc);

    const input = withProvider(edit(gatedSpec));
    const message = 'release frozen: less of the error budget remains than the freeze policy\'s 25% over 720h; candidate 0123456789 waits at 0%';
    // The live app's status (which the edited file carries over) says an earlier candidate is frozen.
    const inFreeze = (spec: ServerlessAppSpec): PlanInput => {
      const live = input.live!;
      const status = { ...live.status, release: { version: '0123456789', frozen: true, freezeBelow: 25, message } };
      return { ...input, live: { ...live, status }, edited: { ...input.edited, spec, status } };
    };
    const frozen = plan(inFreeze(gatedSpec));
    assert.equal(frozen.rollout!.summary, `the edit will wait: ${message}`);
    const overridden = plan(inFreeze({ ...gatedSpec, rollout: { ...gatedSpec.rollout, releaseOverride: { version: versionOf(gatedSpec), by: 'alice', reason: 'hotfix' } } }));
    assert.doesNotMatch(overridden.rollout!.summary, /will wait/, 'an override naming the version lets the edit through');
  });

  it('sticky sessions: the plan says the weights count new sessions, shows the cookie rules and how sessions move at the next step', () => {
    const sticky = { ...SPEC, container: { image: 'ghcr.io/acme/shop:2' }, ingress: { hosts: ['shop.example.com'] }, rollout: { ...SPEC.rollout, stickiness: { cookieName: 'shop-v' } } };
    const doc = plan(edit(sticky));
    const sessions = doc.rollout!.sessions!;
    assert.match(sessions.summary, /^sticky \(cookie shop-v, kept 1h\): weights count new sessions; a session stays on the version it started on/);
    const [stable, version] = [doc.rollout!.stable!.version, doc.rollout!.version.version];
    assert.deepEqual(sessions.rules, [
      'responses to requests without a valid cookie set shop-v=<the version reached>; Max-Age=3600; Path=/; HttpOnly; SameSite=Lax',
      `Cookie shop-v=${stable} → stable ${stable}`,
      `Cookie shop-v=${version} → ${version} while it has weight, else stable`,
      `Cookie shop-v=<any other version> → stable ${stable}, whose cookie replaces it`,
      'no cookie → split by weight as a new session',
    ]);
    assert.equal(sessions.next, `at 20%: 20% of new sessions start on ${version}; sessions under way stay on their version`);
    const rollback = plan(edit({ ...sticky, rollout: { canaryPercent: 0, stickiness: { cookieName: 'shop-v' } } })).rollout!.sessions!;
    assert.equal(rollback.next, `the candidate's sessions return to stable ${stable} at their next request`);
    const promote = plan(edit({ ...sticky, rollout: { canaryPercent: 100, stickiness: { cookieName: 'shop-v' } } })).rollout!.sessions!;
    assert.equal(promote.next, `at promotion every session moves to ${version}; ${stable}'s cookie is then ignored and replaced`);
    golden('sticky-canary', doc);
    assert.ok(!plan(edit({ ...SPEC, container: { image: 'ghcr.io/acme/shop:2' } })).rollout!.sessions, 'not without stickiness');
    const route = doc.operations.find((o) => o.kind.startsWith('VirtualService.'));
    assert.ok(route, `a VirtualService is planned: ${doc.operations.map((o) => o.kind).join(', ')}`);
    assert.equal(route.change, 'create');
  });

  it('warmup alone holds the new version at one ready replica before traffic, and says so', () => {
    const doc = plan(edit({ ...SPEC, container: { image: 'ghcr.io/acme/shop:2' }, prewarm: { warmup: { path: '/healthz' } } }));
    assert.match(doc.rollout!.beforeTraffic.join('\n'), /prewarm: 1 ready replica before any traffic\nwarmup: /);
  });

  it('a first version waits to be warm only when prewarm holds it (a lead time alone does not)', () => {
    const first = (prewarm: ServerlessAppSpec['prewarm']) => {
      const { status: _, ...created } = edit({ ...SPEC, prewarm }).edited;
      return plan({ now: NOW, source: 'file', edited: created, routes: {}, revisions: [], settings: SETTINGS }).rollout!.steps;
    };
    assert.deepEqual(first({ leadTime: '5m' }), [{ weight: 100, after: 'once ready' }]);
    assert.deepEqual(first({ replicas: 2 }), [{ weight: 100, after: 'once ready and warm' }]);
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

  it('a window edit beside a busier window: the edited window\'s own next transitions, and the ones they replace', () => {
    const daily = { name: 'daily', schedule: '0 6 * * *', duration: '2h', timeZone: 'UTC', minScale: 1 };
    const weekly = { name: 'weekly-batch', schedule: '0 20 * * 3', duration: '3h', timeZone: 'America/New_York', minScale: 4 };
    const base = converged();
    const live = { ...base.live, spec: { ...SPEC, scaling: { ...SPEC.scaling, windows: [daily, weekly] } } };
    const doc = plan({ ...base, live, source: 'file', edited: { ...live, metadata: { ...live.metadata, generation: 4 }, spec: { ...live.spec, scaling: { ...live.spec.scaling, windows: [daily, { ...weekly, schedule: '0 21 * * 3' }] } } } });
    assert.ok(doc.scaling!.next.every((t) => t.window === 'daily'), 'the next four transitions are all the daily window\'s');
    const edited = doc.scaling!.edited!;
    assert.deepEqual(edited.map((w) => [w.window, w.change]), [['weekly-batch', 'changed']]);
    assert.deepEqual(edited[0]!.next.map((t) => [t.local, t.change]), [['2026-11-25 21:00 America/New_York', 'open'], ['2026-11-26 00:00 America/New_York', 'close']]);
    assert.deepEqual(edited[0]!.replaces.map((t) => [t.local, t.change]), [['2026-11-25 20:00 America/New_York', 'open'], ['2026-11-25 23:00 America/New_York', 'close']]);
    assert.equal(edited[0]!.next[0]!.minScale, 4, 'the bounds in force once it opens');
    assert.match(renderPlan(doc), /weekly-batch \(changed\):\n\s+2026-11-25 21:00 America\/New_York  weekly-batch opens: min 4, max 10[\s\S]*replaces:\n\s+2026-11-25 20:00 America\/New_York/);
  });

  it('a message from the cluster with terminal escape codes is printed escaped, as kubectl prints it', () => {
    const doc = plan(edit({ ...SPEC, container: { image: 'ghcr.io/acme/shop:2' } }), { workload: { result: 'refused', message: 'admission webhook denied the request: \x1b]0;owned\x07\x1b[2Jbad\rworse' } });
    const text = renderPlan(doc);
    assert.ok(!/[\x00-\x09\x0b-\x1f]/.test(text), JSON.stringify(text));
    assert.ok(text.includes('denied the request: ^[]0;owned\\x07^[[2Jbad\\rworse'), text);
  });

  const unservable: Array<[string, Partial<NonNullable<NonNullable<ServerlessAppSpec['scaling']>['windows']>[number]>, RegExp]> = [
    ['a time zone that does not exist', { timeZone: 'Europe/Berlni' }, /timeZone/],
    ['a cron expression that cannot fire', { schedule: '0 25 * * *' }, /schedule/],
  ];
  for (const [what, change, field] of unservable) {
    it(`${what}: a plan document with the operator's refusal, exit code 1 (no exception)`, () => {
      const windows = [{ ...SPEC.scaling!.windows![0]!, ...change }];
      const doc = plan(edit({ ...SPEC, scaling: { ...SPEC.scaling, windows } }));
      assert.equal(exitCode(doc), 1);
      assert.ok(doc.refusals.some((r) => r.by === 'operator' && field.test(r.field ?? '')), JSON.stringify(doc.refusals));
      assert.match(renderPlan(doc), /Result:  refused/);
    });
  }

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

describe('kubectl sapp plan: host claims and the namespace\'s budgets, as the operator observes them', () => {
  const claim = (host: string, namespace: string, created = '2026-11-01T00:00:00Z'): HostClaim => ({ ...hostClaimFor(host, namespace)!, metadata: { ...hostClaimFor(host, namespace)!.metadata, creationTimestamp: created } });
  const withHosts = (...hosts: string[]) => edit({ ...SPEC, ingress: { hosts } });

  it('a host another namespace claims: refused with the operator\'s HostConflict message, exit code 1', () => {
    const doc = plan({ ...withHosts('shop.example.com'), namespace: { claims: [claim('shop.example.com', 'other')], apps: [] } });
    assert.equal(exitCode(doc), 1);
    assert.deepEqual(doc.operations, []);
    assert.deepEqual(doc.refusals.map((r) => [r.by, r.reason, r.message]), [['operator', 'HostConflict', 'spec.ingress.hosts[0]: host shop.example.com is claimed by another namespace; ask the platform team']]);
  });

  it('a wildcard another namespace claims above the host: refused as the operator refuses it', () => {
    const doc = plan({ ...withHosts('shop.example.com'), namespace: { claims: [claim('*.example.com', 'other')], apps: [] } });
    assert.equal(doc.refusals[0]?.reason, 'HostConflict');
  });

  it('a host no one holds: the operator\'s first pass claims it and writes nothing else', () => {
    const doc = plan({ ...withHosts('shop.example.com'), namespace: { claims: [], apps: [] } });
    assert.equal(exitCode(doc), 2);
    assert.deepEqual(doc.operations.map((o) => [o.id, o.change]), [['host-claim/shop.example.com', 'create']]);
  });

  it('under the operator\'s gateway-api router the plan writes an HTTPRoute and keeps the Istio route until the HTTPRoute is admitted (make before break)', () => {
    const input = edit({ ...SPEC, ingress: { hosts: ['shop.example.com'], gateways: ['istio-system/public'] } });
    const retired: WorkloadObject = { apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'shop-routes', namespace: 'demo', uid: 'v5v5' } };
    const doc = plan({ ...input, settings: { ...SETTINGS, router: 'gateway-api', policy: { ...SETTINGS.policy, allowedGateways: ['istio-system/public'] } }, routes: { retired }, namespace: { claims: [claim('shop.example.com', 'demo')], apps: [] } });
    const route = doc.operations.find((o) => o.id === 'route');
    assert.equal(route?.kind, 'HTTPRoute.gateway.networking.k8s.io', JSON.stringify(doc.operations));
    assert.equal(route?.change, 'create');
    assert.equal(doc.operations.find((o) => o.id === 'retired-route'), undefined, 'the VirtualService stays until the HTTPRoute is admitted');
  });

  it('a host the namespace holds: the children are planned as usual', () => {
    const doc = plan({ ...withHosts('shop.example.com'), namespace: { claims: [claim('shop.example.com', 'demo')], apps: [] } });
    assert.ok(doc.operations.some((o) => o.id === 'route' && o.change === 'create'), JSON.stringify(doc.operations));
    assert.equal(doc.refused, false);
  });

  it('a new host past the namespace\'s host-claim budget: refused with HostClaimQuotaExceeded naming spec.ingress.hosts', () => {
    const max = SETTINGS.policy.maxHostClaimsPerNamespace;
    const held = Array.from({ length: max }, (_, i) => claim(`h${i}.example.com`, 'demo'));
    const doc = plan({ ...withHosts('shop.example.com'), namespace: { claims: held, apps: [] } });
    assert.equal(exitCode(doc), 1);
    assert.deepEqual(doc.refusals.map((r) => [r.reason, r.field]), [['HostClaimQuotaExceeded', 'spec.ingress.hosts']]);
  });

  it('a host an earlier app of the namespace routes: refused with the operator\'s HostConflict', () => {
    const earlier: ServerlessApp = { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'older', namespace: 'demo', creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { ...SPEC, ingress: { hosts: ['shop.example.com'] } } };
    const input = withHosts('shop.example.com');
    const doc = plan({ ...input, edited: { ...input.edited, metadata: { ...input.edited.metadata, creationTimestamp: '2026-06-01T00:00:00Z' } }, namespace: { claims: [claim('shop.example.com', 'demo')], apps: [earlier] } });
    assert.match(doc.refusals[0]?.message ?? '', /already routed by ServerlessApp older in this namespace/);
  });

  it('a host a newer app of the namespace serves: an older app\'s edit naming it is refused, as the operator refuses it (the app serving a host keeps it)', () => {
    const newer: ServerlessApp = { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'newer', namespace: 'demo', creationTimestamp: '2026-06-01T00:00:00Z' }, spec: { ...SPEC, ingress: { hosts: ['shop.example.com'] } } };
    const [kind, name] = everyRouteRef(newer)[0]!;
    const serving: WorkloadObject = { apiVersion: apiVersionOf(kind), kind: kind.kind, metadata: { name, namespace: 'demo', labels: { [MANAGED_BY_LABEL]: MANAGED_BY } }, spec: { hosts: ['shop.example.com'] } };
    const input = withHosts('shop.example.com');
    const older = { ...input, edited: { ...input.edited, metadata: { ...input.edited.metadata, creationTimestamp: '2026-01-01T00:00:00Z' } } };
    const view = (routeNamed?: NamespaceView['routeNamed']) => ({ claims: [claim('shop.example.com', 'demo')], apps: [newer], ...(routeNamed ? { routeNamed } : {}) });
    assert.deepEqual(plan({ ...older, namespace: view() }).refusals, [], 'no route read: the first by creation holds it');
    const doc = plan({ ...older, namespace: view((k, n) => (k === kind && n === name ? serving : undefined)) });
    assert.match(doc.refusals[0]?.message ?? '', /already routed by ServerlessApp newer in this namespace/);
  });

  it('the namespace\'s other apps change nothing when their hosts do not overlap: a thousand of them plan as the one that matters', () => {
    const app = (name: string, hosts: string[]): ServerlessApp => ({ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name, namespace: 'demo', creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { ...SPEC, ingress: { hosts } } });
    const crowd = Array.from({ length: 1000 }, (_, i) => app(`app-${i}`, i % 4 ? [] : [`app-${i}.example.com`, `*.app-${i}.example.org`]));
    const input = withHosts('shop.example.com', '*.shop.example.org');
    const base = {
      ...input, edited: { ...input.edited, metadata: { ...input.edited.metadata, creationTimestamp: '2026-06-01T00:00:00Z' } },
      settings: { ...SETTINGS, policy: { ...SETTINGS.policy, allowWildcardHosts: true } },
    };
    const claims = [claim('shop.example.com', 'demo'), claim('*.shop.example.org', 'demo')];
    const earlier = app('older', ['SHOP.example.com.']);
    const alone = plan({ ...base, namespace: { claims, apps: [earlier] } });
    assert.deepEqual(alone.refusals.map((r) => r.message), ['spec.ingress.hosts[0]: host shop.example.com is already routed by ServerlessApp older in this namespace; a host belongs to one app (remove it there first)']);
    assert.deepEqual(plan({ ...base, namespace: { claims, apps: [...crowd.slice(0, 500), earlier, ...crowd.slice(500)] } }), alone);
    assert.deepEqual(plan({ ...base, namespace: { claims, apps: crowd } }), plan({ ...base, namespace: { claims, apps: [] } }));
  });

  it('a model cache past the namespace\'s budget beside earlier apps\': refused with ModelCacheQuotaExceeded', () => {
    // 90Gi each: two fit the default 200Gi, a third does not.
    const modelSpec: ServerlessAppSpec = { model: { format: { name: 'sklearn' }, storageUri: 'gs://models/iris/v1', size: '90Gi' }, prewarm: { cacheModel: true } };
    const earlier = (name: string): ServerlessApp => ({ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name, namespace: 'demo', creationTimestamp: '2026-01-01T00:00:00Z' }, spec: modelSpec });
    const input = edit(modelSpec);
    const later = { ...input.edited, metadata: { ...input.edited.metadata, creationTimestamp: '2026-06-01T00:00:00Z' } };
    const beside1 = plan({ ...input, edited: later, namespace: { apps: [earlier('a')] } });
    assert.ok(!beside1.refusals.some((r) => r.reason === 'ModelCacheQuotaExceeded'), JSON.stringify(beside1.refusals));
    const beside2 = plan({ ...input, edited: later, namespace: { apps: [earlier('a'), earlier('b')] } });
    assert.deepEqual(beside2.refusals.map((r) => [r.reason, r.field]), [['ModelCacheQuotaExceeded', 'spec.model.size']]);
  });

  it('a cluster-scoped cache of a model other namespaces can name: none written, ModelCacheNotIsolated as the operator says it, the app itself not refused', () => {
    const modelSpec: ServerlessAppSpec = { model: { format: { name: 'sklearn' }, storageUri: 'gs://models/demo/iris/v1', size: '1Gi' }, prewarm: { cacheModel: true } };
    const cluster = (prefixes: string[]): PlanInput['settings'] => ({ ...SETTINGS, cacheScope: 'cluster', policy: { ...SETTINGS.policy, allowedStorageUriPrefixes: prefixes } });
    const shared = plan({ ...edit(modelSpec), settings: cluster(['gs://models/{namespace}/', 'gs://models/']) });
    assert.deepEqual([shared.modelCache?.change, shared.modelCache?.to, shared.modelCache?.refused?.reason], ['none', undefined, 'ModelCacheNotIsolated']);
    assert.match(shared.modelCache!.refused!.message, /the allowed prefix gs:\/\/models\/ lets an app of any namespace name/);
    assert.equal(shared.refused, false, 'the app rolls out without the cache');
    assert.match(renderPlan(shared), /Model cache: none written \(ModelCacheNotIsolated\): a cluster-scoped LocalModelCache of gs:\/\/models\/demo\/iris\/v1/);
    const own = plan({ ...edit(modelSpec), settings: cluster(['gs://models/{namespace}/']) });
    assert.deepEqual([own.modelCache?.change, own.modelCache?.refused], ['create', undefined]);
    assert.match(own.modelCache!.to!, /^demo-shop-/);
  });

  it('what the reads could not check is in the plan\'s notes, and a planned warmup says it may run already', () => {
    const base = converged();
    const v2 = { ...SPEC, container: { image: 'ghcr.io/acme/shop:2' } };
    const live: ServerlessApp = {
      ...base.live, spec: v2, metadata: { ...base.live.metadata, generation: 4 },
      status: { ...base.live.status!, phase: 'Canary', versions: { ...base.live.status!.versions, candidate: { version: versionOf(v2), revision: 'shop-00002', image: 'ghcr.io/acme/shop:2', summary: 'shop:2', ready: true, warm: false, replicas: 1 } }, canary: { version: versionOf(v2), weight: 0, step: 0, startedAt: '2026-11-22T11:55:00Z' } },
    };
    const doc = plan({ ...base, live, source: 'live', edited: live, notes: ['host claims: this user may not read HostClaims'] });
    assert.equal(doc.notes[0], 'host claims: this user may not read HostClaims');
    if (doc.effects.some((e) => e.startsWith('send warmup'))) assert.ok(doc.notes.includes(EFFECTS_NOTE), JSON.stringify(doc.notes));
    assert.match(renderPlan(doc), /Not checked:\n {2}- host claims: this user may not read HostClaims/);
  });
});

describe('the plan examples users read match the plan\'s output', () => {
  const goldenOf = (name: string) => readFileSync(new URL(`${name}.txt`, dir), 'utf8');
  const indented = (text: string) => text.split('\n').map((l) => (l ? `  ${l}` : l)).join('\n');

  it('kubectl sapp plan --help shows the canary edit and the no-op exactly as the golden files have them', () => {
    for (const name of ['canary', 'no-op']) assert.ok(PLAN_USAGE.includes(indented(goldenOf(name))), `the help's ${name} example differs from testdata/plan/${name}.txt`);
  });

  it('the README\'s examples are excerpts of the same golden files (each part between "..." lines, in order)', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('#### See an edit before it applies: `kubectl sapp plan`'));
    const blocks = [...section.matchAll(/```text\n([\s\S]*?)```/g)].slice(0, 2).map((m) => m[1]!);
    assert.equal(blocks.length, 2, 'the README shows two plan examples');
    for (const [block, name] of [[blocks[0]!, 'canary'], [blocks[1]!, 'no-op']] as const) {
      const golden = goldenOf(name);
      let from = 0;
      for (const part of block.split(/^ *\.\.\.\n/m).filter((p) => p.length)) {
        const at = golden.indexOf(part, from);
        assert.ok(at >= 0, `the README's ${name} example has a part not in testdata/plan/${name}.txt at or after offset ${from}:\n${part}`);
        from = at + part.length;
      }
    }
  });
});
