import assert from 'node:assert/strict';
import { burnRate, errorRatioOf, freezeFloor, freezeFloorFor, gateWindows, judgeBurn, remainingBudget, type Slo } from './slo.ts';

const slo: Slo = { objective: 99.9, errorRatio: 'x[{{window}}]' };

describe('SLO arithmetic (the SRE workbook\'s)', () => {
  const burns: Array<[number, number, number]> = [
    // error ratio, objective, burn rate
    [0.001, 99.9, 1], [0.0144, 99.9, 14.4], [0.006, 99.9, 6], [0, 99.9, 0], [0.01, 99, 1], [0.5, 50, 1],
  ];
  for (const [ratio, objective, want] of burns) {
    it(`an error ratio of ${ratio} burns a ${objective}% budget at ${want}x`, () => assert.ok(Math.abs(burnRate(ratio, objective) - want) < 1e-9));
  }

  it('reads the workbook\'s windows by default, each once', () => {
    assert.deepEqual(gateWindows(slo), ['5m', '1h', '30m', '6h']);
    assert.deepEqual(gateWindows({ ...slo, burnRates: [{ long: '1h', short: '5m', factor: 10 }, { long: '6h', short: '1h', factor: 3 }] }), ['5m', '1h', '6h']);
  });

  const verdicts: Array<[string, Record<string, number>, string | undefined]> = [
    ['both windows of the first pair above 14.4x', { '5m': 0.02, '1h': 0.015, '30m': 0, '6h': 0 }, '1h/5m'],
    ['the long window only: a burn that ended', { '5m': 0.001, '1h': 0.02, '30m': 0.001, '6h': 0.001 }, undefined],
    ['the short window only: a spike', { '5m': 0.5, '1h': 0.005, '30m': 0.005, '6h': 0.002 }, undefined],
    ['both windows of the second pair above 6x', { '5m': 0.007, '1h': 0.007, '30m': 0.007, '6h': 0.0065 }, '6h/30m'],
    ['exactly at the factor does not fire', { '5m': 0.0144, '1h': 0.0144, '30m': 0.006, '6h': 0.006 }, undefined],
  ];
  for (const [name, ratios, want] of verdicts) {
    it(`judges ${name}`, () => {
      const { fired } = judgeBurn(slo, new Map(Object.entries(ratios)));
      assert.equal(fired && `${fired.pair.long}/${fired.pair.short}`, want);
    });
  }

  it('counts the budget left over the window, negative once overspent', () => {
    assert.equal(Math.round(remainingBudget(0.0009, 99.9)), 10);
    assert.equal(Math.round(remainingBudget(0, 99.9)), 100);
    assert.equal(Math.round(remainingBudget(0.002, 99.9)), -100);
  });

  it('takes an error ratio from good and total, no requests being no data', () => {
    assert.equal(errorRatioOf(999, 1000)?.toFixed(3), '0.001');
    assert.equal(errorRatioOf(0, 0), undefined);
    assert.equal(errorRatioOf(1001, 1000), 0, 'counts that disagree are clamped, not negative');
  });

  it('holds the higher floor: a tenant raises the platform\'s, never lowers it; no SLO, no freeze', () => {
    assert.equal(freezeFloor({ ...slo, freezeBelow: 10 }, 25), 25);
    assert.equal(freezeFloor({ ...slo, freezeBelow: 40 }, 25), 40);
    assert.equal(freezeFloor(slo, undefined), 0);
    assert.equal(freezeFloor(undefined, 50), 0);
    assert.equal(freezeFloorFor({ payments: 50, '*': 10 }, 'payments'), 50);
    assert.equal(freezeFloorFor({ payments: 50, '*': 10 }, 'shop'), 10);
    assert.equal(freezeFloorFor({ payments: 50 }, 'shop'), 0);
    assert.equal(freezeFloorFor({ payments: 0, '*': 10 }, 'payments'), 0, 'a namespace\'s own entry wins, even 0');
  });
});
