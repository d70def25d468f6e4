/**
 * Per-account caps on wrong secrets (issue 16): wrong passwords and wrong two-factor codes are
 * counted on the account's own row, whatever ip, session or pending login they came through, and
 * the row locks for a while once the cap is reached.
 */
import { clockNow } from '../../core/clock.ts';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, now, parseTimestamp } from '../../core/format.ts';
import { fields, sql } from '../../core/sql.ts';
import type { AuthCredential, AuthTotp } from './entities.ts';

export interface LockoutOptions {
  /** Wrong attempts in a row after which the account's entry locks. */
  maxFailures: number;
  lockSeconds: number;
}

/** A table with `user_id`, `failed_attempts` and `locked_until` columns. */
export type LockoutTable = typeof AuthCredential | typeof AuthTotp;

export class Lockout {
  readonly #db: Database;
  /** The statements below are conditional updates, so they are written out rather than made by Table. */
  readonly #table: LockoutTable;
  readonly #opts: LockoutOptions;
  readonly #what: string;

  constructor(db: Database, table: LockoutTable, opts: LockoutOptions, what: string) {
    this.#db = db;
    this.#table = table;
    this.#opts = opts;
    this.#what = what;
  }

  /**
   * Takes one attempt before the secret is checked, so parallel guesses are counted too: the
   * increment is refused at the cap, and an expired lock starts a new count. Throws RATE_LIMITED
   * (with Retry-After) while the account is locked. An account without the row has nothing to guess.
   */
  async claim(userId: number): Promise<void> {
    const at = now();
    const T = this.#table;
    const { failedAttempts: failures, lockedUntil: until } = T.c;
    const { affectedRows } = await this.#db.run(sql`update ${T} set
         ${failures} = case when ${until} is not null and ${until} <= ${at} then 1 else ${failures} + 1 end,
         ${until} = case when ${until} is not null and ${until} <= ${at} then null else ${until} end
       where ${T.c.userId} = ${userId} and (${failures} < ${this.#opts.maxFailures} or (${until} is not null and ${until} <= ${at}))`);
    if (affectedRows > 0) return;
    const [row] = await this.#db.query(sql`select ${fields({ locked_until: until })} from ${T} where ${T.c.userId} = ${userId}`);
    if (!row) return;
    // No lock time yet: the attempt that reached the cap is still being checked.
    const seconds = row.locked_until ? Math.ceil((parseTimestamp(row.locked_until).getTime() - clockNow()) / 1000) : this.#opts.lockSeconds;
    throw new DomainError('RATE_LIMITED', `Too many wrong ${this.#what} for this account; retry after the time in Retry-After.`, {
      retryAfterSeconds: Math.max(1, seconds),
    });
  }

  /** A right secret: the count starts again. */
  async succeeded(userId: number): Promise<void> {
    const T = this.#table;
    await this.#db.run(sql`update ${T} set ${T.c.failedAttempts} = 0, ${T.c.lockedUntil} = null where ${T.c.userId} = ${userId}`);
  }

  /** A wrong secret: the attempt stays counted, and the one reaching the cap locks the entry. */
  async failed(userId: number): Promise<void> {
    const T = this.#table;
    await this.#db.run(sql`update ${T} set ${T.c.lockedUntil} = ${addSeconds(now(), this.#opts.lockSeconds)}
      where ${T.c.userId} = ${userId} and ${T.c.failedAttempts} >= ${this.#opts.maxFailures} and ${T.c.lockedUntil} is null`);
  }
}
