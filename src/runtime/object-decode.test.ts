import assert from 'node:assert/strict';
import { decodeObject, decodeParsed, type Projection } from './object-decode.ts';

interface Obj {
  apiVersion?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; generation?: number; labels?: Record<string, string>; annotations?: Record<string, string>; managedFields?: unknown };
  spec?: { env?: Array<{ name: string; value: string }> };
  status?: { phase?: string };
}

const projection: Projection = { metadata: ['name', 'namespace', 'uid', 'resourceVersion', 'generation'] };

/** An app of about 1.3 MiB: 41 env values of 32 KiB (the largest the finding "Large apps crash the operator for everyone" submitted). */
function largeApp(over: { resourceVersion: string; generation?: number; uid?: string; labels?: Record<string, string>; phase?: string; value?: string }): Obj {
  return {
    apiVersion: 'serverlessapp.io/v1alpha1',
    metadata: {
      name: 'big', namespace: 'tenant', uid: over.uid ?? 'u1', resourceVersion: over.resourceVersion, generation: over.generation ?? 1,
      labels: over.labels ?? {}, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': 'y'.repeat(200_000) }, managedFields: [{ manager: 'kubectl', fieldsV1: { 'f:spec': {} } }],
    },
    spec: { env: Array.from({ length: 41 }, (_, i) => ({ name: `V${i}`, value: (over.value ?? 'x').repeat(32_768) })) },
    status: { phase: over.phase ?? 'Failed' },
  };
}

const bytes = (o: unknown) => Buffer.from(JSON.stringify(o));
const fresh = (o: Obj, p?: Projection) => decodeObject<Obj>(bytes(o), () => undefined, p).obj;

/** Median milliseconds of `f` over `runs`, after a warm-up. */
function medianMs(f: () => void, runs = 15): number {
  for (let i = 0; i < 3; i++) f();
  const times = Array.from({ length: runs }, () => { const s = performance.now(); f(); return performance.now() - s; });
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}

describe('decodeObject', () => {
  it('without a projection is JSON.parse', () => {
    const o = largeApp({ resourceVersion: '1' });
    assert.deepEqual(fresh(o), o);
  });

  it('returns the cached object, unparsed, when the resourceVersion is the one the cache holds', () => {
    const cached = fresh(largeApp({ resourceVersion: '7' }));
    const d = decodeObject<Obj>(bytes(largeApp({ resourceVersion: '7', value: 'z' })), () => cached);
    assert.equal(d.obj, cached);
    assert.equal(d.unchanged, true);
  });

  it('under a projection keeps only the listed metadata: labels, annotations and managedFields are skipped', () => {
    const o = fresh(largeApp({ resourceVersion: '1', labels: { a: 'b' } }), projection);
    assert.deepEqual(o.metadata, { name: 'big', namespace: 'tenant', uid: 'u1', resourceVersion: '1', generation: 1 });
    assert.equal(o.spec?.env?.length, 41);
    assert.deepEqual(o.status, { phase: 'Failed' });
  });

  it('projects a small object, parsed whole, the same way, and knows its resourceVersion', () => {
    const small = { metadata: { name: 's', namespace: 'n', resourceVersion: '4', labels: { a: 'b' }, managedFields: [{}] }, spec: { env: [{ name: 'A', value: 'b' }] } };
    const o = fresh(small, projection);
    assert.deepEqual(o, { metadata: { name: 's', namespace: 'n', resourceVersion: '4' }, spec: small.spec });
    assert.equal(decodeObject<Obj>(bytes(small), () => o, projection).obj, o);
  });

  it('parses the spec again when the generation moved or the object was replaced (another uid)', () => {
    const cached = fresh(largeApp({ resourceVersion: '1' }), projection);
    for (const next of [largeApp({ resourceVersion: '2', generation: 2, value: 'z' }), largeApp({ resourceVersion: '2', uid: 'u2', value: 'z' })]) {
      const d = decodeObject<Obj>(bytes(next), () => cached, projection);
      assert.notEqual(d.obj.spec, cached.spec);
      assert.equal(d.obj.spec?.env?.[0]?.value[0], 'z');
    }
  });

  it('keeps a spec past maxSpecBytes unparsed: an empty spec and what the refusal reports', () => {
    const o = fresh(largeApp({ resourceVersion: '1' }), { ...projection, maxSpecBytes: 65_536 }) as Obj & { specTooLarge?: unknown };
    const specBytes = Buffer.byteLength(JSON.stringify(largeApp({ resourceVersion: '1' }).spec));
    assert.deepEqual([o.spec, o.specTooLarge, o.status], [{}, { bytes: specBytes, limit: 65_536 }, { phase: 'Failed' }]);
    const small = fresh({ metadata: { name: 's', resourceVersion: '1' }, spec: { env: [{ name: 'A', value: 'b' }] } }, { ...projection, maxSpecBytes: 65_536 });
    assert.deepEqual(small.spec, { env: [{ name: 'A', value: 'b' }] });
  });

  it('Label edits on large apps slow everyone: a label-only or status-only event of a 1.3 MiB app keeps the cached spec unparsed, at a tenth of a parse at most', () => {
    const cached = fresh(largeApp({ resourceVersion: '1' }), projection);
    const labelEdit = bytes(largeApp({ resourceVersion: '2', labels: { storm: '1' } }));
    const statusEdit = bytes(largeApp({ resourceVersion: '3', phase: 'Pending' }));
    for (const edit of [labelEdit, statusEdit]) {
      const d = decodeObject<Obj>(edit, () => cached, projection);
      assert.equal(d.unchanged, false);
      assert.equal(d.obj.spec, cached.spec, 'the spec is the cached one, not parsed again');
    }
    assert.equal(decodeObject<Obj>(statusEdit, () => cached, projection).obj.status?.phase, 'Pending');
    const parse = medianMs(() => JSON.parse(labelEdit.toString()));
    const decode = medianMs(() => decodeObject<Obj>(labelEdit, () => cached, projection));
    assert.ok(decode < parse / 10, `a label-only event cost ${decode.toFixed(2)} ms, a full parse ${parse.toFixed(2)} ms`);
  });
});

describe('decodeParsed', () => {
  it('keeps what decodeObject keeps of the same object: the projected metadata, the spec, or past maxSpecBytes an empty spec and its size', () => {
    const limited = { ...projection, maxSpecBytes: 65_536 };
    for (const o of [largeApp({ resourceVersion: '1' }), { metadata: { name: 's', resourceVersion: '1', labels: { a: 'b' } }, spec: { env: [{ name: 'A', value: 'b' }] } }]) {
      for (const p of [undefined, projection, limited]) {
        const parsed = decodeParsed<Obj>(JSON.parse(JSON.stringify(o)), () => undefined, p);
        assert.deepEqual(parsed, { obj: fresh(o, p), unchanged: false }, `${o.metadata?.name} under ${JSON.stringify(p)}`);
      }
    }
  });

  it('measures the spec as the API server serves it, as the bytes path does: a spec of many "<" is as large either way (review)', () => {
    const limited = { ...projection, maxSpecBytes: 200 };
    const angled: Obj = { metadata: { name: 'a', resourceVersion: '1' }, spec: { env: [{ name: 'A', value: '<'.repeat(40) }] } };
    // Go's encoding/json serves each "<" as \u003c: the bytes the API server sends, past the limit.
    const served = Buffer.from(JSON.stringify(angled).replaceAll('<', '\\u003c'));
    const viaBytes = decodeObject<Obj>(served, () => undefined, limited).obj as Obj & { specTooLarge?: { bytes: number } };
    const viaParse = decodeParsed<Obj>(JSON.parse(JSON.stringify(angled)), () => undefined, limited).obj as Obj & { specTooLarge?: { bytes: number } };
    assert.ok(viaParse.specTooLarge, 'past the limit when read parsed');
    assert.equal(viaParse.specTooLarge.bytes, viaBytes.specTooLarge?.bytes ?? Buffer.byteLength(JSON.stringify(angled.spec).replaceAll('<', '\\u003c')));
  });

  it('returns the cached object when the resourceVersion is the one the cache holds', () => {
    const cached = fresh(largeApp({ resourceVersion: '5' }), projection);
    const got = decodeParsed<Obj>(largeApp({ resourceVersion: '5', labels: { x: 'y' } }), () => cached, projection);
    assert.equal(got.obj, cached);
    assert.equal(got.unchanged, true);
  });
});
