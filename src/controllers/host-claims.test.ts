import assert from 'node:assert/strict';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { HostClaims } from './host-claims.ts';

const app = (ns: string, name: string, created: string, hosts: string[]): ServerlessApp => ({
  apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
  metadata: { namespace: ns, name, creationTimestamp: created },
  spec: { container: { image: 'x' }, ingress: { hosts } },
});

describe('HostClaims', () => {
  const first = app('team-b', 'checkout', '2026-11-01T00:00:00Z', ['checkout.example.com']);
  const thief = app('team-a', 'shop', '2026-11-02T00:00:00Z', ['shop.example.com', 'Checkout.Example.com.']);

  it('refuses the later claimant of a host in another namespace, naming the field and the holder', () => {
    const claims = new HostClaims();
    claims.set(first);
    claims.set(thief);
    assert.deepEqual(claims.conflicts(first), []);
    assert.deepEqual(claims.conflicts(thief).map((p) => [p.reason, p.field]), [['HostConflict', 'spec.ingress.hosts[1]']]);
    assert.match(claims.conflicts(thief)[0]!.message, /team-b\/checkout/);
  });

  it('gives the host to the next claimant when the holder lets it go, and says whom to re-check', () => {
    const claims = new HostClaims();
    claims.set(first);
    claims.set(thief);
    assert.deepEqual(claims.delete(first), ['team-a/shop']);
    assert.deepEqual(claims.conflicts(thief), []);
  });

  it('is the same whatever order the cache delivers the apps in', () => {
    const claims = new HostClaims();
    claims.set(thief);
    claims.set(first);
    assert.equal(claims.conflicts(thief).length, 1);
    assert.equal(claims.conflicts(first).length, 0);
  });

  it('breaks a tie in creation time by namespace/name', () => {
    const claims = new HostClaims();
    const a = app('a', 'x', '2026-11-01T00:00:00Z', ['h.example.com']);
    const b = app('b', 'x', '2026-11-01T00:00:00Z', ['h.example.com']);
    claims.set(b);
    claims.set(a);
    assert.equal(claims.conflicts(a).length, 0);
    assert.equal(claims.conflicts(b).length, 1);
  });

  it('an app editing its hosts releases the old ones', () => {
    const claims = new HostClaims();
    claims.set(first);
    claims.set(thief);
    claims.set({ ...first, spec: { ...first.spec, ingress: { hosts: ['pay.example.com'] } } });
    assert.deepEqual(claims.conflicts(thief), []);
  });
});
