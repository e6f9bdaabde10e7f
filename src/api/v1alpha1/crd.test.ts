import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { undocumented } from '../openapi.ts';
import { crdFiles } from './crd-files.ts';
import { serverlessAppCRD } from './crd.ts';

const root = new URL('../../../', import.meta.url).pathname;

describe('ServerlessApp CRD', () => {
  it('is what the committed crds/ and chart files contain (run `npm run generate` after an API change)', () => {
    for (const [path, text] of crdFiles()) assert.equal(readFileSync(root + path, 'utf8'), text, `${path} is stale`);
  });

  it('documents every field, so kubectl explain reads well everywhere', () => {
    const schema = serverlessAppCRD().spec.versions[0]!.schema.openAPIV3Schema;
    assert.deepEqual(undocumented(schema.properties.spec, 'spec'), []);
    assert.deepEqual(undocumented(schema.properties.status, 'status'), []);
  });

  it('has the status subresource, printer columns, the short name and a category', () => {
    const crd = serverlessAppCRD();
    const v = crd.spec.versions[0]!;
    assert.deepEqual(v.subresources, { status: {} });
    assert.deepEqual(v.additionalPrinterColumns.filter((c) => !('priority' in c)).map((c) => c.name), ['Ready', 'Phase', 'Stable', 'Candidate', 'Weight', 'Min', 'Max', 'Age']);
    assert.deepEqual(crd.spec.names.shortNames, ['sapp']);
    assert.ok(crd.spec.names.categories.length > 0);
  });
});

describe('container.image at admission', () => {
  const pattern = new RegExp((serverlessAppCRD().spec.versions[0]!.schema.openAPIV3Schema.properties.spec as { properties: { container: { properties: { image: { pattern: string } } } } }).properties.container.properties.image.pattern);
  const cases: Array<[string, boolean]> = [
    ['ghcr.io/acme/shop:1.4.0', true],
    ['nginx', true],
    ['registry.k8s.io/pause:3.9', true],
    ['localhost:5000/team/app@sha256:' + 'a'.repeat(64), true],
    ['Shop:1', false],
    ['ghcr.io/acme/shop:', false],
    ['shop 1', false],
    ['ghcr.io/acme/shop@sha256:short', false],
  ];
  for (const [image, ok] of cases) {
    it(`${ok ? 'accepts' : 'refuses'} ${JSON.stringify(image)}, as Knative's webhook would`, () => assert.equal(pattern.test(image), ok));
  }
});
