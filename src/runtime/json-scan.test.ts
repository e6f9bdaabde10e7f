import assert from 'node:assert/strict';
import { byteLines, objectMembers, readList } from './json-scan.ts';

/** The bytes of `text` in chunks of `size` (the last one shorter). */
async function* chunks(text: string, size: number): AsyncGenerator<Uint8Array> {
  const buf = Buffer.from(text);
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

// Strings that trip a scanner: braces and brackets, escaped quotes, runs of backslashes, non-ASCII.
const tricky = ['{[}]', 'say \\"hi\\"', 'ends in a backslash \\\\', '\\\\\\"', 'ünïcødé ✓', ''];
const items = tricky.map((value, i) => ({ metadata: { name: `o${i}`, annotations: { a: JSON.parse(`"${value}"`) } }, data: { v: [1, { x: JSON.parse(`"${value}"`) }], n: null, t: true } }));
const list = { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '42', continue: 'next[]' }, items };

describe('readList', () => {
  for (const size of [1, 2, 3, 7, 64, 1 << 20]) {
    it(`hands on each item alone and parses the rest, whatever the chunks (${size} bytes)`, async () => {
      const got: unknown[] = [];
      const rest = await readList(chunks(JSON.stringify(list, null, size === 7 ? 1 : undefined), size), (b) => got.push(JSON.parse(b.toString())));
      assert.deepEqual(got, items);
      assert.deepEqual(rest, { ...list, items: [] });
    });
  }

  it('parses a page that ends within the bound whole and hands on each item parsed; past the bound, streams every item as bytes, none lost', async () => {
    const text = JSON.stringify(list);
    const size = Buffer.byteLength(text);
    for (const [bound, whole] of [[size + 1, true], [size, false], [40, false], [0, false]] as const) {
      const parsed: unknown[] = [];
      const bytes: unknown[] = [];
      const rest = await readList(chunks(text, 16), { bytes: (b) => bytes.push(JSON.parse(b.toString())), parsed: (o) => parsed.push(o), wholeBelowBytes: bound });
      assert.deepEqual(whole ? parsed : bytes, items, `bound ${bound}: every item, in order`);
      assert.deepEqual(whole ? bytes : parsed, [], `bound ${bound}: one way only`);
      assert.deepEqual(rest, { ...list, items: [] });
    }
  });

  it('skips an element that is not an object when the page is parsed whole, as the scan hands on no such element', async () => {
    const parsed: unknown[] = [];
    await readList(chunks('{"metadata":{},"items":[null,{"metadata":{"name":"a"}},3]}', 8), { bytes: () => assert.fail('streamed'), parsed: (o) => parsed.push(o), wholeBelowBytes: 1 << 20 });
    assert.deepEqual(parsed, [{ metadata: { name: 'a' } }]);
  });

  it('reads an empty or null items list', async () => {
    for (const body of ['{"metadata":{"resourceVersion":"1"},"items":[]}', '{"metadata":{"resourceVersion":"1"},"items":null}']) {
      const got: unknown[] = [];
      const rest = await readList(chunks(body, 5), (b) => got.push(b));
      assert.equal(got.length, 0);
      assert.deepEqual((rest as { metadata: unknown }).metadata, { resourceVersion: '1' });
    }
  });

  it('throws on a list cut short', async () => {
    await assert.rejects(readList(chunks(JSON.stringify(list).slice(0, -20), 16), () => {}), SyntaxError);
  });

  it('holds one item at a time, never the page: 40 items of 1 MiB pass with each handed on as its own 1 MiB', async () => {
    const big = 'x'.repeat(1 << 20);
    async function* page(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('{"metadata":{"resourceVersion":"7"},"items":[');
      for (let i = 0; i < 40; i++) {
        const item = Buffer.from(`${i ? ',' : ''}{"metadata":{"name":"a${i}"},"spec":{"env":"${big}"}}`);
        for (let j = 0; j < item.length; j += 65_536) yield item.subarray(j, j + 65_536);
      }
      yield Buffer.from(']}');
    }
    let count = 0;
    let largest = 0;
    // With the whole-page path offered: 40 MiB is past its bound, so the page is streamed all the same.
    await readList(page(), { bytes: (b) => { count++; largest = Math.max(largest, b.length); }, parsed: () => assert.fail('parsed whole'), wholeBelowBytes: 4 << 20 });
    assert.equal(count, 40);
    assert.ok(largest < (1 << 20) + 100, `an item was ${largest} bytes`);
  });
});

describe('objectMembers', () => {
  it('finds every top-level member without parsing it', () => {
    const obj = { type: 'MODIFIED', object: items[2], n: -1.5e3, b: false, z: null, s: tricky[3] };
    const members = objectMembers(Buffer.from(JSON.stringify(obj, null, 2)));
    assert.deepEqual([...members.keys()], Object.keys(obj));
    for (const [k, v] of members) assert.deepEqual(JSON.parse(v.toString()), (obj as Record<string, unknown>)[k]);
  });

  it('reads an empty object and refuses what is not one', () => {
    assert.equal(objectMembers(Buffer.from(' {} ')).size, 0);
    assert.throws(() => objectMembers(Buffer.from('[1]')), SyntaxError);
    assert.throws(() => objectMembers(Buffer.from('{"a":"b')), SyntaxError);
  });
});

describe('byteLines', () => {
  it('splits lines across chunks and counts every chunk as traffic', async () => {
    let seen = 0;
    const got: string[] = [];
    for await (const line of byteLines(chunks('{"a":1}\n\n{"b":"ü"}\n{"c":3}', 3), () => seen++)) got.push(line.toString());
    assert.deepEqual(got, ['{"a":1}', '{"b":"ü"}', '{"c":3}']);
    assert.equal(seen, Math.ceil(Buffer.byteLength('{"a":1}\n\n{"b":"ü"}\n{"c":3}') / 3));
  });
});
