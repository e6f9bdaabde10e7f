// Values generated from an OpenAPI v3 schema (the CRD's own), for the
// schema-driven fuzzer: every string at 0/1/maxLength characters (unicode with
// combining marks, right-to-left text and emoji, never NUL), every list and map
// at 0/1/max entries, every enum value, numbers at their bounds, optional
// fields present and absent, and deep JSON under an undeclared field at every
// object (deepNests), which a schema without free-form fields must not keep.
// Generated values obey the structural schema; of the CEL rules, the ones that
// say which fields go together ("exactly one of", "at least one of") are read
// from the rule text so the shape is admissible. Every other rule is left to the
// API server: the admission fuzz test (test/integration) sends the same cases
// through it.

import { sampleMatching, type Random } from './regex-sample.ts';

export type JSONSchema = Record<string, unknown>;

/** How a node is filled: its smallest valid value, its largest, or one picked at random among the edges. */
export type Mode = 'min' | 'max' | 'random';

/** A leaf of the schema with the edge values it is swept through. */
export interface Edge { path: string; label: string; value: unknown }

const COMBINING = '\u0301\u0308\u0323';
const RTL = '\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627';
const EMOJI = '\u{1F680}\u{1F469}\u200d\u{1F4BB}\u{1F1E9}\u{1F1EA}';
const ALPHABET = `ae${COMBINING}${RTL}${EMOJI}\u202e\u200b\ufeffz\u00ff\u4e2d"'\\{}<>`;

/** Unicode text of exactly `n` code points (Kubernetes counts maxLength in code points): combining marks, RTL, emoji, controls other than NUL. */
export function unicodeText(n: number, random: Random): string {
  const chars = [...ALPHABET];
  let out = '';
  for (let k = 0; k < n; k++) out += chars[Math.floor(random() * chars.length)]!;
  return out;
}

/** Keys of a map: ordinary ones, and ones under the control prefixes a hostile tenant would try. */
export const ATTACK_KEYS = [
  'sidecar.istio.io/inject', 'sidecar.istio.io/userVolume', 'sidecar.istio.io/proxyImage', 'traffic.sidecar.istio.io/excludeOutboundIPRanges',
  'proxy.istio.io/config', 'istio.io/rev', 'security.istio.io/tlsMode', 'container.apparmor.security.beta.kubernetes.io/app',
  'seccomp.security.alpha.kubernetes.io/pod', 'autoscaling.knative.dev/min-scale', 'serving.knative.dev/creator', 'features.knative.dev/x',
  'serving.kserve.io/deploymentMode', 'serverlessapp.io/app', 'app.kubernetes.io/name', 'app',
];

interface OneOf { kind: 'exactly' | 'atLeast' | 'unlessSet'; fields: string[] }

/** "exactly one of", "at least one of" and "required unless another field says otherwise" groups, read from an object's CEL rules. */
export function fieldGroups(schema: JSONSchema): OneOf[] {
  const rules = (schema['x-kubernetes-validations'] as Array<{ rule: string }> | undefined) ?? [];
  const out: OneOf[] = [];
  for (const { rule } of rules) {
    let m = /^has\(self\.(\w+)\) != has\(self\.(\w+)\)$/.exec(rule);
    if (m) { out.push({ kind: 'exactly', fields: [m[1]!, m[2]!] }); continue; }
    m = /^\[((?:has\(self\.\w+\)(?:, )?)+)\]\.filter\(x, x\)\.size\(\) == 1$/.exec(rule);
    if (m) { out.push({ kind: 'exactly', fields: [...m[1]!.matchAll(/has\(self\.(\w+)\)/g)].map((x) => x[1]!) }); continue; }
    m = /^has\(self\.(\w+)\) \|\| has\(self\.(\w+)\)$/.exec(rule);
    if (m) { out.push({ kind: 'atLeast', fields: [m[1]!, m[2]!] }); continue; }
    // e.g. model.format, required unless serving is "llm": present whenever the first field is absent.
    m = /^has\(self\.(\w+)\) && self\.\1 == '[^']*' \|\| has\(self\.(\w+)\)$/.exec(rule);
    if (m) out.push({ kind: 'unlessSet', fields: [m[1]!, m[2]!] });
  }
  return out;
}

export class SchemaFuzzer {
  private readonly random: Random;
  /** Deepest nesting of a generated JSON blob (deepNests). */
  readonly maxDepth: number;

  constructor(random: Random, o: { maxDepth?: number } = {}) {
    this.random = random;
    this.maxDepth = o.maxDepth ?? 32;
  }

  private pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.random() * xs.length)]!;
  }

  private chance(p: number): boolean {
    return this.random() < p;
  }

  /** A value of `schema`. `mode` decides sizes; nested lists and maps at their maximum hold minimal items, so one case stays small. */
  value(schema: JSONSchema, mode: Mode): unknown {
    if (schema['x-kubernetes-int-or-string']) return this.intOrString(schema, mode);
    if (schema.enum) return mode === 'min' ? (schema.enum as unknown[])[0] : this.pick(schema.enum as unknown[]);
    switch (schema.type) {
      case 'string': return this.string(schema, mode);
      case 'integer': return this.integer(schema, mode);
      case 'number': return this.pick([0, -1.5, 1e300, -1e-300, 42.125]);
      case 'boolean': return mode === 'min' ? false : this.chance(0.5);
      case 'array': return this.array(schema, mode);
      case 'object':
        if (schema.additionalProperties) return this.map(schema, mode);
        return this.object(schema, mode);
      default: throw new Error(`schema-fuzz: no generator for ${JSON.stringify(schema).slice(0, 120)}`);
    }
  }

  /** A string length among the edges: 0 or minLength, 1, maxLength. */
  private length(schema: JSONSchema, mode: Mode): number {
    const min = (schema.minLength as number | undefined) ?? 0;
    const max = (schema.maxLength as number | undefined) ?? 64;
    if (mode === 'min') return min;
    if (mode === 'max') return max;
    return this.pick([min, Math.max(min, 1), max, Math.min(max, min + 5)]);
  }

  string(schema: JSONSchema, mode: Mode): string {
    const n = this.length(schema, mode);
    const max = (schema.maxLength as number | undefined) ?? Infinity;
    const pattern = schema.pattern as string | undefined;
    if (schema.format === 'date-time') return '2026-11-23T09:00:00Z';
    if (!pattern) return unicodeText(n, this.random);
    return sampleMatching(pattern, this.random, n, max)
      ?? sampleMatching(pattern, this.random, 0, max)
      ?? (() => { throw new Error(`schema-fuzz: no sample of ${pattern} fits ${max}`); })();
  }

  integer(schema: JSONSchema, mode: Mode): number {
    const min = schema.minimum as number | undefined, max = schema.maximum as number | undefined;
    if (mode === 'min') return min ?? 0;
    if (mode === 'max') return max ?? 2 ** 31 - 1;
    return this.pick([min ?? -(2 ** 31), max ?? 2 ** 31 - 1, min ?? 0, Math.floor(((min ?? 0) + (max ?? 100)) / 2)]);
  }

  private intOrString(schema: JSONSchema, mode: Mode): string | number {
    if (mode === 'min') return 0;
    // A port: a number, or a name of at most maxLength.
    if (!schema.pattern) return this.pick([1, 8080, 65535, 2 ** 31 - 1, 'http', this.string({ type: 'string', maxLength: schema.maxLength }, mode)]);
    if (this.chance(0.3)) return this.pick([0, 1, 2 ** 31 - 1, -1]);
    const pattern = schema.pattern as string;
    return this.pick(['-2Gi', '0', '+1.5e3', '.5', '1Ei', '999999999999999999999Ei', '1m', sampleMatching(pattern, this.random, mode === 'max' ? 64 : 4) ?? '1']);
  }

  private count(min: number, max: number | undefined, mode: Mode): number {
    const top = max ?? 3;
    if (mode === 'min') return min;
    if (mode === 'max') return top;
    return this.pick([min, Math.max(min, 1), top]);
  }

  private array(schema: JSONSchema, mode: Mode): unknown[] {
    const items = schema.items as JSONSchema;
    const n = this.count((schema.minItems as number | undefined) ?? 0, schema.maxItems as number | undefined, mode);
    const itemMode: Mode = n > 4 ? 'min' : mode;
    const keys = (schema['x-kubernetes-list-map-keys'] as string[] | undefined) ?? [];
    const set = schema['x-kubernetes-list-type'] === 'set';
    const out: unknown[] = [];
    const seen = new Set<string>();
    for (let k = 0, tries = 0; out.length < n && tries < n * 20; tries++, k++) {
      const v = this.value(items, k === 0 ? itemMode : itemMode === 'max' ? 'random' : itemMode);
      // Lists of type map and set are unique by their keys (the API server refuses duplicates).
      const id = set ? JSON.stringify(v) : keys.length ? JSON.stringify(keys.map((key) => (v as Record<string, unknown>)[key])) : undefined;
      if (id !== undefined) {
        if (seen.has(id)) {
          if (keys.length === 1 && typeof (v as Record<string, unknown>)[keys[0]!] === 'string') {
            (v as Record<string, unknown>)[keys[0]!] = uniqueLike((v as Record<string, string>)[keys[0]!]!, out.length, items, keys[0]!);
          } else if (set && typeof v === 'string') {
            const u = uniqueLike(v, out.length, items);
            if (seen.has(JSON.stringify(u))) continue;
            seen.add(JSON.stringify(u));
            out.push(u);
            continue;
          } else continue;
        }
        seen.add(JSON.stringify(keys.length ? keys.map((key) => (v as Record<string, unknown>)[key]) : v));
      }
      out.push(v);
    }
    return out;
  }

  private map(schema: JSONSchema, mode: Mode): Record<string, unknown> {
    const values = schema.additionalProperties as JSONSchema;
    const n = this.count(0, schema.maxProperties as number | undefined, mode);
    const out: Record<string, unknown> = {};
    for (let k = 0; k < n; k++) {
      const key = this.chance(0.4) ? this.pick(ATTACK_KEYS) : this.chance(0.5) ? `example.com/key-${k}` : `k${k}${mode === 'max' ? unicodeText(3, this.random) : ''}`;
      out[key in out ? `${key}-${k}` : key] = this.value(values, n > 4 ? 'min' : mode);
    }
    return out;
  }

  object(schema: JSONSchema, mode: Mode, only?: Set<string>): Record<string, unknown> {
    const props = (schema.properties as Record<string, JSONSchema> | undefined) ?? {};
    const required = new Set((schema.required as string[] | undefined) ?? []);
    const present = new Set<string>();
    for (const name of Object.keys(props)) {
      if (only ? only.has(name) : required.has(name) || (mode !== 'min' && this.chance(mode === 'max' ? 0.8 : 0.5))) present.add(name);
    }
    for (const g of fieldGroups(schema)) {
      const on = g.fields.filter((f) => present.has(f));
      if (g.kind === 'exactly' && on.length !== 1) {
        const keep = on.length ? this.pick(on) : this.pick(g.fields);
        for (const f of g.fields) present.delete(f);
        present.add(keep);
      }
      if (g.kind === 'atLeast' && on.length === 0) present.add(this.pick(g.fields));
      if (g.kind === 'unlessSet' && !present.has(g.fields[0]!)) present.add(g.fields[1]!);
    }
    const out: Record<string, unknown> = {};
    for (const name of Object.keys(props)) if (present.has(name)) out[name] = this.value(props[name]!, mode);
    return out;
  }

  /** JSON of about `depth` levels: objects and arrays nested in each other, unicode keys and strings. */
  blob(depth: number): unknown {
    if (depth <= 0) return this.pick<unknown>([unicodeText(8, this.random), 0, -1, 1.5e308, true, null, '', []]);
    const inner = this.blob(depth - 1);
    return this.chance(0.5) ? { [unicodeText(3, this.random)]: inner, path: '/healthz', port: 8080 } : [inner, {}];
  }

  /**
   * The edges of every leaf under `schema`, as JSON paths: a sweep that sets one
   * leaf to one edge on an otherwise minimal value covers each edge at least once.
   */
  edges(schema: JSONSchema, path = '$'): Edge[] {
    return this.sweep(schema, path, (s, p) => this.leafEdges(s, p));
  }

  /**
   * One step past every bound of the schema (maxLength + 1, maximum + 1, maxItems + 1,
   * a value outside an enum, ...), each on an otherwise minimal value: what the API
   * server must refuse if the bound is real.
   */
  beyond(schema: JSONSchema, path = '$'): Edge[] {
    return this.sweep(schema, path, (s, p) => this.pastBounds(s, p), false);
  }

  private sweep(schema: JSONSchema, path: string, leaf: (s: JSONSchema, p: string) => Edge[] | undefined, whole = true): Edge[] {
    const own = leaf(schema, path);
    if (own) return own;
    const out: Edge[] = [];
    const add = (label: string, value: unknown) => out.push({ path, label, value });
    if (schema.type === 'array') {
      out.push(...this.sweep(schema.items as JSONSchema, `${path}[0]`, leaf, whole).map((e) => ({ ...e, value: [e.value] })));
      return out;
    }
    if (schema.type === 'object' && schema.properties) {
      if (whole) {
        add('required fields only', this.object(schema, 'min'));
        add('every field', this.object(schema, 'max', new Set(Object.keys(schema.properties as object))));
      }
      for (const [name, child] of Object.entries(schema.properties as Record<string, JSONSchema>)) {
        for (const e of this.sweep(child, `${path}.${name}`, leaf, whole)) {
          const value = { ...this.object(schema, 'min'), [name]: e.value };
          // Keep the "exactly one of" groups admissible: setting one member drops the others.
          for (const g of fieldGroups(schema)) if (g.kind === 'exactly' && g.fields.includes(name)) for (const f of g.fields) if (f !== name) delete value[f];
          out.push({ ...e, value });
        }
      }
    }
    return out;
  }

  /** The edge values of a leaf (and of a list's or map's size); undefined for an object with properties, which sweep walks. */
  private leafEdges(schema: JSONSchema, path: string): Edge[] | undefined {
    const out: Edge[] = [];
    const add = (label: string, value: unknown) => out.push({ path, label, value });
    if (schema['x-kubernetes-int-or-string']) {
      const values = schema.pattern ? [0, 2 ** 31 - 1, '-2Gi', '0', '999999999999999999999Ei', '1m', '+.5'] : [0, 65535, 2 ** 31 - 1, '', 'http', this.string({ type: 'string', maxLength: schema.maxLength }, 'max')];
      for (const v of values) add(JSON.stringify(v), v);
      return out;
    }
    if (schema.enum) {
      for (const v of schema.enum as unknown[]) add(`enum ${JSON.stringify(v)}`, v);
      return out;
    }
    switch (schema.type) {
      case 'string':
        add('shortest', this.string(schema, 'min'));
        if (((schema.minLength as number | undefined) ?? 0) <= 1) {
          const one = schema.pattern ? sampleMatching(schema.pattern as string, this.random, 1, 1) : unicodeText(1, this.random);
          if (one !== undefined) add('one character', one);
        }
        add('longest', this.string(schema, 'max'));
        if (!schema.pattern && !schema.format) add('unicode', unicodeText(Math.min((schema.maxLength as number | undefined) ?? 16, 16), this.random));
        return out;
      case 'integer':
        add('minimum', this.integer(schema, 'min'));
        add('maximum', this.integer(schema, 'max'));
        return out;
      case 'number':
        for (const v of [0, -1.5, 1e300]) add(String(v), v);
        return out;
      case 'boolean':
        add('true', true); add('false', false);
        return out;
      case 'array': {
        add('empty', this.array({ ...schema, maxItems: 0 }, 'min'));
        add('one item', this.array({ ...schema, minItems: 1, maxItems: 1 }, 'max'));
        if (((schema.maxItems as number | undefined) ?? 0) > 1) add('most items', this.array(schema, 'max'));
        return [...out, ...this.sweep(schema.items as JSONSchema, `${path}[0]`, (s, p) => this.leafEdges(s, p)).map((e) => ({ ...e, value: [e.value] }))];
      }
      case 'object':
        if (schema.additionalProperties) {
          add('empty', {});
          add('most entries', this.map(schema, 'max'));
          for (const key of ATTACK_KEYS) add(`key ${key}`, { [key]: this.value(schema.additionalProperties as JSONSchema, 'min') });
          return out;
        }
        return undefined;
      default:
        throw new Error(`schema-fuzz: no edges for ${path}`);
    }
  }

  /**
   * At every object of the schema (in lists too), an undeclared field holding JSON nested maxDepth
   * levels deep, on an otherwise minimal value: what a tenant would send to make the API server or
   * the operator walk, store and hash JSON of any depth. A schema without free-form fields keeps
   * none of them (see keepsUndeclared).
   */
  deepNests(schema: JSONSchema, path = '$'): Edge[] {
    if (schema.type === 'array') return this.deepNests(schema.items as JSONSchema, `${path}[0]`).map((e) => ({ ...e, value: [e.value] }));
    if (schema.type !== 'object' || !schema.properties) return [];
    const out: Edge[] = [{ path: `${path}.${UNDECLARED}`, label: `nested ${this.maxDepth} deep`, value: { ...this.object(schema, 'min'), [UNDECLARED]: this.blob(this.maxDepth) } }];
    for (const [name, child] of Object.entries(schema.properties as Record<string, JSONSchema>)) {
      for (const e of this.deepNests(child, `${path}.${name}`)) {
        const value = { ...this.object(schema, 'min'), [name]: e.value };
        for (const g of fieldGroups(schema)) if (g.kind === 'exactly' && g.fields.includes(name)) for (const f of g.fields) if (f !== name) delete value[f];
        out.push({ ...e, value });
      }
    }
    return out;
  }

  /** Values one step past a leaf's bounds (none when it has no bounds); undefined for what sweep walks into. */
  private pastBounds(schema: JSONSchema, path: string): Edge[] | undefined {
    const out: Edge[] = [];
    const add = (label: string, value: unknown) => out.push({ path, label, value });
    if (schema['x-kubernetes-int-or-string']) {
      if (schema.pattern) {
        add('not a quantity', '12GB');
        add('maxLength + 1', '1'.repeat((schema.maxLength as number) + 1));
      }
      else add('maxLength + 1', unicodeText((schema.maxLength as number) + 1, this.random));
      return out;
    }
    if (schema.enum) {
      add('outside the enum', `${String((schema.enum as unknown[])[0])}x`);
      return out;
    }
    const min = schema.minimum as number | undefined, max = schema.maximum as number | undefined;
    const maxLength = schema.maxLength as number | undefined, minLength = schema.minLength as number | undefined;
    switch (schema.type) {
      case 'string':
        if (maxLength !== undefined) {
          const long = schema.pattern ? sampleMatching(schema.pattern as string, this.random, maxLength + 1) : unicodeText(maxLength + 1, this.random);
          if (long !== undefined && [...long].length > maxLength) add('maxLength + 1', long);
        }
        if (minLength) add('minLength - 1', 'a'.repeat(minLength - 1));
        return out;
      case 'integer':
        if (min !== undefined) add('minimum - 1', min - 1);
        if (max !== undefined) add('maximum + 1', max + 1);
        return out;
      case 'array': {
        const maxItems = schema.maxItems as number | undefined, minItems = schema.minItems as number | undefined;
        if (maxItems !== undefined) {
          // Unique by the list's keys, as the API server demands before it counts the items.
          const many = this.array({ ...schema, minItems: maxItems + 1, maxItems: maxItems + 1 }, 'min');
          if (many.length > maxItems) add('maxItems + 1', many);
        }
        if (minItems) add('minItems - 1', []);
        return undefined === schema.items ? out : [...out, ...this.sweep(schema.items as JSONSchema, `${path}[0]`, (s, p) => this.pastBounds(s, p), false).map((e) => ({ ...e, value: [e.value] }))];
      }
      case 'object':
        if (schema.additionalProperties && schema.maxProperties !== undefined) {
          const n = (schema.maxProperties as number) + 1;
          add('maxProperties + 1', Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/k${i}`, this.value(schema.additionalProperties as JSONSchema, 'min')])));
          return out;
        }
        return schema.properties ? undefined : out;
      default:
        return out;
    }
  }
}

/** The field deepNests adds where the schema declares none. */
export const UNDECLARED = 'undeclared';

/** Whether the API server would keep an undeclared field at `path` (a JSON path deepNests wrote): some object on the way keeps unknown fields. */
export function keepsUndeclared(schema: JSONSchema, path: string): boolean {
  let s: JSONSchema | undefined = schema;
  for (const step of path.replace(/^[^.[]*/, '').match(/\.[^.[]+|\[\d+\]/g) ?? []) {
    if (!s) return false;
    if (s['x-kubernetes-preserve-unknown-fields']) return true;
    s = step.startsWith('[') ? s.items as JSONSchema | undefined : (s.properties as Record<string, JSONSchema> | undefined)?.[step.slice(1)];
  }
  return false;
}

/** A variant of `value` that differs from its siblings but still matches the item schema's pattern (for set and map-keyed lists). */
function uniqueLike(value: string, index: number, items: JSONSchema, key?: string): string {
  const schema = key ? (items.properties as Record<string, JSONSchema>)[key]! : items;
  const pattern = schema.pattern as string | undefined;
  const max = (schema.maxLength as number | undefined) ?? Infinity;
  const suffix = String(index);
  const candidates = [`${value.slice(0, Math.max(0, max - suffix.length - 1))}${suffix}`, `a${suffix}`, `${suffix}${value}`.slice(0, max)];
  return candidates.find((c) => !pattern || new RegExp(pattern, 'u').test(c)) ?? `${value}${suffix}`;
}
