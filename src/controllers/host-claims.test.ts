import assert from 'node:assert/strict';
import type { HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import type { Informer } from '../runtime/informer.ts';
import { HostClaims } from './host-claims.ts';

const app = (ns: string, name: string, created: string, hosts: string[]): ServerlessApp => ({
  apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
  metadata: { namespace: ns, name, creationTimestamp: created },
  spec: { container: { image: 'x' }, ingress: { hosts } },
});

/** The HostClaim cache and the API server, in memory: a create adds to the cache only when `deliver` says so. */
class FakeClaims {
  readonly cache = new Map<string, HostClaim>();
  readonly creates: string[] = [];
  readonly handlers: Record<string, Array<(c: HostClaim) => void>> = { add: [], update: [], delete: [] };
  tick = 0;
  informer = { on: (e: string, h: (c: HostClaim) => void) => this.handlers[e]!.push(h), get: (_ns: string | undefined, name: string) => this.cache.get(name) } as unknown as Informer<HostClaim>;
  /** What a plan does with the verdict: a conflict refuses the app; else the missing claims are created (the first create wins). */
  async claim(hosts: HostClaims, app: ServerlessApp): Promise<SpecProblem[] | 'pending'> {
    const v = hosts.verdict(app);
    if (v.conflicts.length) return v.conflicts;
    for (const c of v.missing) {
      this.creates.push(c.metadata.name);
      if (!this.cache.has(c.metadata.name)) this.add(c);
    }
    return v.missing.length ? 'pending' : [];
  }
  add(c: HostClaim): void {
    const stored = { ...c, metadata: { ...c.metadata, creationTimestamp: `2026-11-01T00:00:${String(this.tick++).padStart(2, '0')}Z` } };
    this.cache.set(c.metadata.name, stored);
    for (const h of this.handlers.add!) h(stored);
  }
  remove(name: string): void {
    const c = this.cache.get(name)!;
    this.cache.delete(name);
    for (const h of this.handlers.delete!) h(c);
  }
}

describe('HostClaims', () => {
  const setup = () => {
    const fake = new FakeClaims();
    const hosts = new HostClaims(fake.informer);
    return { fake, hosts, claim: (a: ServerlessApp) => fake.claim(hosts, a) };
  };

  it('claims a free host for the namespace, then holds it', async () => {
    const { fake, hosts, claim } = setup();
    const shop = app('team-b', 'shop', '2026-11-02T00:00:00Z', ['shop.example.com']);
    hosts.setApp(shop);
    assert.equal(await claim(shop), 'pending');
    assert.deepEqual(fake.cache.get('shop.example.com')?.spec, { host: 'shop.example.com', namespace: 'team-b' });
    assert.deepEqual(await claim(shop), []);
  });

  it('refuses a host another namespace claims, naming the field and not the namespace, and creates nothing', async () => {
    const { fake, hosts, claim } = setup();
    const old = app('team-a', 'old', '2020-01-01T00:00:00Z', ['old.example.com']);
    const shop = app('team-b', 'shop', '2026-11-02T00:00:00Z', ['shop.example.com']);
    hosts.setApp(shop);
    await claim(shop);
    const thief = app('team-a', 'old', '2020-01-01T00:00:00Z', ['old.example.com', 'Shop.Example.com.']);
    hosts.setApp(old);
    hosts.setApp(thief);
    const problems = await claim(thief);
    assert.deepEqual(problems, [{ reason: 'HostConflict', field: 'spec.ingress.hosts[1]', message: 'host shop.example.com is claimed by another namespace; ask the platform team' }]);
    assert.deepEqual(fake.creates, ['shop.example.com'], 'the refused app claims none of its hosts');
    assert.deepEqual(await claim(shop), [], 'the holder keeps its host');
  });

  it('keeps the host with the namespace when its app is deleted: another namespace\'s app is told to look again, and is still refused', async () => {
    const { hosts, claim } = setup();
    const shop = app('team-b', 'shop', '2026-11-02T00:00:00Z', ['shop.example.com']);
    const waiting = app('team-a', 'waiting', '2026-11-03T00:00:00Z', ['shop.example.com']);
    hosts.setApp(shop);
    await claim(shop);
    hosts.setApp(waiting);
    assert.deepEqual(hosts.deleteApp(shop), [], 'no app of team-b waits for it');
    assert.equal((await claim(waiting) as unknown[]).length, 1);
  });

  it('gives the host to another namespace once the platform deletes the claim, and re-queues the apps that name it', async () => {
    const { fake, hosts, claim } = setup();
    const shop = app('team-b', 'shop', '2026-11-02T00:00:00Z', ['shop.example.com']);
    const other = app('team-a', 'other', '2026-11-03T00:00:00Z', ['shop.example.com']);
    hosts.setApp(shop);
    hosts.setApp(other);
    await claim(shop);
    const made = fake.cache.get('shop.example.com')!;
    assert.deepEqual(hosts.appsAffectedBy(made).map((r) => r.name).sort(), ['other', 'shop']);
    fake.remove('shop.example.com');
    assert.equal(await claim(other), 'pending');
    assert.equal(fake.cache.get('shop.example.com')?.spec.namespace, 'team-a');
  });

  it('makes a wildcard conflict with the exact hosts it covers, in another namespace, either way round', async () => {
    const exact = app('team-b', 'shop', '2026-11-02T00:00:00Z', ['shop.apps.example.com']);
    const wild = app('team-a', 'all', '2026-11-01T00:00:00Z', ['*.apps.example.com']);
    const deeper = app('team-c', 'deep', '2026-11-01T00:00:00Z', ['a.b.apps.example.com']);
    for (const [holder, refused] of [[exact, wild], [wild, exact], [wild, deeper]] as const) {
      const { hosts, claim } = setup();
      for (const a of [holder, refused]) hosts.setApp(a);
      assert.equal(await claim(holder), 'pending');
      assert.deepEqual((await claim(refused) as Array<{ reason: string }>).map((p) => p.reason), ['HostConflict'], `${refused.metadata.name} after ${holder.metadata.name}`);
    }
  });

  it('within a namespace, keeps the host with the first app by creation, naming it', () => {
    const { hosts } = setup();
    const first = app('team-b', 'first', '2026-11-01T00:00:00Z', ['shop.example.com']);
    const second = app('team-b', 'second', '2026-11-02T00:00:00Z', ['shop.example.com']);
    hosts.setApp(second);
    hosts.setApp(first);
    assert.deepEqual(hosts.problems(first), []);
    assert.match(hosts.problems(second)[0]!.message, /routed by ServerlessApp first in this namespace/);
    assert.deepEqual(hosts.deleteApp(first).map((r) => r.name), ['second'], 'the next app of the namespace looks again');
    assert.deepEqual(hosts.problems(second), []);
  });

  it('within a namespace, an older app\'s edit naming a host a newer app serves is refused, and the newer app keeps it', () => {
    const serving = new Set(['team-b/newer shop.example.com']);
    const hosts = new HostClaims(new FakeClaims().informer, (a, host) => serving.has(`${a.namespace}/${a.name} ${host}`));
    const older = app('team-b', 'older', '2026-11-01T00:00:00Z', ['older.example.com', 'shop.example.com']);
    const newer = app('team-b', 'newer', '2026-11-02T00:00:00Z', ['shop.example.com']);
    hosts.setApp(newer);
    assert.deepEqual(hosts.setApp(older).map((r) => r.name), ['newer'], 'the app serving the host looks again');
    assert.deepEqual(hosts.problems(newer), [], 'the serving app keeps its host');
    assert.deepEqual(hosts.problems(older), [{ reason: 'HostConflict', field: 'spec.ingress.hosts[1]', message: 'host shop.example.com is already routed by ServerlessApp newer in this namespace; a host belongs to one app (remove it there first)' }]);
    // The newer app's route stops carrying the host (withdrawn by the platform, or the app let it go): the first by creation routes it.
    serving.clear();
    assert.deepEqual(hosts.appsNaming('team-b', ['SHOP.example.com']).map((r) => r.name).sort(), ['newer', 'older'], 'a route change looks at the apps naming its hosts');
    assert.deepEqual(hosts.problems(older), []);
    assert.match(hosts.problems(newer)[0]!.message, /routed by ServerlessApp older in this namespace/);
  });

  it('refuses an exact host that starts with the label reserved for wildcard claims', () => {
    const { hosts } = setup();
    const a = app('team-b', 'a', '2026-11-01T00:00:00Z', ['shop.example.com', 'wc--any.example.com']);
    assert.deepEqual(hosts.problems(a).map((p) => [p.reason, p.field]), [['HostNotAllowed', 'spec.ingress.hosts[1]']]);
  });
});
