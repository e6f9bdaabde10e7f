// Strings that match a schema `pattern`, for the schema-driven fuzzer: the CRD's
// patterns are written once (src/api/v1alpha1) and the fuzzer samples them
// instead of keeping a hand-made list of valid values beside them. Covers the
// regular-expression subset the CRD uses (anchors, groups, alternation, classes
// with ranges and negation, \s \d \w escapes, ?, *, +, {n}, {n,}, {n,m}); a
// pattern outside it throws, so a new construct is noticed, not skipped.

export type Random = () => number;

/** A small seeded generator (mulberry32): the same seed gives the same cases. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Node =
  | { t: 'alt'; options: Node[][] }
  | { t: 'set'; chars: string[] }
  | { t: 'repeat'; node: Node; min: number; max: number };

const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));
const CLASS_ESCAPES: Record<string, string[]> = {
  s: [' ', '\t', '\n', '\r', '\f', '\v'],
  d: '0123456789'.split(''),
  w: [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_'],
};

function parse(pattern: string): Node[] {
  let i = 0;
  const fail = (why: string): never => { throw new Error(`regex-sample: ${why} at ${i} in ${JSON.stringify(pattern)}`); };
  const escapeChars = (c: string): string[] => CLASS_ESCAPES[c] ?? (/[A-Za-z0-9]/.test(c) ? fail(`unsupported escape \\${c}`) : [c]);

  function parseClass(): Node {
    i++; // [
    const negate = pattern[i] === '^';
    if (negate) i++;
    const chars = new Set<string>();
    let first = true;
    while (i < pattern.length && (pattern[i] !== ']' || first)) {
      first = false;
      let c = pattern[i++]!;
      let set: string[] | undefined;
      if (c === '\\') {
        set = escapeChars(pattern[i++]!);
        if (set.length === 1) c = set[0]!, set = undefined;
      }
      if (set) { set.forEach((x) => chars.add(x)); continue; }
      if (pattern[i] === '-' && pattern[i + 1] !== ']' && i + 1 < pattern.length) {
        i++;
        let end = pattern[i++]!;
        if (end === '\\') end = pattern[i++]!;
        for (let code = c.charCodeAt(0); code <= end.charCodeAt(0); code++) chars.add(String.fromCharCode(code));
      } else {
        chars.add(c);
      }
    }
    if (pattern[i] !== ']') fail('unterminated class');
    i++;
    return { t: 'set', chars: negate ? PRINTABLE.filter((c) => !chars.has(c)) : [...chars] };
  }

  function parseAtom(): Node {
    const c = pattern[i]!;
    if (c === '(') {
      i++;
      if (pattern.startsWith('?:', i)) i += 2;
      else if (pattern[i] === '?') fail('unsupported group');
      const inner = parseAlt();
      if (pattern[i] !== ')') fail('unterminated group');
      i++;
      return inner;
    }
    if (c === '[') return parseClass();
    if (c === '.') { i++; return { t: 'set', chars: PRINTABLE }; }
    if (c === '\\') { i += 2; return { t: 'set', chars: escapeChars(pattern[i - 1]!) }; }
    i++;
    return { t: 'set', chars: [c] };
  }

  function parseQuantified(): Node {
    const atom = parseAtom();
    const q = pattern[i];
    if (q === '?') { i++; return { t: 'repeat', node: atom, min: 0, max: 1 }; }
    if (q === '*') { i++; return { t: 'repeat', node: atom, min: 0, max: Infinity }; }
    if (q === '+') { i++; return { t: 'repeat', node: atom, min: 1, max: Infinity }; }
    if (q === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i)) ?? fail('bad repeat');
      i += m[0].length;
      const min = Number(m[1]);
      return { t: 'repeat', node: atom, min, max: m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]) };
    }
    return atom;
  }

  function parseSeq(): Node[] {
    const seq: Node[] = [];
    while (i < pattern.length && pattern[i] !== '|' && pattern[i] !== ')') {
      if (pattern[i] === '^' || pattern[i] === '$') { i++; continue; }
      seq.push(parseQuantified());
    }
    return seq;
  }

  function parseAlt(): Node {
    const options = [parseSeq()];
    while (pattern[i] === '|') { i++; options.push(parseSeq()); }
    return { t: 'alt', options };
  }

  const top = parseAlt();
  if (i !== pattern.length) fail('unbalanced )');
  return [top];
}

/**
 * A string matching `pattern` of about `length` characters: unbounded repeats
 * grow toward it, bounded ones take their full range at random. An unanchored
 * end (`^/`) is filled with printable characters to reach the length.
 */
function generate(nodes: Node[], random: Random, budget: { left: number }): string {
  let out = '';
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
  for (const n of nodes) {
    if (n.t === 'set') out += pick(n.chars);
    else if (n.t === 'alt') out += generate(pick(n.options), random, budget);
    else {
      let count = n.min;
      if (n.max === Infinity) {
        while (budget.left - out.length > 0 && count < n.min + 4096) count++;
        count = Math.max(n.min, count);
      } else {
        count = n.min + Math.floor(random() * (n.max - n.min + 1));
      }
      let part = '';
      for (let k = 0; k < count; k++) {
        const piece = generate([n.node], random, { left: budget.left - out.length - part.length });
        part += piece;
        if (n.max === Infinity && k + 1 >= n.min && out.length + part.length >= budget.left) break;
      }
      out += part;
    }
  }
  return out;
}

const parsed = new Map<string, Node[]>();

/**
 * A string that matches `pattern`, with at most `maxLength` characters and as
 * close to `target` as the pattern allows (target 0: the shortest it samples).
 * Undefined when no sample fits (e.g. the pattern's shortest string is longer).
 */
export function sampleMatching(pattern: string, random: Random, target: number, maxLength = Infinity): string | undefined {
  const re = new RegExp(pattern, 'u');
  let nodes = parsed.get(pattern);
  if (!nodes) parsed.set(pattern, nodes = parse(pattern));
  const openEnd = !pattern.endsWith('$');
  let goal = target;
  for (let attempt = 0; attempt < 40; attempt++) {
    let s = generate(nodes, random, { left: goal });
    if (openEnd && s.length < target) s += 'x'.repeat(Math.min(target, maxLength) - s.length);
    if (re.test(s) && [...s].length <= maxLength) return s;
    goal = Math.max(0, Math.floor(goal * 0.8) - 1);
  }
  return undefined;
}
