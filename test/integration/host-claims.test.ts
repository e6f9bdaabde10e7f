// Host claims (issue 21, part 1): which namespace owns a host is a HostClaim
// the API server arbitrates, not an order the operator computes in memory.
// Each test is an attack or a platform task from the issue, on the rig's real
// Knative: the namespace that holds the host (the victim) must keep serving
// its last good version and apply its next edit (generation moves and
// observedGeneration follows), whatever the other namespace does.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { hostClaimFor, hostClaimName, type HostClaim } from '../../src/api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { ApiError } from '../../src/runtime/client.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getApp, getKsvc, knativeReady, readyTrue, userClient, waitForApp } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { READY_MS, SETTLE_MS, waitFor } from '../support/wait.ts';

const image = (name: string, tag: number) => `ghcr.io/acme/${name}:${tag}`;

describe('host claims: the API server decides which namespace owns a host (integration)', function () {
  this.timeout(600_000);
  const id = randomBytes(3).toString('hex');
  /** A domain every namespace may claim under (besides its own), so that two namespaces can contend for one host. */
  const shared = `shared-${id}.example.com`;
  const policy = { allowedHostSuffixes: ['{namespace}.apps.example.com', shared], allowWildcardHosts: true };
  let operators: RunningOperator[] = [];

  before(async () => { operators = [await startOperator(policy)]; });
  after(async () => { await Promise.all(operators.map((o) => o.stop())); });

  const claimOf = (host: string) => userClient().get<HostClaim>(Kinds.HostClaim, undefined, hostClaimName(host)!);
  const hostsOf = (a: ServerlessApp) => a.spec.ingress?.hosts ?? [];
  const routes = async (ns: string, name: string) => (await userClient().get<{ spec: { hosts: string[] } }>(Kinds.VirtualService, ns, `${name}-routes`))?.spec.hosts ?? [];

  /** Applies an app serving `name:tag` on `hosts` and waits until it is Ready with that version. */
  async function serve(ns: string, name: string, tag: number, hosts: string[]): Promise<ServerlessApp> {
    await applyApp(app(ns, name, { container: { image: image(name, tag) }, ingress: { hosts } }));
    return waitForApp(ns, name, (a) => readyTrue(a) && a.status?.versions?.stable?.image === image(name, tag), `${ns}/${name} Ready serving ${name}:${tag} on ${hosts.join(', ')}`, READY_MS);
  }

  /** Waits until the operator has judged the app's current generation and refused it with `reason`; returns the Ready message. */
  async function refused(ns: string, name: string, reason: string): Promise<string> {
    const a = await waitForApp(ns, name, (x) => condition(x, 'Ready')?.reason === reason, `${ns}/${name} Ready=False ${reason}`, SETTLE_MS);
    assert.equal(condition(a, 'Ready')?.status, 'False');
    return condition(a, 'Ready')!.message;
  }

  /**
   * The victim's Knative Service serves `name:tag` and its VirtualService routes its hosts; then
   * its next edit (`name:tag+1`) is applied: generation moves, observedGeneration follows, Knative serves it.
   */
  async function victimKeepsServing(ns: string, name: string, tag: number): Promise<void> {
    const before = await getApp(ns, name);
    assert.ok(readyTrue(before), `${ns}/${name} is Ready: ${JSON.stringify(condition(before, 'Ready'))}`);
    assert.equal(before.status?.versions?.stable?.image, image(name, tag));
    // Knative's own conditions can trail the app's report by a moment (a re-created Service's Route, say).
    await waitFor(`${ns}/${name}'s Knative Service Ready, serving the last good version ${name}:${tag}`, async () => {
      const k = await getKsvc(ns, name);
      return knativeReady(k) && k!.spec.template.spec.containers[0]!.image === image(name, tag);
    }, { timeoutMs: SETTLE_MS });
    assert.deepEqual((await routes(ns, name)).sort(), [...hostsOf(before)].sort(), 'the VirtualService routes the victim\'s hosts');

    const edited = await applyApp(app(ns, name, { container: { image: image(name, tag + 1) }, ingress: { hosts: hostsOf(before) } }));
    assert.ok(edited.metadata.generation! > before.metadata.generation!, 'the edit moved the generation');
    await waitForApp(ns, name, (a) => readyTrue(a) && a.status?.versions?.stable?.image === image(name, tag + 1), `${ns}/${name} applies its next edit (${name}:${tag + 1})`, READY_MS);
    await waitFor(`${ns}/${name}'s Knative Service serves ${name}:${tag + 1}`, async () => {
      const k = await getKsvc(ns, name);
      return knativeReady(k) && k!.spec.template.spec.containers[0]!.image === image(name, tag + 1);
    }, { timeoutMs: SETTLE_MS });
  }

  /** Edits the app's image (generation moves) and returns its verdict once the operator has judged that generation. */
  async function judgedAfterEdit(ns: string, name: string, tag: number, hosts: string[]): Promise<ServerlessApp> {
    const edited = await applyApp(app(ns, name, { container: { image: image(name, tag) }, ingress: { hosts } }));
    return waitFor(`${ns}/${name} judged at generation ${edited.metadata.generation}`, async () => {
      const a = await getApp(ns, name);
      return a.status?.observedGeneration === edited.metadata.generation ? a : undefined;
    }, { timeoutMs: SETTLE_MS });
  }

  it('a refused claim from another namespace never freezes the holder: the victim keeps serving and applies its next edit (attack: freeze through a refused claim)', async () => {
    const [a, b] = [await freshNamespace('hc-a'), await freshNamespace('hc-b')];
    // A's app is the older one: an order by app creation would give it the host.
    await serve(a, 'old', 1, [`old.${a}.apps.example.com`]);
    const own = `victim.${b}.apps.example.com`;
    const contended = `freeze.${shared}`;
    await serve(b, 'victim', 1, [own, contended]);
    const claims = await Promise.all([claimOf(own), claimOf(contended)]);
    assert.deepEqual(claims.map((c) => c?.spec.namespace), [b, b], 'the victim\'s namespace claimed its hosts');

    // Outside A's allowed suffixes: refused by the policy, and never recorded as a claim.
    await applyApp(app(a, 'old', { container: { image: image('old', 1) }, ingress: { hosts: [`old.${a}.apps.example.com`, own] } }));
    assert.match(await refused(a, 'old', 'HostNotAllowed'), /spec\.ingress\.hosts\[1\]/);
    // Allowed by the policy but claimed by B: HostConflict, naming the field and the host only.
    await applyApp(app(a, 'old', { container: { image: image('old', 1) }, ingress: { hosts: [`old.${a}.apps.example.com`, contended] } }));
    const message = await refused(a, 'old', 'HostConflict');
    assert.match(message, new RegExp(`spec\\.ingress\\.hosts\\[1\\]: host ${contended.replaceAll('.', '\\.')} is claimed by another namespace; ask the platform team`));
    for (const secret of [b, 'victim']) assert.ok(!message.includes(secret), `the message names nothing of the other namespace (${secret}): ${message}`);
    assert.deepEqual(await routes(a, 'old'), [`old.${a}.apps.example.com`], 'the refused edit left A\'s running route as it was');

    const after = await Promise.all([claimOf(own), claimOf(contended)]);
    assert.deepEqual(after.map((c) => [c?.metadata.uid, c?.spec.namespace]), claims.map((c) => [c?.metadata.uid, b]), 'the claims did not move');
    await victimKeepsServing(b, 'victim', 1);
  });

  it('A platform\'s revocation does not take effect: a host the platform gives another namespace withdraws the holder\'s route; its workload keeps serving, and routes again once the app lets it go', async () => {
    const [a, b] = [await freshNamespace('hc-a'), await freshNamespace('hc-b')];
    const own = `shop.${a}.apps.example.com`;
    const moved = `moved.${shared}`;
    await serve(a, 'shop', 1, [own, moved]);
    assert.deepEqual((await routes(a, 'shop')).sort(), [moved, own].sort());
    // The platform reassigns the host, operator stopped so that its own re-claim cannot win the race: delete A's claim, create B's.
    await Promise.all(operators.map((o) => o.stop()));
    await userClient().delete(Kinds.HostClaim, undefined, hostClaimName(moved)!);
    await waitFor(`the claim of ${moved} gone`, async () => (await claimOf(moved)) === undefined, { timeoutMs: SETTLE_MS });
    await userClient().create(Kinds.HostClaim, { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'HostClaim', metadata: { name: moved }, spec: { host: moved, namespace: b } });
    operators = [await startOperator(policy)];

    const withdrawn = await waitForApp(a, 'shop', (x) => condition(x, 'RouteWithdrawn')?.status === 'True', `${a}/shop RouteWithdrawn=True`, SETTLE_MS);
    assert.equal(condition(withdrawn, 'Ready')?.reason, 'HostConflict');
    assert.equal(condition(withdrawn, 'RouteWithdrawn')?.reason, 'HostConflict');
    assert.match(condition(withdrawn, 'RouteWithdrawn')!.message, /VirtualService shop-routes withdrawn; the workload keeps serving/);
    await waitFor(`${a}/shop-routes deleted`, async () => (await userClient().get(Kinds.VirtualService, a, 'shop-routes')) === undefined, { timeoutMs: SETTLE_MS });
    const k = await getKsvc(a, 'shop');
    assert.ok(knativeReady(k) && k!.spec.template.spec.containers[0]!.image === image('shop', 1), 'the workload keeps serving its last good version');
    // The new owner routes it.
    await serve(b, 'shop', 1, [moved]);
    assert.deepEqual(await routes(b, 'shop'), [moved]);

    // A lets the host go: admitted again, its route is back on its own host and RouteWithdrawn goes.
    await serve(a, 'shop', 2, [own]);
    assert.deepEqual(await routes(a, 'shop'), [own]);
    assert.equal(condition(await getApp(a, 'shop'), 'RouteWithdrawn'), undefined);
    await victimKeepsServing(b, 'shop', 1);
  });

  it('a gateway the platform removes from --allowed-gateways withdraws the route bound to it; the workload keeps serving; a tenant\'s own edit adding a refused gateway withdraws nothing', async () => {
    const ns = await freshNamespace('hc-gw');
    const host = `gw.${ns}.apps.example.com`;
    const spec = (tag: number, gateways: string[]) => ({ container: { image: image('gw', tag) }, ingress: { hosts: [host], gateways } });
    const restart = async (allowedGateways: string[]) => {
      await Promise.all(operators.map((o) => o.stop()));
      operators = [await startOperator({ ...policy, allowedGateways })];
    };
    await restart(['istio-system/public']);
    try {
      await applyApp(app(ns, 'gw', spec(1, ['istio-system/public'])));
      await waitForApp(ns, 'gw', readyTrue, `${ns}/gw Ready`, READY_MS);
      // The tenant's own bad edit: the route as last written stays.
      await applyApp(app(ns, 'gw', spec(1, ['istio-system/public', 'istio-system/admin'])));
      await refused(ns, 'gw', 'GatewayNotAllowed');
      assert.deepEqual((await userClient().get<{ spec: { gateways: string[] } }>(Kinds.VirtualService, ns, 'gw-routes'))?.spec.gateways, ['istio-system/public']);
      assert.equal(condition(await getApp(ns, 'gw'), 'RouteWithdrawn'), undefined);
      await applyApp(app(ns, 'gw', spec(1, ['istio-system/public'])));
      await waitForApp(ns, 'gw', (x) => readyTrue(x) && x.status?.observedGeneration === x.metadata.generation, `${ns}/gw Ready again`, READY_MS);

      // The platform's revocation: the route goes, the workload stays.
      await restart([]);
      const withdrawn = await waitForApp(ns, 'gw', (x) => condition(x, 'RouteWithdrawn')?.status === 'True', `${ns}/gw RouteWithdrawn=True`, SETTLE_MS);
      assert.equal(condition(withdrawn, 'RouteWithdrawn')?.reason, 'GatewayNotAllowed');
      await waitFor(`${ns}/gw-routes deleted`, async () => (await userClient().get(Kinds.VirtualService, ns, 'gw-routes')) === undefined, { timeoutMs: SETTLE_MS });
      const k = await getKsvc(ns, 'gw');
      assert.ok(knativeReady(k) && k!.spec.template.spec.containers[0]!.image === image('gw', 1), 'the workload keeps serving');
    } finally {
      await restart([]); // the describe's policy: no gateway (the default)
    }
  });

  it('a host survives deleting and re-creating the app', async () => {
    const b = await freshNamespace('hc-b');
    const host = `gitops.${shared}`;
    await serve(b, 'shop', 1, [host]);
    const claim = await claimOf(host);
    assert.equal(claim?.spec.namespace, b);
    assert.equal(claim?.metadata.labels?.['app.kubernetes.io/managed-by'], 'serverlessapp-operator');

    // A GitOps prune and re-create.
    await userClient().delete(Kinds.ServerlessApp, b, 'shop');
    await waitFor('the app deleted', async () => (await userClient().get(Kinds.ServerlessApp, b, 'shop')) === undefined || undefined, { timeoutMs: SETTLE_MS });
    assert.equal((await claimOf(host))?.metadata.uid, claim!.metadata.uid, 'the claim belongs to the namespace: it outlives the app');
    // The garbage collector removes the old Knative Service first: the re-created one makes a revision of the same name.
    await waitFor('the old Knative Service garbage-collected', async () => (await getKsvc(b, 'shop')) === undefined || undefined, { timeoutMs: 90_000 });
    await serve(b, 'shop', 1, [host]);
    assert.equal((await claimOf(host))?.metadata.uid, claim!.metadata.uid, 'the re-created app routes the host under the same claim');
    await victimKeepsServing(b, 'shop', 1);
  });

  it('an app in another namespace waiting for a host does not take it when the holder\'s app is deleted', async () => {
    const [a, b] = [await freshNamespace('hc-a'), await freshNamespace('hc-b')];
    const host = `waited.${shared}`;
    await serve(b, 'shop', 1, [host]);
    await applyApp(app(a, 'waiting', { container: { image: image('waiting', 1) }, ingress: { hosts: [host] } }));
    await refused(a, 'waiting', 'HostConflict');

    await userClient().delete(Kinds.ServerlessApp, b, 'shop');
    await waitFor('the holder\'s app deleted', async () => (await userClient().get(Kinds.ServerlessApp, b, 'shop')) === undefined || undefined, { timeoutMs: SETTLE_MS });
    // The waiting app is judged again (an edit) with the holder's app gone: still refused.
    const judged = await judgedAfterEdit(a, 'waiting', 2, [host]);
    assert.equal(condition(judged, 'Ready')?.reason, 'HostConflict');
    assert.deepEqual(await routes(a, 'waiting'), [], 'the waiting app routes nothing');
    assert.equal((await claimOf(host))?.spec.namespace, b);

    await serve(b, 'shop', 1, [host]);
    await victimKeepsServing(b, 'shop', 1);
  });

  it('the platform pre-assigns a host with kubectl and releases it by deleting the claim', async () => {
    const [a, b] = [await freshNamespace('hc-a'), await freshNamespace('hc-b')];
    const host = `assigned.${shared}`;
    const kubectl = userClient();
    // kubectl create -f hostclaim.yaml
    await kubectl.create(Kinds.HostClaim, { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'HostClaim', metadata: { name: host }, spec: { host, namespace: b } });
    const assigned = (await claimOf(host))!;

    // A asks first, but the host is B's.
    await applyApp(app(a, 'early', { container: { image: image('early', 1) }, ingress: { hosts: [host] } }));
    await refused(a, 'early', 'HostConflict');
    await serve(b, 'shop', 1, [host]);
    assert.equal((await claimOf(host))?.metadata.uid, assigned.metadata.uid, 'B routes under the platform\'s claim');
    await victimKeepsServing(b, 'shop', 1);

    // The API server keeps a claim's name, host and namespace together.
    await assert.rejects(kubectl.create(Kinds.HostClaim, { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'HostClaim', metadata: { name: `x-${host}` }, spec: { host, namespace: a } }),
      (e: unknown) => e instanceof ApiError && e.code === 422 && /metadata\.name must be spec\.host/.test(e.message));
    await assert.rejects(kubectl.update(Kinds.HostClaim, { ...assigned, spec: { host, namespace: a } }),
      (e: unknown) => e instanceof ApiError && e.code === 422 && /spec\.namespace is immutable/.test(e.message));

    // Release: B's apps stop naming the host, then the platform deletes the claim; A's waiting app takes it.
    await serve(b, 'shop', 2, [`shop.${b}.apps.example.com`]);
    await kubectl.delete(Kinds.HostClaim, undefined, host);
    await waitForApp(a, 'early', readyTrue, `${a}/early takes the released host`, READY_MS);
    assert.equal((await claimOf(host))?.spec.namespace, a);
    assert.deepEqual(await routes(a, 'early'), [host]);
    await victimKeepsServing(b, 'shop', 2);
  });

  it('a wildcard claim conflicts with the exact hosts it covers', async () => {
    const [a, b] = [await freshNamespace('hc-a'), await freshNamespace('hc-b')];
    const exact = `shop.w.${shared}`;
    await serve(b, 'shop', 1, [exact]);

    // A wildcard over B's host: refused, and never claimed.
    await applyApp(app(a, 'all', { container: { image: image('all', 1) }, ingress: { hosts: [`*.w.${shared}`] } }));
    assert.match(await refused(a, 'all', 'HostConflict'), /spec\.ingress\.hosts\[0\]: host \*\.w\.shared-\w+\.example\.com is claimed by another namespace/);
    assert.equal(await claimOf(`*.w.${shared}`), undefined, 'no wildcard claim was made');

    // A wildcard of its own, then an exact host under it (deeper) from B: refused the other way round.
    await serve(a, 'all', 1, [`*.x.${shared}`]);
    assert.equal((await claimOf(`*.x.${shared}`))?.metadata.name, `wc--any.x.${shared}`);
    await applyApp(app(b, 'deep', { container: { image: image('deep', 1) }, ingress: { hosts: [`a.b.x.${shared}`] } }));
    await refused(b, 'deep', 'HostConflict');
    assert.equal(await claimOf(`a.b.x.${shared}`), undefined);

    await victimKeepsServing(b, 'shop', 1);
    await victimKeepsServing(a, 'all', 1);
  });

  it('claims survive an operator restart and a leader failover with no change of owner', async () => {
    const [a, b, leases] = [await freshNamespace('hc-a'), await freshNamespace('hc-b'), await freshNamespace('hc-lease')];
    const host = `failover.${shared}`;
    await serve(a, 'old', 1, [`old.${a}.apps.example.com`]);
    await serve(b, 'shop', 1, [host]);
    const claim = (await claimOf(host))!;
    const contender = [`old.${a}.apps.example.com`, host];
    await applyApp(app(a, 'old', { container: { image: image('old', 1) }, ingress: { hosts: contender } }));
    await refused(a, 'old', 'HostConflict');

    const unchanged = async (when: string, contenderTag: number, victimTag: number) => {
      const c = await claimOf(host);
      assert.deepEqual([c?.metadata.uid, c?.spec.namespace], [claim.metadata.uid, b], `${when}: the same claim, the same owner`);
      assert.equal(condition(await judgedAfterEdit(a, 'old', contenderTag, contender), 'Ready')?.reason, 'HostConflict', `${when}: the older app of the other namespace is still refused`);
      await victimKeepsServing(b, 'shop', victimTag);
    };

    // Restart: a new process with nothing in memory.
    await Promise.all(operators.map((o) => o.stop()));
    operators = [await startOperator(policy)];
    await unchanged('after a restart', 2, 1);

    // Two replicas; the leader goes, the standby takes over.
    await Promise.all(operators.map((o) => o.stop()));
    const replica = () => startOperator({ ...policy, leaderElect: true, leaderElectionNamespace: leases, leaderElectionId: 'host-claims' });
    operators = [await replica(), await replica()];
    const leader = await waitFor('a leader among two replicas', async () => operators.find((o) => o.manager.isLeader()), { timeoutMs: SETTLE_MS });
    await leader.stop();
    operators = operators.filter((o) => o !== leader);
    await waitFor('the standby to take over', async () => operators[0]!.manager.isLeader() || undefined, { timeoutMs: SETTLE_MS });
    await unchanged('after a leader failover', 3, 2);
  });

  it('under the default policy (any host), an older app of another namespace does not take a host another namespace holds (attack: freeze through a refused claim)', async () => {
    await Promise.all(operators.map((o) => o.stop()));
    operators = [await startOperator({})];
    const [a, b] = [await freshNamespace('hc-a'), await freshNamespace('hc-b')];
    const host = `anyhost-${id}.example.org`;
    // A's app is the older one: an order by app creation would give it the host.
    await serve(a, 'old', 1, [`old-${id}.example.org`]);
    await serve(b, 'shop', 1, [host]);
    const claim = (await claimOf(host))!;
    await applyApp(app(a, 'old', { container: { image: image('old', 1) }, ingress: { hosts: [`old-${id}.example.org`, host] } }));
    const message = await refused(a, 'old', 'HostConflict');
    assert.ok(!message.includes(b) && !message.includes('shop'), `the message names nothing of the other namespace: ${message}`);
    assert.deepEqual([(await claimOf(host))?.metadata.uid, (await claimOf(host))?.spec.namespace], [claim.metadata.uid, b], 'the claim did not move');
    await victimKeepsServing(b, 'shop', 1);
  });
  it('a HostClaim create admission refuses is a refusal like any other write: Ready=False ApplyRejected, a Warning Event, the rejection metric; claimed once admission allows it', async () => {
    const ns = await freshNamespace('hc-vap');
    const host = `reserved.${ns}.apps.example.com`;
    const name = `deny-hostclaim-${id}`;
    const kind = (k: string, plural: string) => ({ group: 'admissionregistration.k8s.io', version: 'v1', kind: k, plural, namespaced: false });
    const policyKind = kind('ValidatingAdmissionPolicy', 'validatingadmissionpolicies'), bindingKind = kind('ValidatingAdmissionPolicyBinding', 'validatingadmissionpolicybindings');
    await userClient().create(policyKind, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name }, spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ apiGroups: ['serverlessapp.io'], apiVersions: ['*'], operations: ['CREATE'], resources: ['hostclaims'] }] },
      validations: [{ expression: `object.spec.host != '${host}'`, message: 'this host is reserved by the platform' }],
    } });
    await userClient().create(bindingKind, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name }, spec: { policyName: name, validationActions: ['Deny'] } });
    const lifted = async () => {
      await userClient().delete(bindingKind, undefined, name);
      await userClient().delete(policyKind, undefined, name);
    };
    try {
      // The API server loads policies asynchronously: in force once a dry-run create of the claim is refused.
      await waitFor('the policy to refuse the claim', async () => {
        try {
          await userClient().create(Kinds.HostClaim, hostClaimFor(host, ns)!, { dryRun: true });
          return false;
        } catch (err) {
          return err instanceof ApiError && err.message.includes('reserved by the platform');
        }
      }, { timeoutMs: 60_000 });
      await applyApp(app(ns, 'shop', { container: { image: image('shop', 1) }, ingress: { hosts: [host] } }));
      assert.match(await refused(ns, 'shop', 'ApplyRejected'), /HostClaim .*reserved by the platform/);
      const warnings = await waitFor('a Warning Event ApplyRejected on the app', async () => {
        const list = await userClient().list<{ type?: string; reason?: string; note?: string; regarding?: { name?: string } }>(Kinds.Event, ns);
        const found = list.items.filter((e) => e.regarding?.name === 'shop' && e.type === 'Warning' && e.reason === 'ApplyRejected');
        return found.length ? found : undefined;
      }, { timeoutMs: SETTLE_MS });
      assert.match(warnings[0]!.note ?? '', /HostClaim/);
      const rejections = (await operators[0]!.manager.metrics.registry.getSingleMetric('serverlessapp_write_rejections_total')!.get()).values.find((v) => v.labels.kind === 'HostClaim')?.value ?? 0;
      assert.ok(rejections >= 1, `serverlessapp_write_rejections_total{kind="HostClaim"} counted the refusal (${rejections})`);
      assert.equal(await claimOf(host), undefined, 'no claim was made');
    } finally {
      await lifted();
    }
    // Retried with backoff (the plan's recheck kept): the claim is made once admission allows it.
    await waitForApp(ns, 'shop', readyTrue, `${ns}/shop Ready once the claim is admitted`, READY_MS);
    assert.equal((await claimOf(host))?.spec.namespace, ns);
  });
});
