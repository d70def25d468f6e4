/**
 * Schema helpers for routes. Row-like objects serialize every value as a JSON string
 * (decisions.md §2): declare such fields with `str()`; the serializer turns numbers into strings.
 */
import type { FastifyTypeProvider } from 'fastify';
import { Type, type Static, type TProperties, type TSchema, type TString } from '@sinclair/typebox';

/** JSON Schema annotations: a description and the example the document shows (OpenAPI 3.1 `examples`). */
function annotations(description?: string, example?: string | null): { description?: string; examples?: (string | null)[] } {
  return { ...(description ? { description } : {}), ...(example !== undefined ? { examples: [example] } : {}) };
}

/** A row field: always a JSON string; `example` is what the document shows for it. */
export const str = (description?: string, example?: string) => Type.String(annotations(description, example));
/** A row field that may be null. */
export const strOrNull = (description?: string, example?: string | null) => Type.Union([Type.String(), Type.Null()], annotations(description, example));

/** Made-up but well-formed values, in the formats the server sends, for the document's examples. */
export const EXAMPLE = {
  id: '42',
  money: '4.99',
  timestamp: '2026-11-23 14:05:00',
  username: 'Steve',
  email: 'steve@example.com',
  currency: 'USD',
  ip: '203.0.113.7',
} as const;

/** A row field of free text, shown as `value` in the document. */
export const example = (value: string, description?: string) => str(description, value);
/** Row fields of the kinds every feature sends, with their examples. */
export const idStr = (description?: string) => str(description, EXAMPLE.id);
export const moneyStr = (description = 'decimal, two places') => str(description, EXAMPLE.money);
export const dateStr = (description = 'YYYY-MM-DD HH:MM:SS in the site time zone') => str(description, EXAMPLE.timestamp);
export const flagStr = (description = '1 or 0') => str(description, '1');
export const usernameStr = (description?: string) => str(description, EXAMPLE.username);
/** A row object: only the declared fields are sent. */
export const row = <T extends TProperties>(props: T, id?: string) => Type.Object(props, id ? { $id: id } : {});
/** `{status: true, ...fields}` */
export const ok = <T extends TProperties>(props: T = {} as T) => Type.Object({ status: Type.Literal(true), ...props });
/** `{success: true, ...fields}` */
export const success = <T extends TProperties>(props: T = {} as T) => Type.Object({ success: Type.Literal(true), ...props });
/** A numeric id in a path: digits only, kept as a string so big ids stay exact. */
export const idParam = <K extends string = 'id'>(name: K = 'id' as K) =>
  Type.Object({ [name]: Type.String({ pattern: '^[0-9]{1,18}$' }) } as Record<K, TString>);
/** A decimal as text: plain digits, an optional `-` and fraction; no `+`, exponent, hex, space or comma. */
const DECIMAL_TEXT = '^-?[0-9]{1,15}(\\.[0-9]{1,15})?$';
/** A whole number as text, in the same plain digits. */
const INTEGER_TEXT = '^-?[0-9]{1,15}$';
/** A body field taking a decimal as a JSON number or as a form's text (decisions.md §8): other text (`abc`) is VALIDATION_ERROR naming it. */
export const decimalText = (opts: object = {}) => Type.Union([Type.String({ pattern: DECIMAL_TEXT }), Type.Number()], opts);
/** The same for a whole number. */
export const integerText = (opts: object = {}) => Type.Union([Type.String({ pattern: INTEGER_TEXT }), Type.Integer()], opts);
/**
 * A number field whose handler reads any text itself and answers the error the API names for a
 * malformed value (INVALID_AMOUNT, INVALID_QUANTITY, WRONG_CODE, a not-found code for an id): the
 * schema lets every text through to it. A field without such a code takes decimalText or integerText.
 */
export const numeric = (opts: object = {}) => Type.Union([Type.String(), Type.Number()], opts);
/** A boolean that forms send as `true`/`false`/`1`/`0`. */
export const boolish = () => Type.Union([Type.Boolean(), Type.String({ enum: ['true', 'false', '1', '0', ''] }), Type.Number({ enum: [0, 1] })]);

export function toBool(value: unknown): boolean {
  return value === true || value === 1 || value === 'true' || value === '1';
}

/**
 * Types requests and replies from route schemas: `app.withTypeProvider<TypeBoxProvider>()`.
 * (@fastify/type-provider-typebox 6 speaks the `typebox` 1.x package, not the @sinclair/typebox
 * 0.34 these schemas are made with.)
 */
export interface TypeBoxProvider extends FastifyTypeProvider {
  validator: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
  serializer: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
}

export type { TSchema };
