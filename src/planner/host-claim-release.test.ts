import assert from 'node:assert/strict';
import { releaseVerdict, type ClaimUse } from './host-claims.ts';

const HOUR = 3_600_000;
const unused: ClaimUse = { managed: true, watched: true, named: false };

describe('releasing a host no app of its namespace names (releaseVerdict)', () => {
  it('keeps a claim an app of its namespace names, one the platform made, and one of a namespace not watched', () => {
    for (const use of [{ ...unused, named: true }, { ...unused, managed: false }, { ...unused, watched: false }]) {
      assert.deepEqual(releaseVerdict(use, 0, 10 * HOUR, HOUR), { keep: true });
    }
  });

  it('starts the grace when it first sees the host unnamed, and looks again when it ends', () => {
    assert.deepEqual(releaseVerdict(unused, undefined, 5 * HOUR, HOUR), { at: 6 * HOUR, unusedSince: 5 * HOUR });
    assert.deepEqual(releaseVerdict(unused, 5 * HOUR, 5.5 * HOUR, HOUR), { at: 6 * HOUR, unusedSince: 5 * HOUR }, 'an app deleted and re-created within it keeps its host');
  });

  it('releases it once the grace has passed', () => {
    assert.deepEqual(releaseVerdict(unused, 5 * HOUR, 6 * HOUR, HOUR), { release: true });
  });
});
