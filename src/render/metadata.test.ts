import assert from 'node:assert/strict';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../util/managed-by.ts';
import { APP_LABEL, APP_NAMESPACE_LABEL, labelledFor, labelsName } from './metadata.ts';

const shop = { namespace: 'team-a', name: 'shop' };
const managed = { [MANAGED_BY_LABEL]: MANAGED_BY };
// A namespaced app's cluster-scoped cache: labels only. Its namespaced cache: labels and a controller owner reference.
const clusterCache = { metadata: { labels: { ...managed, [APP_LABEL]: 'shop', [APP_NAMESPACE_LABEL]: 'team-a' } } };
const namespacedCache = { metadata: { namespace: 'team-a', labels: { ...managed, [APP_LABEL]: 'shop' }, ownerReferences: [{ controller: true }] } };

describe('objects labelled as an app\'s', () => {
  const cases: { it: string; obj: Parameters<typeof labelsName>[0]; ref: typeof shop | undefined; names: boolean; labelledFor: boolean }[] = [
    { it: 'a cluster-scoped child whose labels name the app and namespace is the app\'s by its labels alone', obj: clusterCache, ref: shop, names: true, labelledFor: true },
    { it: 'a controlled child whose labels name the app: named, but its owner reference decides, not its labels', obj: namespacedCache, ref: shop, names: true, labelledFor: false },
    { it: 'another app of the same name in another namespace', obj: clusterCache, ref: { namespace: 'team-b', name: 'shop' }, names: false, labelledFor: false },
    { it: 'another app of the same namespace', obj: clusterCache, ref: { namespace: 'team-a', name: 'cart' }, names: false, labelledFor: false },
    { it: 'an object the operator did not make, whatever its labels', obj: { metadata: { labels: { [APP_LABEL]: 'shop', [APP_NAMESPACE_LABEL]: 'team-a' } } }, ref: shop, names: false, labelledFor: false },
    { it: 'no app (one already gone)', obj: clusterCache, ref: undefined, names: false, labelledFor: false },
  ];
  for (const c of cases) {
    it(c.it, () => {
      assert.equal(labelsName(c.obj, c.ref), c.names, 'labelsName');
      assert.equal(labelledFor(c.obj, c.ref), c.labelledFor, 'labelledFor');
    });
  }
});
