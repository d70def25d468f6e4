import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { EntitySchema, MikroORM, Options } from '@mikro-orm/core';
import { Table } from './table.ts';
import type { Sql } from './sql.ts';
import { compareCodeUnits } from './format.ts';
import type { SqliteDialect } from 'kysely';
import type { Pool, PoolConnection } from 'mysql2/promise';
import type { AppConfig } from './config.ts';

export type Dialect = 'sqlite' | 'mysql';

/**
 * A migration written once per dialect. `npm run migration:create -- <feature> <name>` writes
 * these from the difference between a feature's entities and its migrated schema.
 */
export interface MigrationDef {
  /** `<timestamp>_<feature>_<what>`: the timestamp orders migrations across features. */
  name: string;
  sqlite: string[];
  mysql: string[];
}

export function defineMigration(def: MigrationDef): MigrationDef {
  return def;
}

/** What the event bus needs of the database: where "after commit" is. */
export interface TransactionScope {
  afterCommit(fn: () => void): void;
}

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

export interface DatabaseUrl {
  dialect: Dialect;
  /** SQLite file or `:memory:`. */
  file?: string;
  url?: string;
  dbName?: string;
}

export function parseDatabaseUrl(url: string): DatabaseUrl {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length);
    if (!file) throw new Error('DATABASE_URL: sqlite: needs a file path or :memory:');
    return { dialect: 'sqlite', file };
  }
  if (/^(mysql|mariadb):\/\//.test(url)) {
    const parsed = new URL(url);
    const dbName = decodeURIComponent(parsed.pathname.slice(1));
    if (!dbName) throw new Error('DATABASE_URL: a mysql:// URL needs a database name');
    return { dialect: 'mysql', url: url.replace(/^mariadb:/, 'mysql:'), dbName };
  }
  throw new Error(`DATABASE_URL must start with sqlite:, mysql:// or mariadb:// (got "${url.split(':')[0]}:")`);
}

export interface RunResult { affectedRows: number; insertId: number }

/** How busy the connections are, for the metrics: in use, idle, and callers waiting for one. */
export interface PoolStats { inUse: number; idle: number; waiting: number }

/** mysql2 keeps its pool's counts in fields its typings leave out. */
interface MysqlPoolCounts {
  _allConnections: { length: number };
  _freeConnections: { length: number };
  _connectionQueue: { length: number };
}

/**
 * One connection's way of running a bound statement. Values travel apart from the SQL text on
 * both dialects: SQLite binds them to a prepared statement, MySQL/MariaDB to a server-side
 * prepared statement (`execute`). No value is ever written into SQL text, so no sql_mode or
 * character set can turn one into SQL.
 */
interface Runner {
  all(sql: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  arrays(sql: string, params: unknown[]): Promise<unknown[][]>;
  run(sql: string, params: unknown[]): Promise<RunResult>;
}

interface TxState {
  runner: Runner;
  afterCommit: (() => void)[];
  /** A write statement ran: its commit shows the database takes writes again. */
  wrote: boolean;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * SQLite takes no booleans and no undefined; a count (countParam) goes as a number, as SQLite's
 * plans were measured with (an integer `limit ?` moves some of them); the rest binds as it is.
 */
function sqliteValue(value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint' && value <= MAX_SAFE) return Number(value);
  return value;
}

/** Prepared statements by SQL text, the oldest dropped past a bound. */
class StatementCache {
  readonly #db: DatabaseSync;
  readonly #cache = new Map<string, StatementSync>();
  readonly #max: number;
  readonly #arrays: boolean;

  /** `arrays`: its statements return rows as arrays of values. */
  constructor(db: DatabaseSync, arrays: boolean, max = 500) {
    this.#db = db;
    this.#arrays = arrays;
    this.#max = max;
  }

  get(sql: string): StatementSync {
    let stmt = this.#cache.get(sql);
    if (stmt) return stmt;
    // The oldest prepared goes first: the statements a server runs are few and fixed, so the
    // bound only matters for text that varies (IN lists of different lengths).
    if (this.#cache.size >= this.#max) this.#cache.delete(this.#cache.keys().next().value!);
    stmt = this.#db.prepare(sql);
    if (this.#arrays) stmt.setReturnArrays(true);
    this.#cache.set(sql, stmt);
    return stmt;
  }
}

/** The most transactions one commit carries: bounds how long the first of them waits for it. */
const MAX_BATCH = 16;

/**
 * Transactions that share one commit (group commit). Each ran alone, in turn, inside its own
 * savepoint; none is answered until the commit that makes all of them durable has returned.
 */
interface Batch {
  /** Transactions waiting to run next in this batch; resumed with false when it closes without them. */
  readonly queue: ((joined: boolean) => void)[];
  members: number;
  /** The batch has waited its one turn of the event loop for more transactions. */
  waited: boolean;
  /** Settles once the batch commits or fails; every finished member awaits it. */
  readonly committed: Promise<void>;
  settle(err?: unknown): void;
  /** Lets statements and transactions waiting outside the batch go. */
  release(): void;
  /** Why SQLite dropped the whole transaction (a full disk, an I/O error), failing every member. */
  lost?: unknown;
}

/**
 * The embedded database: one connection, its statements prepared once and reused. Statements
 * run synchronously, so each is atomic; a transaction, which spans awaits, holds the connection
 * until it ends, and statements from outside it wait their turn rather than joining it.
 *
 * Commits are grouped: a transaction that ends while others wait for the connection hands it to
 * the next one inside the same SQLite transaction, and one COMMIT (one fsync) then makes all of
 * them durable. Each runs in a savepoint of its own, so one that fails undoes only its own work.
 * Nothing outside the batch sees its writes before that commit, and no member is answered before
 * it: a crash loses only transactions nobody was told had happened.
 */
class SqliteConnection {
  readonly db: DatabaseSync;
  readonly #statements: StatementCache;
  readonly #arrayStatements: StatementCache;
  #holder?: Promise<void>;
  /** The batch holding the connection, while it takes more transactions. */
  #batch?: Batch;
  /** Statements and transactions waiting for the one that holds the connection. */
  #waiting = 0;

  constructor(db: DatabaseSync) {
    this.db = db;
    this.#statements = new StatementCache(db, false);
    this.#arrayStatements = new StatementCache(db, true);
  }

  /** Statements of the transaction that holds the connection: they run at once. */
  readonly runner: Runner = {
    all: async (sql, params) => this.#all(sql, params),
    arrays: async (sql, params) => this.#arrays(sql, params),
    run: async (sql, params) => this.#run(sql, params),
  };

  /**
   * Statements from outside any transaction: they wait while one holds the connection, then run
   * with no await between the check and the statement, so none can slip into a transaction.
   */
  readonly outside: Runner = {
    all: this.#afterHolder((sql, params) => this.#all(sql, params)),
    arrays: this.#afterHolder((sql, params) => this.#arrays(sql, params)),
    run: this.#afterHolder((sql, params) => this.#run(sql, params)),
  };

  /** `statement`, run once no transaction holds the connection, in the same step as the last check. */
  #afterHolder<T>(statement: (sql: string, params: unknown[]) => T): (sql: string, params: unknown[]) => Promise<T> {
    return async (sql, params) => {
      while (this.#holder) await this.#wait();
      return statement(sql, params);
    };
  }

  /**
   * One turn of waiting for the transaction that holds the connection, counted. Callers check the
   * holder again after it, in the same step as they go on.
   */
  async #wait(): Promise<void> {
    this.#waiting++;
    try {
      await this.#holder;
    } finally {
      this.#waiting--;
    }
  }

  stats(): PoolStats {
    const inUse = this.#holder ? 1 : 0;
    return { inUse, idle: 1 - inUse, waiting: this.#waiting + (this.#batch?.queue.length ?? 0) };
  }

  #all(sql: string, params: unknown[]): Record<string, unknown>[] {
    return this.#statements.get(sql).all(...params.map(sqliteValue) as never[]) as Record<string, unknown>[];
  }

  #arrays(sql: string, params: unknown[]): unknown[][] {
    return this.#arrayStatements.get(sql).all(...params.map(sqliteValue) as never[]) as unknown as unknown[][];
  }

  #run(sql: string, params: unknown[]): RunResult {
    const res = this.#statements.get(sql).run(...params.map(sqliteValue) as never[]);
    return { affectedRows: Number(res.changes), insertId: Number(res.lastInsertRowid) };
  }

  /**
   * Throws unless the database can be written now. A page is changed inside a transaction that is
   * then rolled back, so nothing reaches the disk; BEGIN IMMEDIATE alone passes on a file that
   * SQLite could only open read-only.
   */
  async probeWrite(): Promise<void> {
    while (this.#holder) await this.#wait();
    this.db.exec('begin immediate');
    try {
      // A row of the host's own settings table, written and rolled back: the values bound.
      this.db.prepare('insert into core_settings (`key`, value) values (?, ?)').run('health.probe', '');
    } finally {
      if (this.db.isTransaction) this.db.exec('rollback');
    }
  }

  /** Closes the connection once the batch that holds it (its commit a turn away, perhaps) has ended. */
  async close(): Promise<void> {
    while (this.#holder) await this.#wait();
    if (this.db.isOpen) this.db.close();
  }

  async transaction<T>(fn: (runner: Runner) => Promise<T>): Promise<T> {
    // Checked and taken in one synchronous step: two transactions can never both run at once.
    for (;;) {
      const batch = this.#batch;
      if (batch) {
        if (await new Promise<boolean>((resume) => batch.queue.push(resume))) return this.#member(batch, fn);
      } else if (this.#holder) {
        await this.#wait();
      } else {
        break;
      }
    }
    let release!: () => void;
    this.#holder = new Promise((r) => { release = r; });
    try {
      // IMMEDIATE takes the write lock now: another process writing the same file makes this
      // wait (busy_timeout) instead of failing halfway through.
      this.db.exec('begin immediate');
    } catch (err) {
      this.#holder = undefined;
      release();
      throw err;
    }
    let settle!: (err?: unknown) => void;
    const committed = new Promise<void>((resolve, reject) => { settle = (err) => (err === undefined ? resolve() : reject(err)); });
    const batch: Batch = { queue: [], members: 1, waited: false, committed, settle, release };
    this.#batch = batch;
    return this.#member(batch, fn);
  }

  /** Runs `fn` as the batch's current member, hands the connection on, and answers after the commit. */
  async #member<T>(batch: Batch, fn: (runner: Runner) => Promise<T>): Promise<T> {
    let outcome: { result: T } | { error: unknown };
    try {
      this.db.exec('savepoint member');
      outcome = { result: await fn(this.runner) };
      this.db.exec('release member');
    } catch (err) {
      outcome = { error: err };
      // SQLite may have rolled back the whole transaction already (a full disk, an I/O error):
      // then every member before this one is lost with it, as it is if this one cannot be undone.
      try {
        if (!this.db.isTransaction) throw err;
        this.db.exec('rollback to member');
        this.db.exec('release member');
      } catch (lost) {
        batch.lost = lost;
      }
    }
    this.#handOn(batch);
    // A refusal waits for the commit too: what it saw of the members before it is then durable
    // (or, if the batch fails, the batch's failure is the answer).
    await batch.committed;
    if ('error' in outcome) throw outcome.error;
    return outcome.result;
  }

  /** The next waiting transaction joins the batch, or the batch commits and lets the connection go. */
  #handOn(batch: Batch): void {
    const open = batch.lost === undefined && batch.members < MAX_BATCH;
    if (open && batch.queue.length) {
      batch.members++;
      batch.queue.shift()!(true);
      return;
    }
    // A transaction runs within one turn of the event loop (its statements are synchronous), so
    // the requests that arrived with it reach theirs only after it: the batch waits one turn for
    // them, once. Alone, a transaction's commit comes that turn later, tens of microseconds.
    if (open && !batch.waited) {
      batch.waited = true;
      setImmediate(() => this.#handOn(batch));
      return;
    }
    let failure: unknown;
    try {
      if (batch.lost !== undefined) throw batch.lost;
      this.db.exec('commit');
    } catch (err) {
      failure = err;
      // Run from the event loop, so nothing may escape: a connection closed under it fails the batch only.
      try {
        if (this.db.isTransaction) this.db.exec('rollback');
      } catch { /* the failure above is what the members get */ }
    }
    this.#batch = undefined;
    this.#holder = undefined;
    batch.release();
    // Those left out of a full batch start the next one a turn later, after the statements that
    // waited outside: a stream of writes cannot starve the reads.
    const left = batch.queue.splice(0);
    if (left.length) setImmediate(() => { for (const resume of left) resume(false); });
    batch.settle(failure);
  }
}

function mysqlValue(value: unknown): unknown {
  return value === undefined ? null : value;
}

/** A pooled MySQL/MariaDB connection (or the pool) as a Runner. */
function mysqlRunner(conn: Pool | PoolConnection): Runner {
  // Reads and statements with values are prepared (the binary protocol parses big results with
  // less work: the listing gains about a tenth); other statements without values (DDL, CHECKSUM
  // TABLE) go as text: some cannot be prepared, and there is nothing to bind.
  const send = (sql: string, params: unknown[]) => params.length || /^\s*select\b/i.test(sql) ? conn.execute(sql, params.map(mysqlValue) as never[]) : conn.query(sql);
  return {
    all: async (sql, params) => (await send(sql, params))[0] as Record<string, unknown>[],
    arrays: async (sql, params) => (await conn.execute({ sql, rowsAsArray: true }, params.map(mysqlValue) as never[]))[0] as unknown[][],
    run: async (sql, params) => {
      const res = (await send(sql, params))[0] as { affectedRows?: number; insertId?: number };
      return { affectedRows: Number(res.affectedRows ?? 0), insertId: Number(res.insertId ?? 0) };
    },
  };
}

/** How often a transaction that lost to another is run again (database.transactionTries, retryDelayMs). */
export interface RetryOptions { tries: number; delayMs: number }

/**
 * The database as features see it: bound statements on the current transaction (or outside
 * one), and all-or-nothing transactions that nested calls join. MikroORM holds the entities and
 * runs the migrations; requests never pass through it.
 */
export class Database implements TransactionScope {
  readonly dialect: Dialect;
  /** SQLite's file (or `:memory:`): features keeping files of their own put them beside it. Undefined on MySQL. */
  readonly file?: string;
  /** Names of every migration the enabled features define. */
  readonly migrationNames: readonly string[];
  /** Statements run since start: a cheap gauge of how much work a request does. */
  statements = 0;
  /** Transactions run again (isRetryable) since start. */
  retries = 0;
  readonly #retry: RetryOptions;
  readonly #tx = new AsyncLocalStorage<TxState>();
  readonly #sqlite?: SqliteConnection;
  readonly #pool?: Pool;
  /** Statements outside a transaction, each on whichever pooled connection is free. */
  readonly #poolRunner?: Runner;
  readonly #makeOrm: () => Promise<MikroORM>;
  #orm?: Promise<MikroORM>;
  readonly #writeFaultMs: number;
  /** The last write refused for a lasting cause (lastingWriteFault), until a write succeeds. */
  #writeFault?: { why: string; at: number };

  constructor(dialect: Dialect, driver: { sqlite?: SqliteConnection; pool?: Pool; file?: string }, migrationNames: string[], makeOrm: () => Promise<MikroORM>, retry: RetryOptions, writeFaultSeconds: number) {
    this.dialect = dialect;
    this.file = driver.file;
    this.#retry = retry;
    this.#writeFaultMs = writeFaultSeconds * 1000;
    this.#sqlite = driver.sqlite;
    this.#pool = driver.pool;
    if (driver.pool) this.#poolRunner = mysqlRunner(driver.pool);
    this.migrationNames = migrationNames;
    this.#makeOrm = makeOrm;
  }

  /** The SQLite database's file (absolute); undefined in memory and on MySQL. */
  get sqliteFile(): string | undefined {
    return this.#sqlite?.db.location() ?? undefined;
  }

  /**
   * MikroORM over the same database, made on first use. Only migrations and schema checks need
   * it, so a server whose schema is up to date never loads it: that keeps tens of megabytes and
   * most of a second out of every start.
   */
  orm(): Promise<MikroORM> {
    this.#orm ??= this.#makeOrm();
    return this.#orm;
  }

  #runner(): Runner {
    const tx = this.#tx.getStore();
    if (tx) return tx.runner;
    if (this.#sqlite) return this.#sqlite.outside;
    return this.#poolRunner!;
  }

  // query and run hand on the runner's promise rather than wrap it in one more: an async function
  // returning a promise costs an allocation and three turns of the microtask queue, and a buy
  // runs a dozen statements. The runners' functions are async, so an error still rejects.

  /** Rows of a statement written with core/sql.ts's `sql` tag, its values bound (`?` on both dialects). */
  query<T = Record<string, unknown>>(statement: Sql | string, params: unknown[] = []): Promise<T[]> {
    this.statements++;
    if (typeof statement !== 'string') return this.#runner().all(statement.text, statement.values) as Promise<T[]>;
    return this.#runner().all(statement, params) as Promise<T[]>;
  }

  /**
   * Rows of a read as arrays of values, in the order of its select list: cheaper to make and to
   * read than objects (node:sqlite makes each row object in dictionary mode). Table.select reads them.
   */
  queryArrays(statement: Sql | string, params: unknown[] = []): Promise<unknown[][]> {
    this.statements++;
    if (typeof statement !== 'string') return this.#runner().arrays(statement.text, statement.values);
    return this.#runner().arrays(statement, params);
  }

  /** A write, its values bound; returns affected rows and the inserted id. */
  run(statement: Sql | string, params: unknown[] = []): Promise<RunResult> {
    this.statements++;
    const text = typeof statement === 'string' ? statement : statement.text;
    const values = typeof statement === 'string' ? params : statement.values;
    const tx = this.#tx.getStore();
    if (tx) {
      tx.wrote = true;
      return tx.runner.run(text, values);
    }
    const outside = this.#sqlite ? this.#sqlite.outside : this.#poolRunner!;
    return outside.run(text, values).then(this.#wrote, this.#refused);
  }

  readonly #wrote = (result: RunResult): RunResult => {
    this.#writeFault = undefined;
    return result;
  };

  readonly #refused = (err: unknown): never => {
    const why = lastingWriteFault(err);
    if (why) this.#writeFault = { why, at: Date.now() };
    throw err;
  };

  /** `FOR UPDATE` where the database can lock rows; SQLite serialises writers on its own. */
  get forUpdate(): string {
    return this.dialect === 'mysql' ? ' FOR UPDATE' : '';
  }

  /** `LOCK IN SHARE MODE` where the database can lock rows: others may read the row, not change it. */
  get forShare(): string {
    return this.dialect === 'mysql' ? ' LOCK IN SHARE MODE' : '';
  }

  /** True inside `transaction()`. */
  get inTransaction(): boolean {
    return this.#tx.getStore() !== undefined;
  }

  /**
   * Runs `fn` all-or-nothing. Called inside another transaction it joins it, so a service can be
   * used alone or as one step of a bigger unit (a buy debits credits inside the store's
   * transaction).
   *
   * On MySQL/MariaDB the outermost call runs `fn` again from the start when it lost to another
   * transaction or its connection before committing (isRetryable): up to `transactionTries`
   * times, a random wait of up to `retryDelayMs` × the try between. So `fn` must do nothing
   * outside the database that a second run would repeat: no answers, no outbound calls, no
   * counters in memory. Work that follows the outcome goes to afterCommit (and events' `on`
   * listeners, which use it): a failed try's list is dropped with it, only the committed try's runs.
   */
  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#tx.getStore()) return fn();
    for (let attempt = 1; ; attempt++) {
      try {
        const afterCommit: (() => void)[] = [];
        let tx: TxState | undefined;
        const inTx = (runner: Runner) => this.#tx.run(tx = { runner, afterCommit, wrote: false }, fn);
        const result = this.#sqlite ? await this.#sqlite.transaction(inTx) : await this.#mysqlTransaction(inTx);
        if (tx?.wrote) this.#writeFault = undefined;
        for (const cb of afterCommit) cb();
        return result;
      } catch (err) {
        if (attempt >= this.#retry.tries || this.dialect !== 'mysql' || !isRetryable(err)) this.#refused(err);
        this.retries++;
        await new Promise((r) => setTimeout(r, Math.random() * this.#retry.delayMs * attempt));
      }
    }
  }

  async #mysqlTransaction<T>(fn: (runner: Runner) => Promise<T>): Promise<T> {
    const conn = await this.#pool!.getConnection();
    try {
      let committing = false;
      try {
        await conn.query('start transaction');
        const result = await fn(mysqlRunner(conn));
        committing = true;
        await conn.query('commit');
        return result;
      } catch (err) {
        await conn.query('rollback').catch(() => conn.destroy());
        // mysql2 marks `fatal` the errors after which the connection is gone (lost, reset, closed).
        if (!committing && (err as { fatal?: boolean } | undefined)?.fatal === true) lostUncommitted.add(err as object);
        throw err;
      }
    } finally {
      conn.release();
    }
  }

  /**
   * Connections in use and idle, and callers waiting for one: the MySQL pool's, or SQLite's one
   * connection, in use while a transaction holds it.
   */
  poolStats(): PoolStats {
    if (this.#sqlite) return this.#sqlite.stats();
    const counts = this.#pool!.pool as unknown as MysqlPoolCounts;
    const idle = counts._freeConnections.length;
    return { inUse: counts._allConnections.length - idle, idle, waiting: counts._connectionQueue.length };
  }

  /** Runs `fn` once the current transaction commits, or now if there is none; dropped on rollback. */
  afterCommit(fn: () => void): void {
    const tx = this.#tx.getStore();
    if (tx) tx.afterCommit.push(fn);
    else fn();
  }

  /**
   * Why the database cannot serve, or undefined when it can (for /health): it does not answer,
   * (SQLite) it answers but cannot be written, or a write was refused for a lasting cause (a full
   * disk, which a probe written and undone never reaches) and none has succeeded since, for up to
   * `database.writeFaultSeconds` after the last such refusal.
   */
  async problem(): Promise<string | undefined> {
    try {
      if (this.#sqlite) {
        // A write tried and undone: a read-only file or folder fails here.
        await this.#sqlite.probeWrite();
      } else {
        await this.#pool!.query('select 1');
      }
    } catch (err) {
      return lastingWriteFault(err) ?? 'The database does not answer.';
    }
    const fault = this.#writeFault;
    return fault && Date.now() - fault.at < this.#writeFaultMs ? fault.why : undefined;
  }

  async close(): Promise<void> {
    if (this.#orm) await (await this.#orm).close(true);
    await this.#pool?.end();
    await this.#sqlite?.close();
  }
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

async function isMariaDb(url: string, timeoutMs: number): Promise<boolean> {
  const u = new URL(url);
  u.pathname = '/';
  const { createConnection } = await import('mysql2/promise');
  const conn = await createConnection({ uri: u.toString(), connectTimeout: timeoutMs });
  try {
    const [rows] = await conn.query('SELECT VERSION() AS v');
    return String((rows as { v: string }[])[0]?.v).includes('MariaDB');
  } finally {
    await conn.end();
  }
}

export interface OpenOptions {
  config: AppConfig['database'];
  /** Tables made by core/table.ts's defineEntity, or MikroORM entities (typed loosely: each has its own inferred type). */
  entities: object[];
  migrations: MigrationDef[];
}

/**
 * Kysely's SQLite dialect over the server's own connection, so migrations (MikroORM) and requests
 * (Database) share one database even in memory. MikroORM's close leaves the connection open:
 * Database closes it last.
 */
async function sharedSqliteDialect(db: DatabaseSync): Promise<SqliteDialect> {
  const { SqliteDialect } = await import('kysely');
  return new SqliteDialect({
    database: () => ({
      prepare(sql: string) {
        const stmt = db.prepare(sql);
        return {
          reader: stmt.columns().length > 0,
          all: (params: readonly unknown[]) => stmt.all(...params.map(sqliteValue) as never[]),
          run: (params: readonly unknown[]) => stmt.run(...params.map(sqliteValue) as never[]),
          iterate: (params: readonly unknown[]) => stmt.iterate(...params.map(sqliteValue) as never[]),
        };
      },
      close() {},
    }) as never,
  });
}

export async function openDatabase({ config, entities, migrations }: OpenOptions): Promise<Database> {
  const target = parseDatabaseUrl(config.url);
  const names = migrations.map((m) => m.name);
  const retry = { tries: config.transactionTries, delayMs: config.retryDelayMs };
  const ormOptions = async (): Promise<Partial<Options>> => {
    const { Migrator } = await import('@mikro-orm/migrations');
    return {
      // Tables described with core/table.ts become MikroORM entities here, and only here.
      entities: await Promise.all(entities.map((e) => (e instanceof Table ? e.entity() : e))) as EntitySchema[],
      extensions: [Migrator],
      debug: config.debug,
      discovery: { warnWhenNoEntities: false },
      migrations: {
        migrationsList: await buildMigrationList(migrations, target.dialect),
        tableName: MIGRATIONS_TABLE,
        transactional: true,
        allOrNothing: true,
        snapshot: false,
        silent: true,
      },
    };
  };
  if (target.dialect === 'sqlite') {
    if (target.file !== ':memory:') mkdirSync(dirname(resolve(target.file!)), { recursive: true });
    const sqlite = new DatabaseSync(target.file!);
    // WAL lets readers in other processes work while one writer commits; busy_timeout waits for
    // another process's write lock instead of failing.
    sqlite.exec('pragma journal_mode = wal; pragma busy_timeout = 5000; pragma foreign_keys = on');
    return new Database('sqlite', { sqlite: new SqliteConnection(sqlite), file: target.file }, names, async () => {
      const { SqliteDriver } = await import('@mikro-orm/sql');
      const { MikroORM } = await import('@mikro-orm/core');
      return MikroORM.init({ ...await ormOptions(), driver: SqliteDriver, dbName: target.file, driverOptions: await sharedSqliteDialect(sqlite) } as Options);
    }, retry, config.writeFaultSeconds);
  }
  // Types as the features read them: dates as text, big integers exactly, JSON as text.
  // `trace: false`: mysql2 would capture a stack trace on every statement, in case it fails, to
  // decorate the error: about a twentieth of a buy's time. A failed statement's error still has
  // its code and message, which is what the error handler and the log use.
  const connection = {
    connectTimeout: config.connectTimeoutMs, enableKeepAlive: true, timezone: 'Z', supportBigNumbers: true, dateStrings: true, jsonStrings: true, trace: false,
  } as const;
  const { createPool } = await import('mysql2/promise');
  const pool = createPool({ uri: target.url!, connectionLimit: config.poolSize, maxIdle: config.poolSize, ...connection });
  // A connection runs its commands in order, so this comes before any statement of a request.
  if (config.sqlMode) pool.pool.on('connection', (conn) => { conn.execute('set session sql_mode = ?', [config.sqlMode]); });
  return new Database('mysql', { pool }, names, async () => {
    const driver = await isMariaDb(target.url!, config.connectTimeoutMs)
      ? (await import('@mikro-orm/mariadb')).MariaDbDriver
      : (await import('@mikro-orm/mysql')).MySqlDriver;
    const { MikroORM } = await import('@mikro-orm/core');
    return MikroORM.init({
      ...await ormOptions(),
      driver,
      clientUrl: target.url,
      // Migrations and schema checks only: one connection, closed when idle.
      pool: { min: 0, max: 1, idleTimeoutMillis: 1000 },
      forceUtcTimezone: true,
      driverOptions: connection,
    } as Options);
  }, retry, config.writeFaultSeconds);
}

const MIGRATIONS_TABLE = 'core_migrations';

async function buildMigrationList(defs: MigrationDef[], dialect: Dialect) {
  const { Migration } = await import('@mikro-orm/migrations');
  const seen = new Set<string>();
  return [...defs]
    .sort((a, b) => compareCodeUnits(a.name, b.name))
    .map((def) => {
      if (seen.has(def.name)) throw new Error(`Migration ${def.name} is defined twice.`);
      seen.add(def.name);
      const statements = def[dialect];
      class FeatureMigration extends Migration {
        override name = def.name;
        up(): void {
          for (const sql of statements) this.addSql(sql);
        }
      }
      return { name: def.name, class: FeatureMigration };
    });
}

/** True when every migration of the enabled features is recorded as applied. */
async function upToDate(db: Database): Promise<boolean> {
  let rows: { name: string }[];
  try {
    rows = await db.query<{ name: string }>(`select name from ${MIGRATIONS_TABLE}`);
  } catch (err) {
    // No migrations table yet (SQLite "no such table", MySQL ER_NO_SUCH_TABLE): a new database.
    if ((err as { errno?: number }).errno === 1146 || /no such table/.test(String((err as Error).message))) return false;
    throw err;
  }
  const applied = new Set(rows.map((r) => r.name));
  return db.migrationNames.every((name) => applied.has(name));
}

export async function migrate(db: Database): Promise<string[]> {
  // Every start but the first after an upgrade ends here, without loading MikroORM.
  if (await upToDate(db)) return [];
  const done = await (await db.orm()).migrator.up();
  return done.map((m) => m.name);
}
