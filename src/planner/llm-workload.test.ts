import assert from 'node:assert/strict';
import { assertGolden } from '../../test/support/golden.ts';
import { childName, memberName, memberService, renderLlmMember, RETIRED_AT_ANNOTATION, STOP_ANNOTATION } from '../render/llm-inference-service.ts';
import type { RolloutPlan } from '../rollout/canary.ts';
import { versionOf } from '../rollout/version.ts';
import { scaleOf } from '../scaling/windows.ts';
import { llmApp } from '../testing/apps.ts';
import { VERSION_LABEL } from '../render/metadata.ts';
import { groupTraffic, MAX_RETAINED, memberPlan, memberRevision, observeMember, routingMember } from './llm-workload.ts';
import type { Revision } from './revisions.ts';
import type { WorkloadObject } from './workloads.ts';

const golden = (name: string) => new URL(`../render/testdata/${name}.golden.yaml`, import.meta.url).pathname;
const NOW = new Date('2030-01-07T08:00:00Z');
const app = llmApp();
const V1 = '1111111111', V2 = '2222222222', V3 = '3333333333';
const m = (version: string) => memberName('chat', version);

/** A live member as the cache holds it. */
function live(version: string, o: { ready?: boolean; replicas?: number; stopped?: boolean; retiredAt?: string; created?: string; group?: Array<{ name: string; weight: number; stopped?: boolean }> } = {}): WorkloadObject {
  const annotations = { ...(o.stopped ? { [STOP_ANNOTATION]: 'true' } : {}), ...(o.retiredAt ? { [RETIRED_AT_ANNOTATION]: o.retiredAt } : {}) };
  return {
    apiVersion: 'serving.kserve.io/v1alpha2', kind: 'LLMInferenceService',
    metadata: { name: m(version), namespace: 'ml', creationTimestamp: o.created ?? '2030-01-07T07:00:00Z', labels: { 'serverlessapp.io/app': 'chat', [VERSION_LABEL]: version }, ...(Object.keys(annotations).length ? { annotations } : {}) },
    status: {
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True', ...(o.ready === false ? { reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' } : {}) }, { type: 'RouterReady', status: 'True' }],
      ...({ workloads: { primary: { readyReplicas: o.replicas ?? 2 } }, ...(o.group ? { router: { group: { name: 'chat', members: o.group } } } : {}) } as object),
    },
  };
}
const revs = (...ms: WorkloadObject[]): Revision[] => ms.map(memberRevision);
const effective = scaleOf(app.spec, NOW);
const plan = (p: Partial<RolloutPlan>): RolloutPlan => ({
  phase: 'Canary', events: [], promoted: { status: 'False', reason: 'x', message: 'x' }, progressing: { status: 'True', reason: 'x', message: 'x' }, ...p,
});
const weights = (mp: ReturnType<typeof memberPlan>) => Object.fromEntries(mp.members.map((x) => [x.version, `${x.weight}${x.stopped ? ' stopped' : ''}`]));

describe('LLM apps: one LLMInferenceService per live version in the app\'s group', () => {
  it('renders a member with the app\'s served name, replicas, GPU, hosts and gateways, and its weight in the group (golden)', () => {
    const obj = renderLlmMember(app, { version: versionOf(app.spec), weight: 25, replicas: 2, stopped: false });
    assertGolden(golden('llm-inference-service'), obj);
  });

  it('stops a member by KServe\'s annotation and records since when it is retained', () => {
    const obj = renderLlmMember(app, { version: V1, weight: 0, replicas: 2, stopped: true, retiredAt: '2030-01-07T07:30:00Z' });
    assert.deepEqual(obj.metadata.annotations, { [STOP_ANNOTATION]: 'true', [RETIRED_AT_ANNOTATION]: '2030-01-07T07:30:00Z' });
    assert.equal(renderLlmMember(app, { version: V1, weight: 100, replicas: 2, stopped: false }).metadata.annotations, undefined);
  });

  it('runs one replica when the app sets no minScale (no activator wakes an LLM), and a window\'s minScale when one is open', () => {
    assert.equal(scaleOf(llmApp({ scaling: {} }).spec, NOW).minScale, 1);
    const windowed = llmApp({ scaling: { minScale: 1, windows: [{ name: 'night', schedule: '0 20 * * *', duration: '12h', timeZone: 'UTC', minScale: 0 }] } });
    assert.equal(scaleOf(windowed.spec, new Date('2030-01-07T22:00:00Z')).minScale, 0);
  });

  it('names Services as KServe does (knative.dev/pkg kmeta.ChildName): the suffix kept, a long parent cut and hashed', () => {
    assert.equal(memberService('chat-1111111111'), 'chat-1111111111-kserve-workload-svc');
    const long = `${'a'.repeat(50)}-${V1}`;
    const name = childName(long, '-kserve-workload-svc');
    // md5("aaaa...a-1111111111") in hex, computed with Go's crypto/md5 the same way.
    assert.equal(name.length, 63);
    assert.match(name, /^a{11}[0-9a-f]{32}-kserve-workload-svc$/);
  });

  describe('reading members back', () => {
    it('is ready only when KServe says Ready and a replica is ready, and never failed by KServe\'s own reasons', () => {
      assert.deepEqual(observeMember(memberRevision(live(V1))), { name: m(V1), version: V1, ready: true, replicas: 2 });
      const starting = observeMember(memberRevision(live(V2, { ready: false, replicas: 0 })));
      assert.deepEqual([starting.ready, starting.failed, starting.waiting], [false, undefined, 'MinimumReplicasUnavailable: Deployment does not have minimum availability.']);
      assert.equal(observeMember(memberRevision(live(V2, { replicas: 0 }))).ready, false, 'Ready with no ready replica: not routable');
      assert.equal(observeMember(memberRevision(live(V2, { stopped: true }))).ready, false, 'a stopped member is not ready, even before KServe says so');
      // A weight change rewrites the routes: KServe's Ready is False until istiod accepts their new generation.
      const rewritten = live(V2);
      rewritten.status!.conditions = [{ type: 'Ready', status: 'False', reason: 'HTTPRoutesNotReady', message: 'The following HTTPRoutes are not ready: ...' }, { type: 'WorkloadsReady', status: 'True' }];
      assert.equal(observeMember(memberRevision(rewritten)).ready, true, 'its workloads serve: the rollout does not start over');
      rewritten.status!.conditions = [{ type: 'Ready', status: 'False', reason: 'MinimumReplicasUnavailable' }, { type: 'WorkloadsReady', status: 'False' }];
      assert.equal(observeMember(memberRevision(rewritten)).ready, false);
    });

    it('takes the split from the oldest member that is not stopped (its route wins in Istio), weights as proportions', () => {
      const a = live(V1, { created: '2030-01-07T07:00:00Z', group: [{ name: m(V1), weight: 75 }, { name: m(V2), weight: 25 }] });
      const b = live(V2, { created: '2030-01-07T07:30:00Z', group: [{ name: m(V1), weight: 75 }, { name: m(V2), weight: 25 }] });
      const old = live(V3, { created: '2030-01-07T06:00:00Z', stopped: true });
      assert.equal(routingMember([b, old, a])?.metadata.name, m(V1));
      const versionOf = (r: string) => r.slice('chat-'.length);
      assert.deepEqual(groupTraffic(a, versionOf), [{ revision: m(V1), percent: 75, version: V1 }, { revision: m(V2), percent: 25, version: V2 }]);
      // KServe lists only routable members: a stable member alone at weight 75 serves everything.
      assert.deepEqual(groupTraffic(live(V1, { group: [{ name: m(V1), weight: 75 }] }), versionOf), [{ revision: m(V1), percent: 100, version: V1 }]);
      assert.deepEqual(groupTraffic(live(V1, { group: [{ name: m(V1), weight: 100 }, { name: m(V3), weight: 50, stopped: true }] }), versionOf).map((t) => t.percent), [100, 0]);
      assert.deepEqual(groupTraffic(live(V1), versionOf), [], 'no group reported yet: nothing in force');
    });
  });

  describe('memberPlan: the members and their weights for a rollout plan', () => {
    const rows: Array<{ name: string; p: Partial<RolloutPlan>; live: WorkloadObject[]; want: Record<string, string>; remove?: string[] }> = [
      { name: 'the first version takes everything, ready or not (KServe always routes a member to itself)', p: { initial: { version: V1, revision: m(V1), ready: false, warm: false } }, live: [], want: { [V1]: '100' } },
      { name: 'a candidate not yet ready and warm gets weight 0', p: { stable: { version: V1, revision: m(V1) }, candidate: { version: V2, revision: m(V2), percent: 25, ready: true, warm: false, state: 'canary' } as never }, live: [live(V1)], want: { [V1]: '100', [V2]: '0' } },
      { name: 'a ready, warm candidate at a step takes its share from stable', p: { stable: { version: V1, revision: m(V1) }, candidate: { version: V2, revision: m(V2), percent: 25, ready: true, warm: true, state: 'canary' } as never }, live: [live(V1), live(V2)], want: { [V1]: '75', [V2]: '25' } },
      { name: 'a failed candidate is stopped at weight 0, all traffic back on stable', p: { stable: { version: V1, revision: m(V1) }, candidate: { version: V2, revision: m(V2), percent: 0, ready: true, warm: true, state: 'failed' } as never }, live: [live(V1), live(V2)], want: { [V1]: '100', [V2]: '0 stopped' } },
      { name: 'after promotion the replaced version is stopped and retained', p: { stable: { version: V2, revision: m(V2) } }, live: [live(V1), live(V2)], want: { [V2]: '100', [V1]: '0 stopped' } },
      { name: 'a replaced version past rollout.retainPrevious is deleted', p: { stable: { version: V2, revision: m(V2) } }, live: [live(V1, { stopped: true, retiredAt: '2030-01-07T06:59:59Z' }), live(V2)], want: { [V2]: '100' }, remove: [m(V1)] },
      { name: 'going back to a retained version reuses its LLMInferenceService, started again', p: { stable: { version: V2, revision: m(V2) }, candidate: { version: V1, revision: m(V1), percent: 0, ready: false, warm: false, state: 'canary' } as never }, live: [live(V1, { stopped: true, retiredAt: '2030-01-07T07:50:00Z' }), live(V2)], want: { [V2]: '100', [V1]: '0' } },
    ];
    for (const r of rows) {
      it(r.name, () => {
        const mp = memberPlan(app, plan(r.p), effective, 0, revs(...r.live), NOW);
        assert.deepEqual(weights(mp), r.want);
        assert.deepEqual(mp.remove, r.remove ?? []);
      });
    }

    it('keeps a retained version until its retention ends, and looks again then', () => {
      const mp = memberPlan(app, plan({ stable: { version: V2, revision: m(V2) } }), effective, 0, revs(live(V1, { stopped: true, retiredAt: '2030-01-07T07:30:00Z' }), live(V2)), NOW);
      assert.equal(mp.members.find((x) => x.version === V1)?.retiredAt, '2030-01-07T07:30:00Z', 'the first time it was stopped, kept');
      assert.equal(mp.requeueAfterMs, 30 * 60_000);
    });

    it(`retains at most ${MAX_RETAINED} replaced versions, the newest`, () => {
      const old = Array.from({ length: MAX_RETAINED + 1 }, (_, i) => live('abcdef'[i]!.repeat(10), { stopped: true, retiredAt: `2030-01-07T07:5${i}:00Z` }));
      const mp = memberPlan(app, plan({ stable: { version: V2, revision: m(V2) } }), effective, 0, revs(...old, live(V2)), NOW);
      assert.deepEqual(mp.remove, [m('aaaaaaaaaa')]);
    });

    it('gives each serving version the window\'s replicas while a window (or its lead time) applies, and the app\'s outside it', () => {
      const windowed = llmApp({ scaling: { minScale: 1, windows: [{ name: 'business-hours', schedule: '0 8 * * 1-5', duration: '10h', timeZone: 'UTC', minScale: 4 }] }, prewarm: { leadTime: '5m' } });
      const replicas = (at: string) => memberPlan(windowed, plan({ stable: { version: V1, revision: m(V1) } }), scaleOf(windowed.spec, new Date(at)), 0, revs(live(V1)), new Date(at)).members[0]!.replicas;
      assert.deepEqual([replicas('2030-01-07T07:50:00Z'), replicas('2030-01-07T07:56:00Z'), replicas('2030-01-07T12:00:00Z'), replicas('2030-01-07T18:00:00Z')], [1, 4, 4, 1]);
    });

    it('gives a baking previous version its held replicas at weight 0, not stopped', () => {
      const p = plan({ stable: { version: V1, revision: m(V1) }, candidate: { version: V2, revision: m(V2), percent: 100, ready: true, warm: true, state: 'canary' } as never, canary: { bakeReplicas: 3 } as never });
      const mp = memberPlan(app, p, effective, 0, revs(live(V1), live(V2)), NOW);
      assert.deepEqual(mp.members.map((x) => [x.version, x.weight, x.stopped, x.replicas]), [[V1, 0, false, 3], [V2, 100, false, 2]]);
    });
  });
});
