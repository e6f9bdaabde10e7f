import assert from 'node:assert/strict';
import { ConfigError, parseConfig, usage } from './config.ts';

describe('operator flags', () => {
  it('leaves the watch watchdog to the informer unless --watch-watchdog is given', () => {
    assert.equal(parseConfig([], {}).watchWatchdogMs, undefined);
  });

  it('reads --watch-watchdog as a duration', () => {
    assert.equal(parseConfig(['--watch-watchdog', '5s'], {}).watchWatchdogMs, 5_000);
    assert.equal(parseConfig(['--watch-watchdog=1m30s'], {}).watchWatchdogMs, 90_000);
  });

  it('refuses a watchdog the server-side watch timeout could not fit inside', () => {
    assert.throws(() => parseConfig(['--watch-watchdog', '2s'], {}), (e: unknown) => e instanceof ConfigError && /shorter than 3s/.test(e.message));
  });

  it('names the flag when the duration does not parse', () => {
    assert.throws(() => parseConfig(['--watch-watchdog', '5'], {}), (e: unknown) => e instanceof ConfigError && /^--watch-watchdog: .*has no unit/.test(e.message));
  });

  it('documents --watch-watchdog as a flag without an environment variable', () => {
    const line = usage().split('\n').find((l) => l.includes('--watch-watchdog'));
    assert.ok(line, 'listed in the usage');
    assert.doesNotMatch(line, /\[\$/);
  });
});
