// Children go with their app through the real garbage collector of the test
// rig's kube-controller-manager, as on a cluster: the operator deletes nothing
// itself; its owner references are what make the children go.
import assert from 'node:assert/strict';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, readyTrue, userClient, waitForApp } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

describe('deleting an app (integration, real garbage collector)', function () {
  this.timeout(600_000);
  let op: RunningOperator;

  before(async () => { op = await startOperator(); });
  after(async () => { await op?.stop(); });

  it('removes its Knative Service, Revisions and VirtualService', async () => {
    const ns = await freshNamespace('gc');
    await applyApp(app(ns, 'shop', { container: { image: 'ghcr.io/acme/shop:1', port: 8080 }, ingress: { hosts: [`shop.${ns}.example.com`] } }));
    const ready = await waitForApp(ns, 'shop', readyTrue, 'Ready', 120_000);
    const revision = ready.status!.versions!.stable!.revision!;
    assert.ok(await userClient().get(Kinds.KnativeRevision, ns, revision));
    assert.ok(await userClient().get(Kinds.VirtualService, ns, 'shop-routes'));

    await userClient().delete(Kinds.ServerlessApp, ns, 'shop');
    await waitFor('the garbage collector to remove the children', async () => {
      const left = await Promise.all([
        userClient().get(Kinds.KnativeService, ns, 'shop'),
        userClient().get(Kinds.KnativeRevision, ns, revision),
        userClient().get(Kinds.VirtualService, ns, 'shop-routes'),
      ]);
      return left.every((x) => x === undefined);
    }, { timeoutMs: 90_000, intervalMs: 250 });
  });
});
