/**
 * The OpenAPI document as the fuzzer needs it: each operation's path, query and body schemas, a
 * valid example for a schema, and `accepts`, which says whether the server's validator must refuse
 * a value. `accepts` follows the validator the host configures (AJV with `coerceTypes: 'array'`,
 * `useDefaults`, `removeAdditional`): form strings become numbers, a one-item array becomes its item,
 * null becomes "" or 0. Where it cannot be sure it answers "accepted", so a request is only ever
 * counted as "must be refused" when the documented contract says so.
 */

export interface JsonSchema {
  type?: string;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  nullable?: boolean;
  default?: unknown;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

export interface Param {
  name: string;
  required: boolean;
  schema: JsonSchema;
  description?: string;
}

export interface Operation {
  method: string;
  /** The documented path, parameters written `{name}`. */
  path: string;
  pathParams: Param[];
  query: Param[];
  body?: JsonSchema;
}

interface OpenApiDoc {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: (Param & { in: string })[];
        requestBody?: { content: Record<string, { schema: JsonSchema }> };
      }
    >
  >;
}

export function operations(doc: OpenApiDoc): Operation[] {
  const out: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = op.parameters ?? [];
      const content = op.requestBody ? Object.values(op.requestBody.content)[0] : undefined;
      out.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path'),
        query: params.filter((p) => p.in === 'query'),
        body: content?.schema,
      });
    }
  }
  return out;
}

/** The query parameters as one object schema, so they are judged like a body. */
export function querySchema(params: Param[]): JsonSchema {
  return {
    type: 'object',
    properties: Object.fromEntries(params.map((p) => [p.name, p.schema])),
    required: params.filter((p) => p.required).map((p) => p.name),
  };
}

type Coerced = { ok: true; value: unknown } | { ok: false };
const NO: Coerced = { ok: false };

/** AJV's type coercion for one type (ajv/lib/compile/validate/dataType.ts, coerceTypes: 'array'). */
function coerce(type: string, input: unknown): Coerced {
  let v = input;
  if (type !== 'array' && Array.isArray(v)) {
    if (v.length !== 1) return NO;
    v = v[0];
  }
  switch (type) {
    case 'string':
      if (typeof v === 'string') return { ok: true, value: v };
      if (typeof v === 'number' || typeof v === 'boolean') return { ok: true, value: String(v) };
      return v === null ? { ok: true, value: '' } : NO;
    case 'number':
    case 'integer': {
      let n: number;
      if (typeof v === 'number') n = v;
      else if (typeof v === 'boolean') n = Number(v);
      else if (v === null) n = 0;
      // AJV's test is `data && data == +data`: any non-empty string Number() can read, " 7" too
      else if (typeof v === 'string' && v !== '' && !Number.isNaN(Number(v))) n = Number(v);
      else return NO;
      if (type === 'integer' && (n % 1 || Number.isNaN(n))) return NO;
      return { ok: true, value: n };
    }
    case 'boolean':
      if (typeof v === 'boolean') return { ok: true, value: v };
      if (v === 'true' || v === 1) return { ok: true, value: true };
      if (v === 'false' || v === 0 || v === null) return { ok: true, value: false };
      return NO;
    case 'null':
      return v === null || v === '' || v === 0 || v === false ? { ok: true, value: null } : NO;
    case 'array':
      if (Array.isArray(v)) return { ok: true, value: v };
      return typeof v === 'object' && v !== null ? NO : { ok: true, value: [v] };
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? { ok: true, value: v } : NO;
    default:
      return { ok: true, value: v };
  }
}

/** The JSON types a schema names, through anyOf; undefined when any branch leaves it open. */
function typesOf(schema: JsonSchema): Set<string> | undefined {
  if (schema.anyOf) {
    const all = new Set<string>();
    for (const branch of schema.anyOf) {
      const types = typesOf(branch);
      if (!types) return undefined;
      for (const t of types) all.add(t);
    }
    return all;
  }
  return schema.type ? new Set([schema.type]) : undefined;
}

/**
 * The edge's strict types (issue 16), before any coercion: no list for a single value, no boolean
 * or null for anything else, and numbers given as text in plain digits only.
 */
function strictlyRefused(schema: JsonSchema, value: unknown): boolean {
  const types = typesOf(schema);
  if (!types) return false;
  if (Array.isArray(value)) return !types.has('array');
  if (typeof value === 'boolean') return !types.has('boolean');
  if (value === null) return !types.has('null') && !schema.nullable;
  if (typeof value === 'string' && (types.has('number') || types.has('integer')) && !types.has('string')) {
    return !(types.has('number') ? /^-?[0-9]+(\.[0-9]+)?$/ : /^-?[0-9]+$/).test(value);
  }
  return false;
}

/** False only when the validator is sure to refuse `value`. */
export function accepts(schema: JsonSchema, value: unknown): boolean {
  if (strictlyRefused(schema, value)) return false;
  if (schema.nullable && coerce('null', value).ok) return true;
  if (schema.anyOf) {
    // AJV coerces in place: a branch that fails may leave a one-item array unwrapped for the next
    // one, so `[[1]]` can pass `anyOf: [boolean, number]`.
    const unwrapped = [value];
    for (let v = value; Array.isArray(v) && v.length === 1; v = v[0]) unwrapped.push(v[0]);
    return schema.anyOf.some((branch) => unwrapped.some((v) => accepts(branch, v)));
  }
  const coerced = schema.type ? coerce(schema.type, value) : { ok: true as const, value };
  if (!coerced.ok) return false;
  const v = coerced.value;
  if (schema.enum && !schema.enum.includes(v)) return false;
  if (typeof v === 'string') {
    const length = [...v].length; // AJV counts code points
    if (schema.minLength !== undefined && length < schema.minLength) return false;
    if (schema.maxLength !== undefined && length > schema.maxLength) return false;
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(v)) return false;
  }
  if (typeof v === 'number') {
    if (schema.minimum !== undefined && v < schema.minimum) return false;
    if (schema.maximum !== undefined && v > schema.maximum) return false;
  }
  if (Array.isArray(v)) {
    if (schema.minItems !== undefined && v.length < schema.minItems) return false;
    if (schema.maxItems !== undefined && v.length > schema.maxItems) return false;
    if (schema.items && !v.every((item) => accepts(schema.items!, item))) return false;
  }
  if (schema.type === 'object' && typeof v === 'object' && v !== null) {
    const obj = v as Record<string, unknown>;
    const props = schema.properties ?? {};
    // A missing field with a default is filled in by useDefaults; whether before or after the
    // `required` check is AJV's business, so such a field never counts as "surely refused".
    if ((schema.required ?? []).some((name) => obj[name] === undefined && props[name]?.default === undefined)) return false;
    for (const [name, sub] of Object.entries(props)) {
      if (obj[name] !== undefined && !accepts(sub, obj[name])) return false;
    }
  }
  return true;
}

/** Strings tried, in order, as an example of a string schema (the first one it accepts). */
const STRING_EXAMPLES = ['fuzz', 'USD', 'fuzz_1', '1', '2030-01-01 00:00:00', 'a'];

/** A value the schema accepts, or undefined when none comes to mind. */
export function example(schema: JsonSchema): unknown {
  if (schema.default !== undefined) return schema.default;
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf) return schema.anyOf.map(example).find((v) => v !== undefined);
  switch (schema.type) {
    case 'string':
      return STRING_EXAMPLES.find((s) => accepts(schema, s));
    case 'integer':
    case 'number':
      return Math.min(Math.max(1, schema.minimum ?? 1), schema.maximum ?? 1);
    case 'boolean':
      return true;
    case 'array': {
      const item = schema.items ? example(schema.items) : '1';
      return item === undefined ? [] : [item];
    }
    case 'object':
      return Object.fromEntries(
        Object.entries(schema.properties ?? {})
          .map(([name, sub]) => [name, example(sub)])
          .filter(([, v]) => v !== undefined),
      );
    default:
      return '1';
  }
}
