/**
 * "A server has this database open", decided by the database or the kernel, never by a pid file:
 * `npm run restore` refuses while it holds, and a killed server leaves nothing behind.
 * - SQLite: every connection to a WAL database holds a shared lock on its file as long as it is
 *   open; the check asks for an exclusive one without waiting. The kernel drops the lock with the
 *   process, however it ends.
 * - MySQL/MariaDB: each server holds a named lock (GET_LOCK) on a connection of its own; the
 *   database drops it with the connection, so with the process. Named locks are exclusive, so
 *   servers sharing a database take one of SLOTS names each and the check asks about them all.
 *   They belong to one database server: on a Galera cluster a restore through another node does
 *   not see them (older MariaDB versions refuse them there: the server then runs unmarked and
 *   says so).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import type { Connection } from 'mysql2/promise';
import type { AppConfig } from './config.ts';
import { isDatabaseUnavailable, sqliteCode } from './db/errors.ts';
import { parseDatabaseUrl, type DatabaseUrl } from './db/url.ts';
import { join, sql } from './sql.ts';

/** More servers than this on one MySQL database run unmarked (and say so). */
const SLOTS = 32;
const SQLITE_BUSY = 5;

interface Log {
  info(msg: string): void;
  warn(msg: string): void;
}

/** Lock names are global to a MySQL server: one set per database, hashed to stay within 64 characters. */
function lockNames(dbName: string): string[] {
  const db = createHash('sha256').update(dbName).digest('hex').slice(0, 40);
  return Array.from({ length: SLOTS }, (_, i) => `server:${db}:${i}`);
}

/**
 * Marks the database as open in this server until the returned function is called. On SQLite
 * the server's own connection is the mark; on MySQL a connection of its own holds a named lock,
 * taken again whenever that connection is lost (a database restart).
 */
export async function markServer(config: AppConfig['database'], log: Log): Promise<() => Promise<void>> {
  const target = parseDatabaseUrl(config.url);
  if (target.dialect !== 'mysql') return async () => {};
  const { createConnection } = await import('mysql2/promise');
  let conn: Connection | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  /** Pings the marking connection: idle, it would be closed by the database's wait_timeout or a proxy's. */
  let ping: (() => void) | undefined;

  const take = async (): Promise<void> => {
    const c = await createConnection({ uri: target.url!, connectTimeout: config.connectTimeoutMs, enableKeepAlive: true });
    conn = c;
    let lost = false;
    const drop = (): void => {
      lost = true;
      ping = undefined;
      c.destroy();
    };
    const onLost = (): void => {
      if (lost || closed) return;
      drop();
      log.warn('The connection marking this server as running was lost; taking the mark again.');
      again(1000);
    };
    const unmarked = (why: string): void => {
      drop();
      log.warn(`${why}: this server runs unmarked, and npm run restore cannot see it; stop every server before a restore.`);
    };
    c.on('error', onLost);
    c.on('end', onLost);
    try {
      for (const name of lockNames(target.dbName!)) {
        const [rows] = await c.query('select get_lock(?, 0) as got', [name]);
        if ((rows as { got: number | null }[])[0]?.got === 1) {
          ping = () => {
            c.ping().catch(onLost);
          };
          return;
        }
      }
    } catch (err) {
      if (!isDatabaseUnavailable(err)) {
        return unmarked(`The database refuses named locks (${(err as { code?: string }).code ?? (err as Error).message}; a Galera cluster, say)`);
      }
      // The caller retries: this connection must not start a second round.
      drop();
      throw err;
    }
    unmarked(`More than ${SLOTS} servers share this database`);
  };
  const again = (wait: number): void => {
    retry = setTimeout(() => {
      if (closed) return;
      take().catch(() => again(Math.min(wait * 2, 10_000)));
    }, wait);
    retry.unref();
  };

  await take();
  const pinger = setInterval(() => ping?.(), config.markPingSeconds * 1000);
  pinger.unref();
  return async () => {
    closed = true;
    clearTimeout(retry);
    clearInterval(pinger);
    await conn?.end().catch(() => conn?.destroy());
  };
}

/** Whether a server has the database open now. */
export async function serverHasOpen(target: DatabaseUrl): Promise<boolean> {
  if (target.dialect === 'sqlite') return sqliteHeld(target.file!);
  return (await markHolders(target)).length > 0;
}

/** MySQL: the ids of the connections holding servers' marks on the database. */
export async function markHolders(target: DatabaseUrl): Promise<number[]> {
  const { createConnection } = await import('mysql2/promise');
  const conn = await createConnection({ uri: target.url! });
  try {
    const names = lockNames(target.dbName!);
    const { text, values } = sql`select ${join(
      names.map((name) => sql`is_used_lock(${name})`),
      ', ',
    )}`;
    const [rows] = await conn.query({ sql: text, rowsAsArray: true }, values);
    return (rows as (number | null)[][])[0]!.filter((id) => id !== null).map(Number);
  } finally {
    await conn.end();
  }
}

function sqliteHeld(file: string): boolean {
  if (file === ':memory:' || !existsSync(file)) return false;
  const probe = new DatabaseSync(file);
  try {
    // Exclusive locking mode asks for the file's exclusive lock at the first read.
    probe.exec('pragma busy_timeout = 0; pragma locking_mode = exclusive');
    probe.prepare('select count(*) from sqlite_schema').get();
    return false;
  } catch (err) {
    // Any other failure (not a database at all, say) is for the restore to handle.
    return sqliteCode(err) === SQLITE_BUSY;
  } finally {
    probe.close();
  }
}
