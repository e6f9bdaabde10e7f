import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { userClient } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';

const dir = new URL('../../examples/', import.meta.url).pathname;

describe('examples/ (integration)', () => {
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    it(`${file} is accepted by the API server`, async () => {
      const ns = await freshNamespace('examples');
      const docs = parseAllDocuments(readFileSync(dir + file, 'utf8')).map((d) => d.toJSON() as ServerlessApp);
      assert.ok(docs.length > 0);
      for (const doc of docs) {
        const applied = await userClient().apply({ ...doc, metadata: { ...doc.metadata, namespace: ns } }, { dryRun: true });
        assert.equal(applied.kind, 'ServerlessApp');
      }
    });
  }
});
