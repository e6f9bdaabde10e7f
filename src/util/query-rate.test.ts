import assert from 'node:assert/strict';
import { QueryRates } from './query-rate.ts';

describe('QueryRates (a token bucket per namespace)', () => {
  it('lets a burst through, then one namespace waits at its rate while another does not', () => {
    const rates = new QueryRates({ perSecond: 10, burst: 20 });
    assert.equal(rates.take('a', 12, 0), 0);
    assert.equal(rates.take('a', 8, 0), 0);
    assert.equal(rates.take('a', 4, 0), 400, 'empty: 4 tokens take 400 ms at 10/s');
    assert.equal(rates.take('b', 4, 0), 0, 'another namespace has its own bucket');
    assert.equal(rates.take('a', 4, 400), 0, 'refilled by then');
  });

  it('bounds what a namespace sends to its rate over a long run, whatever it asks for', () => {
    const rates = new QueryRates({ perSecond: 5, burst: 10 });
    let sent = 0;
    // A round of 4 queries every 100 ms for 60 s: 40 asked per second, 5 allowed.
    for (let t = 0; t < 60_000; t += 100) if (rates.take('a', 4, t) === 0) sent += 4;
    assert.ok(sent <= 10 + 5 * 60, `${sent} queries in 60 s`);
    assert.ok(sent >= 5 * 60 - 4, `${sent} queries in 60 s: the rate is used, not starved`);
  });

  it('a round costing more than the burst waits for a full bucket, then goes, charged in full', () => {
    const rates = new QueryRates({ perSecond: 1, burst: 4 });
    assert.equal(rates.take('a', 4, 0), 0);
    assert.equal(rates.take('a', 9, 0), 4_000);
    assert.equal(rates.take('a', 9, 4_000), 0);
    assert.equal(rates.take('a', 1, 4_000), 6_000, 'the 5 queries past the burst are paid back before the next round');
    let sent = 0;
    for (let t = 0; t < 600_000; t += 100) if (rates.take('b', 32, t) === 0) sent += 32;
    assert.ok(sent <= 4 + 32 + 600, `rounds of 32 queries held to 1 a second over 10 minutes: ${sent}`);
  });

  it('forgets a namespace whose bucket is full again', () => {
    const rates = new QueryRates({ perSecond: 10, burst: 10 });
    rates.take('a', 5, 0);
    assert.equal(rates.size, 1);
    rates.take('a', 0, 10_000);
    assert.equal(rates.size, 0);
  });
});
