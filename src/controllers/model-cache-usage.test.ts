import assert from 'node:assert/strict';
import { UsageBook } from './model-cache-usage.ts';

const A = 'aaaaaaaaaaaaaaaa';
const B = 'bbbbbbbbbbbbbbbb';
const report = (node: string, sizes: Array<[string, number]>) => ({ node, sizes: new Map(sizes) });

describe('what the nodes hold of each model (usage reports)', () => {
  it('measures a model at the most any node holds of it, naming that node', () => {
    const book = new UsageBook();
    book.observe('r1', report('n1', [[A, 10]]));
    book.observe('r2', report('n2', [[A, 30]]));
    assert.deepEqual(book.measured(A), { bytes: 30, node: 'n2' });
    assert.equal(book.measured(B), undefined);
  });

  const changes: Array<{ what: string; before?: Array<[string, number]>; after?: Array<[string, number]>; want: string[] }> = [
    { what: 'a new report: every folder it lists', after: [[A, 1], [B, 2]], want: [A, B] },
    { what: 'the same report again: nothing', before: [[A, 1]], after: [[A, 1]], want: [] },
    { what: 'a folder grown: that folder only', before: [[A, 1], [B, 2]], after: [[A, 5], [B, 2]], want: [A] },
    { what: 'a folder gone from the report: that folder', before: [[A, 1], [B, 2]], after: [[B, 2]], want: [A] },
    { what: 'the report deleted: every folder it listed', before: [[A, 1], [B, 2]], want: [A, B] },
  ];
  for (const c of changes) {
    it(`tells which models' measure changed on ${c.what}`, () => {
      const book = new UsageBook();
      if (c.before) book.observe('r1', report('n1', c.before));
      assert.deepEqual(book.observe('r1', c.after ? report('n1', c.after) : undefined).sort(), c.want);
    });
  }

  it('forgets a node\'s measure when its report goes, keeping the other nodes\'', () => {
    const book = new UsageBook();
    book.observe('r1', report('n1', [[A, 50]]));
    book.observe('r2', report('n2', [[A, 20]]));
    book.observe('r1', undefined);
    assert.deepEqual(book.measured(A), { bytes: 20, node: 'n2' });
    book.observe('r2', report('n2', []));
    assert.equal(book.measured(A), undefined);
  });
});
