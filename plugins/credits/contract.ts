/**
 * The credits feature's contract: balances in integer cents and the ledger behind them.
 * Every method joins the caller's transaction (core Database.transaction), so a store purchase can
 * debit, write its order and grant roles all-or-nothing.
 */
import { createServiceRef } from '../../core/registry.ts';
import type { TableRecord } from '../../core/table.ts';
import type { CreditsLedgerEntry } from './entities.ts';

export interface LedgerEntryInput {
  /** Why: `add`, `remove`, `set`, `send`, `receive`, `purchase`, `cashback`, `payment`, … */
  reason: string;
  /** Name of the API key that made the change, when an API call caused it. */
  keyName?: string;
  /** The store order this change belongs to. */
  orderId?: number;
  /** Shared by both sides of a send. */
  transferId?: string;
}

/** One row of a user's ledger; amounts in cents. */
export type LedgerEntry = TableRecord<typeof CreditsLedgerEntry>;

export interface CreditsService {
  /** Balance in cents (0 for a user who never had credits). */
  balance(userId: number): Promise<number>;
  balances(userIds: number[]): Promise<Map<number, number>>;
  /**
   * Adds `deltaCents` (negative to take), writes one ledger row, and returns the balance after.
   * Throws NOT_ENOUGH_CREDITS if the balance would go negative and INVALID_AMOUNT on overflow.
   */
  change(userId: number, deltaCents: number, entry: LedgerEntryInput): Promise<number>;
  /**
   * Takes up to `cents` from the balance, never below zero, deciding under the wallet's lock; one
   * ledger row when anything was taken. Returns the cents taken.
   */
  takeUpTo(userId: number, cents: number, entry: LedgerEntryInput): Promise<number>;
  /** A user's ledger, newest first, `limit` rows older than the row `before` (keyset paging). */
  history(userId: number, page: { limit: number; before?: number }): Promise<LedgerEntry[]>;
  /** Credits held by all users together, in cents. */
  inCirculation(): Promise<number>;
}

export const creditsRef = createServiceRef<CreditsService>('credits');

declare module '../../core/events.ts' {
  interface EventMap {
    /** One ledger row was written: `delta` and `balance` (after) in cents. */
    'credits.changed': { userId: number; delta: number; balance: number; reason: string; orderId?: number; transferId?: string };
  }
}
