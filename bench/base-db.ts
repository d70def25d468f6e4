/**
 * The baseline's database access, as a careful hand-written server would do it: on SQLite one
 * node:sqlite connection with each statement prepared once and transactions run synchronously
 * (nothing can interleave, so no lock is needed); on MySQL/MariaDB a mysql2 pool of server-side
 * prepared statements. The same connection settings as the server's, so both read the same types.
 */
import { randomUUID } from 'node:crypto';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { createPool, type Pool, type PoolConnection } from 'mysql2/promise';
import { now } from '../core/format.ts';

export type Row = Record<string, any>; // rows of hand-written SQL

/** A SQLite connection whose statements are prepared once. */
export class SqliteBase {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();

  constructor(file: string) {
    this.#db = new DatabaseSync(file);
    this.#db.exec('pragma journal_mode = wal; pragma busy_timeout = 5000; pragma foreign_keys = on');
  }

  #stmt(sql: string): StatementSync {
    let stmt = this.#statements.get(sql);
    if (!stmt) this.#statements.set(sql, (stmt = this.#db.prepare(sql)));
    return stmt;
  }

  all(sql: string, ...params: (string | number | null)[]): Row[] {
    return this.#stmt(sql).all(...params) as Row[];
  }

  run(sql: string, ...params: (string | number | null)[]): { changes: number; lastId: number } {
    const res = this.#stmt(sql).run(...params);
    return { changes: Number(res.changes), lastId: Number(res.lastInsertRowid) };
  }

  /** `fn` all-or-nothing; it runs synchronously, so no other request's statement can join it. */
  tx<T>(fn: () => T): T {
    this.#db.exec('begin immediate');
    try {
      const result = fn();
      this.#db.exec('commit');
      return result;
    } catch (err) {
      if (this.#db.isTransaction) this.#db.exec('rollback');
      throw err;
    }
  }
}

/** An event a write tells of, as the webhook outbox keeps it. */
export interface OutboxEvent {
  name: string;
  payload: unknown;
}

/** The `fanned` of the baseline's events: the server's worker fans out only 0 and sweeps only 1. */
export const BASELINE_OUTBOX = 2;

/** Subscriptions are read again after this, as the server's cache does (`endpointsCacheSeconds`, shorter here for the bench's switching). */
export const SUBSCRIPTIONS_MS = 1000;

/** What a baseline route gets: one of the two, and reads that work on either. */
export class BaseDb {
  readonly sqlite?: SqliteBase;
  readonly pool?: Pool;
  #endpoints: Row[] = [];
  #subscribed = new Set<string>();
  #endpointsAt = 0;

  constructor(url: string) {
    if (url.startsWith('sqlite:')) {
      this.sqlite = new SqliteBase(url.slice('sqlite:'.length));
    } else {
      this.pool = createPool({
        uri: url,
        connectionLimit: 10,
        maxIdle: 10,
        enableKeepAlive: true,
        timezone: 'Z',
        supportBigNumbers: true,
        dateStrings: true,
        jsonStrings: true,
      });
    }
  }

  /** Rows of a read; placeholders are `?` on both. */
  async all(sql: string, params: (string | number | null)[] = []): Promise<Row[]> {
    if (this.sqlite) return this.sqlite.all(sql, ...params);
    return (await this.pool!.execute(sql, params))[0] as Row[];
  }

  /** A write's count of rows it changed. */
  async changed(sql: string, params: (string | number | null)[]): Promise<number> {
    if (this.sqlite) return this.sqlite.run(sql, ...params).changes;
    return ((await this.pool!.execute(sql, params))[0] as { affectedRows: number }).affectedRows;
  }

  /** The active webhook endpoints, read again after SUBSCRIPTIONS_MS as the server's cache does (the same array until then). */
  async endpoints(): Promise<Row[]> {
    if (Date.now() - this.#endpointsAt >= SUBSCRIPTIONS_MS) {
      this.#endpoints = await this.all('select id, kind, url, secret, events from notifications_endpoints where active = 1');
      this.#subscribed = new Set(this.#endpoints.flatMap((r) => String(r.events).split(' ')));
      this.#endpointsAt = Date.now();
    }
    return this.#endpoints;
  }

  /**
   * The events of the active webhook endpoints' subscriptions among `names`: a write tells of these
   * in its own transaction (`outbox`), as the server's notifications feature does.
   */
  async subscribed(names: string[]): Promise<string[]> {
    await this.endpoints();
    return names.filter((name) => this.#subscribed.has(name));
  }

  /**
   * One insert of a transaction's events, to run inside it (undefined when there are none). The rows
   * go in marked as the baseline's own (`fanned` = BASELINE_OUTBOX), so the server's worker, idle
   * beside the baseline, sends none of them while the baseline is measured: the baseline pays for
   * the write, and in the rush for its own sends (bench/base-webhooks.ts).
   */
  static outbox(events: OutboxEvent[]): { sql: string; params: string[] } | undefined {
    if (events.length === 0) return undefined;
    const at = now();
    return {
      sql: `insert into notifications_events (message_id, name, payload, created_date, fanned) values ${events.map(() => `(?, ?, ?, ?, ${BASELINE_OUTBOX})`).join(', ')}`,
      params: events.flatMap((e) => [`msg_${randomUUID().replaceAll('-', '')}`, e.name, JSON.stringify(e.payload), at]),
    };
  }

  /** MySQL: `work` in a transaction on one pooled connection, committed when it returns; run again after a deadlock, as the server does. */
  async mysqlTx<T>(work: (conn: PoolConnection) => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.#mysqlTxOnce(work);
      } catch (err) {
        if ((err as { errno?: number }).errno !== 1213 || tries >= 3) throw err;
      }
    }
  }

  async #mysqlTxOnce<T>(work: (conn: PoolConnection) => Promise<T>): Promise<T> {
    const conn = await this.pool!.getConnection();
    try {
      await conn.query('start transaction');
      try {
        const result = await work(conn);
        await conn.query('commit');
        return result;
      } catch (err) {
        await conn.query('rollback');
        throw err;
      }
    } finally {
      conn.release();
    }
  }

  async close(): Promise<void> {
    await this.pool?.end();
  }
}
