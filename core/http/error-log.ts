/** The log's view of an error: a database error's values stay out of it. */
interface ErrorLike {
  name?: string;
  message?: string;
  stack?: string;
  code?: unknown;
  errno?: unknown;
  sqlState?: unknown;
  errcode?: unknown;
  statusCode?: unknown;
  cause?: unknown;
  sql?: unknown;
  sqlMessage?: unknown;
}

/** Errors of the database drivers (mysql2, node:sqlite) and MikroORM's wrappers of them. */
function isDatabaseError(e: ErrorLike): boolean {
  return (
    e.sql !== undefined ||
    e.sqlMessage !== undefined ||
    e.sqlState !== undefined ||
    e.errcode !== undefined ||
    (typeof e.code === 'string' && /^(ER_|ERR_SQLITE|SQLITE_)/.test(e.code)) ||
    (typeof e.name === 'string' && /(Driver|Constraint|Violation|Syntax|Lock|Deadlock|Connection|Table|Field|Database)\w*Exception$/.test(e.name))
  );
}

/**
 * The log's `err` serializer. A database error's message, SQL text and driver fields carry
 * statement parameters and row values (a pending TOTP secret, token hashes, `Duplicate entry
 * '<value>'`), so only its class and error codes are logged, with the stack's frames but not its
 * first line (the message again). Other errors keep type, message, stack and code; causes are
 * serialized by the same rules. No other field is copied, so nothing unknown slips through.
 */
export function serializeError(err: unknown, depth = 0): { type: string; message: string; stack: string; [key: string]: unknown } {
  const e = (typeof err === 'object' && err !== null ? err : {}) as ErrorLike;
  const database = isDatabaseError(e);
  const out = {
    type: e.name ?? typeof err,
    message: database ? `database error ${[e.code, e.errno, e.errcode].filter((v) => v !== undefined).join(' ')}`.trim() : String(e.message ?? err),
    stack: database
      ? (e.stack ?? '')
          .split('\n')
          .filter((line) => /^\s+at /.test(line))
          .join('\n')
      : (e.stack ?? ''),
  } as { type: string; message: string; stack: string; [key: string]: unknown };
  for (const key of ['code', 'errno', 'sqlState', 'errcode', 'statusCode'] as const) {
    if (typeof e[key] === 'string' || typeof e[key] === 'number') out[key] = e[key];
  }
  if (e.cause !== undefined && depth < 5) out.cause = serializeError(e.cause, depth + 1);
  return out;
}
