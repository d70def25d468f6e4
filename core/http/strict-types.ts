/** Strict types at the edge: what AJV would coerce is refused first, and values no column holds after. */
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../errors.ts';

/** How an integer or a decimal is written, in every encoding: no sign but `-`, no hex, exponent or space. */
const PLAIN_INTEGER = /^-?[0-9]+$/;
export const PLAIN_DECIMAL = /^-?[0-9]+(\.[0-9]+)?$/;

interface JsonSchema {
  type?: string | string[];
  pattern?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
}

/** acceptedTypes by schema: the schemas are the routes' own and fixed, and every request asks again. */
const typesOf = new WeakMap<JsonSchema, Set<string> | undefined>();

/** The JSON types a schema accepts; undefined when it does not say (any value). */
function acceptedTypes(schema: JsonSchema): Set<string> | undefined {
  if (typesOf.has(schema)) return typesOf.get(schema);
  const types = typesIn(schema);
  typesOf.set(schema, types);
  return types;
}

function typesIn(schema: JsonSchema): Set<string> | undefined {
  if (schema.anyOf) {
    const all = new Set<string>();
    for (const branch of schema.anyOf) {
      const types = acceptedTypes(branch);
      if (!types) return undefined;
      for (const type of types) all.add(type);
    }
    return all;
  }
  if (schema.type === undefined) return undefined;
  return new Set(Array.isArray(schema.type) ? schema.type : [schema.type]);
}

/** A string branch's pattern, compiled once. */
const patterns = new WeakMap<JsonSchema, RegExp>();

function matches(branch: JsonSchema, text: string): boolean {
  if (branch.pattern === undefined) return true;
  let pattern = patterns.get(branch);
  if (!pattern) patterns.set(branch, (pattern = new RegExp(branch.pattern, 'u')));
  return pattern.test(text);
}

/**
 * True when a branch other than a number takes this text as it is: a free string, one matching a
 * string's pattern, one of a string enum, or `true`/`false`. (A number branch of the same union
 * would otherwise read `" "` as 0; text a string's pattern refuses is a number written wrongly.)
 */
function textAccepted(schema: JsonSchema, text: string): boolean {
  return (schema.anyOf ?? [schema]).some((branch) => {
    const types = acceptedTypes(branch);
    if (types?.has('boolean') && (text === 'true' || text === 'false')) return true;
    if (!types?.has('string') || !matches(branch, text)) return false;
    if (branch.enum) return branch.enum.includes(text);
    return branch.const === undefined || branch.const === text;
  });
}

/** The property schemas of an object schema, when there is only one candidate. */
function propertySchemas(schema: JsonSchema): Record<string, JsonSchema> | undefined {
  if (schema.properties) return schema.properties;
  const parts = schema.allOf ?? schema.anyOf?.filter((b) => b.properties);
  if (!parts) return undefined;
  if (schema.allOf) return Object.assign({}, ...parts.map(propertySchemas).filter(Boolean));
  return parts.length === 1 ? parts[0]!.properties : undefined;
}

/**
 * The first value that validation would coerce into something it was not (issue 16): a boolean or
 * null into a number or string, a number written with a sign, hex, exponent or space, a list into
 * a single value. AJV's coercion does all of these; forms still need theirs (every field arrives
 * as text), so it stays on and this narrows it to plain decimal text.
 */
export function strictTypeProblem(schema: JsonSchema | undefined, value: unknown, path: string): string | undefined {
  if (value === undefined || schema === undefined || typeof schema !== 'object') return undefined;
  const types = acceptedTypes(schema);
  const field = path || 'the body';
  if (types) {
    const numeric = types.has('number') || types.has('integer');
    if (Array.isArray(value) && !types.has('array')) return `${field} must be a single value, not a list`;
    if (typeof value === 'boolean' && !types.has('boolean')) return `${field} must not be true or false`;
    if (value === null && !types.has('null')) return `${field} must not be null`;
    if (typeof value === 'string' && numeric && !(types.has('number') ? PLAIN_DECIMAL : PLAIN_INTEGER).test(value) && !textAccepted(schema, value)) {
      return `${field} must be a number written in plain digits`;
    }
    // A single value where a list is expected becomes a list of one (coerceTypes: 'array'): its item rules apply,
    // in a union too, unless another branch takes the text as it is (a pattern's list of ids, say).
    if (!Array.isArray(value) && types.has('array')) {
      if (types.size === 1) return strictTypeProblem(schema.items, value, path);
      const list = schema.anyOf?.find((branch) => acceptedTypes(branch)?.has('array'));
      if (list && !(typeof value === 'string' && textAccepted(schema, value))) return strictTypeProblem(list.items, value, path);
    }
  }
  if (Array.isArray(value)) {
    const items = schema.items ?? schema.anyOf?.find((branch) => acceptedTypes(branch)?.has('array'))?.items;
    for (let i = 0; i < value.length; i++) {
      const problem = strictTypeProblem(items, value[i], `${field}.${i}`);
      if (problem) return problem;
    }
  } else if (value !== null && typeof value === 'object') {
    const properties = propertySchemas(schema) ?? {};
    // Every request passes here with its query and path parameters: no list of entries is made.
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      const property = Object.hasOwn(properties, key) ? properties[key] : undefined;
      const problem = strictTypeProblem(property, (value as Record<string, unknown>)[key], path ? `${path}.${key}` : key);
      if (problem) return problem;
    }
  }
  return undefined;
}

/**
 * Strict types at the edge, the same for JSON, urlencoded and multipart bodies, query strings and
 * path parameters: checked before validation, once the multipart fields are parsed.
 */
export function strictTypesError(request: FastifyRequest): DomainError | undefined {
  const schema = request.routeOptions.schema as Record<string, JsonSchema | undefined> | undefined;
  const problem =
    schema &&
    (strictTypeProblem(schema.params, request.params, '') ??
      strictTypeProblem(schema.querystring, request.query, '') ??
      strictTypeProblem(schema.body, request.body, ''));
  return problem ? new DomainError('VALIDATION_ERROR', problem) : undefined;
}

/** The first value the database layer cannot carry, named like a validation error; undefined when none. */
function unstorable(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? `${path} must not contain a NUL character` : undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} must be a finite number`;
  // A raw body (a gateway's signed webhook) is bytes kept for its signature, not values to store; a for-in over it
  // would visit every byte.
  if (ArrayBuffer.isView(value)) return undefined;
  if (value !== null && typeof value === 'object') {
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      const problem = unstorable((value as Record<string, unknown>)[key], path ? `${path}.${key}` : key);
      if (problem) return problem;
    }
  }
  return undefined;
}

/**
 * Refuses, once validation has coerced them, values no column holds faithfully: a NUL character
 * (C-string tools and clients cut text short at it) and a non-finite number, which AJV lets
 * through: it coerces a 309-digit number to Infinity and skips minimum/maximum for it.
 */
export function unstorableError(request: FastifyRequest): DomainError | undefined {
  const problem = unstorable(request.params, '') ?? unstorable(request.query, '') ?? unstorable(request.body, '');
  return problem ? new DomainError('VALIDATION_ERROR', problem) : undefined;
}
