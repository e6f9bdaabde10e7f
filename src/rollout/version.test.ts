import assert from 'node:assert/strict';
import type { ServerlessAppSpec } from '../api/v1alpha1/serverlessapp.ts';
import { summarize } from './version.ts';

describe('version summary (the Stable and Candidate columns)', () => {
  const cases: Array<[ServerlessAppSpec, string]> = [
    [{ container: { image: 'ghcr.io/acme/shop:1.4.0' } }, 'shop:1.4.0'],
    [{ container: { image: 'shop' } }, 'shop'],
    [{ container: { image: 'registry.local:5000/team/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef' } }, 'web@sha256:0123456789ab'],
    [{ model: { format: { name: 'sklearn' }, storageUri: 'gs://kfserving-examples/models/sklearn/1.0/model' } }, 'sklearn 1.0/model'],
    [{ model: { format: { name: 'huggingface', version: '1' }, storageUri: 'hf://meta/llama/' } }, 'huggingface@1 meta/llama'],
  ];
  for (const [spec, want] of cases) {
    it(`shows ${want}`, () => assert.equal(summarize(spec), want));
  }
});
