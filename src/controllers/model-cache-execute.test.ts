// The model-cache plan stepped through the one executor (execute.ts) and the
// one writer (children.ts), against a small simulated API server with KServe's
// admission rule (one LocalModelCache per storage URI): what each pass writes,
// and what its report makes of it.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { servedAs } from '../testing/admission.ts';
import { CACHE_FINALIZER, planModelCache, type CacheObject, type CacheObservation, type CacheReport } from '../planner/model-cache-plan.ts';
import type { ChildOperation } from '../planner/plan.ts';
import { cacheKind, renderLocalModelCache } from '../render/local-model-cache.ts';
import { ApiError, type KubeClient } from '../runtime/client.ts';
import { modelApp } from '../testing/apps.ts';
import { ChildWriter } from './children.ts';
import { executeForApp } from './execute.ts';

interface Obj { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; uid?: string; finalizers?: string[]; labels?: Record<string, string> }; spec?: { sourceModelUri?: string } }

/** An API server holding apps and caches: every write is logged as "verb Kind name". */
function cluster(apps: ServerlessApp[]) {
  const objects = new Map<string, Obj>(apps.map((a) => [`ServerlessApp/${a.metadata.name}`, a as Obj]));
  const writes: string[] = [];
  let uid = 0;
  const client = {
    fieldManager: 'serverlessapp-operator',
    async get(kind: { kind: string }, _ns: string | undefined, name: string) { return objects.get(`${kind.kind}/${name}`); },
    async apply(obj: Obj) {
      writes.push(`apply ${obj.kind} ${obj.metadata.name}`);
      const key = `${obj.kind}/${obj.metadata.name}`;
      const live = objects.get(key);
      if (obj.kind === 'ServerlessApp') {
        objects.set(key, { ...live!, metadata: { ...live!.metadata, finalizers: [...new Set([...(live!.metadata.finalizers ?? []), ...(obj.metadata.finalizers ?? [])])] } });
        return objects.get(key);
      }
      // KServe's webhook: one LocalModelCache per storage URI.
      const same = [...objects.values()].find((o) => o.kind === obj.kind && o.metadata.name !== obj.metadata.name && o.spec?.sourceModelUri === obj.spec?.sourceModelUri);
      if (same) throw new ApiError(400, `admission webhook "localmodelcache.kserve-webhook-server.validator" denied the request: LocalModelCache ${same.metadata.name} has the same StorageURI ${obj.spec?.sourceModelUri}`);
      objects.set(key, { ...obj, metadata: { ...obj.metadata, uid: live?.metadata.uid ?? `c${++uid}` } });
      return objects.get(key);
    },
    async delete(kind: { kind: string }, _ns: string | undefined, name: string, opts: { uid?: string } = {}) {
      writes.push(`delete ${kind.kind} ${name}`);
      const live = objects.get(`${kind.kind}/${name}`);
      if (!live) return false;
      if (opts.uid && opts.uid !== live.metadata.uid) throw new ApiError(409, 'Precondition failed: UID in precondition');
      objects.delete(`${kind.kind}/${name}`);
      return true;
    },
    async mergePatch(_kind: unknown, _ns: string, name: string, patch: { metadata: { finalizers: string[] } }) {
      writes.push(`patch ServerlessApp ${name}`);
      const live = objects.get(`ServerlessApp/${name}`)!;
      objects.set(`ServerlessApp/${name}`, { ...live, metadata: { ...live.metadata, finalizers: patch.metadata.finalizers } });
      return objects.get(`ServerlessApp/${name}`);
    },
  } as unknown as KubeClient;
  const caches = () => [...objects.values()].filter((o) => o.kind === 'LocalModelCache') as CacheObject[];
  const app = (name: string) => objects.get(`ServerlessApp/${name}`) as ServerlessApp | undefined;
  const setApp = (a: ServerlessApp) => objects.set(`ServerlessApp/${a.metadata.name}`, a as unknown as Obj);
  return { client, writes, caches, app, setApp };
}

/** The app as the app controller has reported on it, its model under its namespace's own path (what a cluster-scoped cache needs). */
const reported = (app: ServerlessApp, name = app.metadata.name, storageUri = 'gs://models/ml/fraud/v7'): ServerlessApp => ({
  ...app, metadata: { ...app.metadata, name, uid: `uid-${name}` }, spec: { ...app.spec, model: { ...app.spec.model!, storageUri } },
  status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
});

/** One reconcile of `name`, as the controller runs it: observe, plan, execute, report. */
async function pass(c: ReturnType<typeof cluster>, writer: ChildWriter, name: string): Promise<CacheReport & { writes: string[] }> {
  const before = c.writes.length;
  const app = c.app(name);
  const o: CacheObservation = {
    request: { namespace: 'ml', name }, app, now: new Date('2026-02-01T00:00:00Z'), scope: 'cluster', nodeGroup: 'gpu', policy: { allowedStorageUriPrefixes: ['gs://models/{namespace}/'] }, served: true,
    caches: c.caches(), cacheNamed: (_ns, n) => c.caches().find((x) => x.metadata.name === n), inferenceService: undefined, quota: undefined,
    admission: app && servedAs(app, { allowedStorageUriPrefixes: ['gs://models/{namespace}/'] }),
  };
  const plan = planModelCache(o);
  const report = plan.report(await executeForApp(writer, app, plan.operations));
  return { ...report, writes: c.writes.slice(before) };
}

describe('model cache: the plan executed through execute.ts, pass by pass', () => {
  it('caches a model, refuses a second app the same model, replaces the cache on a model change, and removes it with the app', async () => {
    const c = cluster([reported(modelApp(), 'fraud'), reported(modelApp(), 'copy')]);
    const writer = new ChildWriter(c.client);
    const v7 = renderLocalModelCache(c.app('fraud')!, 'cluster', 'gpu').metadata.name;

    const first = await pass(c, writer, 'fraud');
    assert.deepEqual(first.writes, ['apply ServerlessApp fraud', `apply LocalModelCache ${v7}`], 'the finalizer before the cache');
    assert.deepEqual([first.condition?.status, first.condition?.reason, first.eventsFor(false).map((e) => e.reason)], ['True', 'ModelCacheApplied', ['ModelCacheApplied']]);
    assert.equal(first.write?.conditions?.[0]?.reason, 'ModelCacheApplied');

    const copy = await pass(c, writer, 'copy');
    assert.deepEqual([copy.condition?.reason, copy.eventsFor(false).map((e) => [e.type, e.reason]), !!copy.retry], ['ModelCacheRejected', [['Warning', 'ModelCacheRejected']], true]);
    assert.match(copy.condition!.message, /has the same StorageURI gs:\/\/models\/ml\/fraud\/v7/);

    const again = await pass(c, writer, 'fraud');
    assert.deepEqual(again.writes, [], 'converged: nothing written');

    c.setApp(reported(c.app('fraud')!, 'fraud', 'gs://models/ml/fraud/v8'));
    const v8 = renderLocalModelCache(c.app('fraud')!, 'cluster', 'gpu').metadata.name;
    const changed = await pass(c, writer, 'fraud');
    assert.deepEqual(changed.writes, [`apply LocalModelCache ${v8}`, `delete LocalModelCache ${v7}`], 'the new cache before the old one goes');
    assert.deepEqual([changed.condition?.reason, changed.eventsFor(false).map((e) => e.reason)], ['ModelCacheApplied', ['ModelCacheApplied', 'ModelCacheRemoved']]);

    const copyAgain = await pass(c, writer, 'copy');
    assert.equal(copyAgain.condition?.reason, 'ModelCacheApplied', 'admitted once the other app\'s cache of the model is gone');

    const fraud = c.app('fraud')!;
    c.setApp({ ...fraud, metadata: { ...fraud.metadata, deletionTimestamp: '2026-02-01T00:00:00Z' } });
    const deleted = await pass(c, writer, 'fraud');
    assert.deepEqual(deleted.writes, [`delete LocalModelCache ${v8}`, 'patch ServerlessApp fraud'], 'the finalizer goes last');
    assert.deepEqual(c.app('fraud')!.metadata.finalizers, []);
    assert.deepEqual(c.caches().map((x) => x.metadata.labels?.['serverlessapp.io/app']), ['copy']);
  });

  it('removes no cluster-scoped cache whose labels name another app, whatever the operation says', async () => {
    const c = cluster([reported(modelApp(), 'fraud'), reported(modelApp(), 'other')]);
    const writer = new ChildWriter(c.client);
    await pass(c, writer, 'other');
    const theirs = c.caches()[0]!;
    const op: ChildOperation = { id: 'remove/x', action: 'remove', kind: cacheKind('cluster'), live: theirs, labelledFor: { namespace: 'ml', name: 'fraud' }, why: 'test' };
    const before = c.writes.length;
    const [done] = await executeForApp(writer, c.app('fraud'), [op]);
    assert.equal(done!.outcome, 'unchanged');
    assert.deepEqual(c.writes.slice(before), [], 'nothing deleted');
  });

  it('removes a finalizer from an app that is already gone without failing: unchanged', async () => {
    const c = cluster([]);
    const gone = { ...reported(modelApp(), 'fraud'), metadata: { ...reported(modelApp(), 'fraud').metadata, finalizers: [CACHE_FINALIZER] } };
    const notFound = { ...c.client, mergePatch: async () => { throw new ApiError(404, 'not found'); } } as unknown as KubeClient;
    const [done] = await executeForApp(new ChildWriter(notFound), gone, [{ id: 'drop-finalizer', action: 'finalizer', name: CACHE_FINALIZER, present: false, why: 'test' }]);
    assert.equal(done!.outcome, 'unchanged');
  });
});
