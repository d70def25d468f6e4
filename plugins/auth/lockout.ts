/**
 * Per-account caps on wrong secrets (issue 16): wrong passwords and wrong two-factor codes are
 * counted on the account's own row, whatever ip, session or pending login they came through, and
 * the row locks for a while once the cap is reached.
 */
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, now, parseTimestamp } from '../../core/format.ts';
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
  /** The table's name: the statements below are conditional, so they are written by hand. */
  readonly #table: string;
  readonly #opts: LockoutOptions;
  readonly #what: string;

  constructor(db: Database, table: LockoutTable, opts: LockoutOptions, what: string) {
    this.#db = db;
    this.#table = table.tableName;
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
    const { affectedRows } = await this.#db.run(
      `update ${this.#table} set
         failed_attempts = case when locked_until is not null and locked_until <= ? then 1 else failed_attempts + 1 end,
         locked_until = case when locked_until is not null and locked_until <= ? then null else locked_until end
       where user_id = ? and (failed_attempts < ? or (locked_until is not null and locked_until <= ?))`,
      [at, at, userId, this.#opts.maxFailures, at]);
    if (affectedRows > 0) return;
    const [row] = await this.#db.query<{ locked_until: string | null }>(`select locked_until from ${this.#table} where user_id = ?`, [userId]);
    if (!row) return;
    // No lock time yet: the attempt that reached the cap is still being checked.
    const seconds = row.locked_until ? Math.ceil((parseTimestamp(row.locked_until).getTime() - Date.now()) / 1000) : this.#opts.lockSeconds;
    throw new DomainError('RATE_LIMITED', `Too many wrong ${this.#what} for this account; retry after the time in Retry-After.`,
      { retryAfterSeconds: Math.max(1, seconds) });
  }

  /** A right secret: the count starts again. */
  async succeeded(userId: number): Promise<void> {
    await this.#db.run(`update ${this.#table} set failed_attempts = 0, locked_until = null where user_id = ?`, [userId]);
  }

  /** A wrong secret: the attempt stays counted, and the one reaching the cap locks the entry. */
  async failed(userId: number): Promise<void> {
    await this.#db.run(`update ${this.#table} set locked_until = ? where user_id = ? and failed_attempts >= ? and locked_until is null`,
      [addSeconds(now(), this.#opts.lockSeconds), userId, this.#opts.maxFailures]);
  }
}
