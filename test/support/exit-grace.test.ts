import assert from 'node:assert/strict';
import { DEFAULT_EXIT_GRACE_MS, exitGraceMs } from './exit-grace.ts';

describe('TEST_EXIT_GRACE_MS', () => {
  it('defaults to a minute and takes whole milliseconds', () => {
    assert.equal(exitGraceMs(undefined), DEFAULT_EXIT_GRACE_MS);
    assert.equal(exitGraceMs('3000'), 3000);
  });

  for (const bad of ['', ' ', 'abc', '1e', '2.5', '-1', '0', '999', '3600001']) {
    it(`refuses ${JSON.stringify(bad)}, naming the variable and the range`, () => {
      assert.throws(() => exitGraceMs(bad), /TEST_EXIT_GRACE_MS=.*whole milliseconds from 1000 to 3600000/);
    });
  }
});
