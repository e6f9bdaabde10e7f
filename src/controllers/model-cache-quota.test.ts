import assert from 'node:assert/strict';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { modelApp } from '../testing/apps.ts';
import type { MeasuredModel } from '../planner/model-cache-size.ts';
import { modelStorageKey, UNMEASURED } from '../render/model-cache-usage.ts';
import { grantedClaims, ModelCacheQuota, type CacheClaim } from './model-cache-quota.ts';

const GiB = 2 ** 30;

function cached(namespace: string, name: string, size: string, created: string, extra: Partial<ServerlessApp['spec']> = {}): ServerlessApp {
  const base = modelApp();
  return { ...base, metadata: { ...base.metadata, namespace, name, creationTimestamp: created }, spec: { ...base.spec, model: { ...base.spec.model!, size }, ...extra } };
}

describe('model caches per namespace', () => {
  const grants: Array<{ what: string; claims: Array<[string, string, number]>; limit: number; count?: number; want: string[] }> = [
    { what: 'grants everything that fits', claims: [['a', '1', 1], ['b', '2', 1]], limit: 2, want: ['a', 'b'] },
    { what: 'grants in creation order, then by name', claims: [['b', '1', 2], ['a', '1', 2], ['c', '0', 2]], limit: 4, want: ['a', 'c'] },
    { what: 'lets a later small claim in past an earlier big one that does not fit', claims: [['a', '1', 3], ['b', '2', 2], ['c', '3', 1]], limit: 4, want: ['a', 'c'] },
    { what: 'grants nothing over the limit on its own', claims: [['a', '1', 5]], limit: 4, want: [] },
    { what: 'grants no more caches than the count allows, however small', claims: [['a', '1', 1], ['b', '2', 1], ['c', '3', 1]], limit: 10, count: 2, want: ['a', 'b'] },
  ];
  for (const g of grants) {
    it(g.what, () => assert.deepEqual([...grantedClaims(g.claims.map(([key, created, bytes]) => ({ key, created, bytes })), { bytes: g.limit, count: g.count ?? 100 })].sort(), g.want));
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
    const after = (change: () => void) => { change(); return quota.flush(); };
    assert.deepEqual(after(() => quota.set(first)), []);
    assert.deepEqual(after(() => quota.set(cached('team-a', 'two', '2Gi', '2026-01-02T00:00:00Z'))), []);
    assert.deepEqual(after(() => quota.set(cached('team-b', 'three', '2Gi', '2026-01-01T00:00:00Z'))), [], 'another namespace changes nothing here');
    assert.deepEqual(after(() => quota.set(first, true)), ['team-a/two'], 'the first gone, the second fits');
    assert.deepEqual(after(() => quota.set(first)), ['team-a/two'], 'the first back (earlier), the second loses its cache');
    assert.deepEqual(after(() => { quota.set(first, true); quota.set(first); }), [], 'gone and back in one batch: nobody else\'s verdict moved');
  });

  it('tells the listeners once per batch of events, after the batch', async () => {
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 3 * GiB }, 'namespace');
    const handlers = new Map<string, (app: ServerlessApp) => void>();
    quota.track({ on: (event, handler) => handlers.set(event, handler) });
    const heard: string[][] = [];
    quota.onChange((keys) => heard.push(keys));
    const first = cached('team-a', 'one', '2Gi', '2026-01-01T00:00:00Z');
    handlers.get('add')!(first);
    handlers.get('add')!(cached('team-a', 'two', '2Gi', '2026-01-02T00:00:00Z'));
    handlers.get('add')!(cached('team-a', 'three', '2Gi', '2026-01-03T00:00:00Z'));
    await Promise.resolve();
    assert.deepEqual(heard, [], 'each app of the batch is queued by its own event');
    handlers.get('delete')!(first);
    handlers.get('update')!(cached('team-a', 'four', '1Gi', '2026-01-04T00:00:00Z'));
    assert.deepEqual(heard, [], 'not while the informer is still handing out the batch');
    await Promise.resolve();
    assert.deepEqual(heard, [['team-a/two']], 'once: the first gone, the second fits (the third still waits behind it)');
  });
});

describe('model cache budget findings (issue 34)', () => {
  it('The cache budget counts what the tenant declares, not what lands on disk: a model declared "1", "1m" or "0.000001" is charged the platform\'s minimum per cache', () => {
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 3 * GiB, modelCacheMinChargeBytes: GiB }, 'namespace');
    const tiny = ['1', '1m', '0.000001'].map((size, i) => cached('team-a', `tiny-${i}`, size, `2026-01-0${i + 1}T00:00:00Z`));
    for (const a of tiny) quota.set(a);
    for (const a of tiny) assert.equal(quota.problem(a), undefined);
    const fourth = cached('team-a', 'fourth', '1Mi', '2026-01-05T00:00:00Z');
    const p = quota.problem(fourth);
    assert.deepEqual([p?.reason, p?.field], ['ModelCacheQuotaExceeded', 'spec.model.size']);
    assert.match(p!.message, /may reserve 3Gi on each node in all; 3Gi is taken by earlier apps, so this 1Mi model, charged 1Gi \(the platform's minimum per model cache\), does not fit/);
  });

  it('The cache budget counts what the tenant declares, not what lands on disk: a namespace holds no more caches than the platform\'s count, however small', () => {
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 100 * GiB, maxModelCachesPerNamespace: 2, modelCacheMinChargeBytes: 0 }, 'namespace');
    for (const [i, name] of ['one', 'two', 'three'].entries()) quota.set(cached('team-a', name, '1Gi', `2026-01-0${i + 1}T00:00:00Z`));
    const p = quota.problem(cached('team-a', 'three', '1Gi', '2026-01-03T00:00:00Z'));
    assert.deepEqual([p?.reason, p?.field], ['ModelCacheQuotaExceeded', 'spec.prewarm.cacheModel']);
    assert.match(p!.message, /namespace team-a may have 2 model caches, and earlier apps have them all/);
    assert.equal(quota.problem(cached('team-b', 'three', '1Gi', '2026-01-03T00:00:00Z')), undefined, 'another namespace counts its own');
  });

  it('Refused apps still get node model caches: a refused app holds none of its namespace\'s budget', () => {
    const refused = cached('team-a', 'refused', '3Gi', '2026-01-01T00:00:00Z');
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 3 * GiB }, 'namespace', { admitted: (a) => a.metadata.name !== 'refused' });
    quota.set(refused);
    assert.equal(quota.counts(refused), false);
    assert.equal(quota.problem(refused), undefined, 'refused for its own reason, not for the budget: it asks for nothing');
    assert.equal(quota.problem(cached('team-a', 'later', '3Gi', '2026-01-02T00:00:00Z')), undefined, 'the earlier refused app takes none of the 3Gi');
  });

  it('Refused apps still get node model caches: an app whose admission changes with no event of its own (a host freed) counts from the reconcile that judges it', async () => {
    const refused = new Set(['early']);
    const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 3 * GiB }, 'namespace', { admitted: (a) => !refused.has(a.metadata.name) });
    const handlers = new Map<string, (app: ServerlessApp) => void>();
    quota.track({ on: (event, handler) => handlers.set(event, handler) });
    const heard: string[][] = [];
    quota.onChange((keys) => heard.push(keys));
    const at = (a: ServerlessApp, resourceVersion: string): ServerlessApp => ({ ...a, metadata: { ...a.metadata, resourceVersion } });
    const early = at(cached('team-a', 'early', '3Gi', '2026-01-01T00:00:00Z'), '10');
    const late = at(cached('team-a', 'late', '3Gi', '2026-01-02T00:00:00Z'), '11');
    handlers.get('add')!(early);
    handlers.get('add')!(late);
    await Promise.resolve();
    assert.equal(quota.problem(late), undefined, 'the refused early app holds nothing');

    refused.delete('early');
    assert.equal(quota.problem(early), undefined, 'admitted now: judged, and recorded, first in creation order');
    await Promise.resolve();
    assert.deepEqual(heard, [['team-a/late']], 'the later app hears it lost its cache');
    assert.equal(quota.problem(late)?.reason, 'ModelCacheQuotaExceeded');

    handlers.get('delete')!(early);
    await Promise.resolve();
    assert.equal(quota.problem(early), undefined);
    assert.equal(quota.problem(late), undefined, 'a stale copy of the deleted app, judged after its delete, brings back no claim');
  });

  describe('Quadratic cache bookkeeping', () => {
    const apps = (n: number, order: (i: number) => number) => Array.from({ length: n }, (_, i) => {
      const t = new Date(Date.UTC(2026, 0, 1) + order(i) * 1000).toISOString();
      return cached('noisy', `app-${String(i).padStart(5, '0')}`, '1Gi', t);
    });
    /** The quota's first-fit work after `n` apps, each judged right after its event as the controllers do. */
    const workFor = (n: number, order: (i: number) => number, judgeEach: boolean) => {
      const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 10 * GiB, maxModelCachesPerNamespace: 10 }, 'namespace');
      for (const a of apps(n, order)) {
        quota.set(a);
        if (judgeEach) quota.problem(a);
      }
      quota.flush();
      return quota.work;
    };

    it('judges apps created one after the other with no first-fit pass: the work per add does not grow with the namespace', () => {
      for (const n of [1_000, 8_000]) assert.deepEqual(workFor(n, (i) => i, true), { passes: 0, claimsWalked: 0 }, `${n} apps`);
    });

    it('settles a restart\'s LIST (apps in name order, created in any order) in one pass per batch: 1k and 8k apps cost the same walk per app', () => {
      // Created in reverse of their names: every add lands before the last one, as a LIST by name can.
      const small = workFor(1_000, (i) => 1_000 - i, false);
      const large = workFor(8_000, (i) => 8_000 - i, false);
      assert.deepEqual([small.passes, large.passes], [1, 1]);
      assert.deepEqual([small.claimsWalked / 1_000, large.claimsWalked / 8_000], [1, 1]);
    });

    it('spends nothing on an edit that changes no charge, nor on a refused app\'s deletion', () => {
      const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: 10 * GiB, maxModelCachesPerNamespace: 10 }, 'namespace');
      const all = apps(8_000, (i) => i);
      for (const a of all) quota.set(a);
      for (const a of all) quota.set({ ...a, metadata: { ...a.metadata, labels: { edited: 'yes' } } });
      for (const a of all.slice(10)) quota.set(a, true);
      assert.deepEqual(quota.flush(), []);
      assert.deepEqual(quota.work, { passes: 0, claimsWalked: 0 });
    });

    it('keeps the same verdicts as a first-fit pass from scratch, whatever the events', () => {
      let seed = 7;
      const random = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
      const budget = { bytes: 12 * GiB, count: 6 };
      const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: budget.bytes, maxModelCachesPerNamespace: budget.count, modelCacheMinChargeBytes: 0 }, 'namespace');
      const live = new Map<string, CacheClaim>();
      for (let step = 0; step < 3_000; step++) {
        const name = `app-${random(40)}`;
        const key = `team-a/${name}`;
        if (random(4) === 0) {
          quota.set(cached('team-a', name, '1Gi', '2026-01-01T00:00:00Z'), true);
          live.delete(key);
        } else {
          const gib = 1 + random(5);
          const created = `2026-01-01T00:00:${String(random(60)).padStart(2, '0')}Z`;
          quota.set(cached('team-a', name, `${gib}Gi`, created));
          live.set(key, { key, created, bytes: gib * GiB });
        }
        if (random(3) === 0) quota.flush();
        if (random(2) === 0) {
          const want = grantedClaims(live.values(), budget);
          for (const c of live.values()) {
            const [, n] = c.key.split('/');
            const a = cached('team-a', n!, `${c.bytes / GiB}Gi`, c.created);
            assert.equal(quota.allows(a), want.has(c.key), `step ${step}: ${c.key}`);
          }
        }
      }
    });
  });

  describe('charged for what lands on the nodes', () => {
    const uri = modelApp().spec.model!.storageUri;
    const key = modelStorageKey(uri);
    const setup = (budget: number) => {
      const measures = new Map<string, MeasuredModel>();
      const quota = new ModelCacheQuota({ maxModelCacheBytesPerNamespace: budget, modelCacheMinChargeBytes: GiB }, 'namespace', { measured: (k) => measures.get(k) }).track({ on: () => undefined });
      const heard: string[][] = [];
      quota.onChange((keys) => heard.push(keys));
      return { quota, measures, heard };
    };
    const other = (name: string, size: string, created: string) => cached('team-a', name, size, created, { model: { format: { name: 'sklearn' }, storageUri: `gs://other/${name}`, size } });

    it('refuses a model declared "1" once a node holds more of it (attack: declare a tiny size and download a large model)', () => {
      const { quota, measures } = setup(4 * GiB);
      const first = cached('team-a', 'one', '3Gi', '2026-01-01T00:00:00Z');
      const second = other('two', '1', '2026-01-02T00:00:00Z');
      quota.set(first);
      quota.set(second);
      assert.equal(quota.problem(second), undefined, 'charged the floor, 1Gi: 3Gi + 1Gi fit 4Gi');
      // The first model measured at its declared 3Gi changes nothing; the second, declared "1", is now charged what it holds.
      measures.set(modelStorageKey('gs://other/two'), { bytes: 2, node: 'n1' });
      quota.remeasured([modelStorageKey('gs://other/two')]);
      assert.equal(quota.problem(second)?.reason, 'ModelCacheLargerThanDeclared', 'a model larger than its "1" is refused for its size');
    });

    it('counts the measured size against the budget when it is within the declared size but above the floor', () => {
      const { quota, measures } = setup(4 * GiB);
      const big = cached('team-a', 'big', '3Gi', '2026-01-01T00:00:00Z');
      const late = other('late', '1Gi', '2026-01-02T00:00:00Z');
      measures.set(key, { bytes: 2 * GiB, node: 'n1' });
      quota.set(big);
      quota.set(late);
      assert.equal(quota.problem(late), undefined, 'the declared 3Gi is the larger: 3Gi + 1Gi fit');
    });

    it('refuses a cache measured larger than declared, frees its budget for a later app, and tells both apps\' controllers', async () => {
      const { quota, measures, heard } = setup(3 * GiB);
      const big = cached('team-a', 'big', '2Gi', '2026-01-01T00:00:00Z');
      const late = other('late', '2Gi', '2026-01-02T00:00:00Z');
      quota.set(big);
      quota.set(late);
      assert.equal(quota.problem(late)?.reason, 'ModelCacheQuotaExceeded');
      await Promise.resolve(); // the apps' own events flushed, as the informer's batch is
      heard.length = 0;
      measures.set(key, { bytes: 5 * GiB, node: 'n1' });
      quota.remeasured([key]);
      await Promise.resolve();
      const p = quota.problem(big);
      assert.deepEqual([p?.reason, p?.field], ['ModelCacheLargerThanDeclared', 'spec.model.size']);
      assert.deepEqual(quota.sizeRefusal(big), { storageUri: uri, size: '2Gi', measuredBytes: 5 * GiB, node: 'n1' });
      assert.equal(quota.problem(late), undefined, 'the refused cache holds no budget');
      assert.deepEqual(heard.flat().sort(), ['team-a/big', 'team-a/late']);
    });

    it('keeps the refusal the status records once the measure is gone, and holds no budget for it', () => {
      const { quota } = setup(6 * GiB);
      const recorded = { storageUri: uri, size: '2Gi', measuredBytes: 5 * GiB, node: 'n1' };
      const big = { ...cached('team-a', 'big', '2Gi', '2026-01-01T00:00:00Z'), status: { refusedModelCache: recorded } } as ServerlessApp;
      const late = other('late', '2Gi', '2026-01-02T00:00:00Z');
      quota.set(big);
      quota.set(late);
      assert.equal(quota.problem(big)?.reason, 'ModelCacheLargerThanDeclared');
      assert.equal(quota.problem(late), undefined);
      // A new size still below the measure lifts nothing; one that covers it does, and the app counts again (first in creation order).
      const stillSmall = { ...big, spec: { ...big.spec, model: { ...big.spec.model!, size: '3Gi' } } } as ServerlessApp;
      quota.set(stillSmall);
      assert.equal(quota.problem(stillSmall)?.reason, 'ModelCacheLargerThanDeclared');
      const resized = { ...big, spec: { ...big.spec, model: { ...big.spec.model!, size: '5Gi' } } } as ServerlessApp;
      quota.set(resized);
      assert.equal(quota.problem(resized), undefined);
      assert.equal(quota.problem(late)?.reason, 'ModelCacheQuotaExceeded');
    });

    it('remembers a model found larger than declared after its folders are gone: an app deleted and made again, or naming it with a trailing or doubled slash, is refused without a new download (red team)', () => {
      const { quota, measures } = setup(100 * GiB);
      const big = cached('team-a', 'big', '2Gi', '2026-01-01T00:00:00Z');
      quota.set(big);
      measures.set(key, { bytes: 5 * GiB, node: 'n1' });
      quota.remeasured([key]);
      assert.equal(quota.problem(big)?.reason, 'ModelCacheLargerThanDeclared');
      // The cache is removed, KServe deletes the folders, the report no longer has the model; the app is deleted.
      measures.delete(key);
      quota.remeasured([key]);
      quota.set(big, true);
      const again = cached('team-a', 'big', '2Gi', '2026-01-03T00:00:00Z');
      quota.set(again);
      assert.deepEqual(quota.sizeRefusal(again), { storageUri: uri, size: '2Gi', measuredBytes: 5 * GiB, node: 'n1' }, 'made again under the same name');
      for (const variant of [`${uri}/`, `${uri}//`, uri.replace('://', '://').replace(/\/([^/]*)$/, '//$1'), uri.replace(/^[a-z0-9]+/, (s) => s.toUpperCase())]) {
        const renamed = { ...again, metadata: { ...again.metadata, name: 'renamed' }, spec: { ...again.spec, model: { ...again.spec.model!, storageUri: variant } } } as ServerlessApp;
        quota.set(renamed);
        assert.equal(quota.problem(renamed)?.reason, 'ModelCacheLargerThanDeclared', `the same model as ${variant}`);
      }
      // A size that covers the measure is allowed; another namespace knows nothing of this one's measures.
      const covered = { ...again, spec: { ...again.spec, model: { ...again.spec.model!, size: '5Gi' } } } as ServerlessApp;
      quota.set(covered);
      assert.equal(quota.problem(covered), undefined);
      const elsewhere = cached('team-b', 'big', '2Gi', '2026-01-03T00:00:00Z');
      quota.set(elsewhere);
      assert.equal(quota.sizeRefusal(elsewhere), undefined, 'team-b has not been seen to hold this model');
    });

    it('re-judges the apps naming the same model another way when it is measured, and remembers its last measure, not an unmeasured folder (review)', async () => {
      const { quota, measures, heard } = setup(100 * GiB);
      const a = cached('team-a', 'a', '2Gi', '2026-01-01T00:00:00Z');
      const b = { ...cached('team-a', 'b', '2Gi', '2026-01-02T00:00:00Z'), spec: { ...a.spec, model: { ...a.spec.model!, storageUri: `${uri}/` } } } as ServerlessApp;
      quota.set(a);
      quota.set(b);
      await Promise.resolve();
      heard.length = 0;
      measures.set(key, { bytes: 5 * GiB, node: 'n1' });
      quota.remeasured([key]);
      assert.deepEqual(heard.flat().sort(), ['team-a/a', 'team-a/b'], 'both names of the model are judged again');
      assert.equal(quota.problem(b)?.reason, 'ModelCacheLargerThanDeclared', 'b is refused before its own download');
      // Measured smaller later (a model replaced): the last measure counts, not the largest ever.
      measures.set(key, { bytes: 1 * GiB, node: 'n1' });
      quota.remeasured([key]);
      measures.delete(key);
      quota.remeasured([key]);
      assert.equal(quota.problem(b), undefined, 'the last measure, 1Gi, fits b\'s 2Gi');
      // A folder the reporter could not measure refuses its own app while reported, and is not remembered after.
      measures.set(key, { bytes: UNMEASURED, node: 'n2' });
      quota.remeasured([key]);
      assert.equal(quota.problem(a)?.reason, 'ModelCacheLargerThanDeclared');
      measures.delete(key);
      quota.remeasured([key]);
      assert.equal(quota.problem(b), undefined, 'an unmeasured folder says nothing of the model once it is gone');
    });

    it('re-judges only the apps of the model whose measure changed', () => {
      const { quota, heard } = setup(100 * GiB);
      for (let i = 0; i < 50; i++) quota.set(other(`app-${i}`, '1Gi', `2026-01-01T00:00:${String(i).padStart(2, '0')}Z`));
      quota.set(cached('team-a', 'mine', '1Gi', '2026-01-02T00:00:00Z'));
      quota.remeasured([key]);
      assert.deepEqual(heard, [['team-a/mine']]);
    });
  });
});
