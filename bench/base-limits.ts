/**
 * The server's counts in core_rate_limits by hand (core/rate-limits.ts): a window past its end
 * starts again at 1. SQLite hands the rows back with RETURNING; MySQL, which has none, hands each
 * count back as the statement's insert id (LAST_INSERT_ID(n): the count times 2^32 plus the ms
 * left; 0 when the insert made the row), one statement a bucket.
 */
import type { BaseDb } from './base-db.ts';

const RANGE = 2 ** 32;

/** Each bucket counted once in its window of `windowMs[i]`: its hits and when its window ends (ms), in the buckets' order. */
export async function counted(db: BaseDb, buckets: string[], windowMs: number[]): Promise<{ hits: number; expiresAt: number }[]> {
  const at = Date.now();
  const ends = windowMs.map((ms) => at + ms);
  if (db.sqlite) {
    const rows = db.sqlite.all(
      `insert into core_rate_limits (bucket, hits, expires_at) values ${buckets.map(() => '(?, 1, ?)').join(', ')} on conflict (bucket) do update set ` +
        'hits = case when expires_at <= ? then 1 else hits + 1 end, expires_at = case when expires_at <= ? then excluded.expires_at else expires_at end ' +
        'returning bucket, hits, expires_at',
      ...buckets.flatMap((b, i) => [b, ends[i]!]),
      at,
      at,
    );
    return buckets.map((b) => {
      const row = rows.find((r) => r.bucket === b)!;
      return { hits: Number(row.hits), expiresAt: Number(row.expires_at) };
    });
  }
  return Promise.all(
    buckets.map(async (bucket, i) => {
      const end = ends[i]!;
      const [res] = await db.pool!.execute(
        'insert into core_rate_limits (bucket, hits, expires_at) values (?, 1, ?) on duplicate key update ' +
          `hits = last_insert_id(case when expires_at <= ? then 1 else least(hits + 1, ${2 ** 21 - 1}) end * ${RANGE} ` +
          `+ least(case when expires_at <= ? then ? else expires_at end - ?, ${RANGE - 1})) div ${RANGE}, ` +
          'expires_at = case when expires_at <= ? then ? else expires_at end',
        [bucket, end, at, at, end, at, at, end],
      );
      const id = Number((res as { insertId: number }).insertId);
      return id === 0 ? { hits: 1, expiresAt: end } : { hits: Math.floor(id / RANGE), expiresAt: at + (id % RANGE) };
    }),
  );
}
