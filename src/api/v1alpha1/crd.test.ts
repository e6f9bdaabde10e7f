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
    assert.deepEqual(v.additionalPrinterColumns.filter((c) => !('priority' in c)).map((c) => c.name), ['Ready', 'URL', 'Version', 'Canary %', 'Min', 'Max', 'Age']);
    assert.deepEqual(crd.spec.names.shortNames, ['sapp']);
    assert.ok(crd.spec.names.categories.length > 0);
  });
});
