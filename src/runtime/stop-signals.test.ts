import assert from 'node:assert/strict';
import { createLogger } from './logging.ts';
import { SAME_KEYPRESS_MS, stopSignalHandler } from './stop-signals.ts';

describe('stop signals (SIGINT, SIGTERM)', () => {
  function handler() {
    let now = 0;
    const exits: number[] = [];
    let stops = 0;
    let finish: () => void = () => undefined;
    const on = stopSignalHandler({
      logger: createLogger({ level: 'error', write: () => undefined }), clock: { now: () => new Date(now) },
      stop: () => { stops++; return new Promise<void>((resolve) => { finish = resolve; }); },
      exit: (code) => { exits.push(code); },
    });
    return { on, exits, stops: () => stops, at: (ms: number) => { now = ms; }, finish: () => finish() };
  }

  it('one Ctrl-C (the terminal\'s SIGINT and npm\'s forwarded one, moments apart) stops gracefully once and exits 0', async () => {
    const h = handler();
    h.on('SIGINT');
    h.at(5);
    h.on('SIGINT');
    assert.equal(h.stops(), 1);
    assert.deepEqual(h.exits, [], 'the second SIGINT of the same keypress forces nothing');
    h.finish();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(h.exits, [0]);
  });

  it('a second Ctrl-C later exits at once with 1, without waiting for the graceful stop', () => {
    const h = handler();
    h.on('SIGINT');
    h.at(SAME_KEYPRESS_MS + 1);
    h.on('SIGINT');
    assert.deepEqual(h.exits, [1]);
  });
});
