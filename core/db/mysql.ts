/** MySQL/MariaDB: statements on a pooled connection, transactions on one of their own, the pool's counts. */
import type { Pool, PoolConnection } from 'mysql2/promise';
import { markCommitUnknown, markLostUncommitted } from './errors.ts';
import type { PoolStats, RunResult, Runner } from './runner.ts';
import { mysqlValue } from './values.ts';

/** mysql2 keeps its pool's counts in fields its typings leave out. */
interface MysqlPoolCounts {
  _allConnections: { length: number };
  _freeConnections: { length: number };
  _connectionQueue: { length: number };
}

/** How busy the pool is: connections in use and idle, and callers waiting for one. */
export function mysqlPoolStats(pool: Pool): PoolStats {
  const counts = pool.pool as unknown as MysqlPoolCounts;
  const idle = counts._freeConnections.length;
  return { inUse: counts._allConnections.length - idle, idle, waiting: counts._connectionQueue.length };
}

/** The values as mysql2 binds them: a list holding no undefined goes as it is, with no copy. */
const bound = (params: unknown[]) => (params.includes(undefined) ? params.map(mysqlValue) : params) as never[];

/** What a write reports, as numbers. */
const runResult = ([res]: [unknown, unknown]): RunResult => {
  const { affectedRows, insertId } = res as { affectedRows?: number; insertId?: number };
  return { affectedRows: Number(affectedRows ?? 0), insertId: Number(insertId ?? 0) };
};
const rowsOf = ([rows]: [unknown, unknown]) => rows as Record<string, unknown>[];
const arraysOf = ([rows]: [unknown, unknown]) => rows as unknown[][];

/** A pooled MySQL/MariaDB connection (or the pool) as a Runner. */
export function mysqlRunner(conn: Pool | PoolConnection): Runner {
  // Reads and statements with values are prepared (the binary protocol parses big results with
  // less work: docs/performance.md); other statements without values (DDL, CHECKSUM TABLE) go as
  // text: some cannot be prepared, and there is nothing to bind. Each hands on mysql2's promise
  // with one `then`: a statement of a request pays no async function of its own.
  const send = (sql: string, params: unknown[]): Promise<[unknown, unknown]> =>
    params.length || /^\s*select\b/i.test(sql) ? conn.execute(sql, bound(params)) : conn.query(sql);
  return {
    all: (sql, params) => send(sql, params).then(rowsOf),
    arrays: (sql, params) => conn.execute({ sql, rowsAsArray: true }, bound(params)).then(arraysOf),
    run: (sql, params) => send(sql, params).then(runResult),
  };
}

/**
 * Runs `fn` in a transaction on a connection of its own, committed or rolled back. A connection lost
 * before the commit was sent marks the error retryable (isRetryable): the server rolled it back.
 */
export async function mysqlTransaction<T>(pool: Pool, fn: (runner: Runner) => Promise<T>, causal = false): Promise<T> {
  const conn = await pool.getConnection();
  try {
    let committing = false;
    try {
      // A Galera node starts it only once it has applied every commit made anywhere before it.
      if (causal) await conn.query('set session wsrep_sync_wait = 1');
      await conn.query('start transaction');
      const result = await fn(mysqlRunner(conn));
      committing = true;
      await conn.query('commit');
      return result;
    } catch (err) {
      await conn.query('rollback').catch(() => conn.destroy());
      // mysql2 marks `fatal` the errors after which the connection is gone (lost, reset, closed).
      if ((err as { fatal?: boolean } | undefined)?.fatal === true) (committing ? markCommitUnknown : markLostUncommitted)(err as object);
      throw err;
    } finally {
      // Back to the server's setting before the connection serves another: a wait on every read costs a round of the cluster.
      if (causal) await conn.query('set session wsrep_sync_wait = default').catch(() => conn.destroy());
    }
  } finally {
    conn.release();
  }
}

/** The state a Galera node must be in to serve: in the primary component, synced, and ready. */
export async function galeraUnready(pool: Pool): Promise<string | undefined> {
  const [rows] = await pool.query(`select lower(variable_name) as name, variable_value as value from information_schema.global_status
    where variable_name in ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state_comment')`);
  const s = Object.fromEntries((rows as { name: string; value: string }[]).map((r) => [r.name, r.value]));
  if (s.wsrep_cluster_status !== 'Primary') return `The database node is not in the cluster's primary component (${s.wsrep_cluster_status ?? 'unknown'}).`;
  if (s.wsrep_ready !== 'ON' || s.wsrep_local_state_comment !== 'Synced') {
    return `The database node is not synced with its cluster (${s.wsrep_local_state_comment ?? 'unknown'}).`;
  }
  return undefined;
}

/** True when the server is a Galera cluster node (MariaDB's wsrep_on); false on a single server or MySQL. */
export async function isGalera(pool: Pool): Promise<boolean> {
  try {
    const [rows] = await pool.query('select @@global.wsrep_on as wsrep');
    return Number((rows as { wsrep: unknown }[])[0]?.wsrep) === 1;
  } catch {
    return false;
  }
}

/** True when the server at `url` is MariaDB (MikroORM has a driver for each). */
export async function isMariaDb(url: string, timeoutMs: number): Promise<boolean> {
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
