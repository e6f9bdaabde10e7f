// The rig's real Knative Serving 1.21 (controller, webhook, autoscaler), with
// kube-controller-manager, kube-scheduler and KWOK nodes: what the operator's
// writes meet on a real cluster. No operator runs here; these pin down the
// upstream behaviour the operator has to live with.
import assert from 'node:assert/strict';
import { AppsV1Api, KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { isConditionTrue } from '../../src/util/conditions.ts';
import { waitFor } from '../support/wait.ts';

interface KnativeObject extends KubernetesObject {
  spec?: any;
  status?: { conditions?: Array<{ type: string; status: string; message?: string }>; [key: string]: any };
}

const SERVING = 'serving.knative.dev/v1';
const READY_TIMEOUT_MS = 90_000;

function knativeService(namespace: string, name: string, revision: string, image: string): KnativeObject {
  return {
    apiVersion: SERVING, kind: 'Service', metadata: { name, namespace },
    spec: { template: { metadata: { name: revision }, spec: { containers: [{ image, ports: [{ containerPort: 8080 }] }] } } },
  };
}

function isReady(obj: KnativeObject | undefined): boolean {
  return isConditionTrue(obj?.status?.conditions, 'Ready');
}

describe('the rig runs the real Knative Serving 1.21', function () {
  this.timeout(4 * READY_TIMEOUT_MS);
  let ns: string;
  let client: KubernetesObjectApi;

  const apply = (obj: KnativeObject, manager: string) =>
    client.patch(obj, undefined, undefined, manager, true, PatchStrategy.ServerSideApply) as Promise<KnativeObject>;
  const read = (kind: string, name: string): Promise<KnativeObject> =>
    client.read({ apiVersion: SERVING, kind, metadata: { name, namespace: ns } }) as Promise<KnativeObject>;
  const readyService = (name: string, check: (svc: KnativeObject) => boolean = () => true) =>
    waitFor(`Knative Service ${name} Ready`, async () => {
      const svc = await read('Service', name);
      return isReady(svc) && check(svc) && svc;
    }, { timeoutMs: READY_TIMEOUT_MS });

  before(function () {
    if (!testEnv().dataPlane?.knative) this.skip();
    client = KubernetesObjectApi.makeApiClient(testEnv().kubeConfig());
  });
  beforeEach(async () => {
    ns = await freshNamespace('knative-rig');
  });

  it('makes a Service with a BYO revision name Ready, with its Revision, Route and a Running pod', async () => {
    await apply(knativeService(ns, 'hello', 'hello-v1', 'ghcr.io/example/hello:1.0.0'), 'manager-a');

    const svc = await readyService('hello');
    assert.equal(svc.status?.latestReadyRevisionName, 'hello-v1');
    assert.deepEqual(svc.status?.traffic?.map((t: any) => [t.revisionName, t.percent]), [['hello-v1', 100]]);
    assert.ok(isReady(await read('Revision', 'hello-v1')));
    assert.ok(isReady(await read('Route', 'hello')));
    const pods = await testEnv().dataPlane!.pods(ns);
    assert.ok(pods.some((p) => p.metadata?.labels?.['serving.knative.dev/revision'] === 'hello-v1' && p.status?.phase === 'Running'),
      `a Running pod of hello-v1 (pods: ${pods.map((p) => `${p.metadata?.name}=${p.status?.phase}`).join(', ')})`);
  });

  it('moves the traffic to a new revision', async () => {
    await apply(knativeService(ns, 'hello', 'hello-v1', 'ghcr.io/example/hello:1.0.0'), 'manager-a');
    await readyService('hello');

    await apply(knativeService(ns, 'hello', 'hello-v2', 'ghcr.io/example/hello:1.0.1'), 'manager-a');

    const svc = await readyService('hello', (s) => s.status?.latestReadyRevisionName === 'hello-v2'
      && s.status?.traffic?.[0]?.revisionName === 'hello-v2');
    assert.deepEqual(svc.status?.traffic?.map((t: any) => [t.revisionName, t.percent]), [['hello-v2', 100]]);
  });

  it('refuses a server-side apply that drops webhook-defaulted template fields without a revision name change', async () => {
    const desired = knativeService(ns, 'hello', 'hello-v1', 'ghcr.io/example/hello:1.0.0');
    const created = await apply(desired, 'manager-a');
    // The defaulting webhook filled the template; SSA counts those fields as manager-a's.
    assert.equal(created.spec.template.spec.containers[0].readinessProbe?.successThreshold, 1);

    // The same apply again omits them, so SSA removes them; the template keeps its name.
    await assert.rejects(apply(desired, 'manager-a'), (err: { code?: number; body?: unknown }) => {
      const body = typeof err.body === 'string' ? err.body : JSON.stringify(err.body);
      assert.match(body, /validation\.webhook\.serving\.knative\.dev/);
      assert.match(body, /Saw the following changes without a name change/);
      return true;
    });
  });

  it('removes the Revisions and Deployments of a deleted Service through the garbage collector', async () => {
    await apply(knativeService(ns, 'hello', 'hello-v1', 'ghcr.io/example/hello:1.0.0'), 'manager-a');
    await readyService('hello');
    const apps = testEnv().kubeConfig().makeApiClient(AppsV1Api);
    assert.ok((await apps.listNamespacedDeployment({ namespace: ns })).items.length > 0);

    await client.delete({ apiVersion: SERVING, kind: 'Service', metadata: { name: 'hello', namespace: ns } });

    await waitFor('Revisions and Deployments of the deleted Service to be gone', async () => {
      const revisions = await client.list(SERVING, 'Revision', ns);
      const deployments = await apps.listNamespacedDeployment({ namespace: ns });
      return revisions.items.length === 0 && deployments.items.length === 0;
    }, { timeoutMs: READY_TIMEOUT_MS });
  });
});
