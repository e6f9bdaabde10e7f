// Tenant isolation (issue 13): two tenants whose ServiceAccounts may only manage
// ServerlessApps (and read events) in their own namespace, a victim namespace
// named to collide with one of them, and a platform namespace. Every attack of
// the table is made through the API server under a tenant's identity
// (a TokenRequest token) against the operator running as the platform
// configures it, on the rig's real Knative and KServe. Each must fail with a
// clear refusal (the API server's, naming the field, or Ready=False with a
// reason), the victims' objects must stay exactly as they were, and the other
// tenant's reconciles must go on meanwhile. Hostile analysis endpoints are
// servers on 127.0.0.1. The last test prints one line with the counts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { ApiError, KubeClient } from '../../src/runtime/client.ts';
import { Kinds, type ResourceKind } from '../../src/util/kinds.ts';
import { app, condition, readyTrue, userClient, type AppSpec } from '../support/apps.ts';
import { testEnv } from '../support/cluster.ts';
import { LoopbackServer } from '../support/http-server.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { assertQuietWindow } from '../support/quiet-window.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';
import { waitIdle } from '../support/idle.ts';

const rbacKind = (kind: string, plural: string): ResourceKind => ({ group: 'rbac.authorization.k8s.io', version: 'v1', kind, plural, namespaced: true });
const ServiceAccount: ResourceKind = { group: '', version: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true };
const Role = rbacKind('Role', 'roles');
const RoleBinding = rbacKind('RoleBinding', 'rolebindings');

/** What a hostile server says; none of it may reach status or events. */
const MARKER = 'TOP-SECRET-INTERNAL-DATA';
const MAX_STATUS_MESSAGE = 400;
const GiB = 1024 ** 3;

interface Obj { metadata: { name: string; namespace?: string; uid?: string; generation?: number; resourceVersion?: string; labels?: Record<string, string>; ownerReferences?: unknown[] }; spec?: unknown }

/** A tenant: a ServiceAccount that may manage ServerlessApps and read events in its own namespace, and nothing else. */
async function tenant(namespace: string): Promise<KubeClient> {
  const admin = userClient();
  const name = 'deployer';
  await admin.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } }, { kind: ServiceAccount });
  await admin.apply({
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'serverlessapp-editor', namespace },
    rules: [
      { apiGroups: ['serverlessapp.io'], resources: ['serverlessapps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
      { apiGroups: ['serverlessapp.io'], resources: ['serverlessapps/status'], verbs: ['get'] },
      { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['get', 'list', 'watch'] },
    ],
  }, { kind: Role });
  await admin.apply({
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'serverlessapp-editor', namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'serverlessapp-editor' },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  }, { kind: RoleBinding });
  const env = testEnv();
  const token = await env.kubeConfig().makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
  const kc = new KubeConfig();
  const user = `${namespace}-${name}`;
  kc.loadFromOptions({
    clusters: [{ name: 'envtest', server: env.server, caData: Buffer.from(env.caPem).toString('base64') }],
    users: [{ name: user, token: token.status!.token }],
    contexts: [{ name: user, cluster: 'envtest', user }],
    currentContext: user,
  });
  return new KubeClient(kc, { fieldManager: user, userAgent: `tenant/${namespace}` });
}

/** Writes `chunk` every `everyMs` until the client goes away or `maxBytes` were sent. */
function stream(res: ServerResponse, chunk: string, everyMs: number, maxBytes: number): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  let sent = 0;
  const timer = setInterval(() => {
    if (res.destroyed || sent >= maxBytes) {
      clearInterval(timer);
      res.end();
      return;
    }
    sent += chunk.length;
    res.write(chunk);
  }, everyMs);
  res.on('close', () => clearInterval(timer));
}

/** Requests in the audit log (reads included) made with a user agent starting with `agent`, since `since`. */
function audited(agent: string, since: Date): Array<{ verb: string; resource: string; namespace?: string; name?: string; code: number }> {
  const out = [];
  for (const line of readFileSync(join(testEnv().dir, 'audit.log'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const e = JSON.parse(line) as { stage?: string; verb?: string; userAgent?: string; requestReceivedTimestamp?: string; responseStatus?: { code?: number }; objectRef?: { resource?: string; namespace?: string; name?: string } };
    if (e.stage !== 'ResponseComplete' || !e.userAgent?.startsWith(agent) || new Date(e.requestReceivedTimestamp ?? 0) < since) continue;
    out.push({ verb: e.verb ?? '', resource: e.objectRef?.resource ?? '', ...(e.objectRef?.namespace ? { namespace: e.objectRef.namespace } : {}), ...(e.objectRef?.name ? { name: e.objectRef.name } : {}), code: e.responseStatus?.code ?? 0 });
  }
  return out;
}

/** What must not change on a victim's object: identity, spec, labels and owners (status may move with its data plane). */
function fingerprint(o: Obj | undefined): string {
  if (!o) return 'absent';
  const { uid, generation, labels, ownerReferences } = o.metadata;
  return JSON.stringify({ uid, generation, labels, ownerReferences, spec: o.spec });
}

describe('tenant isolation: every attack of issue 13, made by a tenant through the API server (integration)', function () {
  this.timeout(600_000);
  const id = randomBytes(3).toString('hex');
  // team-a's namespace is "<team>-a": with an app "chat" there and "a-chat" in "<team>", the readable part of a
  // cluster-scoped cache name is the same for both ("<team>-a-chat"), the collision the issue reproduced.
  const team = `team-${id}`;
  const teamA = `${team}-a`;
  const teamB = `${team}-b`;
  const platform = `platform-${id}`;
  const tally = { attacks: 0, refusedByApiServer: 0, refusedByCondition: 0, contained: 0, victimsTouched: 0 };
  let op: RunningOperator;
  let a: KubeClient;
  let b: KubeClient;
  let victim: KubeClient;
  let redirect: LoopbackServer;
  let trickle: LoopbackServer;
  let huge: LoopbackServer;
  let redirectTarget: LoopbackServer;
  const victims: Array<{ kind: ResourceKind; namespace?: string; name: string; before: string }> = [];
  let started: Date;

  const readAs = (client: KubeClient, namespace: string, name: string) => client.get<ServerlessApp>(Kinds.ServerlessApp, namespace, name);
  const admin = () => userClient();

  /** Waits until the tenant sees its app with status for its current generation satisfying `pred`. */
  async function appStatus(client: KubeClient, namespace: string, name: string, pred: (x: ServerlessApp) => boolean, what: string, timeoutMs = SETTLE_MS): Promise<ServerlessApp> {
    return waitFor(`${namespace}/${name}: ${what}`, async () => {
      const x = await readAs(client, namespace, name);
      return x && x.status?.observedGeneration === x.metadata.generation && pred(x) ? x : undefined;
    }, { timeoutMs });
  }

  /**
   * One attack: the tenant applies `spec` as app `name`. It is refused either by
   * the API server (a 4xx naming `field`) or by the operator (Ready=False `reason`,
   * its message naming `field`); the refusal is returned for further checks.
   */
  async function attack(client: KubeClient, namespace: string, name: string, spec: AppSpec, expect: { reason: string; field: RegExp }): Promise<string> {
    tally.attacks++;
    try {
      await client.apply(app(namespace, name, spec));
    } catch (err) {
      assert.ok(err instanceof ApiError && err.code >= 400 && err.code < 500, `${name}: ${String(err)}`);
      assert.match(err.message, expect.field, `${name}: the API server's refusal names the field`);
      tally.refusedByApiServer++;
      return err.message;
    }
    const refused = await appStatus(client, namespace, name, (x) => condition(x, 'Ready')?.reason === expect.reason, `Ready=False ${expect.reason}`);
    const ready = condition(refused, 'Ready')!;
    assert.equal(ready.status, 'False');
    assert.match(ready.message, expect.field, `${name}: the condition names the field`);
    assert.ok(ready.message.length <= MAX_STATUS_MESSAGE * 2, `${name}: a short message`);
    tally.refusedByCondition++;
    return ready.message;
  }

  async function remember(kind: ResourceKind, namespace: string | undefined, name: string): Promise<void> {
    const o = await admin().get<Obj>(kind, namespace, name);
    assert.ok(o, `victim ${kind.kind} ${namespace ?? ''}/${name} exists`);
    victims.push({ kind, ...(namespace ? { namespace } : {}), name, before: fingerprint(o) });
  }

  before(async () => {
    for (const ns of [team, teamA, teamB, platform]) await admin().apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, { kind: Kinds.Namespace });
    [a, b, victim] = await Promise.all([tenant(teamA), tenant(teamB), tenant(team)]);

    redirectTarget = await new LoopbackServer((_req, res) => res.end(JSON.stringify({ status: 'success', data: { resultType: 'scalar', result: [0, '1'] } }))).start();
    redirect = await new LoopbackServer((_req, res) => {
      res.writeHead(302, { location: `${redirectTarget.url}/latest/meta-data/iam/security-credentials/?${MARKER}` });
      res.end(`<html>${MARKER} moved</html>`);
    }).start();
    // A body that never completes: one byte every 100 ms (an idle timeout would never fire).
    trickle = await new LoopbackServer((_req, res) => stream(res, MARKER.slice(0, 1), 100, Infinity)).start();
    // 64 KiB chunks as fast as the socket takes them, up to 64 MiB.
    huge = await new LoopbackServer((_req, res) => stream(res, `{"status":"success","error":"${MARKER}`.padEnd(64 * 1024, 'x'), 0, 64 << 20)).start();

    op = await startOperator({
      allowedGateways: ['istio-system/public', '{namespace}/*'],
      allowedHostSuffixes: ['apps.example.com'],
      allowWildcardHosts: true,
      analysisProviders: [{ name: 'redirects', url: redirect.url }, { name: 'trickles', url: trickle.url }, { name: 'huge', url: huge.url }],
      allowAnalysisAddress: false,
      maxModelSizeBytes: 10 * GiB,
      modelCacheScope: 'cluster',
      // Each namespace's own model path, and one every namespace may read (of which no cluster-scoped cache is written).
      allowedStorageUriPrefixes: ['gs://models/{namespace}/', 'gs://public/'],
    });

    // The victims, made before any attack: team-b's app with a public host; a platform Service (the target of a
    // service-name host); the platform's own Knative Service and VirtualService in team-a's namespace; the other
    // team's model app with its cluster-scoped cache.
    await b.apply(app(teamB, 'checkout', { container: { image: 'ghcr.io/b/checkout:1' }, ingress: { hosts: ['checkout.apps.example.com'], gateways: ['istio-system/public'] } }));
    await admin().apply({
      apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'admin-api', namespace: platform, labels: { owner: 'platform' } },
      spec: { template: { spec: { containers: [{ image: 'ghcr.io/platform/admin-api:1' }] } } },
    });
    await admin().apply({
      apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'shop', namespace: teamA, labels: { owner: 'platform' } },
      spec: { template: { spec: { containers: [{ image: 'ghcr.io/platform/shop:7' }] } } },
    });
    await admin().apply({
      apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'web-routes', namespace: teamA, labels: { owner: 'platform' } },
      spec: { hosts: ['web.internal'], http: [{ route: [{ destination: { host: `admin-api.${platform}.svc.cluster.local` } }] }] },
    }, { kind: Kinds.VirtualService });
    await victim.apply(app(team, 'a-chat', { model: { format: { name: 'sklearn' }, storageUri: `gs://models/${team}/chat`, size: '1Gi' }, prewarm: { cacheModel: true } }));
    // The three apps the hostile analysis endpoints will be used from start now: they need a stable version first.
    for (const provider of ['redirects', 'trickles', 'huge']) await a.apply(app(teamA, `ssrf-${provider}`, { container: { image: 'ghcr.io/a/web:1' } }));

    await appStatus(b, teamB, 'checkout', readyTrue, 'Ready', 180_000);
    const cache = await waitFor('the victim\'s model cache', async () => (await admin().list<Obj>(Kinds.LocalModelCache)).items.find((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === team), { timeoutMs: SETTLE_MS });
    await remember(Kinds.LocalModelCache, undefined, cache.metadata.name);
    await remember(Kinds.ServerlessApp, teamB, 'checkout');
    await remember(Kinds.KnativeService, teamB, 'checkout');
    await remember(Kinds.VirtualService, teamB, 'checkout-routes');
    await remember(Kinds.KnativeService, platform, 'admin-api');
    await remember(Kinds.KnativeService, teamA, 'shop');
    await remember(Kinds.VirtualService, teamA, 'web-routes');
    started = new Date();
  });

  after(async () => {
    await op?.stop();
    await Promise.all([redirect, trickle, huge, redirectTarget].map((s) => s?.stop()));
  });

  it('gives a tenant no way around the operator: it cannot read or write another namespace\'s apps itself', async () => {
    await assert.rejects(readAs(a, teamB, 'checkout'), (e: unknown) => e instanceof ApiError && e.code === 403);
    await assert.rejects(a.apply(app(teamB, 'checkout', { container: { image: 'evil:1' } })), (e: unknown) => e instanceof ApiError && e.code === 403);
    await assert.rejects(a.get(Kinds.KnativeService, teamA, 'shop'), (e: unknown) => e instanceof ApiError && e.code === 403, 'tenants manage ServerlessApps only');
  });

  it('refuses host hijacks: another app\'s host, another namespace\'s service name, a whole top-level domain', async () => {
    const gw = { gateways: ['istio-system/public'] };
    const taken = await attack(a, teamA, 'steal-host', { container: { image: 'evil:1' }, ingress: { hosts: ['checkout.apps.example.com'], ...gw } }, { reason: 'HostConflict', field: /spec\.ingress\.hosts\[0\]/ });
    // Host claims (issue 21): the refusal names the field and the host, never the namespace or app that holds it.
    assert.match(taken, /host checkout\.apps\.example\.com is claimed by another namespace; ask the platform team/);
    assert.ok(!taken.includes(teamB) && !taken.includes('ServerlessApp checkout'), taken);
    await attack(a, teamA, 'steal-svc', { container: { image: 'evil:1' }, ingress: { hosts: [`admin-api.${platform}.svc.cluster.local`] } }, { reason: 'HostNotAllowed', field: /spec\.ingress\.hosts\[0\]/ });
    await attack(a, teamA, 'steal-tld', { container: { image: 'evil:1' }, ingress: { hosts: ['*.com'], ...gw } }, { reason: 'HostNotAllowed', field: /top-level domain/ });
    // A host of its own on the mesh only is fine, and stays visible to its own namespace (exportTo ".").
    await a.apply(app(teamA, 'mesh', { container: { image: 'ghcr.io/a/mesh:1' }, ingress: { hosts: ['mesh.apps.example.com'] } }));
    const vs = await waitFor('the mesh-bound VirtualService', () => admin().get<{ spec: { exportTo?: string[]; gateways?: string[] } }>(Kinds.VirtualService, teamA, 'mesh-routes'), { timeoutMs: SETTLE_MS });
    assert.deepEqual(vs.spec.exportTo, ['.']);
    for (const name of ['steal-host', 'steal-svc', 'steal-tld']) assert.equal(await admin().get(Kinds.VirtualService, teamA, `${name}-routes`), undefined, `${name} got no route`);
  });

  it('refuses gateway bypasses: the legacy dotted form and a gateway outside the allow-list', async () => {
    const ingress = (gateway: string) => ({ container: { image: 'evil:1' }, ingress: { hosts: ['gw.apps.example.com'], gateways: [gateway] } });
    await attack(a, teamA, 'gw-dotted', ingress('internal-admin.istio-system'), { reason: 'GatewayNotAllowed', field: /spec\.ingress\.gateways\[0\]|gateways/ });
    await attack(a, teamA, 'gw-admin', ingress('istio-system/internal-admin'), { reason: 'GatewayNotAllowed', field: /spec\.ingress\.gateways\[0\]/ });
  });

  it('never takes over objects the app does not own: a platform Knative Service and VirtualService of the same names', async () => {
    const before = new Date();
    const shop = await attack(a, teamA, 'shop', { container: { image: 'evil:1' } }, { reason: 'NotOwned', field: new RegExp(`Service ${teamA}/shop`) });
    assert.match(shop, /no controller; written by kubectl/, 'names who owns it');
    const web = await attack(a, teamA, 'web', { container: { image: 'ghcr.io/a/web:1' }, ingress: { hosts: ['web.apps.example.com'], gateways: ['istio-system/public'] } }, { reason: 'NotOwned', field: new RegExp(`VirtualService ${teamA}/web-routes`) });
    assert.match(web, /nothing was written/);
    // No retry loop: the refusal is not retried while nothing changes. The operator decides NotOwned from its
    // cache (the audit log shows no read of the Service to count), so what would show a loop is the app's reconciles.
    let shopReconciles = 0;
    const reconcile = op.apps.reconcile;
    op.apps.reconcile = (req, ctx) => {
      if (req.namespace === teamA && req.name === 'shop') shopReconciles++;
      return reconcile.call(op.apps, req, ctx);
    };
    try {
      // The status write above makes one more reconcile; after that, nothing until something changes.
      await waitIdle(op.manager);
      await assertQuietWindow({
        what: 'the operator reconciled shop again without a change (a retry loop on the refusal)', windowMs: 5_000, observe: () => shopReconciles,
        // A change to the app is reconciled: the refusal is judged afresh.
        control: () => a.apply(app(teamA, 'shop', { container: { image: 'evil:2' } })),
      });
    } finally {
      op.apps.reconcile = reconcile;
    }
    const touched = audited('serverlessapp-operator', before).filter((r) => ['services', 'virtualservices'].includes(r.resource) && ['shop', 'web-routes'].includes(r.name ?? '') && r.namespace === teamA);
    assert.deepEqual(touched.filter((r) => r.verb !== 'get'), [], 'the operator wrote nothing to the platform\'s objects');
  });

  it('refuses analysis endpoints the platform does not define: a free-form address, an unknown provider', async () => {
    const analysis = (prometheus: Record<string, string>) => ({
      container: { image: 'ghcr.io/a/web:2' },
      rollout: { steps: [50], interval: '10s', analysis: { prometheus, checks: [{ name: 'ok', query: 'up', min: 1 }] } },
    });
    await attack(a, teamA, 'ssrf-address', analysis({ address: redirectTarget.url }), { reason: 'AnalysisAddressNotAllowed', field: /spec\.rollout\.analysis\.prometheus\.address/ });
    await attack(a, teamA, 'ssrf-unknown', analysis({ provider: 'internal' }), { reason: 'AnalysisProviderNotFound', field: /spec\.rollout\.analysis\.prometheus\.provider/ });
    assert.equal(redirectTarget.requests.length, 0);
  });

  it('refuses what a model cache could be abused with: a model over the platform\'s size limit', async () => {
    await attack(a, teamA, 'big-model', { model: { format: { name: 'sklearn' }, storageUri: `gs://models/${teamA}/huge`, size: '1Ti' }, prewarm: { cacheModel: true } }, { reason: 'ModelSizeNotAllowed', field: /spec\.model\.size/ });
    const caches = (await admin().list<Obj>(Kinds.LocalModelCache)).items.filter((c) => c.metadata.labels?.['serverlessapp.io/app'] === 'big-model');
    assert.deepEqual(caches, [], 'no cache reserved for it');
  });

  it('keeps model caches apart when names would collide ("<team>-a/chat" and "<team>/a-chat"), and removes only its own', async () => {
    tally.attacks++;
    // Another model than the victim's: KServe's webhook admits one LocalModelCache per storage URI, so the same model could not be cached twice anyway.
    await a.apply(app(teamA, 'chat', { model: { format: { name: 'sklearn' }, storageUri: `gs://models/${teamA}/chat`, size: '1Gi' }, prewarm: { cacheModel: true } }));
    const mine = await waitFor('the attacker\'s own cache', async () => (await admin().list<Obj>(Kinds.LocalModelCache)).items.find((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === teamA && c.metadata.labels['serverlessapp.io/app'] === 'chat'), { timeoutMs: SETTLE_MS });
    const theirs = victims.find((v) => v.kind === Kinds.LocalModelCache)!;
    assert.notEqual(mine.metadata.name, theirs.name);
    assert.equal(mine.metadata.name.split('-').slice(0, -1).join('-'), theirs.name.split('-').slice(0, -1).join('-'), 'the same readable part: only the hash tells them apart');
    await a.delete(Kinds.ServerlessApp, teamA, 'chat');
    await waitFor('the attacker\'s cache removed with its app', async () => (await admin().get(Kinds.LocalModelCache, undefined, mine.metadata.name)) === undefined, { timeoutMs: SETTLE_MS });
    assert.ok(await admin().get(Kinds.LocalModelCache, undefined, theirs.name), 'the victim\'s cache stays');
    tally.contained++;
  });

  it('gives no tenant a cluster-scoped cache another namespace\'s InferenceServices would be bound to: not of the victim\'s model, not of a shared path', async () => {
    // KServe binds any namespace's InferenceService whose storageUri is a cache's model, or under it, to that cache,
    // admits one cache per URI and will not delete one in use: capture, squatting and a cache held hostage.
    // "<team>-a" starts like "<team>", and the victim's model path is still not team-a's.
    await attack(a, teamA, 'squat', { model: { format: { name: 'sklearn' }, storageUri: `gs://models/${team}/chat`, size: '1Gi' }, prewarm: { cacheModel: true } }, { reason: 'StorageUriNotAllowed', field: /spec\.model\.storageUri/ });
    tally.attacks++;
    const since = new Date();
    await a.apply(app(teamA, 'capture', { model: { format: { name: 'sklearn' }, storageUri: 'gs://public/meta-llama', size: '1Mi' }, prewarm: { cacheModel: true } }));
    const refused = await appStatus(a, teamA, 'capture', (x) => condition(x, 'ModelCached')?.reason === 'ModelCacheNotIsolated', 'ModelCached=False ModelCacheNotIsolated', 120_000);
    assert.equal(condition(refused, 'ModelCached')?.status, 'False');
    assert.match(condition(refused, 'ModelCached')!.message, /gs:\/\/public\/meta-llama lies under no allowed prefix with \{namespace\} as a whole path segment, so other namespaces' apps can name it/);
    const caches = (await admin().list<Obj>(Kinds.LocalModelCache)).items.filter((c) => c.metadata.labels?.['serverlessapp.io/namespace'] === teamA);
    assert.deepEqual(caches, [], 'no cache of the shared path');
    const writes = audited('serverlessapp-operator', since).filter((r) => r.resource === 'localmodelcaches' && r.name?.startsWith(`${teamA}-capture-`) && !['get', 'list', 'watch'].includes(r.verb));
    assert.deepEqual(writes, [], 'no LocalModelCache written');
    tally.contained++;
  });

  it('Refused apps still get node model caches: an app refused for any reason (ServiceAccountNotAllowed, HostNotAllowed) gets no cache, and no cache is written for it', async () => {
    const since = new Date();
    const model = (name: string) => ({ format: { name: 'sklearn' as const }, storageUri: `gs://models/${teamA}/${name}`, size: '1Gi' });
    await attack(a, teamA, 'as-admin', { model: { ...model('as-admin'), serviceAccountName: 'node-admin' }, prewarm: { cacheModel: true } }, { reason: 'ServiceAccountNotAllowed', field: /spec\.model\.serviceAccountName/ });
    await attack(a, teamA, 'elsewhere', { model: model('elsewhere'), prewarm: { cacheModel: true }, ingress: { hosts: ['elsewhere.example.org'] } }, { reason: 'HostNotAllowed', field: /spec\.ingress\.hosts\[0\]/ });
    for (const name of ['as-admin', 'elsewhere']) {
      // The model-cache controller asks the same verdict: its condition says why there is no cache.
      const refused = await appStatus(a, teamA, name, (x) => condition(x, 'ModelCached')?.status === 'False', 'ModelCached=False', 120_000);
      assert.equal(condition(refused, 'ModelCached')?.reason, condition(refused, 'Ready')?.reason);
    }
    const caches = (await admin().list<Obj>(Kinds.LocalModelCache)).items.filter((c) => ['as-admin', 'elsewhere'].includes(c.metadata.labels?.['serverlessapp.io/app'] ?? '') && c.metadata.labels?.['serverlessapp.io/namespace'] === teamA);
    assert.deepEqual(caches, [], 'no cache on the nodes for a refused app');
    const writes = audited('serverlessapp-operator', since).filter((r) => ['localmodelcaches', 'inferenceservices', 'virtualservices', 'hostclaims'].includes(r.resource) && /(as-admin|elsewhere)/.test(r.name ?? '') && !['get', 'list', 'watch'].includes(r.verb));
    assert.deepEqual(writes, [], 'no child of any kind written for them');
    assert.ok(await admin().get(Kinds.LocalModelCache, undefined, victims.find((v) => v.kind === Kinds.LocalModelCache)!.name), 'the victim\'s cache stays');
  });

  it('refuses warmup requests with a Host header and header regexes Envoy reads differently', async () => {
    await attack(a, teamA, 'warm-host', { container: { image: 'evil:1' }, prewarm: { warmup: { path: '/', headers: { Host: 'checkout.apps.example.com' } } } }, { reason: 'InvalidSpec', field: /spec\.prewarm\.warmup\.headers\["Host"\]/ });
    const match = (regex: string) => ({ container: { image: 'ghcr.io/a/web:1' }, rollout: { canaryPercent: 10, match: [{ header: 'x-user', regex }] }, ingress: { hosts: ['re.apps.example.com'], gateways: ['istio-system/public'] } });
    await attack(a, teamA, 'regex', match('^(?!qa-).*'), { reason: 'InvalidSpec', field: /spec\.rollout\.match\[0\]\.regex/ });
    // The RE2 form of a named group is valid for Envoy, and accepted.
    await a.apply(app(teamA, 'regex-ok', match('^(?P<u>qa-.*)$')));
    await appStatus(a, teamA, 'regex-ok', (x) => !['InvalidSpec'].includes(condition(x, 'Ready')?.reason ?? ''), 'accepted', SETTLE_MS);
  });

  it('queries hostile analysis providers off the workers: redirects not followed, trickles and huge bodies cut, nothing of them in status; team-b converges meanwhile', async () => {
    for (const provider of ['redirects', 'trickles', 'huge']) await appStatus(a, teamA, `ssrf-${provider}`, readyTrue, 'v1 Ready', 180_000);
    for (const provider of ['redirects', 'trickles', 'huge']) {
      tally.attacks++;
      await a.apply(app(teamA, `ssrf-${provider}`, {
        container: { image: 'ghcr.io/a/web:2' },
        rollout: { steps: [20, 50], interval: '10s', analysis: { prometheus: { provider }, checks: [{ name: 'errors', query: 'sum(rate(errors{namespace="{{namespace}}"}[1m]))', max: 1 }] } },
      }));
    }
    // Once the trickling server holds its query open, team-b edits its app: the edit must land while the query is still open.
    await waitFor('the trickling server holding a query open', async () => trickle.open > 0, { timeoutMs: 240_000, intervalMs: 20 });
    const edited = performance.now();
    await b.apply(app(teamB, 'checkout', { container: { image: 'ghcr.io/b/checkout:1' }, ingress: { hosts: ['checkout.apps.example.com', 'pay.apps.example.com'], gateways: ['istio-system/public'] } }));
    await waitFor('team-b\'s edit applied', async () => (await admin().get<{ spec: { hosts: string[] } }>(Kinds.VirtualService, teamB, 'checkout-routes'))?.spec.hosts.includes('pay.apps.example.com'), { timeoutMs: SETTLE_MS, intervalMs: 20 });
    const convergedMs = performance.now() - edited;
    assert.ok(trickle.open > 0, 'team-b converged while the trickling query was still open');
    const vs = victims.find((v) => v.kind === Kinds.VirtualService && v.namespace === teamB)!;
    vs.before = fingerprint(await admin().get<Obj>(Kinds.VirtualService, teamB, 'checkout-routes'));
    const app2 = victims.find((v) => v.kind === Kinds.ServerlessApp)!;
    app2.before = fingerprint(await admin().get<Obj>(Kinds.ServerlessApp, teamB, 'checkout'));

    for (const provider of ['redirects', 'trickles', 'huge']) {
      const halted = await appStatus(a, teamA, `ssrf-${provider}`, (x) => condition(x, 'CanaryProgressing')?.reason === 'AnalysisNoData', 'rollout halted: no data', 120_000);
      const said = JSON.stringify(halted.status);
      assert.ok(!said.includes(MARKER), `${provider}: nothing a hostile server said reaches status`);
      assert.ok((halted.status?.canary?.message ?? '').length <= MAX_STATUS_MESSAGE, `${provider}: a short message`);
      tally.refusedByCondition++;
    }
    const message = async (name: string) => (await readAs(a, teamA, name))?.status?.canary?.message ?? '';
    assert.match(await message('ssrf-redirects'), /HTTP 302 \(redirects are not followed\)/);
    assert.match(await message('ssrf-trickles'), /no complete response within 5000 ms/);
    assert.match(await message('ssrf-huge'), /response larger than 1048576 bytes/);
    assert.equal(redirectTarget.requests.length, 0, 'the redirect was not followed');
    const events = (await a.list<{ note?: string; regarding?: { name?: string } }>(Kinds.Event, teamA)).items.filter((e) => e.regarding?.name?.startsWith('ssrf-'));
    assert.ok(events.length > 0 && events.every((e) => !(e.note ?? '').includes(MARKER)), 'nothing a hostile server said reaches events');
    console.log(`      team-b's edit converged in ${Math.round(convergedMs)} ms while a trickling analysis query was open`);
  });

  it('left every victim object untouched, and the other tenants serving', async () => {
    for (const v of victims) {
      const now = fingerprint(await admin().get<Obj>(v.kind, v.namespace, v.name));
      if (now !== v.before) tally.victimsTouched++;
      assert.equal(now, v.before, `${v.kind.kind} ${v.namespace ?? ''}/${v.name} changed`);
    }
    // The operator's writes to the platform's objects and to the other tenant's model cache (team-b's own app and
    // children are the operator's to write for team-b, and are compared above).
    const foreign = new Set(victims.filter((v) => v.kind !== Kinds.ServerlessApp && v.namespace !== teamB).map((v) => `${v.kind.plural}/${v.namespace ?? ''}/${v.name}`));
    const writes = audited('serverlessapp-operator', started)
      .filter((r) => !['get', 'list', 'watch'].includes(r.verb) && (foreign.has(`${r.resource}/${r.namespace ?? ''}/${r.name}`) || r.namespace === platform));
    assert.deepEqual(writes, [], 'the operator wrote to objects of the platform or of another tenant');
    const tenantWrites = audited(`tenant/${teamA}`, started).filter((r) => r.namespace !== teamA && r.code < 400);
    assert.deepEqual(tenantWrites, [], 'team-a got something done outside its namespace');
    assert.ok(readyTrue((await readAs(b, teamB, 'checkout'))!), 'team-b still serves');
    await appStatus(victim, team, 'a-chat', (x) => condition(x, 'Ready')?.reason !== 'NotOwned', 'the victim model app is not disturbed', SETTLE_MS);
    const refused = tally.refusedByApiServer + tally.refusedByCondition + tally.contained;
    console.log(`      tenant isolation: ${tally.attacks} attacks tried, ${refused} refused (${tally.refusedByApiServer} by the API server, ${tally.refusedByCondition} by a Ready/CanaryProgressing condition, ${tally.contained} contained by design), ${victims.length} victim objects checked, ${tally.victimsTouched} touched`);
    assert.equal(refused, tally.attacks);
    assert.equal(tally.victimsTouched, 0);
  });
});
