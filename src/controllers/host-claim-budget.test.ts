import assert from 'node:assert/strict';
import { hostClaimFor, type HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { claimBudgetProblem, HostClaimBudget } from './host-claim-budget.ts';

const app = (ns: string, hosts: string[]): ServerlessApp => ({
  apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
  metadata: { namespace: ns, name: 'shop', creationTimestamp: '2026-11-01T00:00:00Z' },
  spec: { container: { image: 'x' }, ingress: { hosts } },
});

/** The HostClaim cache, in memory. */
function claimCache() {
  const cache = new Map<string, HostClaim>();
  const handlers: Record<string, Array<(c: HostClaim, old?: HostClaim) => void>> = { add: [], update: [], delete: [] };
  return {
    on: (e: 'add' | 'update' | 'delete', h: (c: HostClaim, old?: HostClaim) => void) => handlers[e]!.push(h),
    get: (_ns: undefined, name: string) => cache.get(name),
    add(host: string, ns: string) {
      const c = hostClaimFor(host, ns)!;
      cache.set(c.metadata.name, c);
      for (const h of handlers.add!) h(c);
    },
    remove(host: string) {
      const c = cache.get(host)!;
      cache.delete(host);
      for (const h of handlers.delete!) h(c);
    },
  };
}

describe('the host claims one namespace may hold (HostClaimBudget)', () => {
  it('refuses an app whose new hosts would pass the budget, naming spec.ingress.hosts and the platform setting', () => {
    const p = claimBudgetProblem(63, 2, 64)!;
    assert.equal(p.reason, 'HostClaimQuotaExceeded');
    assert.equal(p.field, 'spec.ingress.hosts');
    assert.match(p.message, /holds 63 host claims and these hosts need 2 more; a namespace may hold 64 \(the platform's --max-host-claims-per-namespace\)/);
    assert.equal(claimBudgetProblem(62, 2, 64), undefined, 'exactly at the budget');
  });

  it('never refuses an app whose hosts are all claimed, however full the namespace', () => {
    assert.equal(claimBudgetProblem(500, 0, 64), undefined);
    const claims = claimCache();
    const budget = new HostClaimBudget(claims, 2);
    claims.add('a.team-a.example.com', 'team-a');
    claims.add('b.team-a.example.com', 'team-a');
    assert.equal(budget.problem(app('team-a', ['a.team-a.example.com', 'b.team-a.example.com'])), undefined);
    assert.equal(budget.problem(app('team-a', ['a.team-a.example.com', 'c.team-a.example.com']))?.reason, 'HostClaimQuotaExceeded');
  });

  it('counts each namespace\'s claims apart, and a released claim frees the budget', () => {
    const claims = claimCache();
    const budget = new HostClaimBudget(claims, 1);
    claims.add('a.team-a.example.com', 'team-a');
    assert.equal(budget.held('team-a'), 1);
    assert.equal(budget.held('team-b'), 0);
    assert.equal(budget.problem(app('team-b', ['b.team-b.example.com'])), undefined, 'another namespace\'s claims do not count');
    assert.ok(budget.problem(app('team-a', ['c.team-a.example.com'])));
    claims.remove('a.team-a.example.com');
    assert.equal(budget.problem(app('team-a', ['c.team-a.example.com'])), undefined);
  });
});
