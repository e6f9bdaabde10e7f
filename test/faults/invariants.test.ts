// The invariant checker of the kill trials must catch what it is there to
// catch; otherwise a passing fault test proves nothing.
import assert from 'node:assert/strict';
import { checkRolloutInvariants, type Recorded } from './support/history.ts';

const revision = (rv: number, name: string, ready: boolean): Recorded =>
  ({ kind: 'revision', rv, name, object: { metadata: { name }, status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'Unknown' }] } } });
type Split = Array<{ revisionName: string; percent: number }>;
const ksvc = (rv: number, traffic: Split, reported?: Split): Recorded =>
  ({ kind: 'ksvc', rv, name: 'shop', object: { metadata: { name: 'shop' }, spec: { traffic }, ...(reported ? { status: { traffic: reported } } : {}) } });
const app = (rv: number, phase: string, stable?: string): Recorded =>
  ({ kind: 'app', rv, name: 'shop', object: { metadata: { name: 'shop' }, status: { phase, ...(stable ? { versions: { stable: { version: 'v', revision: stable } } } : {}) } } as Recorded['object'] });

describe('rollout invariants over a recorded history', () => {
  const stableV1 = [revision(1, 'shop-1', true), app(2, 'Stable', 'shop-1')];

  it('accepts a canary that only gets traffic once its revision is Ready', () => {
    const events = [...stableV1, revision(3, 'shop-2', false), ksvc(4, [{ revisionName: 'shop-1', percent: 100 }, { revisionName: 'shop-2', percent: 0 }]),
      revision(5, 'shop-2', true), ksvc(6, [{ revisionName: 'shop-1', percent: 70 }, { revisionName: 'shop-2', percent: 30 }])];
    assert.deepEqual(checkRolloutInvariants(events), []);
  });

  it('flags traffic sent to a revision that was not Ready at that moment, whatever order the events arrived in', () => {
    const events = [revision(6, 'shop-2', true), ...stableV1, revision(3, 'shop-2', false), ksvc(5, [{ revisionName: 'shop-1', percent: 70 }, { revisionName: 'shop-2', percent: 30 }])];
    assert.deepEqual(checkRolloutInvariants(events).map((v) => v.rv), [5]);
  });

  it('flags traffic that Knative reports serving from a revision that was not Ready, even when the asked-for split is safe', () => {
    const safe = [{ revisionName: 'shop-1', percent: 100 }];
    const events = [...stableV1, revision(3, 'shop-2', false), ksvc(4, safe, [{ revisionName: 'shop-1', percent: 60 }, { revisionName: 'shop-2', percent: 40 }])];
    assert.deepEqual(checkRolloutInvariants(events).map((v) => v.message.split(' [')[0]), ['reported traffic']);
    assert.deepEqual(checkRolloutInvariants([...stableV1, ksvc(3, safe, safe)]), []);
  });

  it('flags a stable version that disappears or names a revision that is not Ready', () => {
    assert.deepEqual(checkRolloutInvariants([...stableV1, app(3, 'Canary')]).map((v) => v.message), ['status.versions.stable disappeared (phase Canary)']);
    assert.match(checkRolloutInvariants([...stableV1, revision(3, 'shop-1', false), app(4, 'Stable', 'shop-1')])[0]?.message ?? '', /names shop-1, which was not Ready/);
  });

  it('lets the first version be routed to before it is Ready, while the app is Pending', () => {
    const events = [app(1, 'Pending', 'shop-1'), ksvc(2, [{ revisionName: 'shop-1', percent: 100 }]), revision(3, 'shop-1', false), revision(4, 'shop-1', true), app(5, 'Stable', 'shop-1')];
    assert.deepEqual(checkRolloutInvariants(events), []);
  });
});
