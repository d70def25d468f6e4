/** What a database error means for the caller: run it again, answer "taken", or report a lasting write fault. */

const MYSQL_LOCK_CONFLICTS = new Set([
  1213, // ER_LOCK_DEADLOCK: a deadlock, or on Galera a certification conflict with another node's commit
  1205, // ER_LOCK_WAIT_TIMEOUT
  1047, // ER_UNKNOWN_COM_ERROR: Galera's "WSREP has not yet prepared node for application use"
]);

/**
 * True when MySQL/MariaDB gave up a transaction to another one (a deadlock, a lock wait timeout,
 * or on a Galera cluster a write that lost certification to another node's, at any statement or
 * at commit) or a Galera node could not take it yet: the transaction was rolled back whole, so it
 * is tried again, and when the tries run out the request is answered "busy, retry" rather than a
 * fault. A lost connection is not one of these: a commit cut off may have happened.
 */
export function isLockConflict(err: unknown): boolean {
  const e = err as { errno?: number; cause?: { errno?: number } } | undefined;
  return MYSQL_LOCK_CONFLICTS.has(e?.errno ?? e?.cause?.errno ?? 0);
}

/** Transactions whose connection was lost before their commit was sent: the server rolled them back. */
const lostUncommitted = new WeakSet<object>();

/** Marks `err` as a transaction's whose connection broke before its commit was sent (see isRetryable). */
export function markLostUncommitted(err: object): void {
  lostUncommitted.add(err);
}

/** Transactions cut off while their commit was on its way: the server may have committed them. */
const commitUnknown = new WeakSet<object>();

/** Marks `err` as a transaction's whose connection broke after its commit was sent (see isCommitUnknown). */
export function markCommitUnknown(err: object): void {
  commitUnknown.add(err);
}

const MYSQL_ERROR_DURING_COMMIT = 1180; // Galera: the node left the primary component as the commit ran

/**
 * True when nobody can tell whether the transaction committed: its connection broke after the
 * commit was sent, or a Galera node lost the primary component during the commit. Never run again.
 */
export function isCommitUnknown(err: unknown): boolean {
  const e = err as { errno?: number; cause?: { errno?: number } } | undefined;
  return (e?.errno ?? e?.cause?.errno) === MYSQL_ERROR_DURING_COMMIT || (typeof err === 'object' && err !== null && commitUnknown.has(err));
}

/**
 * True when a transaction may simply be run again: it lost to another (isLockConflict), or its
 * connection broke before its commit was sent (a database node lost mid-transaction; on a new
 * connection the pool reaches another). A connection lost after that may have committed.
 */
export function isRetryable(err: unknown): boolean {
  return isLockConflict(err) || (typeof err === 'object' && err !== null && lostUncommitted.has(err));
}

/**
 * True when a write lost to a unique index (two requests racing for one name, a repeated payment
 * id): the index decides, and the caller answers with the API's error for a taken value.
 */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { errno?: number; errcode?: number; message?: string } | undefined;
  // MySQL ER_DUP_ENTRY; SQLite SQLITE_CONSTRAINT_UNIQUE and _PRIMARYKEY
  return e?.errno === 1062 || e?.errcode === 2067 || e?.errcode === 1555 || /unique|duplicate/i.test(String(e?.message));
}

const SQLITE_READONLY = 8;
const SQLITE_FULL = 13;
const MYSQL_DISK_FULL = new Set([1021, 1114]); // ER_DISK_FULL, ER_RECORD_FILE_FULL
const MYSQL_READ_ONLY = 1290; // ER_OPTION_PREVENTS_STATEMENT: read_only

/**
 * Why a write was refused, when the cause lasts until someone acts: the disk is full, the
 * database is read-only. Undefined for anything else.
 */
export function lastingWriteFault(err: unknown): string | undefined {
  for (let e = err as { errno?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    const code = sqliteCode(e);
    if (code === SQLITE_FULL || MYSQL_DISK_FULL.has(e.errno as number)) return 'The disk is full.';
    if (code === SQLITE_READONLY || e.errno === MYSQL_READ_ONLY) return 'The database is read-only.';
  }
  return undefined;
}

/** The primary result code of a node:sqlite error (extended codes carry it in the low byte). */
export function sqliteCode(err: unknown): number | undefined {
  const code = (err as { errcode?: unknown })?.errcode;
  return typeof code === 'number' ? code & 0xff : undefined;
}

const UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'ER_CON_COUNT_ERROR',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'PROTOCOL_SEQUENCE_TIMEOUT',
]);
/**
 * A database that answers but cannot take writes for now — a full disk, a read-only file, an
 * I/O error, a lock held too long by another process — is unavailable too: the request changed
 * nothing, and the same request may succeed once the cause is gone.
 * SQLite: BUSY, NOMEM, READONLY, IOERR, FULL, CANTOPEN. MySQL: ER_DISK_FULL, ER_RECORD_FILE_FULL,
 * ER_OUT_OF_RESOURCES, ER_OPTION_PREVENTS_STATEMENT (read_only).
 */
const SQLITE_UNAVAILABLE = new Set([5, 7, 8, 10, 13, 14]);
const MYSQL_UNAVAILABLE = new Set([1021, 1114, 1041, 1290]);

/** True for errors that mean "the database cannot be reached", however deep the driver wrapped them. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (
    let e = err as { code?: string; cause?: unknown; name?: string; message?: string } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (e.code && UNAVAILABLE.has(e.code)) return true;
    const errno = (e as { errno?: number }).errno;
    if (SQLITE_UNAVAILABLE.has(sqliteCode(e) ?? -1)) return true;
    if (typeof errno === 'number' && MYSQL_UNAVAILABLE.has(errno)) return true;
    if (e.name === 'ConnectionException') return true;
    if (
      typeof e.message === 'string' &&
      /connection (is in closed state|lost)|Pool is closed|Can't add new command when connection is in closed state/i.test(e.message)
    )
      return true;
  }
  return false;
}
