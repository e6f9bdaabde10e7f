import assert from 'node:assert/strict';
import { DURATION_PATTERN, DurationError, formatDuration, parseDuration } from './duration.ts';

describe('API durations', () => {
  const valid: [string, number][] = [
    ['500ms', 500],
    ['45s', 45_000],
    ['15m', 900_000],
    ['2h', 7_200_000],
    ['1h30m', 5_400_000],
    ['1h0m0s', 3_600_000],
    ['1m30s250ms', 90_250],
    ['0s', 0],
    ['90m', 5_400_000],
  ];
  for (const [text, ms] of valid) {
    it(`reads ${JSON.stringify(text)} as ${ms} ms`, () => {
      assert.equal(parseDuration(text), ms);
    });
  }

  const invalid: [string, RegExp][] = [
    ['', /empty duration/],
    ['10', /"10" has no unit/],
    ['1h30', /"30" has no unit/],
    ['1x', /unknown unit "x"/],
    ['-5m', /no sign/],
    ['+5m', /no sign/],
    ['1d', /days are not supported/],
    ['1.5h', /fractions are not supported/],
    ['5 m', /unexpected/],
    ['1us', /unknown unit "us"/],
    ['h', /unexpected "h"/],
  ];
  for (const [text, why] of invalid) {
    it(`rejects ${JSON.stringify(text)}, saying what is allowed`, () => {
      assert.throws(() => parseDuration(text), (e: unknown) => {
        assert.ok(e instanceof DurationError);
        assert.match(e.message, why);
        assert.match(e.message, /unit h, m, s or ms, e\.g\. "500ms", "45s", "15m", "1h30m"/);
        return true;
      });
    });
  }

  it('rejects a duration too long to hold in milliseconds', () => {
    assert.throws(() => parseDuration('9999999999999h'), /too long/);
  });

  it('formats durations compactly', () => {
    assert.deepEqual([0, 500, 45_000, 900_000, 5_400_000, 3_600_000, 90_061_001].map(formatDuration),
      ['0s', '500ms', '45s', '15m', '1h30m', '1h', '25h1m1s1ms']);
  });

  it('refuses to format negative or fractional milliseconds', () => {
    assert.throws(() => formatDuration(-1), DurationError);
    assert.throws(() => formatDuration(1.5), DurationError);
  });

  it('reads back what it formats', () => {
    let seed = 7;
    for (let i = 0; i < 500; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const ms = seed * (i % 3 === 0 ? 1000 : 1);
      assert.equal(parseDuration(formatDuration(ms)), ms);
    }
  });

  it('admits exactly what parseDuration accepts (the CRD pattern agrees with the parser)', () => {
    const pattern = new RegExp(DURATION_PATTERN);
    for (const [text] of valid) assert.ok(pattern.test(text), text);
    for (const [text] of invalid) assert.ok(!pattern.test(text), text);
  });
});
