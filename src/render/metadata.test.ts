import assert from 'node:assert/strict';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../util/managed-by.ts';
import { containerApp, modelApp } from '../testing/apps.ts';
import { renderInferenceService } from './inference-service.ts';
import { renderKnativeService } from './knative-service.ts';
import { APP_LABEL, APP_NAME_LABEL_VALUE, APP_NAMESPACE_LABEL, appLabels, controllingAppRef, labelledFor, labelsName, removableBy } from './metadata.ts';

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

describe('what an app may remove (the writer\'s rule, and what `kubectl sapp plan` says a removal does)', () => {
  const app = { metadata: { uid: 'u1' } };
  const controlled = (uid: string) => ({ metadata: { namespace: 'team-a', ownerReferences: [{ controller: true, uid }] } });
  const cases: Array<[string, Parameters<typeof removableBy>[0], Parameters<typeof removableBy>[1], boolean]> = [
    ['a child the app controls by uid', controlled('u1'), app, true],
    ['a child an earlier app of the same name controlled (another uid)', controlled('u0'), app, false],
    ['a child nothing owns', { metadata: { namespace: 'team-a' } }, app, false],
    ['a cluster-scoped cache whose labels name the app, by the app\'s key', clusterCache, shop, true],
    ['a cluster-scoped cache of another app', clusterCache, { namespace: 'team-a', name: 'cart' }, false],
    ['nothing live', undefined, app, false],
    ['an app already gone', controlled('u1'), undefined, false],
  ];
  for (const [what, live, owner, removable] of cases) it(what, () => assert.equal(removableBy(live, owner), removable));
});

describe('controllingAppRef: the app that controls a child', () => {
  type Ref = { kind: string; name?: string; controller?: boolean };
  const child = (ownerReferences: Ref[], namespace: string | null = 'team-a') => ({ metadata: { ...(namespace ? { namespace } : {}), ownerReferences } });
  const app = (name: string, controller = true): Ref => ({ kind: 'ServerlessApp', name, controller });
  const cases: Array<[string, ReturnType<typeof child>, { namespace: string; name: string } | undefined]> = [
    ['its controlling app, in its own namespace', child([app('shop')]), { namespace: 'team-a', name: 'shop' }],
    ['the controller among several owners', child([app('other', false), { kind: 'ServerlessApp', name: 'shop', controller: true }]), { namespace: 'team-a', name: 'shop' }],
    ['none when an app owns it without controlling it', child([app('shop', false)]), undefined],
    ['none when another kind controls it', child([{ kind: 'Deployment', name: 'shop', controller: true }]), undefined],
    ['none without owners', child([]), undefined],
    ['none for an object without a namespace', child([app('shop')], null), undefined],
  ];
  for (const [what, obj, want] of cases) it(what, () => assert.deepEqual(controllingAppRef(obj), want));
});

describe('Selector labels by name: the operator\'s labels never carry a value the tenant chose, outside its own prefix', () => {
  // Where other stacks' selectors look (a NetworkPolicy admitting the monitoring stack, a PodMonitor, a Service).
  const selectorKeys = ['app', 'name', 'app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component', 'k8s-app'];
  const prometheus = { ...containerApp(), metadata: { ...containerApp().metadata, name: 'prometheus' } };

  it('an app named prometheus: no selector label of the children or their pods says prometheus; its name is under serverlessapp.io', () => {
    const ksvc = renderKnativeService(prometheus, 'v1', { revision: 'prometheus-1', annotations: {} }, []);
    const isvc = renderInferenceService({ ...modelApp(), metadata: { ...modelApp().metadata, name: 'prometheus' } }, 'v1', { minScale: 0 } as never, {});
    const labelSets: Array<Record<string, string>> = [appLabels(prometheus), ksvc.metadata!.labels!, ksvc.spec!.template!.metadata!.labels!, isvc.metadata.labels!, isvc.spec.predictor.labels as Record<string, string>];
    for (const labels of labelSets) {
      for (const k of selectorKeys) assert.notEqual(labels[k], 'prometheus', `${k}=${labels[k]}`);
      assert.equal(labels[APP_LABEL], 'prometheus');
      assert.equal(labels['app.kubernetes.io/name'], APP_NAME_LABEL_VALUE);
    }
  });
});
