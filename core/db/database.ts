import { AsyncLocalStorage } from 'node:async_hooks';
import type { MikroORM } from '@mikro-orm/core';
import type { Pool } from 'mysql2/promise';
import { clockNow } from '../clock.ts';
import type { Row, Sql } from '../sql.ts';
import { isRetryable, lastingWriteFault } from './errors.ts';
import { galeraUnready, isGalera, mysqlPoolStats, mysqlRunner, mysqlTransaction } from './mysql.ts';
import type { PoolStats, RunResult, Runner } from './runner.ts';
import type { SqliteConnection } from './sqlite.ts';
import type { Dialect } from './url.ts';

/** What the event bus needs of the database: where "after commit" is. */
export interface TransactionScope {
  afterCommit(fn: () => void): void;
}

interface TxState {
  runner: Runner;
  afterCommit: (() => void)[];
  /** Rows gathered for one multi-row write just before the commit (`collect`), by the caller's key (MySQL; SQLite's connection gathers its own). */
  batches?: Map<object, { items: unknown[]; flush: (items: unknown[]) => Promise<void> }>;
  /** A write statement ran: its commit shows the database takes writes again. */
  wrote: boolean;
}

/** How often a transaction that lost to another is run again (database.transactionTries, retryDelayMs). */
export interface RetryOptions {
  tries: number;
  delayMs: number;
}

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
  #isGalera?: Promise<boolean>;
  readonly #onConnectionFlushes = new WeakMap<(items: unknown[]) => Promise<void>, (items: unknown[]) => Promise<void>>();

  constructor(
    dialect: Dialect,
    driver: { sqlite?: SqliteConnection; pool?: Pool; file?: string },
    migrationNames: string[],
    makeOrm: () => Promise<MikroORM>,
    retry: RetryOptions,
    writeFaultSeconds: number,
  ) {
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

  /** Whether the MySQL server is a Galera node, asked once. */
  #galera(): Promise<boolean> {
    this.#isGalera ??= isGalera(this.#pool!);
    return this.#isGalera;
  }

  #runner(): Runner {
    const tx = this.#tx.getStore();
    if (tx) return tx.runner;
    if (this.#sqlite) return this.#sqlite.standalone;
    return this.#poolRunner!;
  }

  // query and run hand on the runner's promise rather than wrap it in one more: an async function
  // returning a promise costs an allocation and three turns of the microtask queue, and a buy
  // runs a dozen statements. The runners' functions return promises (mysql2's rejects on a bad
  // call too), so an error still rejects.

  /**
   * Rows of a statement written with core/sql.ts's `sql` tag, its values bound (`?` on both
   * dialects). A statement whose select list is `fields({...})` returns that list's rows.
   */
  query<R>(statement: Sql<R>): Promise<R[]> {
    this.statements++;
    return this.#runner().all(statement.text, statement.values) as Promise<R[]>;
  }

  /**
   * Rows of a read as arrays of values, in the order of its select list: cheaper to make and to
   * read than objects (node:sqlite makes each row object in dictionary mode). Table.select reads them.
   */
  queryArrays(statement: Sql<unknown>): Promise<unknown[][]> {
    this.statements++;
    return this.#runner().arrays(statement.text, statement.values);
  }

  /** A write, its values bound; returns affected rows and the inserted id. */
  run(statement: Sql<unknown>): Promise<RunResult> {
    return this.#run(statement.text, statement.values, true);
  }

  /** `shared`: on SQLite, a write outside a transaction joins the batch holding the connection, if one does (SqliteConnection.write). */
  #run(text: string, values: unknown[], shared: boolean): Promise<RunResult> {
    this.statements++;
    const tx = this.#tx.getStore();
    if (tx) {
      tx.wrote = true;
      return tx.runner.run(text, values);
    }
    const written = this.#sqlite
      ? shared
        ? this.#sqlite.write(text, values)
        : this.#sqlite.standalone.run(text, values)
      : this.#poolRunner!.run(text, values);
    return written.then(this.#wrote, this.#refused);
  }

  /**
   * Statements as text written by hand, values given apart: for tools and tests that look at the
   * schema as it is or another program's SQL (a backup, a schema check). Nothing checks their
   * names, so features never use them (test/boundaries.test.ts refuses it in plugins/, examples/
   * and packages/): they write the `sql` tag.
   */
  readonly unchecked = {
    query: <R = Row>(text: string, params: unknown[] = []): Promise<R[]> => {
      this.statements++;
      return this.#runner().all(text, params) as Promise<R[]>;
    },
    queryArrays: (text: string, params: unknown[] = []): Promise<unknown[][]> => {
      this.statements++;
      return this.#runner().arrays(text, params);
    },
    // A statement by hand may be one SQLite refuses or ignores inside a transaction (a pragma): it runs alone.
    run: (text: string, params: unknown[] = []): Promise<RunResult> => this.#run(text, params, false),
  };

  readonly #wrote = (result: RunResult): RunResult => {
    this.#writeFault = undefined;
    return result;
  };

  readonly #refused = (err: unknown): never => {
    const why = lastingWriteFault(err);
    if (why) this.#writeFault = { why, at: clockNow() };
    throw err;
  };

  /** `FOR UPDATE` where the database can lock rows; SQLite serialises writers on its own. */
  get forUpdate(): string {
    return this.dialect === 'mysql' ? ' FOR UPDATE' : '';
  }

  /**
   * ` FORCE INDEX (name)` on MySQL/MariaDB, after a table name: for a statement whose index the
   * optimizer was seen to trade, between runs, for another one that costs many times more. SQLite
   * plans the same statement the same way every time.
   */
  forceIndex(name: string): string {
    return this.dialect === 'mysql' ? ` FORCE INDEX (\`${name}\`)` : '';
  }

  /**
   * ` IGNORE INDEX (name)` on MySQL/MariaDB, after a table name: takes one index out of the
   * optimizer's choice where it was seen to pick it under load. Cheaper than forceIndex, which
   * MariaDB pays for on every execution of a prepared statement (docs/performance.md).
   */
  ignoreIndex(name: string): string {
    return this.dialect === 'mysql' ? ` IGNORE INDEX (\`${name}\`)` : '';
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
   *
   * `causal`: on a Galera node, the transaction first waits until the node has applied every commit
   * made anywhere before it. For a write that decides once and may match nothing (an ack of a claim
   * made through another node a moment ago): a write that matches is safe anyway, as certification
   * refuses it against a conflicting commit it did not see, but one that matches nothing is not.
   */
  async transaction<T>(fn: () => Promise<T>, options: { causal?: boolean } = {}): Promise<T> {
    if (this.#tx.getStore()) return fn();
    const causal = options.causal === true && this.#pool !== undefined && (await this.#galera());
    for (let attempt = 1; ; attempt++) {
      try {
        const afterCommit: (() => void)[] = [];
        let tx: TxState | undefined;
        const inTx = (runner: Runner) =>
          this.#tx.run((tx = { runner, afterCommit, wrote: false }), async () => {
            const result = await fn();
            for (const { items, flush } of tx!.batches?.values() ?? []) await flush(items);
            return result;
          });
        const result = this.#sqlite ? await this.#sqlite.transaction(inTx) : await mysqlTransaction(this.#pool!, inTx, causal);
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

  /**
   * `flush` with its statements on the connection's running batch, where no member's context is;
   * made once per flush, as a collect on SQLite asks for it with every item.
   */
  #onConnection(flush: (items: unknown[]) => Promise<void>): (items: unknown[]) => Promise<void> {
    let wrapped = this.#onConnectionFlushes.get(flush);
    if (!wrapped) {
      wrapped = (items) => this.#tx.run({ runner: this.#sqlite!.memberRunner, afterCommit: [], wrote: true }, () => flush(items));
      this.#onConnectionFlushes.set(flush, wrapped);
    }
    return wrapped;
  }

  /**
   * Connections in use and idle, and callers waiting for one: the MySQL pool's, or SQLite's one
   * connection, in use while a transaction holds it.
   */
  poolStats(): PoolStats {
    return this.#sqlite ? this.#sqlite.stats() : mysqlPoolStats(this.#pool!);
  }

  /** SQLite on a file: the write-ahead log's fsyncs, live: where the next runs, and their recent average in ms. */
  walFsyncs(): SqliteConnection['wal'] {
    return this.#sqlite?.wal;
  }

  /** Runs `fn` once the current transaction commits, or now if there is none; dropped on rollback. */
  afterCommit(fn: () => void): void {
    const tx = this.#tx.getStore();
    if (tx) tx.afterCommit.push(fn);
    else fn();
  }

  /**
   * Adds `item` to this transaction's batch named by `key` (an object of the caller's own); just
   * before the commit, inside the transaction, `flush` runs once with every item added (one
   * multi-row insert instead of one per item). On SQLite it runs once for every transaction that
   * shares the commit (group commit), with all their items: each statement there pays for the
   * pages it walks, so one insert of many rows costs about what one of a few does. `flush` only
   * writes: its afterCommit work belongs beside the `collect` call. Outside a transaction `flush` runs now.
   */
  async collect<T>(key: object, item: T, flush: (items: T[]) => Promise<void>): Promise<void> {
    const tx = this.#tx.getStore();
    if (!tx) return flush([item]);
    if (this.#sqlite) return this.#sqlite.atCommit(key, item, this.#onConnection(flush as (items: unknown[]) => Promise<void>));
    tx.batches ??= new Map();
    const batch = tx.batches.get(key);
    if (batch) batch.items.push(item);
    else tx.batches.set(key, { items: [item], flush: flush as (items: unknown[]) => Promise<void> });
  }

  /**
   * Why the database cannot serve, or undefined when it can (for /health): it does not answer,
   * (SQLite) it answers but cannot be written, (Galera) its node is outside the primary component
   * or not synced, or a write was refused for a lasting cause (a full disk, which a probe written
   * and undone never reaches) and none has succeeded since, for up to `database.writeFaultSeconds`
   * after the last such refusal.
   */
  async unavailableReason(): Promise<string | undefined> {
    try {
      if (this.#sqlite) {
        // A write tried and undone: a read-only file or folder fails here.
        await this.#sqlite.probeWrite();
      } else if (await this.#galera()) {
        // A node cut off from the majority still answers `select 1`, and refuses every write.
        const unready = await galeraUnready(this.#pool!);
        if (unready) return unready;
      } else {
        await this.#pool!.query('select 1');
      }
    } catch (err) {
      return lastingWriteFault(err) ?? 'The database does not answer.';
    }
    const fault = this.#writeFault;
    return fault && clockNow() - fault.at < this.#writeFaultMs ? fault.why : undefined;
  }

  async close(): Promise<void> {
    if (this.#orm) await (await this.#orm).close(true);
    await this.#pool?.end();
    await this.#sqlite?.close();
  }
}
