// What one namespace's model caches may cost the node group's disks (issue 34),
// against KServe 0.20's real local model controller: each cache is charged at
// least the platform's minimum (--model-cache-min-charge: KServe downloads
// whatever the storage URI holds and reports no size, so a declared size is the
// tenant's word), a namespace holds at most --max-model-caches-per-namespace
// caches, and an app refused for any other reason holds none of the budget.
// Each attack leaves a victim app in another namespace serving and applying
// its edits.
import assert from 'node:assert/strict';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { Victim } from '../support/victim.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const GiB = 2 ** 30;

const cachedModel = (ns: string, name: string, size: string, extra: Partial<NonNullable<AppSpec['model']>> = {}): AppSpec => ({
  model: { format: { name: 'sklearn' }, storageUri: `gs://models/${ns}/${name}`, size, ...extra },
  scaling: { minScale: 0, maxScale: 1 },
  prewarm: { cacheModel: true },
});

describe('model cache budget: charged sizes, the count cap and refused apps (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let victim: Victim;

  before(async function () {
    if (!testEnv().dataPlane?.kserve) this.skip();
    op = await startOperator({ maxModelCacheBytesPerNamespace: 3 * GiB, modelCacheMinChargeBytes: GiB, maxModelCachesPerNamespace: 2 });
    victim = await new Victim(await freshNamespace('cache-budget-victim')).start();
  });
  after(async () => { await op?.stop(); });

  const cachesOf = async (ns: string) => (await userClient().list<{ metadata: { labels?: Record<string, string> } }>(Kinds.LocalModelNamespaceCache, ns)).items
    .map((c) => c.metadata.labels?.['serverlessapp.io/app']).sort();

  it('The cache budget counts what the tenant declares, not what lands on disk: models declared 1Mi are charged the platform\'s minimum, and the namespace holds no more caches than its cap', async () => {
    const ns = await freshNamespace('cache-charge');
    // Names in creation order: apps created in the same second (creationTimestamp's resolution) are ordered by name.
    await applyApp(app(ns, 'first', cachedModel(ns, 'first', '1Mi')));
    await waitFor('the first cache', async () => (await cachesOf(ns)).includes('first') || undefined, { timeoutMs: SETTLE_MS });
    await applyApp(app(ns, 'second', cachedModel(ns, 'second', '1Mi')));
    await waitFor('the second cache', async () => (await cachesOf(ns)).includes('second') || undefined, { timeoutMs: SETTLE_MS });
    // Two caches charged 1Gi each: the third fits the 3Gi by its own 1Mi, and not by the count.
    await applyApp(app(ns, 'third', cachedModel(ns, 'third', '1Mi')));
    const capped = await waitForApp(ns, 'third', (x) => condition(x, 'Ready')?.reason === 'ModelCacheQuotaExceeded', 'Ready=False ModelCacheQuotaExceeded (count)', SETTLE_MS);
    assert.match(condition(capped, 'Ready')!.message, new RegExp(`spec\\.prewarm\\.cacheModel: namespace ${ns} may have 2 model caches, and earlier apps have them all`));
    // The first gone, the third fits by count.
    await userClient().delete(Kinds.ServerlessApp, ns, 'first');
    await waitFor('the third cache, once the first app is gone', async () => (await cachesOf(ns)).join() === 'second,third' || undefined, { timeoutMs: 120_000 });
    // The second gone too: a 2560Mi model beside one charged 1Gi does not fit the 3Gi.
    await userClient().delete(Kinds.ServerlessApp, ns, 'second');
    await waitFor('the second cache gone', async () => (await cachesOf(ns)).join() === 'third' || undefined, { timeoutMs: SETTLE_MS });
    await applyApp(app(ns, 'big', cachedModel(ns, 'big', '2560Mi')));
    const over = await waitForApp(ns, 'big', (x) => condition(x, 'Ready')?.reason === 'ModelCacheQuotaExceeded', 'Ready=False ModelCacheQuotaExceeded (bytes)', SETTLE_MS);
    assert.match(condition(over, 'Ready')!.message, new RegExp(`spec\\.model\\.size: the model caches of namespace ${ns} may reserve 3Gi on each node in all; 1Gi is taken by earlier apps, so this 2560Mi model does not fit`));
    assert.deepEqual(await cachesOf(ns), ['third']);
    await victim.servesAndAppliesItsNextEdit();
  });

  it('Refused apps still get node model caches: an app refused for another reason holds none of its namespace\'s budget', async () => {
    const ns = await freshNamespace('cache-refused');
    // Refused (ServiceAccountNotAllowed: the platform allows none), created first, asking for the whole budget.
    await applyApp(app(ns, 'refused', cachedModel(ns, 'refused', '3Gi', { serviceAccountName: 'admin' })));
    await waitForApp(ns, 'refused', (x) => condition(x, 'Ready')?.reason === 'ServiceAccountNotAllowed', 'Ready=False ServiceAccountNotAllowed', SETTLE_MS);
    await applyApp(app(ns, 'later', cachedModel(ns, 'later', '3Gi')));
    await waitFor('the later app\'s cache', async () => (await cachesOf(ns)).join() === 'later' || undefined, { timeoutMs: SETTLE_MS });
    const later = await waitForApp(ns, 'later', (x) => condition(x, 'ModelCached')?.status === 'True', 'ModelCached=True', SETTLE_MS);
    assert.notEqual(condition(later, 'Ready')?.reason, 'ModelCacheQuotaExceeded');
    await victim.servesAndAppliesItsNextEdit();
  });
});
