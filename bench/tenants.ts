// The noisy-neighbour bench's tenants: a user per namespace with a client
// certificate from the rig's CA (in a group of its own, not system:masters,
// whom API Priority and Fairness exempts), allowed ServerlessApps in its own
// namespace only, as a platform would set a team up. And the switch that
// installs or removes tenant fairness (bench/tenant-fairness.ts), returning
// once the API server classifies a tenant's write by it, and the API server's
// own APF counters per FlowSchema.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../src/runtime/client.ts';
import type { ResourceKind } from '../src/util/kinds.ts';
import { parsePrometheus } from '../test/support/operator-process.ts';
import { kubeconfigAs } from '../test/faults/support/identity.ts';
import { BENCH_USER_AGENT, type BenchEnv } from './environment.ts';
import { round, sleep } from './stats.ts';
import { TENANT_FLOW_SCHEMA, tenantFairnessObjects, type TenantFairnessOptions } from './tenant-fairness.ts';

export const TENANT_GROUP = 'serverlessapp-bench-tenants';

const kind = (group: string, k: string, plural: string, namespaced: boolean): ResourceKind => ({ group, version: 'v1', kind: k, plural, namespaced });
const RBAC = 'rbac.authorization.k8s.io', FLOWCONTROL = 'flowcontrol.apiserver.k8s.io';
const KINDS: Record<string, ResourceKind> = {
  Role: kind(RBAC, 'Role', 'roles', true), RoleBinding: kind(RBAC, 'RoleBinding', 'rolebindings', true),
  FlowSchema: kind(FLOWCONTROL, 'FlowSchema', 'flowschemas', false),
  PriorityLevelConfiguration: kind(FLOWCONTROL, 'PriorityLevelConfiguration', 'prioritylevelconfigurations', false),
};

export interface Tenant {
  user: string;
  namespace: string;
  /** Writes as the tenant, with the bench's user agent and field manager (the audit log finds its edits by them). */
  client: KubeClient;
  /** The tenant's certificate and key (PEM), for requests that read response headers. */
  tls: { cert: string; key: string };
}

/** A tenant user per namespace, allowed every verb on ServerlessApps there and nothing else. */
export async function makeTenants(env: BenchEnv, namespaces: string[]): Promise<Record<string, Tenant>> {
  const tenants: Record<string, Tenant> = {};
  for (const namespace of namespaces) {
    const user = `tenant-${namespace}`;
    const path = await kubeconfigAs(env.cp, user, [TENANT_GROUP]);
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    await env.client.apply({
      apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: { name: 'serverlessapp-tenant', namespace },
      rules: [{ apiGroups: ['serverlessapp.io'], resources: ['serverlessapps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }],
    }, { kind: KINDS.Role! });
    await env.client.apply({
      apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name: 'serverlessapp-tenant', namespace },
      roleRef: { apiGroup: RBAC, kind: 'Role', name: 'serverlessapp-tenant' }, subjects: [{ apiGroup: RBAC, kind: 'User', name: user }],
    }, { kind: KINDS.RoleBinding! });
    const pem = (ext: string) => readFileSync(join(env.cp.dir, `${user}.${ext}`), 'utf8');
    tenants[namespace] = { user, namespace, client: new KubeClient(kc, { fieldManager: 'bench', userAgent: BENCH_USER_AGENT }), tls: { cert: pem('crt'), key: pem('key') } };
  }
  return tenants;
}

/**
 * The FlowSchema the API server matched for a write of a ServerlessApp by `tenant` (a dry-run delete of one
 * that does not exist: classified like any write, then refused), as the UID in its response header.
 */
function matchedFlowSchema(env: BenchEnv, tenant: Tenant): Promise<string | undefined> {
  const url = `${env.cp.server}/apis/serverlessapp.io/v1alpha1/namespaces/${tenant.namespace}/serverlessapps/apf-probe?dryRun=All`;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'DELETE', ca: env.cp.caPem, ...tenant.tls, headers: { 'user-agent': `${BENCH_USER_AGENT}-apf-probe` } }, (res) => {
      res.resume();
      resolve(res.headers['x-kubernetes-pf-flowschema-uid'] as string | undefined);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Installs (on) or removes (off) tenant fairness; resolves once the API server classifies `probe`'s writes accordingly. */
export async function setTenantFairness(env: BenchEnv, on: boolean, probe: Tenant, o: TenantFairnessOptions): Promise<void> {
  const objects = tenantFairnessObjects(o);
  if (on) for (const obj of objects) await env.client.apply(obj, { kind: KINDS[obj.kind]! });
  else for (const obj of objects) await env.client.delete(KINDS[obj.kind]!, undefined, obj.metadata.name);
  const deadline = performance.now() + 60_000;
  for (;;) {
    const ours = (await env.client.get<{ metadata: { uid: string } }>(KINDS.FlowSchema!, undefined, TENANT_FLOW_SCHEMA))?.metadata.uid;
    const matched = await matchedFlowSchema(env, probe);
    if (on ? matched !== undefined && matched === ours : matched !== undefined && matched !== ours) return;
    if (performance.now() > deadline) throw new Error(`tenant fairness ${on ? 'on' : 'off'}: after 60 s the API server still classifies ${probe.user}'s writes by FlowSchema UID ${matched} (${TENANT_FLOW_SCHEMA}: ${ours ?? 'absent'})`);
    await sleep(200);
  }
}

/** Per FlowSchema: requests, seconds they waited in APF's queues, seconds they executed, requests rejected. */
export type FlowCounters = Record<string, { requests: number; waitSeconds: number; executionSeconds: number; rejected: number }>;

/** The API server's APF counters (its /metrics, as the admin). */
export async function flowCounters(env: BenchEnv): Promise<FlowCounters> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(`${env.cp.server}/metrics`, { ca: env.cp.caPem, headers: { authorization: `Bearer ${env.cp.adminToken}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET /metrics: ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
  const out: FlowCounters = {};
  const at = (fs: string) => (out[fs] ??= { requests: 0, waitSeconds: 0, executionSeconds: 0, rejected: 0 });
  for (const s of parsePrometheus(text)) {
    const fs = s.labels.flow_schema;
    if (!fs) continue;
    // Waits of the requests that executed (execute="true"); those that never did are counted as rejected.
    if (s.name === 'apiserver_flowcontrol_request_wait_duration_seconds_sum' && s.labels.execute === 'true') at(fs).waitSeconds += s.value;
    else if (s.name === 'apiserver_flowcontrol_request_wait_duration_seconds_count' && s.labels.execute === 'true') at(fs).requests += s.value;
    else if (s.name === 'apiserver_flowcontrol_request_execution_seconds_sum') at(fs).executionSeconds += s.value;
    else if (s.name === 'apiserver_flowcontrol_rejected_requests_total') at(fs).rejected += s.value;
  }
  return out;
}

/** after - before, per FlowSchema, only those with requests in between. */
export function flowIncrease(after: FlowCounters, before: FlowCounters): FlowCounters {
  const out: FlowCounters = {};
  for (const [fs, a] of Object.entries(after)) {
    const b = before[fs] ?? { requests: 0, waitSeconds: 0, executionSeconds: 0, rejected: 0 };
    const d = { requests: a.requests - b.requests, waitSeconds: round(a.waitSeconds - b.waitSeconds, 3), executionSeconds: round(a.executionSeconds - b.executionSeconds, 3), rejected: a.rejected - b.rejected };
    if (d.requests > 0 || d.rejected > 0) out[fs] = d;
  }
  return out;
}
