import assert from 'node:assert/strict';
import { ApiError, type KubeClient } from './client.ts';
import { StatusWriter } from './status.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';

function fakeClient() {
  const applied: unknown[] = [];
  return { applied, client: { apply: async (obj: unknown) => { applied.push(obj); return obj; } } as unknown as KubeClient };
}

const app = (status?: object, generation = 1, uid = 'u1') =>
  ({ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'shop', namespace: 'a', uid, generation }, ...(status ? { status } : {}) });

describe('StatusWriter', () => {
  it('treats an object deleted since the cache showed it as nothing to write (no error to retry), other errors as errors', async () => {
    const failing = (code: number) => new StatusWriter({ apply: async () => { throw new ApiError(code, 'x'); } } as unknown as KubeClient);
    assert.equal(await failing(404).write(app({ phase: 'Pending' }), { phase: 'Stable' }), false);
    await assert.rejects(failing(500).write(app({ phase: 'Pending' }), { phase: 'Stable' }), ApiError);
  });

  it('writes through the status subresource only when the status differs from the live one', async () => {
    const { client, applied } = fakeClient();
    const w = new StatusWriter(client);
    assert.equal(await w.write(app({ phase: 'Stable' }), { phase: 'Stable' }), false);
    assert.equal(await w.write(app({ phase: 'Pending' }), { phase: 'Stable' }), true);
    assert.deepEqual(applied, [{ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'shop', namespace: 'a' }, status: { phase: 'Stable' } }]);
  });

  it('does not write the same status twice while the cache has not caught up with its own write', async () => {
    const { client, applied } = fakeClient();
    const w = new StatusWriter(client);
    const stale = app({ phase: 'Pending' });
    assert.equal(await w.write(stale, { phase: 'Stable' }), true);
    assert.equal(await w.write(stale, { phase: 'Stable' }), false);
    assert.equal(applied.length, 1);
  });

  it('writes again for a new generation, a recreated object, or after forget()', async () => {
    const { client, applied } = fakeClient();
    const w = new StatusWriter(client);
    await w.write(app({ phase: 'Pending' }), { phase: 'Stable' });
    assert.equal(await w.write(app({ phase: 'Pending' }, 2), { phase: 'Stable' }), true, 'new generation');
    assert.equal(await w.write(app({ phase: 'Pending' }, 2, 'u2'), { phase: 'Stable' }), true, 'same name, new object');
    w.forget('a', 'shop');
    assert.equal(await w.write(app({ phase: 'Pending' }, 2, 'u2'), { phase: 'Stable' }), true, 'forgotten');
    assert.equal(applied.length, 4);
  });

  it('neither writes nor compares a condition another writer owns (its own field manager keeps it)', async () => {
    const { client, applied } = fakeClient();
    const w = new StatusWriter(client, { othersConditions: ['ModelCached'] });
    const ready = { type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' };
    const theirs = { type: 'ModelCached', status: 'False', reason: 'ModelCacheRejected', message: 'new', lastTransitionTime: '2026-01-01T00:00:00Z' };
    const live = app({ phase: 'Stable', conditions: [ready, theirs] });
    assert.equal(await w.write(live, { phase: 'Stable', conditions: [ready] }), false, 'the other writer\'s entry is no difference');
    // A stale copy of theirs (read before their last write) is never written back over it.
    assert.equal(await w.write(live, { phase: 'Canary', conditions: [ready, { ...theirs, message: 'stale' }] }), true);
    assert.deepEqual((applied[0] as { status: unknown }).status, { phase: 'Canary', conditions: [ready] });
  });

  describe('coalescing progress', () => {
    const significant = (st: unknown) => (st as { phase?: string }).phase;
    it('writes a significant change at once, and progress at most once per window, saying when to look again', async () => {
      const { client, applied } = fakeClient();
      const clock = new ManualClock();
      const w = new StatusWriter(client, { clock });
      assert.deepEqual(await w.writeCoalesced(app(), { phase: 'Pending', note: 'a' }, significant, 5_000), { wrote: true });
      clock.advance(1_000);
      assert.deepEqual(await w.writeCoalesced(app({ phase: 'Pending', note: 'a' }), { phase: 'Pending', note: 'b' }, significant, 5_000), { wrote: false, retryInMs: 4_000 });
      assert.deepEqual(await w.writeCoalesced(app({ phase: 'Pending', note: 'a' }), { phase: 'Stable', note: 'b' }, significant, 5_000), { wrote: true }, 'significant: at once');
      clock.advance(5_000);
      assert.deepEqual(await w.writeCoalesced(app({ phase: 'Stable', note: 'b' }), { phase: 'Stable', note: 'c' }, significant, 5_000), { wrote: true }, 'the window has passed');
      assert.equal(applied.length, 3);
    });

    it('without a window, writes progress only along with a significant change', async () => {
      const { client, applied } = fakeClient();
      const clock = new ManualClock();
      const w = new StatusWriter(client, { clock });
      assert.deepEqual(await w.writeCoalesced(app(), { phase: 'Pending', note: 'a' }, significant), { wrote: true });
      clock.advance(600_000);
      assert.deepEqual(await w.writeCoalesced(app({ phase: 'Pending', note: 'a' }), { phase: 'Pending', note: 'b' }, significant), { wrote: false });
      assert.deepEqual(await w.writeCoalesced(app({ phase: 'Pending', note: 'a' }), { phase: 'Stable', note: 'c' }, significant), { wrote: true });
      assert.deepEqual(applied.map((a) => (a as { status: { note: string } }).status.note), ['a', 'c']);
    });

    it('writes progress at once for an object it never wrote, and nothing for an unchanged status', async () => {
      const { client } = fakeClient();
      const w = new StatusWriter(client, { clock: new ManualClock() });
      assert.deepEqual(await w.writeCoalesced(app({ phase: 'Pending', note: 'a' }), { phase: 'Pending', note: 'b' }, significant, 5_000), { wrote: true });
      assert.deepEqual(await w.writeCoalesced(app({ phase: 'Pending', note: 'b' }, 2), { phase: 'Pending', note: 'b' }, significant, 5_000), { wrote: false });
    });
  });
});
