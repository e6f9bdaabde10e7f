// What compiling a regular expression would cost, read from its text without
// compiling it. RE2 compiles a counted repetition by copying its operand
// (`\pL{1000}` is a thousand instructions), so a 1 KiB regex can become a
// program of a hundred thousand instructions that takes seconds to build,
// and Envoy (under Istio: re2.max_program_size.error_level 32768) refuses it.
// The bound follows RE2's own size estimate (Go's regexp/syntax checkSize):
// a literal rune or a class is one instruction, x* and a group add two, x+
// and x? one, x{n,m} is m copies of x plus m-n.
//
// A class is one instruction in the program but not in the work of building
// it: RE2JS copies a Unicode class's table (\pL: about 0.5 ms, some 170 times
// a literal), and under (?i) it folds a class's ranges code point by code point
// ((?i)[\x{42}-\x{1e942}]: about 3.7 ms). So a class counts what RE2JS builds:
// UNICODE_CLASS_COST for each Unicode table it names, and under case folding
// one more per FOLD_POINTS_PER_INSTRUCTION code points its ranges span.

/** A Unicode class (\pL, \p{Greek}, \PN, in brackets or not), folded or not: \pL, the largest, costs RE2JS 0.5 ms, as much as ~170 literals. */
export const UNICODE_CLASS_COST = 256;
/** Under (?i), RE2JS folds a range one code point at a time (about 30 ns each, a literal about 3 µs). */
export const FOLD_POINTS_PER_INSTRUCTION = 32;
/** The code points case folding looks at (Go's regexp/syntax minFold, maxFold); a range covering all of them is copied whole. */
const MIN_FOLD = 0x41;
const MAX_FOLD = 0x1e943;

interface Frame {
  /** Sizes of the alternatives finished so far, and how many. */
  alternatives: number;
  count: number;
  /** The alternative being read, and its last operand (what a quantifier repeats). */
  current: number;
  last: number;
  capture: boolean;
  /** Case folding, (?i), in force in this group. */
  fold: boolean;
}

const COUNTED = /^\{(\d+)(,(\d*))?\}/;

/** An upper bound of the RE2 program size of `regex` (instructions); meaningful for valid RE2, never throws. */
export function re2ProgramSizeBound(regex: string): number {
  const stack: Frame[] = [frame(false, false)];
  const top = () => stack[stack.length - 1]!;
  const operand = (size: number) => {
    top().current += size;
    top().last = size;
  };
  const repeat = (size: number) => {
    const f = top();
    f.current += size - f.last;
    f.last = size;
  };
  let i = 0;
  while (i < regex.length) {
    const c = regex[i]!;
    if (c === '\\') {
      const e = regex[i + 1];
      if (e === 'Q') {
        const end = regex.indexOf('\\E', i + 2);
        const text = end < 0 ? regex.slice(i + 2) : regex.slice(i + 2, end);
        for (let k = 0; k < text.length; k++) operand(1);
        i = end < 0 ? regex.length : end + 2;
        continue;
      }
      i += 2;
      if ((e === 'p' || e === 'P' || e === 'x') && regex[i] === '{') i = closing(regex, i, '}');
      else if (e === 'p' || e === 'P') i += 1;
      operand(e === 'p' || e === 'P' ? UNICODE_CLASS_COST : 1);
    } else if (c === '[') {
      const end = classEnd(regex, i);
      operand(1 + classWork(regex.slice(i, end), top().fold));
      i = end;
    } else if (c === '(') {
      if (regex[i + 1] === '?') {
        const named = regex[i + 2] === 'P' || regex[i + 2] === '<';
        if (named) {
          i = closing(regex, i, '>');
          stack.push(frame(true, top().fold));
          continue;
        }
        // (?flags) sets flags and is no operand; (?flags:...) is a group that captures nothing.
        let j = i + 2;
        while (j < regex.length && regex[j] !== ')' && regex[j] !== ':') j++;
        const fold = foldAfter(regex.slice(i + 2, j), top().fold);
        i = j + 1;
        if (regex[j] === ':') stack.push(frame(false, fold));
        else top().fold = fold;
        continue;
      }
      i += 1;
      stack.push(frame(true, top().fold));
    } else if (c === ')') {
      i += 1;
      if (stack.length > 1) {
        const f = stack.pop()!;
        operand(size(f) + (f.capture ? 2 : 0));
      }
    } else if (c === '|') {
      i += 1;
      const f = top();
      f.alternatives += f.current;
      f.count += 1;
      f.current = 0;
      f.last = 0;
    } else if (c === '*') {
      i += 1;
      repeat(2 + top().last);
    } else if (c === '+' || c === '?') {
      i += 1;
      repeat(1 + top().last);
    } else if (c === '{' && COUNTED.test(regex.slice(i, i + 24))) {
      const m = COUNTED.exec(regex.slice(i, i + 24))!;
      i += m[0].length;
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === '' ? -1 : Number(m[3]);
      const sub = top().last;
      repeat(max === -1 ? (min === 0 ? 2 + sub : 1 + min * sub) : max * sub + Math.max(0, max - min));
    } else {
      i += 1;
      operand(1);
    }
  }
  while (stack.length > 1) {
    const f = stack.pop()!;
    operand(size(f) + (f.capture ? 2 : 0));
  }
  // The whole match is a capture, and the program ends with a match instruction.
  return size(stack[0]!) + 3;
}

function frame(capture: boolean, fold: boolean): Frame {
  return { alternatives: 0, count: 0, current: 0, last: 0, capture, fold };
}

/** Whether flags such as "i", "is-m" or "-i" leave case folding on. */
function foldAfter(flags: string, fold: boolean): boolean {
  const [on = '', off = ''] = flags.split('-');
  return off.includes('i') ? false : on.includes('i') ? true : fold;
}

/**
 * The work of building a bracket class beyond its one instruction: its Unicode tables, and under
 * folding the code points its ranges span. An endpoint this cannot read counts as the widest.
 */
function classWork(text: string, fold: boolean): number {
  let work = 0;
  let j = text[1] === '^' ? 2 : 1;
  const end = text.endsWith(']') ? text.length - 1 : text.length;
  let previous: number | undefined;
  while (j < end) {
    if (text[j] === '[' && text[j + 1] === ':') {
      j = closing(text, j, ']');
      previous = undefined;
      continue;
    }
    if (text[j] === '\\' && (text[j + 1] === 'p' || text[j + 1] === 'P')) {
      work += UNICODE_CLASS_COST;
      j += 2;
      j = text[j] === '{' ? closing(text, j, '}') : j + 1;
      previous = undefined;
      continue;
    }
    if (text[j] === '-' && previous !== undefined && j + 1 < end) {
      const hi = classChar(text, j + 1);
      if (fold) work += Math.ceil(foldedSpan(previous, hi.value ?? MAX_FOLD - 1) / FOLD_POINTS_PER_INSTRUCTION);
      j = hi.next;
      previous = undefined;
      continue;
    }
    const item = classChar(text, j);
    previous = item.value ?? (fold ? MIN_FOLD + 1 : undefined);
    j = item.next;
  }
  return work;
}

/** The code points of lo-hi that case folding visits one by one: none when the range covers every foldable one. */
function foldedSpan(lo: number, hi: number): number {
  if (lo <= MIN_FOLD && hi >= MAX_FOLD) return 0;
  return Math.max(0, Math.min(hi, MAX_FOLD) - Math.max(lo, MIN_FOLD) + 1);
}

/** One character of a class at `j`: its code point when it is a plain rune or \x escape (undefined for other escapes), and the index after it. */
function classChar(text: string, j: number): { value?: number; next: number } {
  if (text[j] !== '\\') {
    const cp = text.codePointAt(j)!;
    return { value: cp, next: j + (cp > 0xffff ? 2 : 1) };
  }
  const e = text[j + 1];
  if (e === 'x') {
    if (text[j + 2] === '{') {
      const close = closing(text, j + 2, '}');
      const value = parseInt(text.slice(j + 3, close - 1), 16);
      return { ...(Number.isFinite(value) ? { value } : {}), next: close };
    }
    const value = parseInt(text.slice(j + 2, j + 4), 16);
    return { ...(Number.isFinite(value) ? { value } : {}), next: j + 4 };
  }
  if (e !== undefined && /[^0-9A-Za-z]/.test(e)) return { value: e.codePointAt(0)!, next: j + 2 };
  return { next: j + 2 };
}

function size(f: Frame): number {
  return f.alternatives + f.current + f.count;
}

/** The index after the next `close` from `from`, or the end. */
function closing(regex: string, from: number, close: string): number {
  const end = regex.indexOf(close, from);
  return end < 0 ? regex.length : end + 1;
}

/** The index after a character class starting at `from` ("[...]", with "[]...]", "[^]...]", escapes and "[:alpha:]"). */
function classEnd(regex: string, from: number): number {
  let j = from + 1;
  if (regex[j] === '^') j++;
  if (regex[j] === ']') j++;
  while (j < regex.length && regex[j] !== ']') {
    if (regex[j] === '\\') {
      const e = regex[j + 1];
      j += 2;
      if ((e === 'p' || e === 'P' || e === 'x') && regex[j] === '{') j = closing(regex, j, '}');
      else if (e === 'p' || e === 'P') j += 1;
    } else if (regex[j] === '[' && regex[j + 1] === ':') {
      j = closing(regex, j, ']');
    } else {
      j++;
    }
  }
  return j + 1;
}
