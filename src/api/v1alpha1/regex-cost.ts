// What compiling a regular expression would cost, read from its text without
// compiling it. RE2 compiles a counted repetition by copying its operand
// (`\pL{1000}` is a thousand instructions), so a 1 KiB regex can become a
// program of a hundred thousand instructions that takes seconds to build,
// and Envoy (under Istio: re2.max_program_size.error_level 32768) refuses it.
// The bound follows RE2's own size estimate (Go's regexp/syntax checkSize):
// a literal rune or a class is one instruction, x* and a group add two, x+
// and x? one, x{n,m} is m copies of x plus m-n.

interface Frame {
  /** Sizes of the alternatives finished so far, and how many. */
  alternatives: number;
  count: number;
  /** The alternative being read, and its last operand (what a quantifier repeats). */
  current: number;
  last: number;
  capture: boolean;
}

const COUNTED = /^\{(\d+)(,(\d*))?\}/;

/** An upper bound of the RE2 program size of `regex` (instructions); meaningful for valid RE2, never throws. */
export function re2ProgramSizeBound(regex: string): number {
  const stack: Frame[] = [frame(false)];
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
      operand(1);
    } else if (c === '[') {
      i = classEnd(regex, i);
      operand(1);
    } else if (c === '(') {
      if (regex[i + 1] === '?') {
        const named = regex[i + 2] === 'P' || regex[i + 2] === '<';
        if (named) {
          i = closing(regex, i, '>');
          stack.push(frame(true));
          continue;
        }
        // (?flags) sets flags and is no operand; (?flags:...) is a group that captures nothing.
        let j = i + 2;
        while (j < regex.length && regex[j] !== ')' && regex[j] !== ':') j++;
        i = j + 1;
        if (regex[j] === ':') stack.push(frame(false));
        continue;
      }
      i += 1;
      stack.push(frame(true));
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

function frame(capture: boolean): Frame {
  return { alternatives: 0, count: 0, current: 0, last: 0, capture };
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
