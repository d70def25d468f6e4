/** How values are bound: counts for `limit ?`, and what each driver takes in place of JS values it does not. */

/**
 * A count bound to `limit ?` or `offset ?`, the one way every statement binds one. mysql2 sends a
 * JS number as a DOUBLE, which MySQL 8.0.22 and later refuse there in a prepared statement; a
 * BigInt goes as its digits, which MySQL and MariaDB take (SQLite gets it back as a number, see
 * sqliteValue). Anything but a whole number from 0 is a bug of the caller, who checks what a
 * client sent.
 */
export function countParam(n: number): bigint {
  if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`A limit or offset must be a whole number from 0, not ${String(n)}`);
  return BigInt(n);
}

/** What `limit ?` binds for "every row" before an `offset ?`: more rows than a table holds, and within what both databases take. */
export const NO_LIMIT = 2n ** 63n - 1n;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * SQLite takes no booleans and no undefined; a count (countParam) goes as a number, as SQLite's
 * plans were measured with (an integer `limit ?` moves some of them); the rest binds as it is.
 */
export function sqliteValue(value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint' && value <= MAX_SAFE) return Number(value);
  return value;
}

/** mysql2 takes null, not undefined. */
export function mysqlValue(value: unknown): unknown {
  return value === undefined ? null : value;
}
