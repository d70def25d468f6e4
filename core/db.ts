import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { MikroORM, UniqueConstraintViolationException, type EntitySchema, type Options } from '@mikro-orm/core';
import { SqliteDriver, NodeSqliteDialect, type SqlEntityManager } from '@mikro-orm/sql';
import { MySqlDriver } from '@mikro-orm/mysql';
import { MariaDbDriver } from '@mikro-orm/mariadb';
import { Migrator, Migration } from '@mikro-orm/migrations';
import { createConnection } from 'mysql2/promise';
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

interface TxState {
  em: SqlEntityManager;
  afterCommit: (() => void)[];
}

/** What the event bus needs of the database: where "after commit" is. */
export interface TransactionScope {
  afterCommit(fn: () => void): void;
}

const MYSQL_RETRYABLE = new Set([
  1213, // ER_LOCK_DEADLOCK
  1205, // ER_LOCK_WAIT_TIMEOUT
]);

/**
 * True when a write lost to a unique index (two requests racing for one name, a repeated payment
 * id): the index decides, and the caller answers with the API's error for a taken value.
 */
export function isUniqueViolation(err: unknown): boolean {
  return err instanceof UniqueConstraintViolationException || /unique|duplicate/i.test(String((err as Error)?.message));
}

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

/**
 * The database as features see it: the request's or transaction's entity manager, raw SQL on it,
 * and all-or-nothing transactions that nested calls join.
 */
export class Database implements TransactionScope {
  readonly orm: MikroORM;
  readonly dialect: Dialect;
  readonly #tx = new AsyncLocalStorage<TxState>();

  constructor(orm: MikroORM, dialect: Dialect) {
    this.orm = orm;
    this.dialect = dialect;
  }

  /** The entity manager of the running transaction, else of the request, else a fresh fork. */
  em(): SqlEntityManager {
    const tx = this.#tx.getStore();
    if (tx) return tx.em;
    return this.orm.em.getContext(false) as SqlEntityManager ?? this.orm.em.fork() as SqlEntityManager;
  }

  /** Raw SQL on the current transaction (or the pool). Placeholders are `?` on both dialects. */
  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return this.em().execute(sql, params as never[], 'all') as Promise<T[]>;
  }

  /** Raw write; returns affected rows and the inserted id. */
  async run(sql: string, params: unknown[] = []): Promise<{ affectedRows: number; insertId: number }> {
    const res = await this.em().execute(sql, params as never[], 'run') as { affectedRows?: number; insertId?: number; changes?: number; lastInsertRowid?: number };
    return { affectedRows: Number(res.affectedRows ?? res.changes ?? 0), insertId: Number(res.insertId ?? res.lastInsertRowid ?? 0) };
  }

  /** `FOR UPDATE` where the database can lock rows; SQLite serialises writers on its own. */
  get forUpdate(): string {
    return this.dialect === 'mysql' ? ' FOR UPDATE' : '';
  }

  /** True inside `transaction()`. */
  get inTransaction(): boolean {
    return this.#tx.getStore() !== undefined;
  }

  /**
   * Runs `fn` all-or-nothing. Called inside another transaction it joins it, so a service can be
   * used alone or as one step of a bigger unit (a buy debits credits inside the store's
   * transaction). The outermost call retries on MySQL deadlocks and lock timeouts.
   */
  async transaction<T>(fn: (em: SqlEntityManager) => Promise<T>): Promise<T> {
    const current = this.#tx.getStore();
    if (current) return fn(current.em);
    for (let attempt = 1; ; attempt++) {
      const state: TxState = { em: undefined as never, afterCommit: [] };
      try {
        const result = await this.orm.em.fork().transactional((em) => {
          state.em = em as SqlEntityManager;
          return this.#tx.run(state, () => fn(state.em));
        });
        for (const cb of state.afterCommit) cb();
        return result;
      } catch (err) {
        if (attempt >= 5 || !this.#retryable(err)) throw err;
        await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
      }
    }
  }

  /** Runs `fn` once the current transaction commits, or now if there is none; dropped on rollback. */
  afterCommit(fn: () => void): void {
    const tx = this.#tx.getStore();
    if (tx) tx.afterCommit.push(fn);
    else fn();
  }

  #retryable(err: unknown): boolean {
    if (this.dialect !== 'mysql') return false;
    const e = err as { errno?: number; cause?: { errno?: number } };
    return MYSQL_RETRYABLE.has(e.errno ?? e.cause?.errno ?? 0);
  }

  /** Checks that the database answers (for /health). */
  async ping(): Promise<boolean> {
    try {
      await (this.orm.em.fork() as SqlEntityManager).execute('select 1', [], 'all');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await this.orm.close(true);
  }
}

async function isMariaDb(url: string, timeoutMs: number): Promise<boolean> {
  const u = new URL(url);
  u.pathname = '/';
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
  /** Entities made by defineEntity (typed loosely: each has its own inferred type). */
  entities: object[];
  migrations: MigrationDef[];
}

export async function openDatabase({ config, entities, migrations }: OpenOptions): Promise<Database> {
  const target = parseDatabaseUrl(config.url);
  const base: Partial<Options> = {
    entities: entities as EntitySchema[],
    extensions: [Migrator],
    debug: config.debug,
    discovery: { warnWhenNoEntities: false },
    migrations: {
      migrationsList: buildMigrationList(migrations, target.dialect),
      tableName: 'core_migrations',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
  };
  let options: Partial<Options>;
  if (target.dialect === 'sqlite') {
    if (target.file !== ':memory:') mkdirSync(dirname(resolve(target.file!)), { recursive: true });
    options = { ...base, driver: SqliteDriver, dbName: target.file, driverOptions: new NodeSqliteDialect(target.file!) };
  } else {
    const driver = await isMariaDb(target.url!, config.connectTimeoutMs) ? MariaDbDriver : MySqlDriver;
    options = {
      ...base,
      driver,
      clientUrl: target.url,
      pool: { min: 0, max: config.poolSize },
      forceUtcTimezone: true,
      driverOptions: { connectTimeout: config.connectTimeoutMs, enableKeepAlive: true },
    };
  }
  const orm = await MikroORM.init(options as Options);
  const db = new Database(orm, target.dialect);
  if (target.dialect === 'sqlite') {
    // WAL lets readers work while one writer commits; busy_timeout waits instead of failing.
    await db.query('pragma journal_mode = wal');
    await db.query('pragma busy_timeout = 5000');
    await db.query('pragma foreign_keys = on');
  }
  return db;
}

function buildMigrationList(defs: MigrationDef[], dialect: Dialect) {
  const seen = new Set<string>();
  return [...defs]
    .sort((a, b) => a.name.localeCompare(b.name))
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

export async function migrate(db: Database): Promise<string[]> {
  const done = await db.orm.migrator.up();
  return done.map((m) => m.name);
}
