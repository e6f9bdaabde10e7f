// A small builder for structural OpenAPI v3 schemas whose TypeScript types are
// inferred from the same values: the ServerlessApp API is written once, and both
// the CRD (with `kubectl explain` text and CEL rules) and the types used by the
// code come from it, so they cannot drift.

export type JSONSchema = Record<string, unknown>;

/** A schema node that also carries, at the type level only, the TS type it describes. */
export interface Schema<T> {
  readonly openapi: JSONSchema;
  readonly required: boolean;
  /** Phantom: never set at run time. */
  readonly __type?: T;
}

/** A CEL rule (x-kubernetes-validations). `fieldPath` makes the API server name the field. */
export interface Rule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export type TypeOf<S> = S extends Schema<infer T> ? T : never;

interface Extra {
  /** Defaulted by the API server when absent. */
  default?: unknown;
  rules?: Rule[];
  nullable?: boolean;
}

function node<T>(openapi: JSONSchema, extra: Extra = {}): Schema<T> {
  const out: JSONSchema = { ...openapi };
  if (extra.default !== undefined) out.default = extra.default;
  if (extra.nullable) out.nullable = true;
  if (extra.rules?.length) out['x-kubernetes-validations'] = extra.rules;
  return { openapi: out, required: false };
}

export function string(description: string, o: Extra & { pattern?: string; minLength?: number; maxLength?: number; format?: string } = {}): Schema<string> {
  const { pattern, minLength, maxLength, format, ...extra } = o;
  return node({ type: 'string', description, ...defined({ pattern, minLength, maxLength, format }) }, extra);
}

/** An int32 unless `format` says int64 (a count of bytes, which passes 2 GiB). */
export function integer(description: string, o: Extra & { minimum?: number; maximum?: number; format?: 'int32' | 'int64' } = {}): Schema<number> {
  const { minimum, maximum, format = 'int32', ...extra } = o;
  return node({ type: 'integer', format, description, ...defined({ minimum, maximum }) }, extra);
}

export function number(description: string, o: Extra & { minimum?: number; maximum?: number } = {}): Schema<number> {
  const { minimum, maximum, ...extra } = o;
  return node({ type: 'number', description, ...defined({ minimum, maximum }) }, extra);
}

export function boolean(description: string, o: Extra = {}): Schema<boolean> {
  return node({ type: 'boolean', description }, o);
}

export function enumeration<const V extends readonly string[]>(values: V, description: string, o: Extra = {}): Schema<V[number]> {
  return node({ type: 'string', enum: [...values], description }, o);
}

export function array<T>(items: Schema<T>, description: string, o: Extra & { minItems?: number; maxItems?: number; listType?: 'atomic' | 'set' | 'map'; listMapKeys?: string[] } = {}): Schema<T[]> {
  const { minItems, maxItems, listType, listMapKeys, ...extra } = o;
  return node({
    type: 'array', description, items: items.openapi,
    ...defined({ minItems, maxItems, 'x-kubernetes-list-type': listType, 'x-kubernetes-list-map-keys': listMapKeys }),
  }, extra);
}

/** A map of string keys to values of one schema (additionalProperties). */
export function map<T>(values: Schema<T>, description: string, o: Extra & { maxProperties?: number } = {}): Schema<Record<string, T>> {
  const { maxProperties, ...extra } = o;
  return node({ type: 'object', description, additionalProperties: values.openapi, ...defined({ maxProperties }) }, extra);
}

/** A Kubernetes quantity ("500m", "2Gi", 4): int-or-string with the quantity pattern, at most 64 characters (no real quantity needs more). */
export function quantity(description: string, o: Extra = {}): Schema<string | number> {
  return node({
    description, 'x-kubernetes-int-or-string': true,
    anyOf: [{ type: 'integer' }, { type: 'string' }], maxLength: 64,
    pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
   }, o);
}

/** An int-or-string (a port number or a port name): an integer, or a string of at most `maxLength`. */
export function intOrString(description: string, o: Extra & { maxLength: number }): Schema<number | string> {
  const { maxLength, ...extra } = o;
  return node({ description, 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }], maxLength }, extra);
}

/** Marks a property required in its parent object. */
export function required<T>(s: Schema<T>): Schema<T> & { readonly required: true } {
  return { ...s, required: true };
}

type Fields = Record<string, Schema<unknown>>;
type RequiredKeys<F> = { [K in keyof F]: F[K] extends { readonly required: true } ? K : never }[keyof F];
type Simplify<T> = { [K in keyof T]: T[K] } & {};
type InferObject<F extends Fields> = Simplify<
  { [K in RequiredKeys<F>]: TypeOf<F[K]> } & { [K in Exclude<keyof F, RequiredKeys<F>>]?: TypeOf<F[K]> }
>;

export function object<F extends Fields>(description: string, fields: F, o: Extra & { minProperties?: number; maxProperties?: number } = {}): Schema<InferObject<F>> {
  const { minProperties, maxProperties, ...extra } = o;
  const properties: Record<string, JSONSchema> = {};
  const req: string[] = [];
  for (const [name, s] of Object.entries(fields)) {
    properties[name] = s.openapi;
    if (s.required) req.push(name);
  }
  return node({
    type: 'object', description, properties,
    ...defined({ required: req.length ? req : undefined, minProperties, maxProperties }),
  }, extra);
}

function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** Every schema node that lacks a description, as JSON paths: used by a test so `kubectl explain` reads well everywhere. */
export function undocumented(s: JSONSchema, path = '$'): string[] {
  const out: string[] = [];
  if (typeof s.description !== 'string' || s.description.length < 3) out.push(path);
  const props = s.properties as Record<string, JSONSchema> | undefined;
  for (const [k, v] of Object.entries(props ?? {})) out.push(...undocumented(v, `${path}.${k}`));
  const items = s.items as JSONSchema | undefined;
  if (items && items.type === 'object') out.push(...undocumented(items, `${path}[]`));
  const add = s.additionalProperties as JSONSchema | undefined;
  if (add && typeof add === 'object' && add.type === 'object') out.push(...undocumented(add, `${path}{}`));
  return out;
}
