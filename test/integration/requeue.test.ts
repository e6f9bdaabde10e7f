// The plan's requeue is kept whatever a write returned (issue 22): an app whose
// VirtualService name is taken by an object it does not own (Ready=False
// NotOwned, not retried) still opens its scale window on time, on a controlled
// clock. Nothing else happens at the opening instant that could reconcile the
// app: only the requeue the plan asked for can.
import assert from 'node:assert/strict';
import { OffsetClock } from '../../src/runtime/clock.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getKsvc, knativeReady, userClient, waitForApp } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

// A weekday window 08:00-09:00 Berlin (07:00 UTC in winter); the clock starts an hour before it.
const day = { name: 'business-hours', schedule: '0 8 * * 1-5', duration: '1h', timeZone: 'Europe/Berlin', minScale: 3 };

describe('requeue after a refused write (integration, controlled clock)', function () {
  this.timeout(600_000);
  let op: RunningOperator | undefined;

  after(async () => { await op?.stop(); });

  it('opens a scale window on time although the app\'s VirtualService name belongs to someone else (NotOwned)', async () => {
    const ns = await freshNamespace('requeue');
    const clock = new OffsetClock(new Date('2026-11-23T06:00:00Z'));
    op = await startOperator({}, { clock });
    await userClient().apply({
      apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'shop-routes', namespace: ns, labels: { owner: 'platform' } },
      spec: { hosts: ['shop.internal'], http: [{ route: [{ destination: { host: 'platform.example.svc.cluster.local' } }] }] },
    }, { kind: Kinds.VirtualService });
    await applyApp(app(ns, 'shop', {
      container: { image: 'ghcr.io/acme/shop:1', port: 8080 },
      scaling: { minScale: 0, maxScale: 10, windows: [day] },
      ingress: { hosts: [`shop.${ns}.example.com`] }, // its own host: claims are cluster-wide, and the demo holds shop.example.com
    }));
    const refused = await waitForApp(ns, 'shop', (a) => condition(a, 'Ready')?.reason === 'NotOwned' && a.status?.scaling !== undefined, 'Ready=False NotOwned for the VirtualService', 120_000);
    assert.deepEqual(refused.status?.scaling?.openWindows ?? [], [], 'the window is closed before it opens');
    // The Knative Service is ours and settles first, so no data-plane event is pending at the opening.
    await waitFor('the Knative Service Ready', async () => knativeReady(await getKsvc(ns, 'shop')), { timeoutMs: 120_000 });

    // Two seconds before the opening, one look: the plan asks to come back at 07:00:00.
    clock.jumpTo(new Date('2026-11-23T06:59:58Z'));
    op.apps.controller.enqueueAll();
    // Generous for a 2 s requeue, and short of the informers' periodic relist (about 60 s), which would
    // reconcile the app by accident (the old code passed at 61 s that way).
    const open = await waitForApp(ns, 'shop', (a) => a.status?.scaling?.openWindows?.includes('business-hours') ?? false,
      'status.scaling.openWindows to include business-hours (the requeue at the opening, before any periodic relist)', 30_000);
    assert.equal(open.status?.scaling?.minScale, 3);
    assert.equal(condition(open, 'Ready')?.reason, 'NotOwned', 'the refusal still shows');
  });
});
