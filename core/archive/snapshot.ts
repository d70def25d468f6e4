/**
 * One consistent moment of the database, read table by table while the server keeps writing: on
 * SQLite a read transaction on a connection of its own (WAL keeps its snapshot while others
 * commit), on MySQL/MariaDB `start transaction with consistent snapshot` (InnoDB's MVCC, no locks).
 * Rows stream: neither side holds more than a few of them in memory.
 */
import { DatabaseSync } from 'node:sqlite';
import { MIGRATIONS_TABLE } from '../db/migrations.ts';
import type { DatabaseUrl } from '../db/url.ts';
import type { Column } from '../table.ts';
import type { AnyTable } from './feature-archive.ts';

export interface Snapshot {
  /** How many rows a table has at the snapshot's moment. */
  count(table: AnyTable): Promise<number>;
  /** The table's rows as arrays in the order of `table.columns`, by primary key. */
  rows(table: AnyTable): Iterable<unknown[]> | AsyncIterable<unknown[]>;
  /** The names of the migrations applied at that moment, sorted. */
  migrations(): Promise<string[]>;
  close(): Promise<void>;
}

/** `order by` the primary key's columns (every column where the table has none), so two exports of the same data are the same bytes. */
function orderBy(table: AnyTable): string {
  const props = Object.entries(table.options.properties as Record<string, Column<unknown>>);
  const keys = props.filter(([, c]) => c.isPrimary).map(([k]) => k);
  return (keys.length ? keys : props.map(([k]) => k)).map((k) => `\`${table.columnOf[k]}\``).join(', ');
}

function selectAll(table: AnyTable): string {
  return `select ${table.columns.text} from \`${table.tableName}\` order by ${orderBy(table)}`;
}

export async function openSnapshot(target: DatabaseUrl): Promise<Snapshot> {
  return target.dialect === 'sqlite' ? sqliteSnapshot(target.file!) : mysqlSnapshot(target.url!);
}

function sqliteSnapshot(file: string): Snapshot {
  if (file === ':memory:') throw new Error('An in-memory database has nothing to export.');
  const db = new DatabaseSync(file, { readOnly: true });
  db.exec('pragma busy_timeout = 5000');
  // A deferred transaction takes its snapshot at its first read and keeps it to the end.
  db.exec('begin');
  return {
    count: async (table) => Number((db.prepare(`select count(*) as n from \`${table.tableName}\``).get() as { n: number }).n),
    rows: (table) => {
      const stmt = db.prepare(selectAll(table));
      stmt.setReturnArrays(true);
      return stmt.iterate() as Iterable<unknown[]>;
    },
    migrations: async () => (db.prepare(`select name from ${MIGRATIONS_TABLE}`).all() as { name: string }[]).map((r) => r.name).sort(),
    close: async () => {
      db.exec('rollback');
      db.close();
    },
  };
}

async function mysqlSnapshot(url: string): Promise<Snapshot> {
  const { createConnection } = await import('mysql2');
  const conn = createConnection({ uri: url, supportBigNumbers: true, dateStrings: true, jsonStrings: true, timezone: 'Z' });
  const p = conn.promise();
  await p.query('set session transaction isolation level repeatable read');
  await p.query('start transaction with consistent snapshot, read only');
  return {
    count: async (table) => {
      const [rows] = await p.query(`select count(*) as n from \`${table.tableName}\``);
      return Number((rows as { n: number | string }[])[0]!.n);
    },
    // The text protocol's stream hands on rows as they arrive, pausing the socket when the reader lags.
    rows: (table) => conn.query({ sql: selectAll(table), rowsAsArray: true }).stream({ highWaterMark: 256 }) as AsyncIterable<unknown[]>,
    migrations: async () => {
      const [rows] = await p.query(`select name from ${MIGRATIONS_TABLE}`);
      return (rows as { name: string }[]).map((r) => r.name).sort();
    },
    close: async () => {
      await p.query('rollback');
      await p.end();
    },
  };
}
