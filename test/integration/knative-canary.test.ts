// Canary edits against the REAL Knative Serving 1.21 of the test rig (its
// controller, defaulting and validating webhooks, autoscaler) with KWOK pods.
// On a real cluster every canary edit used to be refused by Knative's webhook
// ("Saw the following changes without a name change") while tests against a
// stand-in passed; these tests are the judge now. Traffic and readiness below
// are what Knative itself reports, never what the operator asked for.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getApp, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

interface KsvcStatus {
  spec: { template: { metadata: { name: string } }; traffic: Array<{ revisionName?: string; percent: number; tag?: string }> };
  status?: { traffic?: Array<{ revisionName?: string; percent?: number; tag?: string }>; conditions?: Array<{ type: string; status: string }> };
}

const spec = (image: string, rollout?: AppSpec['rollout'], extra: Partial<AppSpec> = {}): AppSpec => ({
  container: { image, port: 8080 }, scaling: { minScale: 0 }, ...(rollout ? { rollout } : {}), ...extra,
});

/** Revision name -> percent, as Knative's Route reports it in the Service status (0% targets, e.g. a just-retired tag, left out). */
async function reportedSplit(ns: string): Promise<Record<string, number>> {
  const k = await userClient().get<KsvcStatus>(Kinds.KnativeService, ns, 'shop');
  return Object.fromEntries((k?.status?.traffic ?? []).filter((t) => (t.percent ?? 0) > 0).map((t) => [t.revisionName ?? '', t.percent ?? 0]));
}

const noRejection = (a: ServerlessApp) => condition(a, 'Ready')?.reason !== 'ApplyRejected';

describe('canary rollouts on the real Knative Serving 1.21 (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let ns: string;

  before(async () => { op = await startOperator(); });
  after(async () => { await op?.stop(); });
  beforeEach(async () => { ns = await freshNamespace('kn-canary'); });

  async function stableV1(extra: Partial<AppSpec> = {}): Promise<ServerlessApp> {
    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:1', undefined, extra)));
    return waitForApp(ns, 'shop', readyTrue, 'v1 Ready on real Knative', 120_000);
  }

  it('splits 20%, moves to 50% and promotes: every edit admitted by Knative\'s webhooks, traffic as Knative reports it', async () => {
    const v1 = await stableV1();
    const stableRev = v1.status!.versions!.stable!.revision!;
    assert.deepEqual(await reportedSplit(ns), { [stableRev]: 100 });

    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:2', { canaryPercent: 20 })));
    let a = await waitForApp(ns, 'shop', (x) => !noRejection(x) || x.status?.canary?.trafficPercent === 20, 'Knative reports 20% on the candidate', 120_000);
    assert.ok(noRejection(a), `the canary edit was refused: ${condition(a, 'Ready')?.message}`);
    const candidateRev = a.status!.versions!.candidate!.revision!;
    assert.deepEqual(await reportedSplit(ns), { [stableRev]: 80, [candidateRev]: 20 });
    assert.equal(a.status?.phase, 'Canary');
    assert.equal(condition(a, 'Promoted')?.status, 'False');

    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:2', { canaryPercent: 50 })));
    a = await waitForApp(ns, 'shop', (x) => !noRejection(x) || x.status?.canary?.trafficPercent === 50, 'Knative reports 50%', SETTLE_MS);
    assert.ok(noRejection(a), condition(a, 'Ready')?.message);
    assert.deepEqual(await reportedSplit(ns), { [stableRev]: 50, [candidateRev]: 50 });

    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:2', { canaryPercent: 100 })));
    a = await waitForApp(ns, 'shop', (x) => !noRejection(x) || condition(x, 'Promoted')?.status === 'True', 'promoted', SETTLE_MS);
    assert.ok(noRejection(a), condition(a, 'Ready')?.message);
    // Promoted=True is written only once Knative routes everything to the new revision.
    assert.deepEqual(await reportedSplit(ns), { [candidateRev]: 100 });
    assert.equal(a.status?.phase, 'Stable');
    assert.equal(a.status?.versions?.stable?.revision, candidateRev);
  });

  it('rolls back with canaryPercent 0 and rolls out the next version after it', async () => {
    const v1 = await stableV1();
    const stableRev = v1.status!.versions!.stable!.revision!;
    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:2', { canaryPercent: 30 })));
    await waitForApp(ns, 'shop', (x) => !noRejection(x) || x.status?.canary?.trafficPercent === 30, 'at 30%', 120_000);
    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:2', { canaryPercent: 0 })));
    let a = await waitForApp(ns, 'shop', (x) => !noRejection(x) || (x.status?.phase === 'RolledBack' && x.status?.canary?.trafficPercent === 0), 'rolled back', SETTLE_MS);
    assert.ok(noRejection(a), condition(a, 'Ready')?.message);
    const split = await reportedSplit(ns);
    assert.equal(split[stableRev], 100);

    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:3')));
    a = await waitForApp(ns, 'shop', (x) => !noRejection(x) || (x.status?.phase === 'Stable' && x.status?.versions?.stable?.image === 'ghcr.io/acme/shop:3'), 'v3 promoted', 120_000);
    assert.ok(noRejection(a), condition(a, 'Ready')?.message);
    assert.deepEqual(await reportedSplit(ns), { [a.status!.versions!.stable!.revision!]: 100 });
  });

  it('shows a write Knative refuses as Ready=False ApplyRejected with the server\'s message and an event; the stable version keeps serving', async () => {
    const v1 = await stableV1();
    const stableRev = v1.status!.versions!.stable!.revision!;
    // Knative reserves the queue-proxy's ports (pkg/apis/serving/k8s_validation.go): 8012 is refused by its webhook.
    await applyApp(app(ns, 'shop', { ...spec('ghcr.io/acme/shop:2'), container: { image: 'ghcr.io/acme/shop:2', port: 8012 } }));
    const a = await waitForApp(ns, 'shop', (x) => condition(x, 'Ready')?.reason === 'ApplyRejected', 'ApplyRejected', SETTLE_MS);
    const ready = condition(a, 'Ready')!;
    assert.equal(ready.status, 'False');
    assert.match(ready.message ?? '', /Service .*shop.*8012/s);
    const events = await waitFor('an ApplyRejected event', async () => {
      const list = await userClient().list<{ reason?: string; regarding?: { name?: string } }>(Kinds.Event, ns);
      const found = list.items.filter((e) => e.reason === 'ApplyRejected' && e.regarding?.name === 'shop');
      return found.length ? found : undefined;
    }, { timeoutMs: SETTLE_MS });
    assert.equal(events.length, 1, 'one aggregated event, not one per retry');
    assert.deepEqual(await reportedSplit(ns), { [stableRev]: 100 }, 'the last good version keeps all traffic');
    const metrics = await (await fetch(`http://127.0.0.1:${op.manager.ports.metrics}/metrics`)).text();
    assert.match(metrics, /serverlessapp_write_rejections_total\{kind="Service"\} [1-9]/);

    // Fixing the spec recovers without intervention.
    await applyApp(app(ns, 'shop', spec('ghcr.io/acme/shop:2')));
    const fixed = await waitForApp(ns, 'shop', (x) => x.status?.phase === 'Stable' && x.status?.versions?.stable?.image === 'ghcr.io/acme/shop:2' && readyTrue(x), 'recovered', 120_000);
    assert.equal(condition(fixed, 'Promoted')?.status, 'True');
    assert.ok(await getApp(ns, 'shop'));
  });
});
