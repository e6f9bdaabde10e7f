import assert from 'node:assert/strict';
import { Lru, NamespacedLru } from './lru.ts';

describe('Lru', () => {
  it('drops the least recently used entry past its cap', () => {
    const lru = new Lru<number>(2);
    lru.set('a', 1);
    lru.set('b', 2);
    lru.get('a');
    lru.set('c', 3);
    assert.deepEqual([lru.get('a'), lru.get('b'), lru.get('c')], [1, undefined, 3]);
  });
});

describe('NamespacedLru', () => {
  it('keeps another namespace\'s entries however many new ones a neighbour adds', () => {
    const lru = new NamespacedLru<string>(4, 8);
    lru.set('victim', 'regex', 'ok');
    for (let i = 0; i < 1_000; i++) lru.set('noisy', `regex-${i}`, 'ok');
    assert.equal(lru.get('victim', 'regex'), 'ok');
    assert.equal(lru.get('noisy', 'regex-0'), undefined, 'the storm evicts its own entries');
    assert.equal(lru.get('noisy', 'regex-999'), 'ok');
  });

  it('holds at most its number of namespaces, dropping the least recently used one', () => {
    const lru = new NamespacedLru<string>(4, 2);
    lru.set('a', 'k', '1');
    lru.set('b', 'k', '2');
    lru.get('a', 'k');
    lru.set('c', 'k', '3');
    assert.deepEqual([lru.get('a', 'k'), lru.get('b', 'k'), lru.get('c', 'k')], ['1', undefined, '3']);
  });
});
