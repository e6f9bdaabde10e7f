import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertGolden } from './golden.ts';

describe('assertGolden', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'golden-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('passes when the file holds exactly the rendering (YAML for an object, a string as it is)', () => {
    writeFileSync(join(dir, 'a.yaml'), 'kind: Service\n');
    writeFileSync(join(dir, 'b.txt'), 'plain\n');
    assertGolden(join(dir, 'a.yaml'), { kind: 'Service' }, {});
    assertGolden(new URL(`file://${join(dir, 'b.txt')}`), 'plain\n', {});
  });

  it('fails on a missing file without writing it, in CI or not', () => {
    for (const env of [{}, { CI: 'true' }]) {
      assert.throws(() => assertGolden(join(dir, 'missing.yaml'), { a: 1 }, env), /missing.yaml is missing; UPDATE_GOLDEN=1 writes it/);
      assert.equal(existsSync(join(dir, 'missing.yaml')), false);
    }
  });

  it('fails on a different file and leaves it as it was', () => {
    writeFileSync(join(dir, 'a.yaml'), 'a: 1\n');
    assert.throws(() => assertGolden(join(dir, 'a.yaml'), { a: 2 }, {}), /a.yaml differs/);
    assert.equal(readFileSync(join(dir, 'a.yaml'), 'utf8'), 'a: 1\n');
  });

  it('with UPDATE_GOLDEN=1 writes a missing or different file and still fails, so the run is reviewed and repeated', () => {
    writeFileSync(join(dir, 'a.yaml'), 'a: 1\n');
    assert.throws(() => assertGolden(join(dir, 'a.yaml'), { a: 2 }, { UPDATE_GOLDEN: '1' }), /a.yaml rewritten \(UPDATE_GOLDEN=1\)/);
    assert.equal(readFileSync(join(dir, 'a.yaml'), 'utf8'), 'a: 2\n');
    assert.throws(() => assertGolden(join(dir, 'new', 'b.txt'), 'b\n', { UPDATE_GOLDEN: '1' }), /b.txt written/);
    assert.equal(readFileSync(join(dir, 'new', 'b.txt'), 'utf8'), 'b\n');
    assertGolden(join(dir, 'a.yaml'), { a: 2 }, { UPDATE_GOLDEN: '1' });
  });
});
