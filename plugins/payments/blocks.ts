/**
 * The block list: a player whose payment was disputed may not pay at a gateway again until staff
 * lift the block. A block names the account, the in-game name and the email (and, when the owner
 * asks, the account's address), so a new account under the same name or email is refused too.
 * Only gateway checkouts read it: a credit buy spends credits the dispute already took back.
 */
import { DomainError } from '../../core/errors.ts';
import { now } from '../../core/format.ts';
import { countParam } from '../../core/db.ts';
import { empty, fields, join, sql, type Sql } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import { PaymentsBlock } from './entities.ts';
import type { Payment, PaymentsDeps } from './model.ts';
import type { UserAccount } from '../users/contract.ts';

const B = PaymentsBlock.c;

export type Block = TableRecord<typeof PaymentsBlock>;

/** Who asks to pay: an account, or a guest by in-game name; `ip` the request's address. */
export interface Payer {
  userId?: number;
  /** The payer's account, when the caller has just read it: no second read. */
  account?: Pick<UserAccount, 'id' | 'username' | 'email'>;
  guestName?: string | null;
  ip?: string;
}

export class Blocks {
  readonly #deps: PaymentsDeps;

  constructor(deps: PaymentsDeps) {
    this.#deps = deps;
  }

  /** PURCHASES_BLOCKED when a block stands against the payer's account, name, email or (when blocks name addresses) address. */
  async refuse(payer: Payer): Promise<void> {
    const user = payer.account ?? (payer.userId ? await this.#deps.users.findById(payer.userId) : undefined);
    const name = (user?.username ?? payer.guestName ?? '').toLowerCase();
    const matches: Sql[] = [sql`${B.nameKey} = ${name}`];
    if (user) matches.push(sql`${B.userId} = ${user.id}`);
    if (user?.email) matches.push(sql`${B.emailKey} = ${user.email.toLowerCase()}`);
    if (this.#deps.blockAddresses && payer.ip) matches.push(sql`${B.ip} = ${payer.ip}`);
    const [hit] = await this.#deps.db.query(
      sql`select ${fields({ id: B.id })} from ${PaymentsBlock} where ${B.liftedDate} is null and (${join(matches, ' or ')}) limit 1`,
    );
    if (hit) {
      throw new DomainError('PURCHASES_BLOCKED', 'Purchases are blocked for this player after a disputed payment. Contact the staff to have the block lifted.');
    }
  }

  /** Blocks the buyer of a disputed payment, once per payment; inside the dispute's transaction. */
  async place(payment: Payment, reason: string): Promise<Block | undefined> {
    const { db, users, events, blockAddresses } = this.#deps;
    const [placed] = await PaymentsBlock.select(db, sql`where ${B.paymentId} = ${payment.id} and ${B.liftedDate} is null`);
    if (placed) return undefined;
    const user = payment.userId === 0 ? undefined : await users.findById(payment.userId);
    const username = user?.username ?? payment.guestName ?? '';
    const row = {
      userId: payment.userId,
      nameKey: username.toLowerCase(),
      emailKey: user?.email?.toLowerCase() ?? null,
      ip: blockAddresses && user ? user.creationIP : null,
      paymentId: payment.id,
      reason: reason.slice(0, 255),
      creationDate: now(),
      liftedDate: null,
      liftedBy: null,
    };
    const block = { id: await PaymentsBlock.insert(db, row), ...row };
    await events.emit('payments.block.added', { blockId: block.id, userId: block.userId, username, paymentId: payment.id, reason: block.reason });
    return block;
  }

  /** Lifts a block that stands; false when it was lifted already (by another click or the dispute won). BLOCK_NOT_FOUND when there is none. */
  async lift(id: number, by: string): Promise<{ block: Block; lifted: boolean }> {
    const { db, events } = this.#deps;
    const block = await this.require(id);
    const stamp = now();
    const { affectedRows } = await db.run(sql`update ${PaymentsBlock} set ${B.liftedDate} = ${stamp}, ${B.liftedBy} = ${by.slice(0, 64)}
      where ${B.id} = ${id} and ${B.liftedDate} is null`);
    if (affectedRows === 0) return { block, lifted: false };
    await events.emit('payments.block.lifted', { blockId: id, userId: block.userId, username: block.nameKey, by });
    return { block: { ...block, liftedDate: stamp, liftedBy: by.slice(0, 64) }, lifted: true };
  }

  /** Staff lift a block (the audit log names who); lifting a lifted block changes nothing. */
  async liftByStaff(id: number): Promise<Block> {
    const { db, audit } = this.#deps;
    return db.transaction(async () => {
      const by = audit.actor()?.name ?? 'staff';
      const { block, lifted } = await this.lift(id, by);
      if (lifted) {
        await audit.record({
          action: 'payments.block.lifted',
          target: { type: 'block', id },
          summary: `Block of ${block.nameKey} lifted`,
          after: { liftedBy: by },
        });
      }
      return block;
    });
  }

  /** The standing block a payment's dispute placed, if any. */
  async ofPayment(paymentId: string): Promise<Block | undefined> {
    const [block] = await PaymentsBlock.select(this.#deps.db, sql`where ${B.paymentId} = ${paymentId} and ${B.liftedDate} is null`);
    return block;
  }

  async require(id: number): Promise<Block> {
    const block = await PaymentsBlock.find(this.#deps.db, id);
    if (!block) throw new DomainError('BLOCK_NOT_FOUND', `There is no block ${id}.`);
    return block;
  }

  /** Newest first; standing ones only unless `all`. */
  async list(options: { all?: boolean; limit: number }): Promise<Block[]> {
    return PaymentsBlock.select(
      this.#deps.db,
      sql`${options.all ? empty : sql`where ${B.liftedDate} is null`} order by ${B.id} desc limit ${countParam(options.limit)}`,
    );
  }
}
