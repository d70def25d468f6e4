import { defineEntity, p } from '../../core/table.ts';

/**
 * One balance per user, in cents. Created lazily (a user who never had credits has none and a
 * balance of 0). The check is the database's own last word: no bug can store a negative balance.
 */
export const CreditsWallet = defineEntity({
  name: 'CreditsWallet',
  tableName: 'credits_wallets',
  checks: [{ name: 'credits_wallets_balance_check', expression: 'balance >= 0' }],
  properties: {
    userId: p.integer().primary().autoincrement(false),
    balance: p.bigint('number'),
  },
});

/** The append-only ledger: every change of a balance is one row; a balance is the sum of its deltas. */
export const CreditsLedgerEntry = defineEntity({
  name: 'CreditsLedgerEntry',
  tableName: 'credits_ledger',
  // A user's history, newest first, pages by id.
  indexes: [{ properties: ['userId', 'id'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer(),
    delta: p.bigint('number'),
    /** The balance after this change. */
    balance: p.bigint('number'),
    reason: p.string().length(32),
    keyName: p.string().length(64).nullable(),
    orderId: p.integer().nullable().index(),
    transferId: p.string().length(36).nullable(),
    createdAt: p.string().length(19),
  },
});

export const entities = [CreditsWallet, CreditsLedgerEntry];
