/** Opens the database DATABASE_URL names: SQLite's one connection or a MySQL/MariaDB pool, behind one Database. */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { EntitySchema, Options } from '@mikro-orm/core';
import type { AppConfig } from '../config.ts';
import { Table } from '../table.ts';
import { Database } from './database.ts';
import { buildMigrationList, MIGRATIONS_TABLE, type MigrationDef } from './migrations.ts';
import { isMariaDb } from './mysql.ts';
import { type OnFile, WalSync } from './sqlite-file.ts';
import { SqliteConnection, sharedSqliteDialect } from './sqlite.ts';
import { parseDatabaseUrl } from './url.ts';

export interface OpenOptions {
  config: AppConfig['database'];
  /** Tables made by core/table.ts's defineEntity, or MikroORM entities (typed loosely: each has its own inferred type). */
  entities: object[];
  migrations: MigrationDef[];
}

export async function openDatabase({ config, entities, migrations }: OpenOptions): Promise<Database> {
  const target = parseDatabaseUrl(config.url);
  const names = migrations.map((m) => m.name);
  const retry = { tries: config.transactionTries, delayMs: config.retryDelayMs };
  const ormOptions = async (): Promise<Partial<Options>> => {
    const { Migrator } = await import('@mikro-orm/migrations');
    return {
      // Tables described with core/table.ts become MikroORM entities here, and only here.
      entities: (await Promise.all(entities.map((e) => (e instanceof Table ? e.entity() : e)))) as EntitySchema[],
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
    // WAL lets readers in other processes work while one writer commits. A statement that finds
    // another connection's write lock waits for it between turns of the event loop (LockWait), not
    // inside SQLite, so busy_timeout is 0.
    sqlite.exec('pragma journal_mode = wal; pragma busy_timeout = 0; pragma foreign_keys = on');
    let file: OnFile | undefined;
    if (target.file !== ':memory:') {
      // Reads outside a transaction on a connection of their own, which never waits for one; the
      // log's fsync after a commit by the server, not in COMMIT: on the loop while the disk is quick,
      // else on a thread of its own (WalSync).
      sqlite.exec('pragma synchronous = normal');
      const reader = new DatabaseSync(target.file!, { readOnly: true });
      reader.exec('pragma busy_timeout = 5000');
      file = { reader, wal: new WalSync(`${resolve(target.file!)}-wal`) };
    }
    return new Database(
      'sqlite',
      { sqlite: new SqliteConnection(sqlite, file), file: target.file },
      names,
      async () => {
        const { SqliteDriver } = await import('@mikro-orm/sql');
        const { MikroORM } = await import('@mikro-orm/core');
        return MikroORM.init({
          ...(await ormOptions()),
          driver: SqliteDriver,
          dbName: target.file,
          driverOptions: await sharedSqliteDialect(sqlite),
        } as Options);
      },
      retry,
      config.writeFaultSeconds,
    );
  }
  // Types as the features read them: dates as text, big integers exactly, JSON as text.
  // `trace: false`: mysql2 would capture a stack trace on every statement, in case it fails, to
  // decorate the error, a share of every statement's time (docs/performance.md). A failed
  // statement's error still has its code and message, which is what the error handler and the log use.
  const connection = {
    connectTimeout: config.connectTimeoutMs,
    enableKeepAlive: true,
    timezone: 'Z',
    supportBigNumbers: true,
    dateStrings: true,
    jsonStrings: true,
    trace: false,
  } as const;
  const { createPool } = await import('mysql2/promise');
  const pool = createPool({ uri: target.url!, connectionLimit: config.poolSize, maxIdle: config.poolSize, ...connection });
  // A connection runs its commands in order, so this comes before any statement of a request.
  if (config.sqlMode)
    pool.pool.on('connection', (conn) => {
      conn.execute('set session sql_mode = ?', [config.sqlMode]);
    });
  return new Database(
    'mysql',
    { pool },
    names,
    async () => {
      const driver = (await isMariaDb(target.url!, config.connectTimeoutMs))
        ? (await import('@mikro-orm/mariadb')).MariaDbDriver
        : (await import('@mikro-orm/mysql')).MySqlDriver;
      const { MikroORM } = await import('@mikro-orm/core');
      return MikroORM.init({
        ...(await ormOptions()),
        driver,
        clientUrl: target.url,
        // Migrations and schema checks only: one connection, closed when idle.
        pool: { min: 0, max: 1, idleTimeoutMillis: 1000 },
        forceUtcTimezone: true,
        driverOptions: connection,
      } as Options);
    },
    retry,
    config.writeFaultSeconds,
  );
}
