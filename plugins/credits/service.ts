import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../../core/audit.ts';
import { countParam, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { formatMoney, now } from '../../core/format.ts';
import { empty, fields, join, raw, sql, sum } from '../../core/sql.ts';
import type { CreditsService, LedgerEntry, LedgerEntryInput } from './contract.ts';
import { CreditsLedgerEntry, CreditsWallet } from './entities.ts';

const W = CreditsWallet.c;
// Select lists of the buy's and a transfer's statements, made once so they reuse their text.
const BALANCE = fields({ balance: W.balance });
const E = CreditsLedgerEntry.c;

interface Movement {
  userId: number;
  delta: number;
  reason: string;
}

export class DbCreditsService implements CreditsService {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #maxBalance: number;
  readonly #audit: AuditLog;

  /** `maxBalance` in cents: the most a wallet may hold (a change beyond it is INVALID_AMOUNT). */
  constructor(db: Database, events: EventBus, maxBalance: number, audit: AuditLog) {
    this.#db = db;
    this.#events = events;
    this.#maxBalance = maxBalance;
    this.#audit = audit;
  }

  /**
   * A balance changed by hand (the API's add, remove and set, the console's adjustment); a change
   * that belongs to an order is the order's action (a refund), which records itself.
   */
  #recordAdjustment(userId: number, entry: LedgerEntryInput, before: number, after: number): Promise<void> {
    if (entry.orderId !== undefined) return Promise.resolve();
    return this.#audit.record({
      action: entry.reason === 'set' ? 'credits.set' : 'credits.adjust',
      target: { type: 'user', id: userId },
      summary: `Balance ${formatMoney(before)} → ${formatMoney(after)} (${entry.reason})`,
      before: { balance: before },
      after: { balance: after },
    });
  }

  async balance(userId: number): Promise<number> {
    return (await this.balances([userId])).get(userId)!;
  }

  async balances(userIds: number[]): Promise<Map<number, number>> {
    const ids = [...new Set(userIds)];
    const result = new Map(ids.map((id) => [id, 0]));
    if (ids.length === 0) return result;
    const rows = await this.#db.query(sql`select ${fields({ user_id: W.userId, balance: W.balance })} from ${CreditsWallet} where ${W.userId} in ${ids}`);
    for (const row of rows) result.set(Number(row.user_id), Number(row.balance));
    return result;
  }

  async change(userId: number, deltaCents: number, entry: LedgerEntryInput): Promise<number> {
    if (!Number.isSafeInteger(deltaCents)) throw new DomainError('INVALID_AMOUNT', 'The amount must be a whole number of cents.');
    return this.#db.transaction(async () => {
      // A debit skips the upsert: its conditional update locks the one row it changes, and a missing
      // wallet has nothing to take (one statement less in every purchase).
      if (deltaCents >= 0) await this.#lock([userId]);
      const [balance] = await this.#apply([{ userId, delta: deltaCents, reason: entry.reason }], entry);
      await this.#recordAdjustment(userId, entry, balance! - deltaCents, balance!);
      return balance!;
    });
  }

  async takeUpTo(userId: number, cents: number, entry: LedgerEntryInput): Promise<number> {
    if (!Number.isSafeInteger(cents) || cents < 0) throw new DomainError('INVALID_AMOUNT', 'The amount must be a whole number of cents.');
    return this.#db.transaction(async () => {
      await this.#lock([userId]);
      const taken = Math.min(cents, await this.#read(userId));
      if (taken > 0) await this.#apply([{ userId, delta: -taken, reason: entry.reason }], entry);
      return taken;
    });
  }

  /** Moves `cents` (at least 1) from one user to another; both ledger rows share a transfer id. */
  async send(fromId: number, toId: number, cents: number, entry: Pick<LedgerEntryInput, 'keyName'> = {}): Promise<{ from: number; to: number }> {
    if (!Number.isSafeInteger(cents) || cents < 1) throw new DomainError('INVALID_AMOUNT', 'The amount must be at least 0.01.');
    if (fromId === toId) throw new DomainError('INVALID_TARGET', 'The sender and the target are the same user.');
    return this.#db.transaction(async () => {
      await this.#lock([fromId, toId]);
      const [from, to] = await this.#apply(
        [
          { userId: fromId, delta: -cents, reason: 'send' },
          { userId: toId, delta: cents, reason: 'receive' },
        ],
        { ...entry, transferId: randomUUID() },
      );
      return { from: from!, to: to! };
    });
  }

  /** Sets a balance; the ledger row carries the difference. */
  async set(userId: number, cents: number, entry: LedgerEntryInput): Promise<number> {
    if (!Number.isSafeInteger(cents) || cents < 0) throw new DomainError('INVALID_AMOUNT', 'The amount must be 0 or more.');
    if (cents > this.#maxBalance) throw this.#overflow();
    return this.#db.transaction(async () => {
      await this.#lock([userId]);
      const before = await this.#read(userId);
      const [balance] = await this.#apply([{ userId, delta: cents - before, reason: entry.reason }], entry);
      await this.#recordAdjustment(userId, entry, before, balance!);
      return balance!;
    });
  }

  async inCirculation(): Promise<number> {
    const [row] = await this.#db.query(sql`select ${fields({ total: sum(W.balance) })} from ${CreditsWallet}`);
    return Number(row?.total ?? 0);
  }

  /** A user's ledger, newest first; `before` (a ledger id) pages back. */
  async history(userId: number, { limit, before }: { limit: number; before?: number }): Promise<LedgerEntry[]> {
    return CreditsLedgerEntry.select(
      this.#db,
      sql`where ${E.userId} = ${userId}${before === undefined ? empty : sql` and ${E.id} < ${before}`} order by ${E.id} desc limit ${countParam(limit)}`,
    );
  }

  /**
   * Locks the users' wallets, creating missing ones, in ascending user-id order: two transactions
   * touching the same wallets then queue one behind the other instead of deadlocking.
   * On MySQL/MariaDB the upsert takes each row's exclusive lock in one step, whether the row exists
   * or not. (A `select … for update` of a missing row takes a gap lock instead, and two first-time
   * creations in the same gap deadlock; an `insert ignore` of an existing row takes a shared lock,
   * and two transactions upgrading it deadlock.) SQLite serialises writers, so there it only creates.
   */
  async #lock(userIds: number[]): Promise<void> {
    const ids = [...new Set(userIds)].sort((a, b) => a - b);
    const values = join(
      ids.map((id) => sql`(${id}, 0)`),
      ', ',
    );
    await this.#db.run(
      this.#db.dialect === 'mysql'
        ? sql`insert into ${CreditsWallet} (${W.userId}, ${W.balance}) values ${values} on duplicate key update ${W.balance} = ${W.balance}`
        : sql`insert into ${CreditsWallet} (${W.userId}, ${W.balance}) values ${values} on conflict (${W.userId}) do nothing`,
    );
  }

  /**
   * The current balance of a locked wallet. A locking read, because a plain read inside a longer
   * transaction (a store purchase) may see the snapshot taken before another request's commit.
   */
  async #read(userId: number): Promise<number> {
    const [row] = await this.#db.query(sql`select ${BALANCE} from ${CreditsWallet} where ${W.userId} = ${userId}${raw(this.#db.forUpdate)}`);
    return Number(row!.balance);
  }

  /**
   * Adds `delta` to a wallet (locked before, or by this very update) and returns the balance
   * after. The update carries its own bound, so the database itself refuses a negative or
   * oversized balance, even where it cannot lock rows. It also hands back the new balance,
   * sparing a read while the row is locked: `returning` on SQLite; on MySQL/MariaDB
   * `last_insert_id(expr)`, their documented counter idiom, whose value comes back as the
   * statement's insert id.
   */
  async #move(userId: number, delta: number): Promise<number> {
    if (delta === 0) return this.#read(userId);
    const bound = delta < 0 ? sql`${W.balance} >= ${-delta}` : sql`${W.balance} <= ${this.#maxBalance - delta}`;
    let after: number | undefined;
    if (this.#db.dialect === 'mysql') {
      const { affectedRows, insertId } = await this.#db.run(
        sql`update ${CreditsWallet} set ${W.balance} = last_insert_id(${W.balance} + ${delta}) where ${W.userId} = ${userId} and ${bound}`,
      );
      if (affectedRows === 1) after = insertId;
    } else {
      const [row] = await this.#db.query(
        sql`update ${CreditsWallet} set ${W.balance} = ${W.balance} + ${delta} where ${W.userId} = ${userId} and ${bound} returning ${BALANCE}`,
      );
      if (row) after = Number(row.balance);
    }
    if (after !== undefined) return after;
    if (delta > 0) throw this.#overflow();
    throw new DomainError('NOT_ENOUGH_CREDITS', `The balance is lower than ${formatMoney(-delta)}.`);
  }

  /** Applies the movements to locked wallets, writes their ledger rows and events, and returns the balances after. */
  async #apply(movements: Movement[], entry: Omit<LedgerEntryInput, 'reason'>): Promise<number[]> {
    const balances: number[] = [];
    for (const { userId, delta } of movements) balances.push(await this.#move(userId, delta));
    const createdAt = now();
    const orderId = entry.orderId ?? null;
    const transferId = entry.transferId ?? null;
    // One statement for both rows of a send.
    await CreditsLedgerEntry.insertMany(
      this.#db,
      movements.map((m, i) => ({
        userId: m.userId,
        delta: m.delta,
        balance: balances[i]!,
        reason: m.reason,
        keyName: entry.keyName ?? null,
        orderId,
        transferId,
        createdAt,
      })),
    );
    for (const [i, m] of movements.entries()) {
      await this.#events.emit('credits.changed', {
        userId: m.userId,
        delta: m.delta,
        balance: balances[i]!,
        reason: m.reason,
        ...(orderId === null ? {} : { orderId }),
        ...(transferId === null ? {} : { transferId }),
      });
    }
    return balances;
  }

  #overflow(): DomainError {
    return new DomainError('INVALID_AMOUNT', `A balance may not exceed ${formatMoney(this.#maxBalance)}.`);
  }
}
