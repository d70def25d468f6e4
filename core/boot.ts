/**
 * Reaching the database at boot: a server started before its database (a reboot, a container
 * starting first) waits for it with backoff, one line per attempt naming DATABASE_URL, instead of
 * exiting with a stack trace; wrong credentials end the boot with one sentence. A MySQL database
 * that does not exist is never created silently.
 */
import { ConfigError, type AppConfig } from './config.ts';
import type { Database } from './db/database.ts';
import { openDatabase } from './db/open.ts';
import { coreEntities } from './entities.ts';
import type { LoadedFeature } from './features.ts';
import { migrations as coreMigrations } from './migrations/index.ts';
import { parseDatabaseUrl } from './db/url.ts';
import { isDatabaseUnavailable } from './db/errors.ts';

/** The URL as it may be shown: without its password. */
export function displayUrl(url: string): string {
  if (!/^(mysql|mariadb):\/\//.test(url)) return url;
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

function reason(err: unknown): string {
  for (let e = err as { code?: string; cause?: unknown; message?: string } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code) return e.code;
  }
  return String((err as Error)?.message ?? err).split('\n', 1)[0]!;
}

/**
 * Checks that the database a mysql:// URL names exists; creates it only when
 * `database.createDatabase` allows, and says so.
 */
async function ensureMysqlDatabase(config: AppConfig['database'], say: (line: string) => void): Promise<void> {
  const target = parseDatabaseUrl(config.url);
  if (target.dialect !== 'mysql') return;
  const server = new URL(target.url!);
  server.pathname = '/';
  const { createConnection } = await import('mysql2/promise');
  const conn = await createConnection({ uri: server.toString(), connectTimeout: config.connectTimeoutMs });
  try {
    const [rows] = await conn.query('select schema_name from information_schema.schemata where schema_name = ?', [target.dbName]);
    if ((rows as unknown[]).length) return;
    if (!config.createDatabase) {
      throw new ConfigError(
        `The database "${target.dbName}" named by DATABASE_URL (${displayUrl(config.url)}) does not exist: create it (CREATE DATABASE ` +
          `\`${target.dbName}\` CHARACTER SET utf8mb4) or set database.createDatabase to true.`,
      );
    }
    await conn.query(`create database \`${target.dbName!.replaceAll('`', '``')}\` character set utf8mb4`);
    say(`Created the database "${target.dbName}" named by DATABASE_URL (database.createDatabase is on).`);
  } finally {
    await conn.end();
  }
}

/**
 * Runs `open` once the database answers: retries while it is unreachable, waiting 0.5 s, then
 * twice as long each time (at most 10 s), for up to `database.bootRetrySeconds`. Other errors, and
 * giving up, end the boot with a one-line ConfigError.
 */
export async function connectAtBoot<T>(config: AppConfig['database'], open: () => Promise<T>, say: (line: string) => void): Promise<T> {
  const deadline = Date.now() + config.bootRetrySeconds * 1000;
  for (let wait = 500; ; wait = Math.min(wait * 2, 10_000)) {
    try {
      await ensureMysqlDatabase(config, say);
      return await open();
    } catch (err) {
      const code = reason(err);
      // Retrying cannot fix credentials: say so at once, in a sentence, not a stack trace.
      if (code === 'ER_ACCESS_DENIED_ERROR' || code === 'ER_DBACCESS_DENIED_ERROR') {
        throw new ConfigError(
          `The database named by DATABASE_URL (${displayUrl(config.url)}) refused the user name or password (${code}); check them in DATABASE_URL.`,
        );
      }
      if (!isDatabaseUnavailable(err)) throw err;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new ConfigError(
          `The database named by DATABASE_URL (${displayUrl(config.url)}) cannot be reached (${code}); gave up after ` + `${config.bootRetrySeconds} s.`,
        );
      }
      const pause = Math.min(wait, left);
      say(`The database named by DATABASE_URL (${displayUrl(config.url)}) cannot be reached (${code}); retrying in ${(pause / 1000).toFixed(1)} s.`);
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/** The database of the core and the enabled features, opened as at start-up: waiting for it, then their entities and migrations. */
export function openFeaturesDatabase(config: AppConfig, features: LoadedFeature[], say: (line: string) => void): Promise<Database> {
  return connectAtBoot(
    config.database,
    () =>
      openDatabase({
        config: config.database,
        entities: [...coreEntities, ...features.flatMap((f) => f.def.entities ?? [])],
        migrations: [...coreMigrations, ...features.flatMap((f) => f.def.migrations ?? [])],
      }),
    say,
  );
}
