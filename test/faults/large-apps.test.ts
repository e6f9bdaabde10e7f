// The finding "Large apps crash the operator for everyone": 230 apps of about
// 1.3 MiB each (41 env values of 32 KiB, the most etcd stores), all refused,
// OOM-killed an operator held to the chart's 1 GiB 6.9 s after its start, and
// a LIST page of them read whole fails outright past V8's largest string.
// Here the operator (a child process, with the heap V8 gives it under the
// chart's limit) lists them as a stream, keeps each without its spec (past
// MAX_APP_SPEC_BYTES, never parsed), refuses each for its size, and serves
// another namespace's app meanwhile; its peak RSS must stay under a quarter of
// the chart's limit.
import assert from 'node:assert/strict';
import { MAX_APP_SPEC_BYTES, type ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { objectMembers, parseBytes } from '../../src/runtime/json-scan.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { chartMemoryLimitBytes, podHeapMiB } from '../../bench/memory.ts';
import { MiB, sampleProcess } from '../../bench/proc.ts';
import { app, applyApp, condition, getKsvc, userClient } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { largestAdmittedApp } from '../support/large-apps.ts';
import { OperatorProcess } from '../support/operator-process.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const APPS = 230;
/**
 * A quarter of the chart's limit (256 MiB of 1 GiB). The apps' own bytes are 230 x 1.28 MiB = 295 MiB,
 * so an operator that kept their specs, or held a LIST page of them whole, cannot stay under it; an
 * idle operator (src/main.ts, type stripping) is about 100 MiB, and each app costs it its metadata and
 * status.
 */
const BOUND_BYTES = chartMemoryLimitBytes() / 4;

describe('large apps (fault injection)', function () {
  this.timeout(20 * 60_000);
  let op: OperatorProcess | undefined;
  after(async () => { await op?.kill(); });

  it(`Large apps crash the operator for everyone: ${APPS} refused apps of 1.3 MiB are listed, each refused for its size, another namespace is served, and the peak RSS stays under a quarter of the chart's limit`, async () => {
    const [tenant, victim] = [await freshNamespace('large'), await freshNamespace('victim')];
    const apps = Array.from({ length: APPS }, (_, i) => largestAdmittedApp(tenant, `big-${i}`));
    const client = userClient();
    // A few at once: etcd writes each 1.3 MiB object on its own.
    for (let i = 0; i < apps.length; i += 8) await Promise.all(apps.slice(i, i + 8).map((a) => client.create(Kinds.ServerlessApp, a)));
    await applyApp(app(victim, 'shop', { container: { image: 'registry.example.com/shop:1' }, scaling: { minScale: 0 } }));

    op = await OperatorProcess.start({
      kubeconfigPath: testEnv().kubeconfigPath, namespaces: [tenant, victim], concurrency: 4, nodeArgs: [`--max-old-space-size=${podHeapMiB(chartMemoryLimitBytes())}`],
    });
    // Ready means every informer listed its namespaces: the LIST of the 230 apps succeeded.
    await op.waitReady(SETTLE_MS);
    await waitFor('the victim\'s Knative Service', async () => (await getKsvc(victim, 'shop')) !== undefined || undefined, { timeoutMs: SETTLE_MS });

    // Read as the operator does, one app at a time: only each app's name and status are parsed.
    const refusals = async () => {
      const seen: string[] = [];
      await client.listEach(Kinds.ServerlessApp, tenant, {}, (item) => {
        const members = objectMembers(item);
        const a = { metadata: parseBytes(members.get('metadata')!), ...(members.has('status') ? { status: parseBytes(members.get('status')!) } : {}) } as ServerlessApp;
        const ready = condition(a);
        if (ready?.status === 'False' && ready.reason === 'InvalidSpec' && ready.message.includes(`more than the ${MAX_APP_SPEC_BYTES}`)) seen.push(a.metadata.name);
      });
      return seen;
    };
    const refused = await waitFor(`all ${APPS} apps refused for their size`, async () => { const r = await refusals(); return r.length === APPS ? r : undefined; }, { timeoutMs: 5 * 60_000, intervalMs: 2_000 });
    assert.equal(refused.length, APPS);
    assert.ok(op.alive, `the operator exited: ${op.output().slice(-10).join('\n')}`);
    const peak = sampleProcess(op.pid).peakRssBytes;
    console.error(`large apps: peak RSS ${(peak / MiB).toFixed(1)} MiB with ${APPS} apps of ${(Buffer.byteLength(JSON.stringify(apps[0])) / MiB).toFixed(2)} MiB (bound ${(BOUND_BYTES / MiB).toFixed(0)} MiB)`);
    assert.ok(peak < BOUND_BYTES, `peak RSS ${(peak / MiB).toFixed(1)} MiB, over the bound of ${(BOUND_BYTES / MiB).toFixed(0)} MiB`);
  });
});
