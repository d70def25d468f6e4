/**
 * The promotions' records and what both its sides share: the errors a code gets, and a gift card's
 * primitives (found by code, issued, each movement of its balance in its ledger), used by the
 * buy's part (buy.ts: cards spent and bought) and by the admin's (service.ts: issued, redeemed).
 */
import { randomBytes } from 'node:crypto';
import { isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { now } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import { PromotionsGiftCard, PromotionsGiftCardLedger, type PromotionsCoupon, type PromotionsSale } from './entities.ts';

export type Coupon = TableRecord<typeof PromotionsCoupon>;
export type GiftCard = TableRecord<typeof PromotionsGiftCard>;
export type Sale = TableRecord<typeof PromotionsSale>;
export type LedgerRow = TableRecord<typeof PromotionsGiftCardLedger>;

export const invalid = (message: string) => new DomainError('PROMOTION_INVALID', message);
export const usedUp = (message: string) => new DomainError('PROMOTION_USED_UP', message);

const Card = PromotionsGiftCard.c;

/** The card of a code, in any case. */
export async function findCard(db: Database, code: string): Promise<GiftCard | undefined> {
  return (await PromotionsGiftCard.select(db, sql`where ${Card.codeKey} = ${code.toLowerCase()}`))[0];
}

/** A movement of a card's balance (`balance`: the card's after it). */
export async function writeLedger(
  db: Database,
  card: GiftCard,
  delta: number,
  reason: string,
  orderId: number | null,
  userId: number,
  at: string,
): Promise<void> {
  await PromotionsGiftCardLedger.insert(db, { cardId: card.id, delta, balance: card.balance, reason, orderId, userId, creationDate: at });
}

/** A code of `length` letters and digits a player can read back without confusing 0/O or 1/I. */
function newCode(length: number): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  return [...randomBytes(length)].map((b) => alphabet[b % alphabet.length]).join('');
}

/** A new card and its first ledger line; without `code` one of `codeLength` characters is made. CONFLICT when the code is taken. */
export async function issueCard(
  db: Database,
  codeLength: number,
  input: { amount: number; code?: string; note: string; ownerId: number; orderId: number; reason: string },
): Promise<GiftCard> {
  const code = input.code ?? newCode(codeLength);
  const card = {
    code,
    codeKey: code.toLowerCase(),
    balance: input.amount,
    initialAmount: input.amount,
    isActive: true,
    ownerId: input.ownerId,
    orderId: input.orderId,
    note: input.note,
    creationDate: now(),
  };
  let id: number;
  try {
    id = await PromotionsGiftCard.insert(db, card);
  } catch (err) {
    if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `code: a gift card ${code} exists already.`);
    throw err;
  }
  const issued = { id, ...card };
  await writeLedger(db, issued, input.amount, input.reason, input.orderId || null, input.ownerId, card.creationDate);
  return issued;
}
