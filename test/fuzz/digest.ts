/**
 * "Changes nothing", made checkable: a fingerprint of every row of every table, per table, so a
 * failure can name the table a refused request wrote to. The fuzzer takes thousands of these, so
 * each is one statement: on SQLite every row as SQL literals, sorted and joined by the database; on
 * MySQL/MariaDB the server's own CHECKSUM TABLE. Neither sees auto-increment counters, which a
 * rolled-back insert may move without changing anything.
 */
import { createHash } from 'node:crypto';
import type { Database } from '../../core/db.ts';

export type Digest = Map<string, string>;

const statements = new WeakMap<Database, string>();

async function statementFor(db: Database): Promise<string> {
  const known = statements.get(db);
  if (known) return known;
  let sql: string;
  if (db.dialect === 'mysql') {
    const tables = await db.query<{ name: string }>('select table_name as name from information_schema.tables where table_schema = database() order by table_name');
    sql = `checksum table ${tables.map((t) => `\`${t.name}\``).join(', ')}`;
  } else {
    const tables = await db.query<{ name: string }>("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name");
    const parts: string[] = [];
    for (const { name } of tables) {
      const columns = await db.query<{ name: string }>('select name from pragma_table_info(?)', [name]);
      const row = columns.map((c) => `quote("${c.name}")`).join(` || ',' || `);
      parts.push(`select '${name}' as name, (select group_concat(r, char(10) order by r) from (select ${row} as r from "${name}")) as content`);
    }
    sql = parts.join(' union all ');
  }
  statements.set(db, sql);
  return sql;
}

export async function digest(db: Database): Promise<Digest> {
  const rows = await db.query<Record<string, unknown>>(await statementFor(db));
  const out: Digest = new Map();
  for (const row of rows) {
    // CHECKSUM TABLE answers `Table` (as `schema.table`) and `Checksum`
    const name = String(row.name ?? row.Table).replace(/^.*\./, '');
    out.set(name, createHash('sha256').update(String(row.content ?? row.Checksum)).digest('hex'));
  }
  return out;
}

/** The tables whose content differs between two digests. */
export function changedTables(before: Digest, after: Digest): string[] {
  return [...before.keys()].filter((name) => before.get(name) !== after.get(name)).sort();
}
