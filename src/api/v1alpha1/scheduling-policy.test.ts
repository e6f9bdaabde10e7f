import assert from 'node:assert/strict';
import { containerApp, modelApp } from '../../testing/apps.ts';
import type { ServerlessApp } from './serverlessapp.ts';
import { DEFAULT_ALLOWED_TOLERATION_KEYS, schedulingProblems, termStaysInNamespace, type SchedulingPolicy } from './scheduling-policy.ts';

const CLOSED: SchedulingPolicy = { allowedTolerationKeys: DEFAULT_ALLOWED_TOLERATION_KEYS, allowCrossNamespacePodAffinity: false, allowNodePinning: false };
const OPEN: SchedulingPolicy = { allowedTolerationKeys: ['*'], allowCrossNamespacePodAffinity: true, allowNodePinning: true };

function withScheduling(fields: Record<string, unknown>, namespace = 'team-a'): ServerlessApp {
  const app = containerApp();
  app.metadata.namespace = namespace;
  app.spec.container = { ...app.spec.container!, ...fields } as typeof app.spec.container;
  return app;
}
const fields = (app: ServerlessApp, policy = CLOSED) => schedulingProblems(app, policy).map((p) => `${p.reason} ${p.field}`);

describe('where the platform lets an app\'s pods go', () => {
  describe('tolerations', () => {
    it('lets a GPU app tolerate the GPU taint by default', () => {
      assert.deepEqual(fields(withScheduling({ tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }] })), []);
    });

    it('refuses a toleration of every taint (attack: run on the control plane and on another team\'s dedicated nodes)', () => {
      const problems = schedulingProblems(withScheduling({ tolerations: [{ operator: 'Exists' }] }), CLOSED);
      assert.deepEqual(problems.map((p) => `${p.reason} ${p.field}`), ['SchedulingNotAllowed spec.container.tolerations[0]']);
      assert.match(problems[0]!.message, /tolerates every taint.*--allowed-toleration-keys\): nvidia\.com\/gpu$/);
    });

    it('refuses a taint key the platform does not list, naming the key', () => {
      const problems = schedulingProblems(withScheduling({ tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] }), CLOSED);
      assert.deepEqual(problems.map((p) => p.field), ['spec.container.tolerations[0].key']);
      assert.match(problems[0]!.message, /"node-role\.kubernetes\.io\/control-plane" is not allowed/);
    });

    it('allows any toleration, even of every taint, where the platform lists "*"', () => {
      assert.deepEqual(fields(withScheduling({ tolerations: [{ operator: 'Exists' }, { key: 'dedicated', value: 'b' }] }), OPEN), []);
    });
  });

  describe('node pinning', () => {
    it('refuses kubernetes.io/hostname in nodeSelector and node affinity, and metadata.name in matchFields', () => {
      const app = withScheduling({
        nodeSelector: { 'kubernetes.io/hostname': 'control-plane-1', 'nvidia.com/gpu.present': 'true' },
        affinity: { nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] }] },
          preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['a'] }, { key: 'kubernetes.io/hostname', operator: 'In', values: ['n2'] }] } }],
        } },
      });
      assert.deepEqual(fields(app), [
        'SchedulingNotAllowed spec.container.nodeSelector["kubernetes.io/hostname"]',
        'SchedulingNotAllowed spec.container.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key',
        'SchedulingNotAllowed spec.container.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[1].key',
      ]);
      assert.deepEqual(fields(app, OPEN), []);
    });
  });

  describe('pod (anti-)affinity across namespaces', () => {
    const table: Array<[string, Record<string, unknown>, boolean]> = [
      ['no namespaces and no selector (the app\'s own)', {}, true],
      ['namespaces naming the app\'s own', { namespaces: ['team-a'] }, true],
      ['a selector naming the app\'s own by kubernetes.io/metadata.name', { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'team-a' } } }, true],
      ['namespaces naming another', { namespaces: ['team-a', 'team-b'] }, false],
      ['an empty selector (every namespace)', { namespaceSelector: {} }, false],
      ['a selector naming another', { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'team-b' } } }, false],
      ['a selector by another label', { namespaceSelector: { matchLabels: { team: 'a' } } }, false],
      ['a selector by expression', { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a'] }] } }, false],
    ];
    for (const [what, term, stays] of table) {
      it(`${stays ? 'keeps' : 'does not keep'} a term in the app's namespace with ${what}`, () => assert.equal(termStaysInNamespace(term, 'team-a'), stays));
    }

    it('refuses required and preferred terms, affinity and anti-affinity, that reach other namespaces (attack: keep another team\'s pods off every node)', () => {
      const term = { topologyKey: 'kubernetes.io/os', namespaceSelector: {}, labelSelector: { matchLabels: { 'serving.knative.dev/service': 'checkout' } } };
      const app = withScheduling({ affinity: {
        podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] },
        podAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, podAffinityTerm: { ...term, namespaceSelector: undefined, namespaces: ['team-b'] } }] },
      } });
      const problems = schedulingProblems(app, CLOSED);
      assert.deepEqual(problems.map((p) => `${p.reason} ${p.field}`), [
        'SchedulingNotAllowed spec.container.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm',
        'SchedulingNotAllowed spec.container.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]',
      ]);
      assert.match(problems[0]!.message, /selects pods outside namespace team-a .*--allow-cross-namespace-pod-affinity/);
      assert.deepEqual(fields(app, OPEN), []);
    });

    it('reads a model app\'s fields', () => {
      const m = modelApp();
      const app = modelApp({ model: { ...m.spec.model!, tolerations: [{ operator: 'Exists' }] } as typeof m.spec.model });
      assert.deepEqual(fields(app), ['SchedulingNotAllowed spec.model.tolerations[0]']);
    });
  });
});
