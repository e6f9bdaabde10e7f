import assert from 'node:assert/strict';
import { byCreation, type Created } from './creation-order.ts';

describe('creation order', () => {
  const at = (created: string, name: string): Created => ({ created, name });
  const cases: Array<[string, Created, Created, -1 | 0 | 1]> = [
    ['the earlier created first', at('2024-01-01T00:00:00Z', 'b'), at('2024-01-02T00:00:00Z', 'a'), -1],
    ['the later created last', at('2024-01-02T00:00:00Z', 'a'), at('2024-01-01T00:00:00Z', 'b'), 1],
    ['at the same second, by name', at('2024-01-01T00:00:00Z', 'a'), at('2024-01-01T00:00:00Z', 'b'), -1],
    ['at the same second, by name, the other way', at('2024-01-01T00:00:00Z', 'b'), at('2024-01-01T00:00:00Z', 'a'), 1],
    ['an unknown time before any', at('', 'z'), at('2024-01-01T00:00:00Z', 'a'), -1],
    ['the same object neither', at('2024-01-01T00:00:00Z', 'a'), at('2024-01-01T00:00:00Z', 'a'), 0],
  ];
  for (const [what, a, b, want] of cases) it(`puts ${what}`, () => assert.equal(Math.sign(byCreation(a, b)), want));

  it('sorts a list the same whatever order it came in', () => {
    const list = [at('2024-01-02T00:00:00Z', 'a'), at('2024-01-01T00:00:00Z', 'c'), at('2024-01-01T00:00:00Z', 'b')];
    const want = ['b', 'c', 'a'];
    assert.deepEqual([...list].sort(byCreation).map((c) => c.name), want);
    assert.deepEqual([...list].reverse().sort(byCreation).map((c) => c.name), want);
  });
});
