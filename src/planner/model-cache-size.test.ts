import assert from 'node:assert/strict';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { UNMEASURED } from '../render/model-cache-usage.ts';
import { modelApp } from '../testing/apps.ts';
import { cacheCharge, sameModel, sizeProblem, sizeRefusal, type RefusedModelCache } from './model-cache-size.ts';

const GiB = 2 ** 30;

function declaring(storageUri: string, size: string, refusedModelCache?: RefusedModelCache): ServerlessApp {
  const base = modelApp();
  return { ...base, spec: { ...base.spec, model: { ...base.spec.model!, storageUri, size } }, ...(refusedModelCache ? { status: { refusedModelCache } } : {}) } as ServerlessApp;
}

describe('model cache size', () => {
  const charges: Array<{ what: string; declared: number; measured?: number; floor: number; want: number }> = [
    { what: 'the declared size when it is the largest', declared: 4 * GiB, measured: 3 * GiB, floor: GiB, want: 4 * GiB },
    { what: 'the measured size when a node holds more', declared: GiB, measured: 3 * GiB, floor: GiB, want: 3 * GiB },
    { what: 'the floor for a model declared tiny and not yet measured', declared: 1, floor: GiB, want: GiB },
    { what: 'the floor for a model declared tiny and measured small', declared: 1, measured: 1024, floor: GiB, want: GiB },
  ];
  for (const c of charges) {
    it(`charges ${c.what}`, () => assert.equal(cacheCharge(c.declared, c.measured === undefined ? undefined : { bytes: c.measured, node: 'n' }, c.floor), c.want));
  }

  const recorded: RefusedModelCache = { storageUri: 'gs://m/big', size: '1Gi', measuredBytes: 3 * GiB, node: 'n1' };
  const refusals: Array<{ what: string; app: ServerlessApp; measured?: number; want: RefusedModelCache | undefined }> = [
    { what: 'refuses a model a node holds more of than declared', app: declaring('gs://m/big', '1Gi'), measured: 3 * GiB, want: recorded },
    { what: 'does not refuse a model measured at its declared size', app: declaring('gs://m/big', '1Gi'), measured: GiB, want: undefined },
    { what: 'does not refuse a model not yet measured', app: declaring('gs://m/big', '1Gi'), want: undefined },
    { what: 'keeps a recorded refusal once the folder, and its measure, are gone', app: declaring('gs://m/big', '1Gi', recorded), want: recorded },
    { what: 'keeps the recorded refusal as it was, not the latest measure', app: declaring('gs://m/big', '1Gi', recorded), measured: 5 * GiB, want: recorded },
    { what: 'lifts the refusal when spec.model.size covers the measure', app: declaring('gs://m/big', '4Gi', recorded), measured: 3 * GiB, want: undefined },
    { what: 'keeps the refusal for the same size written otherwise (1024Mi), with no measure left', app: declaring('gs://m/big', '1024Mi', recorded), want: recorded },
    { what: 'keeps the refusal for a size a byte larger, with no measure left', app: declaring('gs://m/big', String(GiB + 1), recorded), want: recorded },
    { what: 'lifts the refusal when spec.model.storageUri changes', app: declaring('gs://m/big-v2', '1Gi', recorded), want: undefined },
    { what: 'keeps the refusal for a new size still below the measure, with no measure left', app: declaring('gs://m/big', '2Gi', recorded), want: recorded },
  ];
  for (const r of refusals) {
    it(r.what, () => assert.deepEqual(sizeRefusal(r.app, r.measured === undefined ? undefined : { bytes: r.measured, node: 'n1' }), r.want));
  }

  it('refuses a model the reporter could not measure whole, saying so', () => {
    const unmeasured = sizeRefusal(declaring('gs://m/big', '1Gi'), { bytes: UNMEASURED, node: 'n1' });
    assert.equal(unmeasured?.measuredBytes, UNMEASURED);
    assert.match(sizeProblem(unmeasured!).message, /^the model gs:\/\/m\/big could not be measured on node n1 \(more entries or folders deep than the platform's cache usage reporter walks, or files it may not read\), so it is taken as larger than its declared 1Gi: /);
  });

  it('tells the owner the field, the declared and the measured sizes, and what lifts the refusal', () => {
    const p = sizeProblem(recorded);
    assert.deepEqual([p.reason, p.field], ['ModelCacheLargerThanDeclared', 'spec.model.size']);
    assert.match(p.message, /^the model gs:\/\/m\/big takes 3Gi \(3221225472 bytes\) on node n1, more than its declared 1Gi: its cache is removed and not made again until spec\.model\.size \(at least the measured size\) changes, or spec\.model\.storageUri names another model/);
  });
});

describe('sameModel', () => {
  const cases: Array<[string, string]> = [
    ['s3://models/team/big', 's3://models/team/big'],
    ['s3://models/team/big/', 's3://models/team/big'],
    ['s3://models/team/big///', 's3://models/team/big'],
    ['s3://models//team///big', 's3://models/team/big'],
    ['S3://models/team/big', 's3://models/team/big'],
    ['pvc://claim/path/', 'pvc://claim/path'],
    ['hf://org/Model', 'hf://org/Model'],
  ];
  for (const [uri, want] of cases) it(`takes ${uri} for ${want}`, () => assert.equal(sameModel(uri), want));
  it('keeps apart what may be another model: a query string, another case in the path', () => {
    assert.notEqual(sameModel('s3://m/big?v=1'), sameModel('s3://m/big'));
    assert.notEqual(sameModel('s3://m/Big'), sameModel('s3://m/big'));
  });
});
