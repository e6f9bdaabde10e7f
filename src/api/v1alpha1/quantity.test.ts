import assert from 'node:assert/strict';
import { QuantityError, parseQuantity, readableBytes } from './quantity.ts';

describe('quantities', () => {
  const cases: Array<[string | number, number]> = [
    ['100Gi', 100 * 2 ** 30], ['12Gi', 12 * 2 ** 30], ['500M', 5e8], ['1.5Ti', 1.5 * 2 ** 40], ['1e9', 1e9], ['2E3', 2000],
    ['500m', 0.5], ['4', 4], [4, 4], ['.5Ki', 512], ['1Ei', 2 ** 60],
  ];
  for (const [q, want] of cases) it(`reads ${JSON.stringify(q)} as ${want}`, () => assert.equal(parseQuantity(q), want));

  for (const bad of ['', '12GB', 'Gi', '1.2.3', '12 Gi', 'abc']) {
    it(`refuses ${JSON.stringify(bad)}`, () => assert.throws(() => parseQuantity(bad), QuantityError));
  }
});

describe('readableBytes', () => {
  const cases: Array<[number, string]> = [
    [3 * 2 ** 30, '3Gi'], [3 * 2 ** 30 + 111, '3.00Gi'], [1536 * 2 ** 20, '1536Mi'], [1.5 * 2 ** 30 + 1, '1.50Gi'], [1023, '1023'], [2 ** 10 + 1, '1.00Ki'],
  ];
  for (const [n, text] of cases) it(`${n} bytes reads ${text}`, () => assert.equal(readableBytes(n), text));
});
