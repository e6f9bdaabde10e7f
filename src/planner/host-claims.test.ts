import assert from 'node:assert/strict';
import { containerApp } from '../testing/apps.ts';
import { coveringHosts, earlierHolder, HostIndex, hostsNamedBy, judgeHost, overlaps, type AppHosts, type ClaimRecord } from './host-claims.ts';

describe('host claim rules', () => {
  it('the hosts whose claims overlap a host by name: itself and each wildcard above it', () => {
    assert.deepEqual(coveringHosts('a.b.example.com'), ['a.b.example.com', '*.b.example.com', '*.example.com', '*.com']);
    assert.deepEqual(coveringHosts('*.b.example.com'), ['*.b.example.com', '*.example.com', '*.com']);
    // Each one overlaps the host, as overlaps() decides.
    for (const h of coveringHosts('a.b.example.com')) assert.ok(overlaps(h, 'a.b.example.com'), h);
  });

  describe('overlaps, as Istio matches hosts', () => {
    const cases: Array<[string, string, boolean]> = [
      ['shop.example.com', 'shop.example.com', true],
      ['shop.example.com', 'cart.example.com', false],
      ['*.example.com', 'shop.example.com', true],
      ['*.example.com', 'a.b.example.com', true],
      ['*.example.com', 'example.com', false],
      ['*.example.com', 'shopexample.com', false],
      ['*.example.com', '*.b.example.com', true],
      ['*.example.com', '*.example.com', true],
      ['*.a.example.com', '*.b.example.com', false],
      ['*.a.example.com', 'shop.example.com', false],
    ];
    for (const [a, b, want] of cases) {
      it(`${a} and ${b}: ${want ? 'overlap' : 'do not overlap'}, either way round`, () => {
        assert.equal(overlaps(a, b), want);
        assert.equal(overlaps(b, a), want);
      });
    }
  });

  describe('HostIndex', () => {
    const index = new HostIndex<string>();
    const hosts = ['shop.example.com', '*.example.com', '*.b.example.com', 'a.b.example.com', 'example.com', 'other.org', '*.example.org'];
    for (const h of hosts) index.add(h, h);

    for (const query of ['shop.example.com', '*.example.com', '*.b.example.com', 'x.b.example.com', 'example.com', 'new.org', '*.org']) {
      it(`finds exactly the indexed hosts that overlap ${query}`, () => {
        assert.deepEqual(index.overlapping(query).sort(), hosts.filter((h) => overlaps(h, query)).sort());
      });
    }

    it('forgets a host once its last value is deleted', () => {
      const i = new HostIndex<string>();
      i.add('shop.example.com', 'a');
      i.add('shop.example.com', 'b');
      i.delete('shop.example.com', 'a');
      assert.deepEqual(i.overlapping('*.example.com'), ['b']);
      i.delete('shop.example.com', 'b');
      assert.deepEqual(i.overlapping('*.example.com'), []);
      assert.deepEqual(i.overlapping('shop.example.com'), []);
    });
  });

  describe('judgeHost: what a namespace may do with a host', () => {
    const claim = (host: string, namespace: string, created: string, name = host.replace('*.', 'wc--any.')): ClaimRecord => ({ name, host, namespace, created });
    const t1 = '2026-11-01T00:00:00Z', t2 = '2026-11-02T00:00:00Z';
    const cases: Array<[string, string, ClaimRecord | undefined, ClaimRecord[], ReturnType<typeof judgeHost>]> = [
      ['creates the claim of a host nobody claims', 'shop.a.com', undefined, [], 'create'],
      ['holds a host its namespace claims', 'shop.a.com', claim('shop.a.com', 'b', t1), [], 'held'],
      ['is refused a host another namespace claims', 'shop.a.com', claim('shop.a.com', 'other', t1), [], 'conflict'],
      ['is refused an exact host under another namespace\'s wildcard', 'shop.a.com', undefined, [claim('*.a.com', 'other', t1)], 'conflict'],
      ['is refused a wildcard covering another namespace\'s host', '*.a.com', undefined, [claim('shop.a.com', 'other', t1)], 'conflict'],
      ['may claim under its own namespace\'s wildcard', 'shop.a.com', undefined, [claim('*.a.com', 'b', t1)], 'create'],
      ['keeps its claim against a younger overlapping claim of another namespace (a lost race grants nothing)', 'shop.a.com', claim('shop.a.com', 'b', t1), [claim('*.a.com', 'other', t2)], 'held'],
      ['loses its claim to an older overlapping claim of another namespace', 'shop.a.com', claim('shop.a.com', 'b', t2), [claim('*.a.com', 'other', t1)], 'conflict'],
      ['breaks a tie in creation time by name', 'shop.a.com', claim('shop.a.com', 'b', t1), [claim('*.a.com', 'other', t1)], 'held'],
      ['the same tie, seen from the other side', '*.a.com', claim('*.a.com', 'other', t1), [claim('shop.a.com', 'b', t1)], 'conflict'],
    ];
    for (const [name, host, own, overlapping, want] of cases) {
      it(name, () => assert.equal(judgeHost(host, 'b', own, overlapping), want));
    }
  });

  describe('hostsNamedBy: the hosts an app holds on to', () => {
    const app = (hosts: string[], deleting = false) => {
      const a = containerApp({ ingress: { hosts } });
      return deleting ? { ...a, metadata: { ...a.metadata, deletionTimestamp: '2026-11-01T00:00:00Z' } } : a;
    };
    const cases: Array<[string, ReturnType<typeof app>, string[]]> = [
      ['the hosts it names, normalised, once each', app(['Shop.Example.com.', 'shop.example.com', 'api.example.com']), ['api.example.com', 'shop.example.com']],
      ['none when it names none', app([]), []],
      ['none once it is being deleted', app(['shop.example.com'], true), []],
    ];
    for (const [what, a, want] of cases) it(what, () => assert.deepEqual(hostsNamedBy(a), want));
  });

  describe('earlierHolder: within a namespace, a host belongs to the first app by creation', () => {
    const me = { namespace: 'a', name: 'shop', created: '2026-11-02T00:00:00Z' };
    const other = (name: string, created: string, hosts = ['shop.example.com'], namespace = 'a'): AppHosts => ({ namespace, name, created, hosts });
    const cases: Array<[string, AppHosts[], string | undefined]> = [
      ['an older app of the namespace that names the host holds it', [other('old', '2026-11-01T00:00:00Z')], 'old'],
      ['a younger one does not', [other('young', '2026-11-03T00:00:00Z')], undefined],
      ['nor one of another namespace (claims settle that)', [other('old', '2026-11-01T00:00:00Z', undefined, 'b')], undefined],
      ['nor one naming an overlapping host but not this one', [other('old', '2026-11-01T00:00:00Z', ['*.example.com'])], undefined],
      ['nor the app itself', [{ ...me, hosts: ['shop.example.com'] }], undefined],
      ['of two older ones, the first by creation, in whatever order the index lists them', [other('old', '2026-11-01T00:00:00Z'), other('older', '2026-10-01T00:00:00Z')], 'older'],
    ];
    for (const [what, others, want] of cases) it(what, () => assert.equal(earlierHolder('shop.example.com', me, others)?.name, want));
  });

  describe('earlierHolder: within a namespace, the app serving a host keeps it', () => {
    const me = { namespace: 'a', name: 'shop', created: '2026-11-02T00:00:00Z' };
    const other = (name: string, created: string): AppHosts => ({ namespace: 'a', name, created, hosts: ['shop.example.com'] });
    const servedBy = (...names: string[]) => (a: { name: string }, host: string) => host === 'shop.example.com' && names.includes(a.name);
    const cases: Array<[string, AppHosts[], string[], string | undefined]> = [
      ['an older app whose edit names the host this app serves does not take it', [other('old', '2026-11-01T00:00:00Z')], ['shop'], undefined],
      ['a younger app serving the host holds it against this older one', [other('young', '2026-11-03T00:00:00Z')], ['young'], 'young'],
      ['an older app serving it holds it', [other('old', '2026-11-01T00:00:00Z')], ['old'], 'old'],
      ['serving both: the first by creation', [other('old', '2026-11-01T00:00:00Z')], ['old', 'shop'], 'old'],
      ['serving both, this one first by creation: this one', [other('young', '2026-11-03T00:00:00Z')], ['young', 'shop'], undefined],
      ['served by none: the first by creation', [other('old', '2026-11-01T00:00:00Z')], [], 'old'],
      ['of two, the one serving it, whatever their ages', [other('old', '2026-11-01T00:00:00Z'), other('young', '2026-11-03T00:00:00Z')], ['young'], 'young'],
    ];
    for (const [what, others, serving, want] of cases) it(what, () => assert.equal(earlierHolder('shop.example.com', me, others, servedBy(...serving))?.name, want));
  });
});
