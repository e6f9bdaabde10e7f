// The noisy namespace must load the operator's hot paths, not its refusal path:
// its worst-case app is admitted by the default policy and fills the regex budget.
import assert from 'node:assert/strict';
import { re2ProgramSizeBound } from '../src/api/v1alpha1/regex-cost.ts';
import { MAX_REGEX_PROGRAM_SIZE, validateApp } from '../src/api/v1alpha1/validation.ts';
import { parseConfig, validationPolicy } from '../src/config.ts';
import { worstCaseApp } from './noisy-neighbour.ts';

describe('noisy-neighbour benchmark: the worst-case app', () => {
  const policy = validationPolicy(parseConfig([], {}));
  for (const round of [0, 1, 2, 3, 4]) {
    it(`round ${round}: the operator admits it, and its 16 regexes use at least 90% of the RE2 budget`, () => {
      const app = worstCaseApp({ namespace: 'noisy', name: 'n-0' } as Parameters<typeof worstCaseApp>[0], round);
      assert.deepEqual(validateApp(app, policy), []);
      const regexes = (app.spec.rollout?.match ?? []).map((m) => m.regex).filter((r): r is string => !!r);
      assert.equal(regexes.length, 16);
      const cost = regexes.reduce((sum, r) => sum + re2ProgramSizeBound(r), 0);
      assert.ok(cost >= 0.9 * MAX_REGEX_PROGRAM_SIZE && cost <= MAX_REGEX_PROGRAM_SIZE, `RE2 cost ${cost} of ${MAX_REGEX_PROGRAM_SIZE}`);
    });
  }
});
