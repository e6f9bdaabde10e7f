import assert from 'node:assert/strict';
import { RE2JS } from 're2js';
import { re2ProgramSizeBound } from './regex-cost.ts';

describe('re2ProgramSizeBound', () => {
  // Shapes a tenant might write, and the ones that make RE2 build large programs.
  const regexes = [
    'x', '^beta$', '^(beta|canary)-user-[0-9]+$', 'a{1000}', '\\pL{1000}', '\\p{Greek}{500}', '[a-z]{100}', '(a|b){1000}',
    '((a{10}){10}){10}', '(?i)abc{3,7}', '(?:ab)*c+d?', '(?P<user>[^/]+)/x{2,}', '\\Qa.b{1000}\\E', '[]a]{20}', '[[:alpha:]\\]]{30}',
    'x{0}', 'a{2,}', '.*', '(a)(b)(c)|d|e', '\\x{41}{50}', '\\d{3}-\\d{4}',
  ];
  for (const regex of regexes) {
    it(`is at least the size RE2 compiles ${JSON.stringify(regex)} to`, () => {
      const actual = RE2JS.compile(regex).programSize();
      const bound = re2ProgramSizeBound(regex);
      assert.ok(bound >= actual, `bound ${bound} < program size ${actual}`);
      assert.ok(bound <= actual * 2 + 8, `bound ${bound} is far above the program size ${actual}`);
    });
  }

  it('multiplies nested counted repetitions, as RE2 copies them', () => {
    assert.ok(re2ProgramSizeBound('((((a{10}){10}){10}){10})') > 10_000);
  });

  it('never throws on text that is not valid RE2', () => {
    for (const s of ['(', ')', '[', '\\', 'a{', '(?P<x', '\\p{', '(?i', 'a**']) assert.equal(typeof re2ProgramSizeBound(s), 'number');
  });
});
