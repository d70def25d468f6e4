/**
 * Schema helpers for routes. Row-like objects serialize every value as a JSON string
 * (decisions.md §2): declare such fields with `str()`; the serializer turns numbers into strings.
 */
import type { FastifyTypeProvider } from 'fastify';
import { Type, type Static, type TProperties, type TSchema, type TString } from '@sinclair/typebox';

/** A row field: always a JSON string. */
export const str = (description?: string) => Type.String(description ? { description } : {});
/** A row field that may be null. */
export const strOrNull = (description?: string) => Type.Union([Type.String(), Type.Null()], description ? { description } : {});
/** A row object: only the declared fields are sent. */
export const row = <T extends TProperties>(props: T, id?: string) => Type.Object(props, id ? { $id: id } : {});
/** `{status: true, ...fields}` */
export const ok = <T extends TProperties>(props: T = {} as T) => Type.Object({ status: Type.Literal(true), ...props });
/** `{success: true, ...fields}` */
export const success = <T extends TProperties>(props: T = {} as T) => Type.Object({ success: Type.Literal(true), ...props });
/** A numeric id in a path: digits only, kept as a string so big ids stay exact. */
export const idParam = <K extends string = 'id'>(name: K = 'id' as K) =>
  Type.Object({ [name]: Type.String({ pattern: '^[0-9]{1,18}$' }) } as Record<K, TString>);
/** A body field that may arrive as a number or a string from a form. */
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
