import assert from 'node:assert/strict';
import { ApiError, type KubeClient } from './client.ts';
import { StaleRead, StatusWriter } from './status.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';

function fakeClient() {
  const applied: unknown[] = [];
  return { applied, client: { apply: async (obj: unknown) => { applied.push(obj); return obj; } } as unknown as KubeClient };
}

const app = (status?: object) =>
  ({ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'shop', namespace: 'a', uid: 'u1', generation: 1 }, ...(status ? { status } : {}) });

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

  /**
   * An API server's status subresource for one object: a write that changes the status makes a new
   * resourceVersion; one bound to another version than the current is refused with 409, as the real
   * one refuses an apply whose metadata.resourceVersion is not the stored object's.
   */
  function apiServer() {
    let version = 1;
    let stored: unknown;
    const applied: Array<{ metadata: { resourceVersion?: string }; status: unknown }> = [];
    const client = {
      apply: async (obj: { metadata: { resourceVersion?: string }; status: unknown }) => {
        if (obj.metadata.resourceVersion !== undefined && obj.metadata.resourceVersion !== String(version)) {
          throw new ApiError(409, 'Operation cannot be fulfilled on serverlessapps.serverlessapp.io "shop": the object has been modified; please apply your changes to the latest version and try again', 'Conflict');
        }
        applied.push(obj);
        if (JSON.stringify(obj.status) !== JSON.stringify(stored)) version++;
        stored = obj.status;
        return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(version) } };
      },
    } as unknown as KubeClient;
    return { client, applied, read: (status?: object) => ({ ...app(status), metadata: { ...app().metadata, resourceVersion: String(version) } }) };
  }
  const transition = (at: string) => ({ phase: 'Canary', conditions: [{ type: 'Ready', status: 'True', reason: 'Serving', message: '', lastTransitionTime: at }] });

  it('binds the write to the read it was planned from: a plan from a read the server has moved past is refused (StaleRead), not written', async () => {
    const server = apiServer();
    const w = new StatusWriter(server.client);
    // The cache has not yet seen the first write: the re-run reads the same object and plans the transition again, a second later.
    const stale = server.read({ phase: 'Pending' });
    assert.equal(await w.write(stale, transition('2026-11-23T07:00:00Z')), true);
    await assert.rejects(w.write(stale, transition('2026-11-23T07:00:01Z')), (e: unknown) => e instanceof StaleRead && e.cause instanceof ApiError && e.cause.code === 409);
    assert.deepEqual(server.applied.map((a) => [a.metadata.resourceVersion, (a.status as { conditions: Array<{ lastTransitionTime: string }> }).conditions[0]!.lastTransitionTime]), [['1', '2026-11-23T07:00:00Z']]);
    assert.equal(w.behind(stale), true, 'a read a write was refused over is outdated');
    // Planned again from the fresh object, it is written over that one.
    assert.equal(await w.write(server.read(transition('2026-11-23T07:00:00Z')), { ...transition('2026-11-23T07:00:00Z'), phase: 'Stable' }), true);
    assert.equal(server.applied.at(-1)?.metadata.resourceVersion, '2');
  });

  it('says when the cache still shows a read the server has moved past (behind), until it shows a newer version', async () => {
    const server = apiServer();
    const w = new StatusWriter(server.client);
    const stale = server.read({ phase: 'Pending' });
    assert.equal(w.behind(stale), false, 'nothing written yet');
    await w.write(stale, { phase: 'Stable' });
    assert.equal(w.behind(stale), true, 'the read the write replaced');
    assert.equal(w.behind(server.read({ phase: 'Stable' })), false, 'the version the write made');
    w.forget('a', 'shop');
    assert.equal(w.behind(stale), false, 'forgotten');
  });

  it('is not behind after a write whose version it cannot tell (a client that returns no resourceVersion)', async () => {
    const { client } = fakeClient();
    const w = new StatusWriter(client);
    const read = { ...app({ phase: 'Pending' }), metadata: { ...app().metadata, resourceVersion: '7' } };
    assert.equal(await w.write(read, { phase: 'Stable' }), true);
    assert.equal(w.behind(read), false);
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
      assert.deepEqual(await w.writeCoalesced(app({ phase: 'Pending', note: 'b' }), { phase: 'Pending', note: 'b' }, significant, 5_000), { wrote: false });
    });
  });
});
