// The storms must cost what they claim: an expensive edit is admitted (so it reaches validation and the hot
// paths) and shares no regex and no window zone with the round before; a refused model app is refused.
import assert from 'node:assert/strict';
import { validateApp } from '../src/api/v1alpha1/validation.ts';
import { parseConfig, validationPolicy } from '../src/config.ts';
import { expensiveApp, refusedModelApp } from './storms.ts';

describe('noisy-neighbour storms', () => {
  const policy = validationPolicy(parseConfig([], {}));
  const ref = { namespace: 'noisy', name: 'costly-0' };

  it('an expensive edit is admitted, with 16 regexes and 16 windows no earlier round used', () => {
    const [a, b] = [expensiveApp(ref, 1), expensiveApp(ref, 2)];
    assert.deepEqual(validateApp(a, policy), []);
    const regexes = (x: typeof a) => new Set((x.spec.rollout?.match ?? []).map((m) => m.regex));
    const zones = (x: typeof a) => new Set((x.spec.scaling?.windows ?? []).map((w) => w.timeZone));
    assert.equal(regexes(a).size, 16);
    assert.equal(zones(a).size, 16);
    assert.equal([...regexes(b)].filter((r) => regexes(a).has(r)).length, 0);
    assert.equal([...zones(b)].filter((z) => zones(a).has(z)).length, 0);
  });

  it('a refused model app is refused by the operator (ServiceAccountNotAllowed)', () => {
    assert.deepEqual(validateApp(refusedModelApp({ namespace: 'noisy', name: 'refused-0' }, 3), policy).map((p) => p.reason), ['ServiceAccountNotAllowed']);
  });
});
