import assert from 'node:assert/strict';
import { controllingAppRef } from './metadata.ts';

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
