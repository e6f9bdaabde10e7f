import assert from 'node:assert/strict';
import { canonicalJson, sameJson } from './canonical-json.ts';

describe('sameJson', () => {
  const table: Array<[string, unknown, unknown, boolean]> = [
    ['key order aside', { a: 1, b: { c: [1, 2], d: 'x' } }, { b: { d: 'x', c: [1, 2] }, a: 1 }, true],
    ['an undefined member is a missing one', { a: 1, b: undefined }, { a: 1 }, true],
    ['a function member is a missing one', { a: 1, f: () => 1 }, { a: 1 }, true],
    ['undefined in an array is null', [1, undefined], [1, null], true],
    ['NaN is null', { n: Number.NaN }, { n: null }, true],
    ['a missing member is not null', { a: null }, {}, false],
    ['array order matters', [1, 2], [2, 1], false],
    ['an array is not an object', [], {}, false],
    ['a number is not its string', { a: 1 }, { a: '1' }, false],
    ['an extra member', { a: 1 }, { a: 1, b: 2 }, false],
    ['nested difference', { a: { b: [{ c: 1 }] } }, { a: { b: [{ c: 2 }] } }, false],
    ['a Date is its JSON', { at: new Date(0) }, { at: '1970-01-01T00:00:00.000Z' }, true],
    ['a Date is its JSON at the top', new Date(0), '1970-01-01T00:00:00.000Z', true],
    ['two equal Dates', new Date(5), new Date(5), true],
    ['undefined is not null at the top', undefined, null, false],
  ];
  for (const [why, a, b, same] of table) {
    it(`${why}: ${same ? 'same' : 'different'}, as canonicalJson says`, () => {
      assert.equal(canonicalJson(a) === canonicalJson(b), same, 'the table agrees with canonicalJson');
      assert.equal(sameJson(a, b), same);
      assert.equal(sameJson(b, a), same);
    });
  }

  it('agrees with comparing canonicalJson over 5,000 generated pairs, half of them nearly equal', () => {
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const scalars = [0, 1, -1, 'a', 'b', '', true, false, null, undefined, Number.NaN];
    const value = (depth: number): unknown => {
      const r = rand();
      if (depth > 3 || r < 0.4) return scalars[Math.floor(rand() * scalars.length)];
      if (r < 0.7) return Array.from({ length: Math.floor(rand() * 4) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: Math.floor(rand() * 4) }, () => [['x', 'y', 'z', 'w'][Math.floor(rand() * 4)], value(depth + 1)]));
    };
    const reorder = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(reorder);
      if (v === null || typeof v !== 'object') return rand() < 0.1 ? value(3) : v;
      return Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reorder(x)]));
    };
    let sameCount = 0;
    for (let i = 0; i < 5_000; i++) {
      const a = value(0);
      const b = rand() < 0.5 ? reorder(a) : value(0);
      const expected = canonicalJson(a) === canonicalJson(b);
      if (expected) sameCount++;
      assert.equal(sameJson(a, b), expected, `${canonicalJson(a)} vs ${canonicalJson(b)}`);
    }
    assert.ok(sameCount > 500 && sameCount < 4_500, `both outcomes are exercised (${sameCount} same)`);
  });
});
