// API Priority and Fairness for tenants' ServerlessApp writes, as objects
// (flowcontrol.apiserver.k8s.io/v1): what `--tenant-fairness on` installs in
// the noisy-neighbour bench. A FlowSchema sends every write of a
// ServerlessApp by an ordinary user or ServiceAccount to a priority level of
// its own with a small, fixed number of seats, one flow per namespace, so one
// namespace's burst queues in its own flow (shuffle-sharded over the level's
// queues) while another namespace's edit takes the next free seat. The
// operator's own ServiceAccount is matched first by a FlowSchema that keeps
// the treatment it has without this one: its writes are every tenant's
// traffic path.
//
// Matching precedence, against kube-apiserver's built-in FlowSchemas
// (k8s.io/apiserver pkg/apis/flowcontrol/bootstrap/default.go, v0.35.4):
// exempt (1, system:masters), probes (2), system-leader-election (100),
// system-node-high (400), system-nodes (500), kube-controller-manager and
// kube-scheduler (800), kube-system-service-accounts (900), service-accounts
// (9000, every ServiceAccount, workload-low) and global-default (9900, every
// other user). A tenant's writes must be caught before the last two, and
// the control plane's own before ours.

/** The priority level every tenant's ServerlessApp writes share. */
export const TENANT_PRIORITY_LEVEL = 'serverlessapp-tenants';
export const TENANT_FLOW_SCHEMA = 'serverlessapp-tenant-writes';
export const OPERATOR_FLOW_SCHEMA = 'serverlessapp-operator-writes';
/** After the control plane's (<= 900), before service-accounts (9000) and global-default (9900). */
export const TENANT_PRECEDENCE = 5000;
/** Before the tenants' schema: the operator's ServiceAccount is in system:authenticated too. */
export const OPERATOR_PRECEDENCE = TENANT_PRECEDENCE - 100;
/** Where the operator's matched writes go: the level service-accounts (9000) would give it anyway. */
const OPERATOR_PRIORITY_LEVEL = 'workload-low';

export interface TenantFairnessOptions {
  /**
   * The level's share of the server's seats: ceil(serverConcurrency × shares / all levels' shares). With the
   * default 600 seats (--max-requests-inflight 400 + --max-mutating-requests-inflight 200) and the built-in
   * levels' 245 shares, 1 share is 3 seats, the fewest a level gets without being a jail (0 shares is 0 seats).
   */
  nominalConcurrencyShares: number;
  /** The operator's ServiceAccount, exempt from the tenants' level (the chart's); none when it runs as another user. */
  operator?: { namespace: string; name: string };
}

/** A write of a ServerlessApp itself (not /status, which tenants cannot write and the operator does), in any namespace. */
const serverlessAppWrites = {
  verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'],
  apiGroups: ['serverlessapp.io'],
  resources: ['serverlessapps'],
  namespaces: ['*'],
};

export function tenantFairnessObjects(o: TenantFairnessOptions): Array<Record<string, unknown> & { kind: string; metadata: { name: string } }> {
  const api = 'flowcontrol.apiserver.k8s.io/v1';
  return [
    {
      apiVersion: api, kind: 'PriorityLevelConfiguration', metadata: { name: TENANT_PRIORITY_LEVEL },
      spec: {
        type: 'Limited',
        limited: {
          // Fixed: it neither lends its seats nor borrows idle ones, so a burst cannot grow past them.
          nominalConcurrencyShares: o.nominalConcurrencyShares, lendablePercent: 0, borrowingLimitPercent: 0,
          // Queue, not reject: a tenant's burst waits (up to a quarter of the request timeout) instead of failing.
          limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 4, queueLengthLimit: 50 } },
        },
      },
    },
    ...(o.operator ? [{
      apiVersion: api, kind: 'FlowSchema', metadata: { name: OPERATOR_FLOW_SCHEMA },
      spec: {
        priorityLevelConfiguration: { name: OPERATOR_PRIORITY_LEVEL }, matchingPrecedence: OPERATOR_PRECEDENCE,
        distinguisherMethod: { type: 'ByUser' },
        rules: [{ subjects: [{ kind: 'ServiceAccount', serviceAccount: o.operator }], resourceRules: [serverlessAppWrites] }],
      },
    }] : []),
    {
      apiVersion: api, kind: 'FlowSchema', metadata: { name: TENANT_FLOW_SCHEMA },
      spec: {
        priorityLevelConfiguration: { name: TENANT_PRIORITY_LEVEL }, matchingPrecedence: TENANT_PRECEDENCE,
        // One flow per namespace: a namespace's writers (people, CI, GitOps) share its queues, and no other's.
        distinguisherMethod: { type: 'ByNamespace' },
        rules: [{ subjects: [{ kind: 'Group', group: { name: 'system:authenticated' } }], resourceRules: [serverlessAppWrites] }],
      },
    },
  ];
}
