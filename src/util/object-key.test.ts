import assert from 'node:assert/strict';
import { namespaceOf, objectKey, splitKey } from './object-key.ts';

describe('object keys', () => {
  const cases: Array<[string | undefined, string, string]> = [
    ['team-a', 'shop', 'team-a/shop'],
    ['', 'node-1', 'node-1'],
    [undefined, 'wc--any.example.com', 'wc--any.example.com'],
  ];
  for (const [namespace, name, key] of cases) {
    it(`${JSON.stringify(namespace)} and ${name} make ${key} and back`, () => {
      assert.equal(objectKey(namespace, name), key);
      assert.deepEqual(splitKey(key), { namespace: namespace ?? '', name });
      assert.equal(namespaceOf(key), namespace ?? '');
    });
  }
});
