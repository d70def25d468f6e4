/** SQLite: the one embedded connection, its prepared statements, and its group commit. */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { SqliteDialect } from 'kysely';
import type { PoolStats, RunResult, Runner } from './runner.ts';
import { LOCK_WAIT_MS, LockWait, type OnFile, type WalSync } from './sqlite-file.ts';
import { sqliteValue } from './values.ts';

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

/** A plain read, which the reader connection may answer: a statement that writes never starts with `select`. */
const PLAIN_READ = /^\s*select\b/i;

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
  /** The members' rows gathered for one write each just before the commit (`atCommit`), by the caller's key. */
  readonly gathered: Gathered;
}

/** The read-only connection and its prepared statements. */
interface Reader {
  db: DatabaseSync;
  statements: StatementCache;
  arrayStatements: StatementCache;
}

/** Rows gathered for one multi-row write, by the caller's key, and the write that takes them. */
type Gathered = Map<object, { items: unknown[]; write: (items: unknown[]) => Promise<void> }>;

function gather(into: Gathered, key: object, items: unknown[], write: (items: unknown[]) => Promise<void>): void {
  const kept = into.get(key);
  if (kept) kept.items.push(...items);
  else into.set(key, { items, write });
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
 *
 * On a file, a plain read from outside any transaction runs on a second, read-only connection: in
 * WAL it sees the last commit and never waits for a transaction, whose awaits (a batch's members one
 * after another) would otherwise hold every read of every request behind it. MySQL's reads do not
 * wait for a transaction either, so the features' code already expects what this sees.
 */
export class SqliteConnection {
  readonly db: DatabaseSync;
  readonly #statements: StatementCache;
  readonly #arrayStatements: StatementCache;
  /** The read-only connection (none in memory, where a second connection is another database). */
  readonly #reader?: Reader;
  #holder?: Promise<void>;
  /** The batch holding the connection, while it takes more transactions. */
  #batch?: Batch;
  /** Statements and transactions waiting for the one that holds the connection. */
  #waiting = 0;
  /** The running member's rows for `atCommit`: its batch takes them only if the member succeeds. */
  #memberGathered?: Gathered;

  /** The write-ahead log's fsync after each commit, on a file (none in memory, which nothing makes durable). */
  readonly #wal?: WalSync;

  constructor(db: DatabaseSync, file?: OnFile) {
    this.db = db;
    this.#wal = file?.wal;
    this.#statements = new StatementCache(db, false);
    this.#arrayStatements = new StatementCache(db, true);
    if (file) this.#reader = { db: file.reader, statements: new StatementCache(file.reader, false), arrayStatements: new StatementCache(file.reader, true) };
  }

  /** Statements of the transaction that holds the connection: they run at once. */
  readonly memberRunner: Runner = {
    all: async (sql, params) => this.#all(sql, params),
    arrays: async (sql, params) => this.#arrays(sql, params),
    run: async (sql, params) => this.#run(sql, params),
  };

  /**
   * Statements from outside any transaction: they wait while one holds the connection, then run
   * with no await between the check and the statement, so none can slip into a transaction.
   */
  readonly standalone: Runner = {
    all: this.#onceFree((sql, params, reader) => this.#all(sql, params, reader?.statements), true),
    arrays: this.#onceFree((sql, params, reader) => this.#arrays(sql, params, reader?.arrayStatements), true),
    run: async (sql, params) => {
      const result = await this.#runOnceFree(sql, params);
      // A statement that changed no row has nothing to make durable.
      if (this.#wal && result.affectedRows > 0) await this.#wal.synced();
      return result;
    },
  };

  readonly #runOnceFree = this.#onceFree((sql, params) => this.#run(sql, params), false);

  /**
   * A write from outside any transaction. While a batch holds the connection it joins as a member
   * of one statement and shares the batch's commit (one fsync for all), where it would wait for the
   * batch to end and then pay a commit of its own; with none, it commits at once, alone, as before
   * (holding the file's write lock no longer than its statement, as other processes on it expect).
   * Left out of a full batch, it runs in the next one, as a transaction does.
   */
  write(sql: string, params: unknown[]): Promise<RunResult> {
    return this.#batch ? this.transaction(async () => this.#run(sql, params)) : this.standalone.run(sql, params);
  }

  /**
   * `statement`, run once no transaction holds the connection, in the same step as the last check;
   * a plain read (where `reads`) on the reader connection at once, when there is one.
   */
  #onceFree<T>(statement: (sql: string, params: unknown[], reader?: Reader) => T, reads: boolean): (sql: string, params: unknown[]) => Promise<T> {
    return async (sql, params) => {
      if (reads && this.#reader && PLAIN_READ.test(sql)) return statement(sql, params, this.#reader);
      return this.#whenFree(() => statement(sql, params));
    };
  }

  /** `statement`, run once no transaction holds the connection, and again while another connection holds the file. */
  async #whenFree<T>(statement: () => T): Promise<T> {
    let locked: LockWait | undefined;
    for (;;) {
      while (this.#holder) await this.#wait();
      try {
        return statement();
      } catch (err) {
        await (locked ??= new LockWait()).after(err);
      }
    }
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

  /** The write-ahead log's fsyncs, on a file: where the next runs and their recent average. */
  get wal(): Pick<WalSync, 'place' | 'averageMs'> | undefined {
    return this.#wal;
  }

  stats(): PoolStats {
    const inUse = this.#holder ? 1 : 0;
    return { inUse, idle: 1 - inUse, waiting: this.#waiting + (this.#batch?.queue.length ?? 0) };
  }

  #all(sql: string, params: unknown[], statements = this.#statements): Record<string, unknown>[] {
    return statements.get(sql).all(...(params.map(sqliteValue) as never[])) as Record<string, unknown>[];
  }

  #arrays(sql: string, params: unknown[], statements = this.#arrayStatements): unknown[][] {
    return statements.get(sql).all(...(params.map(sqliteValue) as never[])) as unknown as unknown[][];
  }

  #run(sql: string, params: unknown[]): RunResult {
    const res = this.#statements.get(sql).run(...(params.map(sqliteValue) as never[]));
    return { affectedRows: Number(res.changes), insertId: Number(res.lastInsertRowid) };
  }

  /**
   * Throws unless the database can be written now. A page is changed inside a transaction that is
   * then rolled back, so nothing reaches the disk; BEGIN IMMEDIATE alone passes on a file that
   * SQLite could only open read-only.
   */
  async probeWrite(): Promise<void> {
    // All in one step: a statement from outside must not run inside the probe's transaction.
    await this.#whenFree(() => {
      this.db.exec('begin immediate');
      try {
        // A row of the host's own settings table, written and rolled back: the values bound.
        this.db.prepare('insert into core_settings (`key`, value) values (?, ?)').run('health.probe', '');
      } finally {
        if (this.db.isTransaction) this.db.exec('rollback');
      }
    });
  }

  /** Closes the connection once the batch that holds it (its commit a turn away, perhaps) has ended. */
  async close(): Promise<void> {
    while (this.#holder) await this.#wait();
    await this.#wal?.close();
    if (this.#reader?.db.isOpen) this.#reader.db.close();
    if (this.db.isOpen) this.db.close();
  }

  async transaction<T>(fn: (runner: Runner) => Promise<T>): Promise<T> {
    // Checked and taken in one synchronous step: two transactions can never both run at once.
    let locked: LockWait | undefined;
    for (;;) {
      const batch = this.#batch;
      if (batch) {
        if (await new Promise<boolean>((resume) => batch.queue.push(resume))) return this.#member(batch, fn);
      } else if (this.#holder) {
        await this.#wait();
      } else {
        try {
          // IMMEDIATE takes the file's write lock now: another connection writing the file makes
          // this wait (LockWait) instead of failing halfway through.
          this.db.exec('begin immediate');
          break;
        } catch (err) {
          await (locked ??= new LockWait()).after(err);
        }
      }
    }
    let release!: () => void;
    this.#holder = new Promise((r) => {
      release = r;
    });
    let settle!: (err?: unknown) => void;
    const committed = new Promise<void>((resolve, reject) => {
      settle = (err) => (err === undefined ? resolve() : reject(err));
    });
    const batch: Batch = { queue: [], members: 1, waited: false, committed, settle, release, gathered: new Map() };
    this.#batch = batch;
    return this.#member(batch, fn);
  }

  /** Runs `fn` as the batch's current member, hands the connection on, and answers after the commit. */
  async #member<T>(batch: Batch, fn: (runner: Runner) => Promise<T>): Promise<T> {
    let outcome: { result: T } | { error: unknown };
    const gathered: Gathered = new Map();
    try {
      this.db.exec('savepoint member');
      this.#memberGathered = gathered;
      outcome = { result: await fn(this.memberRunner) };
      this.db.exec('release member');
      for (const [key, { items, write }] of gathered) gather(batch.gathered, key, items, write);
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
    this.#memberGathered = undefined;
    this.#admitNextOrCommit(batch);
    // A refusal waits for the commit too: what it saw of the members before it is then durable
    // (or, if the batch fails, the batch's failure is the answer).
    await batch.committed;
    if ('error' in outcome) throw outcome.error;
    return outcome.result;
  }

  /**
   * Adds `item` to the running member's rows for `key`, written by `write` in one statement with
   * every other member's just before the batch commits (rows of a member that fails are dropped).
   * `write` runs with no member's context: it must run its statements on `memberRunner`.
   */
  atCommit(key: object, item: unknown, write: (items: unknown[]) => Promise<void>): void {
    if (!this.#memberGathered) throw new Error('atCommit is for the statements of a running transaction');
    gather(this.#memberGathered, key, [item], write);
  }

  /** The next waiting transaction joins the batch, or the batch commits and lets the connection go. */
  #admitNextOrCommit(batch: Batch): void {
    const open = batch.lost === undefined && batch.members < MAX_BATCH;
    if (open && batch.queue.length) {
      batch.members++;
      batch.queue.shift()!(true);
      return;
    }
    // A transaction runs within one turn of the event loop (its statements are synchronous), so
    // the requests that arrived with it reach theirs only after it. Where the fsync runs on its
    // thread (a slow disk), the batch waits one turn for them, once, to share it. Where it runs on
    // the loop, it costs less than that turn, which every member would wait out under load: commit now.
    if (open && !batch.waited && this.#wal?.place === 'thread') {
      batch.waited = true;
      setImmediate(() => this.#admitNextOrCommit(batch));
      return;
    }
    if (batch.gathered.size > 0 && batch.lost === undefined) {
      void this.#writeGathered(batch);
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
      } catch {
        /* the failure above is what the members get */
      }
    }
    this.#batch = undefined;
    this.#holder = undefined;
    batch.release();
    // Those left out of a full batch start the next one a turn later, after the statements that
    // waited outside: a stream of writes cannot starve the reads.
    const left = batch.queue.splice(0);
    if (left.length)
      setImmediate(() => {
        for (const resume of left) resume(false);
      });
    // The members wait for the fsync; on its thread, the connection goes on to the next statement meanwhile.
    if (failure === undefined && this.#wal) this.#wal.synced().then(() => batch.settle(), batch.settle);
    else batch.settle(failure);
  }

  /** The members' gathered rows, one write per key; a write that fails fails the batch. Then the commit. */
  async #writeGathered(batch: Batch): Promise<void> {
    const writes = [...batch.gathered.values()];
    batch.gathered.clear();
    try {
      for (const { items, write } of writes) await write(items);
    } catch (err) {
      batch.lost = err;
    }
    this.#admitNextOrCommit(batch);
  }
}

/**
 * Kysely's SQLite dialect over the server's own connection, so migrations (MikroORM) and requests
 * (Database) share one database even in memory. MikroORM's close leaves the connection open:
 * Database closes it last.
 */
export async function sharedSqliteDialect(db: DatabaseSync): Promise<SqliteDialect> {
  const { SqliteDialect } = await import('kysely');
  // Migrations, under the migration lock and before any request, wait for another process's write
  // lock inside SQLite; the connection's own timeout is 0 (LockWait).
  const waiting = <T>(statement: () => T): T => {
    db.exec(`pragma busy_timeout = ${LOCK_WAIT_MS}`);
    try {
      return statement();
    } finally {
      db.exec('pragma busy_timeout = 0');
    }
  };
  return new SqliteDialect({
    database: () =>
      ({
        prepare(sql: string) {
          const stmt = db.prepare(sql);
          const values = (params: readonly unknown[]) => params.map(sqliteValue) as never[];
          return {
            reader: stmt.columns().length > 0,
            all: (params: readonly unknown[]) => waiting(() => stmt.all(...values(params))),
            run: (params: readonly unknown[]) => waiting(() => stmt.run(...values(params))),
            iterate: (params: readonly unknown[]) => stmt.iterate(...values(params)),
          };
        },
        close() {},
      }) as never,
  });
}
