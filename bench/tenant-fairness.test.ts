// The tenants' FlowSchemas must catch every tenant's ServerlessApp writes
// before the API server's built-in catch-alls, leave the control plane's and
// the operator's alone, and give each namespace a flow of its own on a level
// that cannot grow.
import assert from 'node:assert/strict';
import {
  OPERATOR_FLOW_SCHEMA, OPERATOR_PRECEDENCE, TENANT_FLOW_SCHEMA, TENANT_PRECEDENCE, TENANT_PRIORITY_LEVEL, tenantFairnessObjects,
} from './tenant-fairness.ts';

interface Rule { subjects: Array<Record<string, unknown>>; resourceRules: Array<{ verbs: string[]; apiGroups: string[]; resources: string[]; namespaces: string[] }> }
interface FlowSchemaSpec { priorityLevelConfiguration: { name: string }; matchingPrecedence: number; distinguisherMethod: { type: string }; rules: Rule[] }

const objects = tenantFairnessObjects({ nominalConcurrencyShares: 1, operator: { namespace: 'serverlessapp-system', name: 'sapp' } });
const schema = (name: string) => {
  const o = objects.find((x) => x.kind === 'FlowSchema' && x.metadata.name === name);
  assert.ok(o, `a FlowSchema ${name}`);
  return (o as unknown as { spec: FlowSchemaSpec }).spec;
};

/** kube-apiserver v1.35's built-in FlowSchemas (k8s.io/apiserver pkg/apis/flowcontrol/bootstrap/default.go). */
const BUILT_IN = { exempt: 1, probes: 2, 'system-leader-election': 100, 'system-node-high': 400, 'system-nodes': 500, 'kube-controller-manager': 800, 'kube-scheduler': 800, 'kube-system-service-accounts': 900, 'service-accounts': 9000, 'global-default': 9900 };

describe('tenant fairness: the API Priority and Fairness objects', () => {
  it("catches tenants' writes after every control-plane schema and before service-accounts and global-default", () => {
    const p = schema(TENANT_FLOW_SCHEMA).matchingPrecedence;
    assert.equal(p, TENANT_PRECEDENCE);
    for (const name of ['exempt', 'probes', 'system-leader-election', 'system-node-high', 'system-nodes', 'kube-controller-manager', 'kube-scheduler', 'kube-system-service-accounts'] as const) assert.ok(BUILT_IN[name] < p, name);
    assert.ok(p < BUILT_IN['service-accounts'] && p < BUILT_IN['global-default']);
  });

  it('matches writes of ServerlessApps by any authenticated user, in every namespace, and not their status', () => {
    const [rule] = schema(TENANT_FLOW_SCHEMA).rules;
    assert.deepEqual(rule!.subjects, [{ kind: 'Group', group: { name: 'system:authenticated' } }]);
    assert.deepEqual(rule!.resourceRules, [{ verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'], apiGroups: ['serverlessapp.io'], resources: ['serverlessapps'], namespaces: ['*'] }]);
  });

  it('gives each namespace its own flow on the tenants\' level', () => {
    const s = schema(TENANT_FLOW_SCHEMA);
    assert.equal(s.distinguisherMethod.type, 'ByNamespace');
    assert.equal(s.priorityLevelConfiguration.name, TENANT_PRIORITY_LEVEL);
  });

  it('bounds the level: its own shares, nothing lent or borrowed, and a burst queues instead of failing', () => {
    const pl = objects.find((o) => o.kind === 'PriorityLevelConfiguration') as unknown as { metadata: { name: string }; spec: { type: string; limited: Record<string, unknown> & { limitResponse: { type: string; queuing: { queues: number; handSize: number } } } } };
    assert.equal(pl.metadata.name, TENANT_PRIORITY_LEVEL);
    assert.equal(pl.spec.type, 'Limited');
    assert.equal(pl.spec.limited.nominalConcurrencyShares, 1);
    assert.equal(pl.spec.limited.lendablePercent, 0);
    assert.equal(pl.spec.limited.borrowingLimitPercent, 0);
    assert.equal(pl.spec.limited.limitResponse.type, 'Queue');
    assert.ok(pl.spec.limited.limitResponse.queuing.handSize < pl.spec.limited.limitResponse.queuing.queues);
  });

  it("matches the operator's ServiceAccount first, and sends it where service-accounts would", () => {
    const s = schema(OPERATOR_FLOW_SCHEMA);
    assert.equal(s.matchingPrecedence, OPERATOR_PRECEDENCE);
    assert.ok(s.matchingPrecedence < TENANT_PRECEDENCE && s.matchingPrecedence > BUILT_IN['kube-system-service-accounts']);
    assert.deepEqual(s.rules[0]!.subjects, [{ kind: 'ServiceAccount', serviceAccount: { namespace: 'serverlessapp-system', name: 'sapp' } }]);
    assert.deepEqual(s.rules[0]!.resourceRules, schema(TENANT_FLOW_SCHEMA).rules[0]!.resourceRules);
    assert.equal(s.priorityLevelConfiguration.name, 'workload-low');
  });

  it('has no operator schema when the operator is not a ServiceAccount of the cluster', () => {
    assert.deepEqual(tenantFairnessObjects({ nominalConcurrencyShares: 1 }).map((o) => o.metadata.name), [TENANT_PRIORITY_LEVEL, TENANT_FLOW_SCHEMA]);
  });
});
