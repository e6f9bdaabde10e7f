// The executor as the app controller runs it: a HostClaim create admission or
// RBAC refuses comes back as a refusal (the report shows it), as a refused apply
// does, and the operations after it still run; every request takes the
// reconcile's signal, so a lost lease cuts what a plan still had to write.
import assert from 'node:assert/strict';
import { hostClaimFor } from '../api/v1alpha1/hostclaim.ts';
import type { ChildOperation } from '../planner/plan.ts';
import type { WorkloadObject } from '../planner/workloads.ts';
import { ApiError, type KubeClient } from '../runtime/client.ts';
import { containerApp } from '../testing/apps.ts';
import { Kinds } from '../util/kinds.ts';
import { ChildWriter } from './children.ts';
import { execute } from './execute.ts';

const claim = (host: string): ChildOperation => ({
  id: `host-claim/${host}`, action: 'claim', kind: Kinds.HostClaim, desired: hostClaimFor(host, 'team-a') as unknown as WorkloadObject, why: 'test',
});

describe('execute', () => {
  it('a HostClaim create refused by admission is a refusal (ApplyRejected, retried), and the next claim is still made', async () => {
    const created: string[] = [];
    const client = {
      async create(_kind: unknown, obj: { metadata: { name: string } }) {
        if (obj.metadata.name.startsWith('shop')) throw new ApiError(422, 'hostclaims.serverlessapp.io "shop.example.com" is forbidden: ValidatingAdmissionPolicy \'no-claims\' denied request', 'Invalid');
        created.push(obj.metadata.name);
        return obj;
      },
    } as unknown as KubeClient;
    const { operations } = await execute(new ChildWriter(client), containerApp(), [claim('shop.example.com'), claim('api.example.com')]);
    assert.deepEqual(operations.map((x) => [x.outcome, x.refusal?.reason, x.refusal?.kind, x.refusal?.retry]), [['rejected', 'ApplyRejected', 'HostClaim', true], ['written', undefined, undefined, undefined]]);
    assert.match(operations[0]!.refusal!.summary, /the API server refused the HostClaim .*ValidatingAdmissionPolicy 'no-claims' denied request/);
    assert.equal(created.length, 1);
  });

  it('every request takes the reconcile\'s signal', async () => {
    const signals: Array<AbortSignal | undefined> = [];
    const client = {
      fieldManager: 'serverlessapp-operator',
      async create(_kind: unknown, obj: unknown, opts: { signal?: AbortSignal } = {}) { signals.push(opts.signal); return obj; },
      async get(_k: unknown, _ns: unknown, _n: unknown, opts: { signal?: AbortSignal } = {}) { signals.push(opts.signal); return undefined; },
      async apply(obj: unknown, opts: { signal?: AbortSignal } = {}) { signals.push(opts.signal); return obj; },
    } as unknown as KubeClient;
    const app = containerApp();
    const desired = { apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'shop', namespace: 'team-a' }, spec: {} } as unknown as WorkloadObject;
    const term = new AbortController();
    await execute(new ChildWriter(client), app, [claim('shop.example.com'), { id: 'workload', action: 'ensure', kind: Kinds.KnativeService, desired, why: 'test' }], term.signal);
    assert.equal(signals.length, 3, 'the claim, the read of an uncached child, its apply');
    assert.ok(signals.every((s) => s === term.signal));
  });
});
