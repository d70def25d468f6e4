/**
 * "Changes nothing", made checkable: a fingerprint of every row of every table, per table, so a
 * failure can name the table a refused request wrote to. The fuzzer takes thousands of these, so
 * each is one or two statements: on SQLite every row as SQL literals, sorted and joined by the database; on
 * MySQL/MariaDB the server's own CHECKSUM TABLE. Neither sees auto-increment counters, which a
 * rolled-back insert may move without changing anything.
 *
 * Nor do they see bookkeeping a refusal writes on purpose: the per-account counts of wrong
 * passwords and codes (issue 16), when an API key was last presented, and the rate limits' counts
 * (every attempt counts, refused or not). Tables holding such columns are summed row by row on
 * MySQL/MariaDB too, without them.
 */
import { createHash } from 'node:crypto';
import type { Database } from '../../core/db.ts';

export type Digest = Map<string, string>;

const statements = new WeakMap<Database, string[]>();

/** Columns that count refused attempts or record a key's use, and the webhook worker's mark on an event it fanned out. */
const BOOKKEEPING = new Set(['failed_attempts', 'locked_until', 'last_used_at', 'fanned']);
/**
 * Tables that are bookkeeping whole: a rate limit's bucket appears with the first attempt, and the
 * webhook worker writes its deliveries and their attempts in the background while requests run. The
 * events a change queues (notifications_events) stay checked.
 */
const BOOKKEEPING_TABLES = new Set(['core_rate_limits', 'notifications_deliveries', 'notifications_attempts', 'email_tokens']);
/**
 * Columns the mail worker writes in the background as it sends what an earlier request queued (once a
 * fuzzed SMTP setting turns mail on), and the links' tokens it makes as it composes (email_tokens, above).
 * The messages a change queues (their rows) stay checked.
 */
const BACKGROUND: Record<string, Set<string>> = {
  email_outbox: new Set(['state', 'attempts', 'due_at', 'last_error', 'subject', 'sent_at']),
};
const skipped = (table: string, column: string) => BOOKKEEPING.has(column) || (BACKGROUND[table]?.has(column) ?? false);

async function statementsFor(db: Database): Promise<string[]> {
  const known = statements.get(db);
  if (known) return known;
  let sql: string[];
  if (db.dialect === 'mysql') {
    const columns = await db.unchecked.query<{ t: string; c: string }>(
      'select table_name as t, column_name as c from information_schema.columns where table_schema = database() order by table_name, ordinal_position',
    );
    const byTable = new Map<string, string[]>();
    for (const { t, c } of columns) if (!BOOKKEEPING_TABLES.has(t)) byTable.set(t, [...(byTable.get(t) ?? []), c]);
    const counted = [...byTable].filter(([t, cols]) => cols.some((c) => skipped(t, c)));
    const plain = [...byTable.keys()].filter((t) => !counted.some(([name]) => name === t));
    sql = [`checksum table ${plain.map((t) => `\`${t}\``).join(', ')}`];
    if (counted.length) {
      sql.push(
        counted
          .map(([t, cols]) => {
            const row = cols
              .filter((c) => !skipped(t, c))
              .map((c) => `coalesce(\`${c}\`, char(0))`)
              .join(', ');
            return `select '${t}' as name, concat(count(*), ':', coalesce(sum(crc32(concat_ws(char(31), ${row}))), 0)) as content from \`${t}\``;
          })
          .join(' union all '),
      );
    }
  } else {
    const tables = await db.unchecked.query<{ name: string }>("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name");
    const parts: string[] = [];
    for (const { name } of tables.filter((t) => !BOOKKEEPING_TABLES.has(t.name))) {
      const columns = (await db.unchecked.query<{ name: string }>('select name from pragma_table_info(?)', [name])).filter((c) => !skipped(name, c.name));
      const row = columns.map((c) => `quote("${c.name}")`).join(` || ',' || `);
      parts.push(`select '${name}' as name, (select group_concat(r, char(10) order by r) from (select ${row} as r from "${name}")) as content`);
    }
    sql = [parts.join(' union all ')];
  }
  statements.set(db, sql);
  return sql;
}

export async function digest(db: Database): Promise<Digest> {
  const rows: Record<string, unknown>[] = [];
  for (const sql of await statementsFor(db)) rows.push(...(await db.unchecked.query(sql)));
  const out: Digest = new Map();
  for (const row of rows) {
    // CHECKSUM TABLE answers `Table` (as `schema.table`) and `Checksum`
    const name = String(row.name ?? row.Table).replace(/^.*\./, '');
    out.set(
      name,
      createHash('sha256')
        .update(String(row.content ?? row.Checksum))
        .digest('hex'),
    );
  }
  return out;
}

/** The tables whose content differs between two digests. */
export function changedTables(before: Digest, after: Digest): string[] {
  return [...before.keys()].filter((name) => before.get(name) !== after.get(name)).sort();
}
