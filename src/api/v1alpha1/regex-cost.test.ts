import assert from 'node:assert/strict';
import { RE2JS } from 're2js';
import { FOLD_POINTS_PER_INSTRUCTION, re2ProgramSizeBound, UNICODE_CLASS_COST } from './regex-cost.ts';
import { MAX_REGEX_PROGRAM_SIZE, re2Problem } from './validation.ts';

describe('re2ProgramSizeBound', () => {
  // Shapes a tenant might write, and the ones that make RE2 build large programs.
  const regexes = [
    'x', '^beta$', '^(beta|canary)-user-[0-9]+$', 'a{1000}', '[a-z]{100}', '(a|b){1000}',
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

  it('counts a Unicode class by the table RE2JS copies, in brackets or not, repeated or not', () => {
    assert.equal(re2ProgramSizeBound('\\pL'), UNICODE_CLASS_COST + 3);
    assert.equal(re2ProgramSizeBound('\\PL'), UNICODE_CLASS_COST + 3);
    assert.equal(re2ProgramSizeBound('[^\\p{Greek}a]'), UNICODE_CLASS_COST + 4);
    assert.equal(re2ProgramSizeBound('\\pL{1000}'), 1000 * UNICODE_CLASS_COST + 3);
  });

  it('counts the code points case folding visits in a class\'s ranges, only where (?i) is in force', () => {
    const wide = '[\\x{42}-\\x{1e942}]';
    assert.equal(re2ProgramSizeBound(wide), 4);
    assert.ok(re2ProgramSizeBound(`(?i)${wide}`) >= 0x1e900 / FOLD_POINTS_PER_INSTRUCTION);
    assert.ok(re2ProgramSizeBound(`(?i:${wide})`) >= 0x1e900 / FOLD_POINTS_PER_INSTRUCTION);
    assert.equal(re2ProgramSizeBound(`(?i)(?-i)${wide}`), 4);
    assert.equal(re2ProgramSizeBound(`(?i:a)${wide}`), 5);
    assert.equal(re2ProgramSizeBound('(?i)[\\x00-\\x{10FFFF}]'), 4, 'a range over every foldable code point is copied whole');
    assert.ok(re2ProgramSizeBound('(?i)^[a-z0-9-]+$') < 12, 'a header regex of every day stays cheap');
  });

  it('admits no app whose regexes take RE2JS long to build (the worst shapes under the budget, in well under 100 ms)', () => {
    // Each fills the app's budget with one shape, 4 regexes of 1 KiB at most (the CRD's 4096 characters).
    const fill = (unit: string, prefix = '') => {
      let r = prefix;
      while (re2ProgramSizeBound(r + unit) <= MAX_REGEX_PROGRAM_SIZE / 4 && (r + unit).length <= 1000) r += unit;
      return r;
    };
    const shapes = [['a'], ['\\pL'], ['\\pL', '(?i)'], ['[^\\pL]', '(?i)'], ['[\\x{42}-\\x{2000}]', '(?i)'], ['\\p{Lu}', '(?i)'], ['a{1000}']] as const;
    const compileMs = (unit: string, prefix: string | undefined) => {
      const salt = Math.random().toString(36).slice(2);
      const regexes = Array.from({ length: 4 }, (_, i) => `${fill(unit, prefix)}${salt}${i}`);
      // CPU time, not wall time: the work the compile costs the event loop, not the wait for a busy
      // machine's cores (wall time read 193 ms for 40 ms of work at load 7 on 2 cores).
      const t0 = process.cpuUsage();
      for (const r of regexes) assert.equal(re2Problem(r), undefined);
      const { user, system } = process.cpuUsage(t0);
      return (user + system) / 1000;
    };
    for (const [unit, prefix] of shapes) {
      // The least of three fresh compiles: a garbage collection on another test's behalf is not this one's cost.
      const ms = Math.min(compileMs(unit, prefix), compileMs(unit, prefix), compileMs(unit, prefix));
      // Measured 1-45 ms on the 2-core test machine at load 5; 100 ms is one app's share of the event loop.
      assert.ok(ms < 100, `${prefix ?? ''}${unit} filling the budget took ${ms.toFixed(0)} ms`);
    }
  });

  it('multiplies nested counted repetitions, as RE2 copies them', () => {
    assert.ok(re2ProgramSizeBound('((((a{10}){10}){10}){10})') > 10_000);
  });

  it('never throws on text that is not valid RE2', () => {
    for (const s of ['(', ')', '[', '\\', 'a{', '(?P<x', '\\p{', '(?i', 'a**']) assert.equal(typeof re2ProgramSizeBound(s), 'number');
  });
});
