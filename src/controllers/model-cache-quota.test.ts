import assert from 'node:assert/strict';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { modelApp } from '../testing/apps.ts';
import { grantedClaims, ModelCacheQuota } from './model-cache-quota.ts';

const GiB = 2 ** 30;

function cached(namespace: string, name: string, size: string, created: string, extra: Partial<ServerlessApp['spec']> = {}): ServerlessApp {
  const base = modelApp();
  return { ...base, metadata: { ...base.metadata, namespace, name, creationTimestamp: created }, spec: { ...base.spec, model: { ...base.spec.model!, size }, ...extra } };
}

describe('model caches per namespace', () => {
  const grants: Array<{ what: string; claims: Array<[string, string, number]>; limit: number; want: string[] }> = [
    { what: 'grants everything that fits', claims: [['a', '1', 1], ['b', '2', 1]], limit: 2, want: ['a', 'b'] },
    { what: 'grants in creation order, then by name', claims: [['b', '1', 2], ['a', '1', 2], ['c', '0', 2]], limit: 4, want: ['a', 'c'] },
    { what: 'lets a later small claim in past an earlier big one that does not fit', claims: [['a', '1', 3], ['b', '2', 2], ['c', '3', 1]], limit: 4, want: ['a', 'c'] },
    { what: 'grants nothing over the limit on its own', claims: [['a', '1', 5]], limit: 4, want: [] },
  ];
  for (const g of grants) {
    it(g.what, () => assert.deepEqual([...grantedClaims(g.claims.map(([key, created, bytes]) => ({ key, created, bytes })), g.limit)].sort(), g.want));
  }

  it('refuses the app that does not fit beside earlier ones of its namespace, naming the field and the budget (attack: fill the shared cache disk)', () => {
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 3 * GiB }, 'namespace');
    const first = cached('team-a', 'one', '2Gi', '2026-01-01T00:00:00Z');
    const second = cached('team-a', 'two', '2Gi', '2026-01-02T00:00:00Z');
    quota.set(first);
    quota.set(second);
    assert.equal(quota.problem(first), undefined);
    const p = quota.problem(second);
    assert.deepEqual([p?.reason, p?.field], ['ModelCacheQuotaExceeded', 'spec.model.size']);
    assert.match(p!.message, /namespace team-a may reserve 3Gi on each node in all; 2Gi is taken by earlier apps, so this 2Gi model does not fit/);
    assert.equal(quota.allows(second), false);
  });

  it('counts each namespace apart: another namespace\'s caches never use this one\'s budget', () => {
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 3 * GiB }, 'namespace');
    quota.set(cached('team-a', 'big', '3Gi', '2026-01-01T00:00:00Z'));
    assert.equal(quota.problem(cached('team-b', 'big', '3Gi', '2026-01-02T00:00:00Z')), undefined);
  });

  it('judges an app as it is now, even before its event is recorded', () => {
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 3 * GiB }, 'namespace');
    quota.set(cached('team-a', 'one', '1Gi', '2026-01-01T00:00:00Z'));
    assert.equal(quota.problem(cached('team-a', 'one', '4Gi', '2026-01-01T00:00:00Z'))?.reason, 'ModelCacheQuotaExceeded');
  });

  it('does not count apps without a cache, or with one the per-app limits refuse', () => {
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 3 * GiB, maxModelSizeBytes: 10 * GiB }, 'namespace');
    quota.set(cached('team-a', 'nocache', '3Gi', '2026-01-01T00:00:00Z', { prewarm: { cacheModel: false } }));
    quota.set(cached('team-a', 'huge', '20Gi', '2026-01-01T00:00:00Z'));
    assert.equal(quota.problem(cached('team-a', 'late', '3Gi', '2026-01-03T00:00:00Z')), undefined);
  });

  it('does not count an app whose cluster-scoped cache is refused (ModelCacheNotIsolated): it reserves nothing', () => {
    const policy = { maxModelCacheBytesPerNamespace: 3 * GiB, allowedStorageUriPrefixes: ['gs://models/{namespace}/', 'gs://shared/'] };
    const quota = new ModelCacheQuota(policy, 'cluster');
    const shared = cached('team-a', 'shared', '3Gi', '2026-01-01T00:00:00Z', { model: { format: { name: 'sklearn' }, storageUri: 'gs://shared/llama', size: '3Gi' } });
    quota.set(shared);
    const own = cached('team-a', 'own', '3Gi', '2026-01-02T00:00:00Z', { model: { format: { name: 'sklearn' }, storageUri: 'gs://models/team-a/llama', size: '3Gi' } });
    assert.equal(quota.problem(own), undefined);
    const namespaced = new ModelCacheQuota(policy, 'namespace');
    namespaced.set(shared);
    assert.equal(namespaced.problem(own)?.reason, 'ModelCacheQuotaExceeded', 'a namespaced cache of the shared model is written, and counted');
  });

  it('tells which other apps of the namespace gained or lost their cache when one changes or goes', () => {
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 3 * GiB }, 'namespace');
    const first = cached('team-a', 'one', '2Gi', '2026-01-01T00:00:00Z');
    assert.deepEqual(quota.set(first), []);
    assert.deepEqual(quota.set(cached('team-a', 'two', '2Gi', '2026-01-02T00:00:00Z')), []);
    assert.deepEqual(quota.set(cached('team-b', 'three', '2Gi', '2026-01-01T00:00:00Z')), [], 'another namespace changes nothing here');
    assert.deepEqual(quota.set(first, true), ['team-a/two'], 'the first gone, the second fits');
    assert.deepEqual(quota.set(first), ['team-a/two'], 'the first back (earlier), the second loses its cache');
  });
});
