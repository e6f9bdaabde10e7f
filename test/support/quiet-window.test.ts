import assert from 'node:assert/strict';
import { assertQuietWindow } from './quiet-window.ts';

describe('assertQuietWindow', () => {
  it('passes when nothing changed in the window and the control shows', async () => {
    let count = 0;
    await assertQuietWindow({ what: 'a count moved', windowMs: 20, observe: () => count, control: () => { count++; } });
  });

  it('fails when the observation changed within the window', async () => {
    let count = 0;
    const timer = setTimeout(() => count++, 5);
    await assert.rejects(assertQuietWindow({ what: 'a count moved', windowMs: 30, observe: () => count, control: () => { count++; } }), /within 30 ms: a count moved/);
    clearTimeout(timer);
  });

  it('fails when the control does not show either: the window watched something that could not change', async () => {
    await assert.rejects(
      assertQuietWindow({ what: 'a count moved', windowMs: 10, observe: () => 0, control: () => {}, controlTimeoutMs: 100 }),
      /the window could not have seen it: after the control, still no change within 100 ms/,
    );
  });

  it('with an expected observation, fails when the window started from another one (something had already happened)', async () => {
    await assert.rejects(
      assertQuietWindow({ what: 'a write', windowMs: 10, observe: () => ['create configmaps a'], expect: [], control: () => {} }),
      /before the window of 10 ms: a write/,
    );
  });

  it('waits for the control to show as it says, not for any change', async () => {
    const seen: string[] = [];
    await assert.rejects(
      assertQuietWindow({ what: 'a write', windowMs: 10, observe: () => [...seen], expect: [], control: () => { seen.push('other'); }, controlShows: (o) => o.includes('marker'), controlTimeoutMs: 100 }),
      /the window could not have seen it/,
    );
    await assertQuietWindow({ what: 'a write', windowMs: 10, observe: () => [...seen], expect: ['other'], control: () => { seen.push('marker'); }, controlShows: (o) => o.includes('marker') });
  });

  it('a control whose observation throws is not taken for a change', async () => {
    let calls = 0;
    await assert.rejects(
      assertQuietWindow({ what: 'a count moved', windowMs: 10, observe: () => { if (++calls > 2) throw new Error('unreadable'); return 0; }, control: () => {}, controlTimeoutMs: 100 }),
      /the window could not have seen it/,
    );
  });
});
