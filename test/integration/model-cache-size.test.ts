// The node model cache charged for what lands on disk (issue 34): KServe 0.20's
// real local model cache in the rig, its download SIMULATED
// (test/envtest/model-download.ts) and made to write more than the app
// declared, the node-side cache usage reporter (src/cache-reporter/) run as a
// process per rig node against that node's models directory, as the chart's
// DaemonSet runs it. The app whose model is larger than declared is refused
// and its cache removed, and stays refused until its spec changes; an app in
// another namespace keeps its cache.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { modelStorageKey, usageReportName } from '../../src/render/model-cache-usage.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { nodeModelsDir, NODE_GROUPS } from '../envtest/kserve-localmodel.ts';
import { setSimulatedDownloadSize } from '../envtest/model-download.ts';
import { startStandins, type Standins } from '../standin/standin.ts';
import { app, applyApp, condition, getApp, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { assertQuietWindow } from '../support/quiet-window.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

interface Cache { metadata: { name: string; labels?: Record<string, string> }; status?: { copies?: { available?: number } } }

const GiB = 2 ** 30;
const PLAIN_NODE = 'rig-node-1';
const RIG_NODES = ['rig-node-1', 'rig-gpu-node-1'];
/** startOperator's namespace (its leader election's and policy's): where the reports go. */
const OPERATOR_NAMESPACE = 'default';

const cachedModel = (storageUri: string, size: string): AppSpec => ({
  model: { format: { name: 'sklearn' }, storageUri, size, resources: { limits: { cpu: '1', memory: '2Gi' } } },
  scaling: { minScale: 0, maxScale: 1 },
  prewarm: { cacheModel: true },
});

describe('model cache charged for what lands on the nodes (integration)', function () {
  this.timeout(900_000);
  let op: RunningOperator;
  let standins: Standins;
  const reporters: ChildProcess[] = [];

  before(async function () {
    if (!testEnv().dataPlane?.kserve) this.skip();
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), readyDelayMs: 100 });
    op = await startOperator({ modelCacheScope: 'cluster', modelCacheNodeGroup: NODE_GROUPS.default, allowedStorageUriPrefixes: ['gs://models/{namespace}/'] });
    // One reporter per node, as the chart's DaemonSet runs them, each on its node's models directory.
    for (const node of RIG_NODES) {
      const p = spawn(process.execPath, ['src/cache-reporter/main.ts', '--models-dir', nodeModelsDir(testEnv().dir, node), '--node-name', node,
        '--namespace', OPERATOR_NAMESPACE, '--kubeconfig', testEnv().kubeconfigPath, '--interval-seconds', '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
      reporters.push(p);
    }
  });
  after(async () => {
    for (const p of reporters) {
      if (p.pid !== undefined && p.exitCode === null) {
        const exited = new Promise((resolve) => p.once('exit', resolve));
        process.kill(p.pid, 'SIGTERM');
        await exited;
      }
    }
    for (const node of RIG_NODES) await userClient().delete(Kinds.ConfigMap, OPERATOR_NAMESPACE, usageReportName(node)).catch(() => undefined);
    await op?.stop();
    await standins?.stop();
  });

  const cacheOf = async (ns: string, name: string) => (await userClient().list<Cache>(Kinds.LocalModelCache)).items
    .find((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === ns && c.metadata.labels['serverlessapp.io/app'] === name);
  const report = async (node: string) => (await userClient().get<{ data?: Record<string, string> }>(Kinds.ConfigMap, OPERATOR_NAMESPACE, usageReportName(node)))?.data ?? {};

  it('refuses and removes the cache of a model larger than declared, keeps it refused until the size changes, and leaves another namespace\'s cache alone', async () => {
    const tenant = await freshNamespace('greedy');
    const other = await freshNamespace('victim');
    const bigUri = `gs://models/${tenant}/big/v1`;
    const irisUri = `gs://models/${other}/iris/v1`;
    // SIMULATED: the download of the big model writes 3Gi (a sparse file), where the app declares 1Gi.
    setSimulatedDownloadSize(testEnv().dir, bigUri, 3 * GiB);
    try {
      await applyApp(app(other, 'iris', cachedModel(irisUri, '1Gi')));
      await waitFor('the victim\'s model downloaded on the plain node', async () => (await cacheOf(other, 'iris'))?.status?.copies?.available === 1, { timeoutMs: SETTLE_MS });
      await applyApp(app(tenant, 'big', cachedModel(bigUri, '1Gi')));

      // The reporter measured the folder KServe's Job filled, and the operator refused the cache for it.
      const refused = await waitForApp(tenant, 'big', (a) => condition(a, 'ModelCached')?.reason === 'ModelCacheLargerThanDeclared' && a.status?.refusedModelCache !== undefined,
        'ModelCached=False ModelCacheLargerThanDeclared, recorded in status.refusedModelCache', SETTLE_MS);
      assert.equal(condition(refused, 'ModelCached')?.status, 'False');
      assert.match(condition(refused, 'ModelCached')!.message, new RegExp(`^spec\\.model\\.size: the model ${bigUri} takes 3Gi \\(3221225472 bytes\\) on node ${PLAIN_NODE}, more than its declared 1Gi`));
      assert.deepEqual(refused.status?.refusedModelCache, { storageUri: bigUri, size: '1Gi', measuredBytes: 3 * GiB, node: PLAIN_NODE });
      // As ModelCacheQuotaExceeded: Ready says so, naming the field.
      const ready = await waitForApp(tenant, 'big', (a) => condition(a, 'Ready')?.reason === 'ModelCacheLargerThanDeclared', 'Ready=False ModelCacheLargerThanDeclared', SETTLE_MS);
      assert.equal(condition(ready, 'Ready')?.status, 'False');
      await waitFor('a ModelCacheLargerThanDeclared Warning on the app', async () => {
        const events = await userClient().list<{ type?: string; reason?: string; regarding?: { name?: string }; involvedObject?: { name?: string } }>(Kinds.Event, tenant);
        return events.items.some((e) => e.type === 'Warning' && e.reason === 'ModelCacheLargerThanDeclared' && (e.regarding?.name ?? e.involvedObject?.name) === 'big');
      }, { timeoutMs: 60_000 });

      // The cache removed, and KServe's agent deleted the model's folder on the node (controller.go deleteModels).
      await waitFor('the big model\'s cache gone', async () => (await cacheOf(tenant, 'big')) === undefined, { timeoutMs: SETTLE_MS });
      const folder = join(nodeModelsDir(testEnv().dir, PLAIN_NODE), 'models', modelStorageKey(bigUri));
      await waitFor('the big model\'s folder gone from the node', () => !existsSync(folder), { timeoutMs: SETTLE_MS });
      await waitFor('the node\'s report no longer listing the folder', async () => !(modelStorageKey(bigUri) in await report(PLAIN_NODE)), { timeoutMs: 60_000 });

      // Sticky: with no measure left, the cache is not made again (no download, no refusal loop) ...
      await assertQuietWindow({
        what: 'the refused app got no cache again and stayed refused',
        windowMs: 15_000,
        observe: async () => ({ cache: (await cacheOf(tenant, 'big')) !== undefined, reason: condition(await getApp(tenant, 'big'), 'ModelCached')?.reason }),
        expect: { cache: false, reason: 'ModelCacheLargerThanDeclared' },
        // ... until the user declares a size the model fits in.
        control: () => applyApp(app(tenant, 'big', cachedModel(bigUri, '4Gi'))),
        controlShows: (o) => o.cache,
      });
      const lifted = await waitForApp(tenant, 'big', (a) => condition(a, 'ModelCached')?.status === 'True', 'ModelCached=True once the declared size covers the model', SETTLE_MS);
      assert.equal(lifted.status?.refusedModelCache, undefined, 'the refusal is lifted with the new size');
      await waitFor('the big model downloaded again, now within its declared size', async () => (await cacheOf(tenant, 'big'))?.status?.copies?.available === 1, { timeoutMs: SETTLE_MS });
      // Measured again at 3Gi, under the 4Gi declared: not refused.
      await waitFor('the node\'s report measuring the model again', async () => (await report(PLAIN_NODE))[modelStorageKey(bigUri)] === String(3 * GiB), { timeoutMs: 60_000 });
      assert.equal(condition(await getApp(tenant, 'big'), 'ModelCached')?.status, 'True');

      // The other namespace's app kept its cache throughout.
      const victim = await getApp(other, 'iris');
      assert.equal(condition(victim, 'ModelCached')?.status, 'True');
      assert.equal(victim.status?.refusedModelCache, undefined);
      assert.equal((await cacheOf(other, 'iris'))?.status?.copies?.available, 1);
    } finally {
      setSimulatedDownloadSize(testEnv().dir, bigUri, undefined);
      await userClient().delete(Kinds.ServerlessApp, tenant, 'big').catch(() => undefined);
      await userClient().delete(Kinds.ServerlessApp, other, 'iris').catch(() => undefined);
      await waitFor('both caches gone', async () => (await cacheOf(tenant, 'big')) === undefined && (await cacheOf(other, 'iris')) === undefined, { timeoutMs: SETTLE_MS });
    }
  });
});
