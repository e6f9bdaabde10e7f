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
});
