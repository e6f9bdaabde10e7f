import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { undocumented } from '../openapi.ts';
import { generatedFiles } from './crd-files.ts';
import { parseDuration } from './duration.ts';
import { serverlessAppCRD } from './crd.ts';

const root = new URL('../../../', import.meta.url).pathname;

describe('ServerlessApp CRD', () => {
  it('is what the committed crds/ and chart files (CRDs, the CEL of the admission policy) contain (run `npm run generate` after an API change)', () => {
    for (const [path, text] of generatedFiles()) assert.equal(readFileSync(root + path, 'utf8'), text, `${path} is stale`);
  });

  it('documents every field, so kubectl explain reads well everywhere', () => {
    const schema = serverlessAppCRD().spec.versions[0]!.schema.openAPIV3Schema;
    assert.deepEqual(undocumented(schema.properties.spec, 'spec'), []);
    assert.deepEqual(undocumented(schema.properties.status, 'status'), []);
  });

  it('has the status subresource, printer columns (Ready, then Reconciling and Stalled as kstatus reads them), the short name and a category', () => {
    const crd = serverlessAppCRD();
    const v = crd.spec.versions[0]!;
    assert.deepEqual(v.subresources, { status: {} });
    assert.deepEqual(v.additionalPrinterColumns.filter((c) => !('priority' in c)).map((c) => c.name), ['Ready', 'Reconciling', 'Stalled', 'Phase', 'Stable', 'Candidate', 'Weight', 'Min', 'Max', 'Age']);
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

describe('bounds at admission', () => {
  type Node = Record<string, any>;
  const spec = serverlessAppCRD().spec.versions[0]!.schema.openAPIV3Schema.properties.spec as Node;
  /** The deepest the spec schema nests (objects, lists, maps), with room for a few more levels of new fields. */
  const MAX_SPEC_DEPTH = 12;
  function unbounded(s: Node, path: string): string[] {
    const out: string[] = [];
    if ((s.type === 'string' || s['x-kubernetes-int-or-string']) && !s.enum && s.maxLength === undefined) out.push(`${path}: a string without maxLength`);
    if (s.type === 'array' && s.maxItems === undefined) out.push(`${path}: a list without maxItems`);
    if (s.type === 'object' && s.additionalProperties && s.maxProperties === undefined) out.push(`${path}: a map without maxProperties`);
    if (s['x-kubernetes-preserve-unknown-fields']) out.push(`${path}: free-form`);
    for (const [k, v] of Object.entries(s.properties ?? {})) out.push(...unbounded(v as Node, path ? `${path}.${k}` : k));
    if (s.items) out.push(...unbounded(s.items, `${path}[]`));
    if (s.additionalProperties && typeof s.additionalProperties === 'object') out.push(...unbounded(s.additionalProperties, `${path}{}`));
    return out;
  }
  const depth = (s: Node): number => 1 + Math.max(0, ...Object.values(s.properties ?? {}).map((v) => depth(v as Node)), ...(s.items ? [depth(s.items)] : []),
    ...(typeof s.additionalProperties === 'object' ? [depth(s.additionalProperties)] : []));

  // Free-form JSON (x-kubernetes-preserve-unknown-fields) could nest as deep and grow as large as a
  // request allows, and the operator hashes and renders it on every reconcile: the core/v1 types an
  // app embeds are typed instead (core-v1.ts), so the schema fixes the depth.
  it('bounds every string, list and map of the spec, and has no free-form field', () => assert.deepEqual(unbounded(spec, ''), []));

  it(`nests at most ${MAX_SPEC_DEPTH} levels deep, whatever a tenant sends`, () => assert.ok(depth(spec) <= MAX_SPEC_DEPTH, `the spec schema nests ${depth(spec)} levels`));

  it('gives every duration an upper bound, and keeps every default within it', () => {
    const durations: Array<[string, Node]> = [];
    const find = (s: Node, path: string) => {
      if (s.pattern?.includes('(h|ms|m|s)')) durations.push([path, s]);
      for (const [k, v] of Object.entries(s.properties ?? {})) find(v as Node, `${path}.${k}`);
      if (s.items) find(s.items, `${path}[]`);
    };
    find(spec, 'spec');
    assert.ok(durations.length >= 9, `found ${durations.map(([p]) => p).join(', ')}`);
    for (const [path, s] of durations) {
      const max = (s['x-kubernetes-validations'] as Array<{ rule: string }> | undefined)?.find((r) => r.rule.startsWith('duration(self) <= '));
      assert.ok(max, `${path} has an upper bound`);
      if (s.default !== undefined) assert.ok(parseDuration(s.default) <= parseDuration(/duration\('([^']+)'\)$/.exec(max.rule)![1]!), `${path}'s default is within its bound`);
    }
  });
});

