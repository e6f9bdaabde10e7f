import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UNMEASURED } from '../render/model-cache-usage.ts';
import { measureModelFolders } from './measure.ts';

describe('cache usage reporter: measuring the model folders', () => {
  let dir: string;
  const key = '0123456789abcdef';
  const folder = () => join(dir, 'models', key);
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'measure-'));
    mkdirSync(folder(), { recursive: true });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('counts the bytes of every file under a storage-key folder, and nothing outside one', async () => {
    writeFileSync(join(folder(), 'a.bin'), Buffer.alloc(1000));
    mkdirSync(join(folder(), 'sub'));
    writeFileSync(join(folder(), 'sub', 'b.bin'), Buffer.alloc(24));
    mkdirSync(join(dir, 'models', 'not-a-model'));
    writeFileSync(join(dir, 'models', 'not-a-model', 'x'), Buffer.alloc(10));
    assert.deepEqual([...await measureModelFolders(dir)], [[key, 1024]]);
  });

  it('follows no symbolic link: a link to a large file outside counts nothing', async () => {
    writeFileSync(join(dir, 'outside.bin'), Buffer.alloc(4096));
    symlinkSync(join(dir, 'outside.bin'), join(folder(), 'link'));
    assert.equal((await measureModelFolders(dir)).get(key), 0);
  });

  it('takes a model laid out deeper than the walk goes as unmeasured, not as empty (finding: bytes hidden past the depth bound)', async () => {
    const deep = join(folder(), ...Array.from({ length: 5 }, (_, i) => `d${i}`));
    mkdirSync(deep, { recursive: true });
    writeFileSync(join(deep, 'big.bin'), Buffer.alloc(2048));
    assert.equal((await measureModelFolders(dir, { maxDepth: 3, maxEntries: 1000 })).get(key), UNMEASURED);
    assert.equal((await measureModelFolders(dir, { maxDepth: 16, maxEntries: 1000 })).get(key), 2048, 'within the bound, measured');
  });

  it('takes a model with more entries than the walk reads as unmeasured, not as what it counted (finding: bytes hidden behind padding)', async () => {
    for (let i = 0; i < 20; i++) writeFileSync(join(folder(), `pad-${i}`), '');
    mkdirSync(join(folder(), 'z'));
    writeFileSync(join(folder(), 'z', 'big.bin'), Buffer.alloc(2048));
    assert.equal((await measureModelFolders(dir, { maxDepth: 16, maxEntries: 10 })).get(key), UNMEASURED);
    assert.equal((await measureModelFolders(dir, { maxDepth: 16, maxEntries: 100 })).get(key), 2048, 'within the bound, measured');
  });

  it('reads no models directory (no model yet) as no folders', async () => {
    rmSync(join(dir, 'models'), { recursive: true });
    assert.equal((await measureModelFolders(dir)).size, 0);
  });
});
