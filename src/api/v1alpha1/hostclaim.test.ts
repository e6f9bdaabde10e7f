import assert from 'node:assert/strict';
import { undocumented } from '../openapi.ts';
import { hostClaimCRD, hostClaimFor, hostClaimName, unclaimableHost } from './hostclaim.ts';

describe('HostClaim', () => {
  describe('name of the claim of a host', () => {
    const long = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.com`;
    const cases: Array<[string, string | undefined]> = [
      ['shop.example.com', 'shop.example.com'],
      ['*.example.com', 'wc--any.example.com'],
      ['wildcard.example.com', 'wildcard.example.com'],
      ['*.b.example.com', 'wc--any.b.example.com'],
      ['xn--bcher-kva.example.com', 'xn--bcher-kva.example.com'],
      ['wc--any.example.com', undefined],
      [long, long],
      [`*.${long}`, undefined],
    ];
    for (const [host, name] of cases) {
      it(`${host.length > 60 ? `a host of ${host.length} characters` : host} -> ${name === undefined ? 'cannot be claimed' : name === host ? 'itself' : name}`, () => {
        assert.equal(hostClaimName(host), name);
        assert.equal(unclaimableHost(host) === undefined, name !== undefined);
      });
    }

    it('never gives a wildcard and an exact host the same name', () => {
      const hosts = ['example.com', 'any.example.com', 'wc.example.com', '*.example.com', '*.any.example.com', 'wc--any.example.com', 'wc--any.any.example.com'];
      const names = hosts.map(hostClaimName).filter((n) => n !== undefined);
      assert.equal(new Set(names).size, names.length);
    });
  });

  it('is claimed for a namespace with no owner: it outlives the apps that use it', () => {
    const c = hostClaimFor('*.example.com', 'team-a')!;
    assert.deepEqual({ name: c.metadata.name, spec: c.spec }, { name: 'wc--any.example.com', spec: { host: '*.example.com', namespace: 'team-a' } });
    assert.equal('ownerReferences' in c.metadata, false);
  });

  it('is cluster-scoped, documents every field, shows host, namespace and age, and keeps its name, host and namespace together', () => {
    const crd = hostClaimCRD();
    const v = crd.spec.versions[0]!;
    assert.equal(crd.spec.scope, 'Cluster');
    assert.deepEqual(undocumented(v.schema.openAPIV3Schema.properties.spec, 'spec'), []);
    assert.deepEqual(v.additionalPrinterColumns.map((c) => c.name), ['Host', 'Namespace', 'Age']);
    assert.match(v.schema.openAPIV3Schema['x-kubernetes-validations'][0]!.rule, /self\.metadata\.name == /);
    const spec = v.schema.openAPIV3Schema.properties.spec as { properties: Record<string, { 'x-kubernetes-validations': Array<{ rule: string }> }> };
    for (const field of ['host', 'namespace']) assert.ok(spec.properties[field]!['x-kubernetes-validations'].some((r) => r.rule === 'self == oldSelf'), `${field} is immutable`);
  });
});
