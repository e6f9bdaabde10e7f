import assert from 'node:assert/strict';
import { ApiError, type KubeClient } from '../runtime/client.ts';
import { WRITE_RULES } from '../planner/write-rules.ts';
import { Kinds } from '../util/kinds.ts';
import { ChildWriter, WriteRejected } from './children.ts';
import { routingManager } from '../planner/write-rules.ts';

const M = 'serverlessapp-operator';
/** The app's controller reference, on what these tests write and what the cache shows. */
const OWNER = [{ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', name: 'shop', uid: 'a1', controller: true }];

interface Call { verb: 'get' | 'apply' | 'delete'; obj?: unknown; name?: string; fieldManager?: string; dryRun?: boolean }

/** Records requests; `respond` decides what the "server" answers; `stored` is what a GET finds (default: nothing). */
function fakeClient(respond: (call: Call) => unknown = (c) => c.obj, stored: unknown = undefined): { client: KubeClient; calls: Call[] } {
  const calls: Call[] = [];
  const client = {
    fieldManager: M,
    async get(_kind: unknown, _namespace: string | undefined, name: string) {
      calls.push({ verb: 'get', name });
      return stored;
    },
    async apply(obj: unknown, opts: { fieldManager?: string; dryRun?: boolean } = {}) {
      const call: Call = { verb: 'apply', obj, fieldManager: opts.fieldManager ?? M, ...(opts.dryRun ? { dryRun: true } : {}) };
      calls.push(call);
      const out = respond(call);
      if (out instanceof Error) throw out;
      return out;
    },
    async delete() {
      calls.push({ verb: 'delete' });
      return true;
    },
  } as unknown as KubeClient;
  return { client, calls };
}

function ksvc(revision: string, traffic: unknown[], extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'serving.knative.dev/v1', kind: 'Service',
    metadata: { name: 'shop', namespace: 'team-a', labels: { app: 'shop' }, ownerReferences: OWNER },
    spec: { template: { metadata: { name: revision }, spec: { containers: [{ image: 'shop:1', ...extra }] } }, traffic },
  };
}

/** A live object as the cache shows it: what we applied plus what Knative's webhook defaulted, owned by `manager`. */
function live(obj: ReturnType<typeof ksvc>, owned: Record<string, unknown>) {
  return {
    ...obj,
    metadata: { ...obj.metadata, uid: 'u1', resourceVersion: '7', managedFields: Object.entries(owned).map(([manager, fieldsV1]) => ({ manager, operation: 'Apply', fieldsV1 })) },
    spec: {
      ...obj.spec,
      template: { ...obj.spec.template, spec: { containers: [{ ...obj.spec.template.spec.containers[0], name: 'user-container', readinessProbe: { successThreshold: 1 } }], containerConcurrency: 0 } },
    },
  };
}

const TEMPLATE_FIELDS = { 'f:spec': { 'f:template': { 'f:spec': { 'f:containerConcurrency': {}, 'f:containers': {} } }, 'f:traffic': {} } };

describe('ChildWriter', () => {
  describe('Knative Services', () => {
    it('moves traffic with the routing manager only, never re-sending the defaulted template', async () => {
      const { client, calls } = fakeClient();
      const was = live(ksvc('shop-aaa', [{ revisionName: 'shop-aaa', percent: 100 }]), { [M]: TEMPLATE_FIELDS });
      const want = ksvc('shop-aaa', [{ revisionName: 'shop-aaa', percent: 80 }, { revisionName: 'shop-bbb', percent: 20 }]);
      assert.equal(await new ChildWriter(client).ensure(Kinds.KnativeService, want, was, WRITE_RULES['named-template']), true);
      assert.equal(calls.length, 1);
      assert.equal(calls[0]!.fieldManager, routingManager(M));
      const sent = calls[0]!.obj as { spec: Record<string, unknown> };
      assert.deepEqual(Object.keys(sent.spec), ['traffic'], 'the routing write holds no template field');
    });

    it('writes the whole object, traffic included, when the revision name changes', async () => {
      const { client, calls } = fakeClient();
      const was = live(ksvc('shop-aaa', [{ revisionName: 'shop-aaa', percent: 100 }]), { [M]: TEMPLATE_FIELDS });
      const want = ksvc('shop-bbb', [{ revisionName: 'shop-aaa', percent: 100 }], { image: 'shop:2' });
      await new ChildWriter(client).ensure(Kinds.KnativeService, want, was, WRITE_RULES['named-template']);
      assert.deepEqual(calls.map((c) => [c.fieldManager, (c.obj as typeof want).spec.template.metadata.name, (c.obj as typeof want).spec.traffic.length]), [[M, 'shop-bbb', 1]]);
    });

    it('does not write a template again when the cache has not caught up with its own write yet', async () => {
      const { client, calls } = fakeClient((c) => ({ ...(c.obj as object), metadata: { ...(c.obj as { metadata: object }).metadata, uid: 'u1' } }));
      const writer = new ChildWriter(client);
      const was = live(ksvc('shop-aaa', [{ revisionName: 'shop-aaa', percent: 100 }]), { [M]: TEMPLATE_FIELDS });
      await writer.ensure(Kinds.KnativeService, ksvc('shop-bbb', [{ revisionName: 'shop-aaa', percent: 100 }], { image: 'shop:2' }), was, WRITE_RULES['named-template']);
      // The next pass still sees the old template in the cache, and wants new traffic.
      const next = ksvc('shop-bbb', [{ revisionName: 'shop-aaa', percent: 100 }, { revisionName: 'shop-bbb', percent: 0 }], { image: 'shop:2' });
      await writer.ensure(Kinds.KnativeService, next, was, WRITE_RULES['named-template']);
      assert.deepEqual(calls.filter((c) => c.verb === 'apply').map((c) => c.fieldManager), [M, routingManager(M)], 'the second write moves traffic only');
      // Once the cache moves on and shows a template someone else wrote, it is written back.
      const edited = { ...live(ksvc('shop-zzz', [{ revisionName: 'shop-aaa', percent: 100 }]), { [M]: TEMPLATE_FIELDS }), metadata: { ...was.metadata, resourceVersion: '9' } };
      await writer.ensure(Kinds.KnativeService, next, edited, WRITE_RULES['named-template']);
      assert.equal(calls.filter((c) => c.verb === 'apply').at(-1)?.fieldManager, M, 'drift in the template is undone');
    });

    it('creates the Service again after it was deleted by hand, even under a revision name it wrote before', async () => {
      const { client, calls } = fakeClient((c) => c.obj);
      const writer = new ChildWriter(client);
      const want = ksvc('shop-aaa', [{ revisionName: 'shop-aaa', percent: 100 }]);
      await writer.ensure(Kinds.KnativeService, want, undefined, WRITE_RULES['named-template']);
      assert.equal(await writer.ensure(Kinds.KnativeService, want, undefined, WRITE_RULES['named-template']), false, 'the cache has not shown it yet: no second create');
      await writer.ensure(Kinds.KnativeService, want, live(want, { [M]: TEMPLATE_FIELDS }), WRITE_RULES['named-template']);
      await writer.ensure(Kinds.KnativeService, want, undefined, WRITE_RULES['named-template']);
      assert.equal(calls.filter((c) => c.verb === 'apply' && c.fieldManager === M).length, 2, 'created, then created again after the delete');
    });

    it('writes nothing when template name and traffic are as desired, whatever Knative defaulted', async () => {
      const { client, calls } = fakeClient();
      const want = ksvc('shop-aaa', [{ revisionName: 'shop-aaa', percent: 100 }]);
      assert.equal(await new ChildWriter(client).ensure(Kinds.KnativeService, want, live(want, { [M]: TEMPLATE_FIELDS }), WRITE_RULES['named-template']), false);
      assert.deepEqual(calls, []);
    });

    it('creates a missing Service in one write, after reading that it does not exist', async () => {
      const { client, calls } = fakeClient();
      await new ChildWriter(client).ensure(Kinds.KnativeService, ksvc('shop-aaa', []), undefined, WRITE_RULES['named-template']);
      assert.deepEqual(calls.map((c) => [c.verb, c.fieldManager]), [['get', undefined], ['apply', M]]);
    });
  });

  describe('fields we own but did not render', () => {
    const vs = (hosts: string[]) => ({ apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'shop', namespace: 'team-a', ownerReferences: OWNER }, spec: { hosts } });
    const ownedWithDefault = { [M]: { 'f:spec': { 'f:hosts': {}, 'f:defaulted': {} } } };
    const liveVs = (spec: Record<string, unknown>) => ({ ...vs(['a']), metadata: { ...vs(['a']).metadata, uid: 'u1', resourceVersion: '3', managedFields: [{ manager: M, operation: 'Apply', fieldsV1: ownedWithDefault[M] }] }, spec });

    it('asks the server with a dry run, and skips the write when the apply would change nothing (a webhook default)', async () => {
      const current = liveVs({ hosts: ['a'], defaulted: true });
      const { client, calls } = fakeClient((c) => (c.dryRun ? current : c.obj));
      const writer = new ChildWriter(client);
      assert.equal(await writer.ensure(Kinds.VirtualService, vs(['a']), current, WRITE_RULES['atomic-lists']), false);
      assert.deepEqual(calls.map((c) => c.dryRun ?? false), [true]);
      assert.equal(await writer.ensure(Kinds.VirtualService, vs(['a']), current, WRITE_RULES['atomic-lists']), false);
      assert.equal(calls.length, 1, 'the verdict is remembered for this resourceVersion');
    });

    it('writes when the dry run shows a field we dropped would go', async () => {
      const current = liveVs({ hosts: ['a'], defaulted: true });
      const { client, calls } = fakeClient((c) => (c.dryRun ? liveVs({ hosts: ['a'] }) : c.obj));
      assert.equal(await new ChildWriter(client).ensure(Kinds.VirtualService, vs(['a']), current, WRITE_RULES['atomic-lists']), true);
      assert.deepEqual(calls.map((c) => c.dryRun ?? false), [true, false]);
    });

    it('sees a field dropped inside a VirtualService route, which an atomic list hides from managedFields, and writes it away', async () => {
      const route = { name: 'default', route: [{ destination: { host: 'gw' } }] };
      const want = { ...vs(['a']), spec: { hosts: ['a'], http: [route] } };
      const current = { ...liveVs({ hosts: ['a'], http: [{ ...route, mirror: { host: 'shop-00002-private.team-a.svc.cluster.local' } }] }), metadata: { ...liveVs({}).metadata, managedFields: [{ manager: M, operation: 'Apply', fieldsV1: { 'f:spec': { 'f:hosts': {}, 'f:http': {} } } }] } };
      const { client, calls } = fakeClient((c) => (c.dryRun ? want : c.obj));
      assert.equal(await new ChildWriter(client).ensure(Kinds.VirtualService, want, current, WRITE_RULES['atomic-lists']), true);
      assert.deepEqual(calls.map((c) => c.dryRun ?? false), [true, false]);
    });
  });

  it('turns a refused write into WriteRejected naming the kind and object; other failures pass through', async () => {
    const denied = new ApiError(400, 'admission webhook "validation.webhook.serving.knative.dev" denied the request: validation failed');
    const { client } = fakeClient(() => denied);
    const err = await new ChildWriter(client).ensure(Kinds.KnativeService, ksvc('shop-aaa', []), undefined, WRITE_RULES['named-template']).catch((e: unknown) => e);
    assert.ok(err instanceof WriteRejected);
    assert.equal(err.reason, 'ApplyRejected');
    assert.equal(err.retry, true, 'a refusal may pass later (a webhook back): retried with backoff');
    assert.equal(err.kind, 'Service');
    assert.equal(err.object, 'team-a/shop');
    assert.match(err.message, /denied the request/);
    const busy = new ApiError(429, 'too many requests');
    const { client: c2 } = fakeClient(() => busy);
    assert.equal(await new ChildWriter(c2).ensure(Kinds.KnativeService, ksvc('shop-aaa', []), undefined, WRITE_RULES['named-template']).catch((e: unknown) => e), busy);
  });

  it('reads the 500 server-side apply answers for an object that does not fit the schema as a refusal; any other 500 passes through', async () => {
    const untyped = new ApiError(500, 'failed to create typed patch object (serving.knative.dev/v1, Kind=Service) team-a/shop: .spec.template.spec.containers[name="user-container"].env[name="DB"].valueFrom.SecretKeyRef: field not declared in schema');
    const { client } = fakeClient(() => untyped);
    const err = await new ChildWriter(client).ensure(Kinds.KnativeService, ksvc('shop-aaa', []), undefined).catch((e: unknown) => e);
    assert.ok(err instanceof WriteRejected);
    assert.equal(err.reason, 'ApplyRejected');
    assert.match(err.message, /SecretKeyRef: field not declared in schema/);
    const crash = new ApiError(500, 'Internal error occurred: etcdserver: request timed out');
    const { client: c2 } = fakeClient(() => crash);
    assert.equal(await new ChildWriter(c2).ensure(Kinds.KnativeService, ksvc('shop-aaa', []), undefined).catch((e: unknown) => e), crash);
  });

  it('knows a refusal because the namespace is being deleted (nothing to report: the app goes too)', async () => {
    const body = { kind: 'Status', code: 403, reason: 'Forbidden', details: { causes: [{ reason: 'NamespaceTerminating', message: 'namespace team-a is being terminated' }] } };
    const terminating = new ApiError(403, 'unable to create new content in namespace team-a because it is being terminated', 'Forbidden', body);
    const forbidden = new ApiError(403, 'forbidden: RBAC', 'Forbidden', { kind: 'Status', code: 403 });
    const refusal = async (e: ApiError) => new ChildWriter(fakeClient(() => e).client).ensure(Kinds.KnativeService, ksvc('shop-aaa', []), undefined, WRITE_RULES['named-template']).then(() => assert.fail('not refused'), (x: unknown) => x as WriteRejected);
    assert.equal((await refusal(terminating)).namespaceTerminating, true);
    assert.equal((await refusal(forbidden)).namespaceTerminating, false);
  });

  describe('objects this app does not own', () => {
    const APP_UID = 'app-uid-1';
    const ours = (uid = APP_UID) => ({ ...ksvc('shop-aaa', []), metadata: { ...ksvc('shop-aaa', []).metadata, ownerReferences: [{ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', name: 'shop', uid, controller: true }] } });
    const stored = (metadata: Record<string, unknown>) => ({ ...ksvc('shop-old', []), metadata: { name: 'shop', namespace: 'team-a', uid: 'k1', resourceVersion: '9', ...metadata } });
    const notOwned = async (writer: ChildWriter, live?: unknown) => {
      const err = await writer.ensure(Kinds.KnativeService, ours(), live as never, WRITE_RULES['named-template']).catch((e: unknown) => e);
      assert.ok(err instanceof WriteRejected, `expected NotOwned, got ${String(err)}`);
      assert.equal(err.reason, 'NotOwned');
      assert.equal(err.retry, false, 'nothing to retry until the app or the object changes');
      assert.equal(err.object, 'team-a/shop');
      return err;
    };

    it('leaves a platform-made Service the cache does not show untouched, naming who wrote it', async () => {
      const platform = stored({ labels: { team: 'platform' }, managedFields: [{ manager: 'kubectl', operation: 'Apply' }, { manager: 'helm', operation: 'Update' }] });
      const { client, calls } = fakeClient(undefined, platform);
      const err = await notOwned(new ChildWriter(client));
      assert.match(err.message, /no controller; written by kubectl, helm/);
      assert.match(err.summary, /^Service team-a\/shop is not controlled by this app/);
      assert.deepEqual(calls.map((c) => c.verb), ['get'], 'read, never written');
    });

    it('leaves a Service another owner controls untouched, naming the owner', async () => {
      const other = stored({ ownerReferences: [{ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', name: 'shop', uid: 'a-deleted-app', controller: true }] });
      const { client, calls } = fakeClient(undefined, other);
      const err = await notOwned(new ChildWriter(client));
      assert.match(err.message, /controlled by ServerlessApp shop \(uid a-deleted-app\)/, 'same name, another UID: not ours');
      assert.deepEqual(calls.map((c) => c.verb), ['get']);
    });

    it('refuses a cached object another app controls without asking the server', async () => {
      const { client, calls } = fakeClient();
      await notOwned(new ChildWriter(client), { ...ours('someone-else'), metadata: { ...ours('someone-else').metadata, uid: 'k1' } });
      assert.deepEqual(calls, []);
    });

    it('writes over the server\'s copy when this app controls it (the cache has not caught up), and only when it differs', async () => {
      const lagging = { ...ours(), metadata: { ...ours().metadata, uid: 'k1', resourceVersion: '3' } };
      const { client, calls } = fakeClient(undefined, lagging);
      assert.equal(await new ChildWriter(client).ensure(Kinds.KnativeService, ours(), undefined, WRITE_RULES['named-template']), false, 'already as desired');
      assert.deepEqual(calls.map((c) => c.verb), ['get']);
      const { client: c2, calls: calls2 } = fakeClient(undefined, lagging);
      const changed = ours();
      changed.spec.traffic = [{ revisionName: 'shop-aaa', percent: 100 }] as never;
      assert.equal(await new ChildWriter(c2).ensure(Kinds.KnativeService, changed, undefined, WRITE_RULES['named-template']), true);
      assert.deepEqual(calls2.map((c) => c.verb), ['get', 'apply']);
    });

    it('judges a child that cannot have an owner reference (a cluster-scoped cache) by the labels naming its app', async () => {
      const cache = (labels: Record<string, string>) => ({ apiVersion: 'serving.kserve.io/v1alpha1', kind: 'LocalModelCache', metadata: { name: 'team-a-chat-0123', labels }, spec: { sourceModelUri: 's3://m' } });
      const managed = { 'app.kubernetes.io/managed-by': M };
      const mine = { ...managed, 'serverlessapp.io/app': 'chat', 'serverlessapp.io/namespace': 'team-a' };
      const theirs = { ...managed, 'serverlessapp.io/app': 'a-chat', 'serverlessapp.io/namespace': 'team' };
      const { client } = fakeClient(undefined, { ...cache(theirs), metadata: { ...cache({}).metadata, uid: 'c1', labels: theirs } });
      const err = await new ChildWriter(client).ensure(Kinds.LocalModelCache, cache(mine), undefined).catch((e: unknown) => e);
      assert.ok(err instanceof WriteRejected && err.reason === 'NotOwned');
      const { client: c2, calls } = fakeClient(undefined, { ...cache(mine), metadata: { ...cache(mine).metadata, uid: 'c1' } });
      assert.equal(await new ChildWriter(c2).ensure(Kinds.LocalModelCache, cache(mine), undefined), false);
      assert.deepEqual(calls.map((c) => c.verb), ['get']);
    });

    it('removes such a child by the same rule: only when its labels name the app and nothing controls it', async () => {
      const labels = { 'app.kubernetes.io/managed-by': M, 'serverlessapp.io/app': 'chat', 'serverlessapp.io/namespace': 'team-a' };
      const cache = { apiVersion: 'serving.kserve.io/v1alpha1', kind: 'LocalModelCache', metadata: { name: 'team-a-chat-0123', uid: 'c1', labels } };
      const { client, calls } = fakeClient();
      const writer = new ChildWriter(client);
      assert.equal(await writer.remove(Kinds.LocalModelCache, cache, { namespace: 'team', name: 'a-chat' }), false, 'another app\'s');
      assert.equal(await writer.remove(Kinds.LocalModelCache, { ...cache, metadata: { ...cache.metadata, ownerReferences: OWNER } }, { namespace: 'team-a', name: 'chat' }), false, 'controlled by someone');
      assert.equal(await writer.remove(Kinds.LocalModelCache, cache, undefined), false, 'no app');
      assert.equal(calls.length, 0, 'nothing deleted');
      assert.equal(await writer.remove(Kinds.LocalModelCache, cache, { namespace: 'team-a', name: 'chat' }), true);
      assert.deepEqual(calls.map((c) => c.verb), ['delete']);
    });
  });
});

describe('ChildWriter.createOnce', () => {
  const claim = { metadata: { name: 'shop.example.com' } };
  const writer = (answer: Error | undefined) => new ChildWriter({ async create() { if (answer) throw answer; return claim; } } as unknown as KubeClient);

  it('says whether this create made the object: one of concurrent creates wins, the others get 409', async () => {
    assert.equal(await writer(undefined).createOnce(Kinds.HostClaim, claim), true);
    assert.equal(await writer(new ApiError(409, 'hostclaims "shop.example.com" already exists', 'AlreadyExists')).createOnce(Kinds.HostClaim, claim), false);
  });

  // RBAC (403), a schema or CEL rule (422), an admission webhook's or policy's denial: each a refusal, shown on the app.
  for (const [name, err] of [
    ['RBAC', new ApiError(403, 'hostclaims.serverlessapp.io is forbidden: User "system:serviceaccount:x:op" cannot create resource "hostclaims"', 'Forbidden')],
    ['a validating admission policy', new ApiError(422, 'hostclaims.serverlessapp.io "shop.example.com" is forbidden: ValidatingAdmissionPolicy \'no-claims\' denied request', 'Invalid')],
    ['a webhook', new ApiError(400, 'admission webhook "claims.example.com" denied the request: no', 'BadRequest')],
  ] as const) {
    it(`a create refused by ${name} is a WriteRejected (ApplyRejected), as a refused apply`, async () => {
      await assert.rejects(writer(err).createOnce(Kinds.HostClaim, claim), (e: unknown) => e instanceof WriteRejected && e.reason === 'ApplyRejected' && e.kind === 'HostClaim' && e.cause === err);
    });
  }

  it('passes a failure that is no refusal on, for the queue to retry', async () => {
    for (const code of [500, 429, 404]) {
      await assert.rejects(writer(new ApiError(code, 'x')).createOnce(Kinds.HostClaim, claim), (e: unknown) => e instanceof ApiError && e.code === code);
    }
  });
});
