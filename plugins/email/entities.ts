import { defineEntity, p } from '../../core/table.ts';

/**
 * The outbox: one row per message, written in the transaction of what it tells (an order, a
 * reply), so it commits or rolls back with it. The worker renders and sends it; a row is kept
 * after it is sent, for the console's list of recent messages.
 */
export const EmailOutbox = defineEntity({
  name: 'EmailOutbox',
  tableName: 'email_outbox',
  indexes: [{ properties: ['state', 'dueAt'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    /** order-receipt, topup-receipt, ticket-reply, verify-email, reset-password, test. */
    kind: p.string().length(32),
    /** The account it is for; null for a test message. */
    userId: p.integer().nullable(),
    recipient: p.string().length(191),
    lang: p.string().length(8),
    /** What the template needs, as JSON (never a token: link tokens are made when the message is sent). */
    params: p.text(),
    /** Set once rendered, for the console. */
    subject: p.string().length(255).nullable(),
    /** queued, sent or failed (gave up; an operator may send it again). */
    state: p.string().length(16),
    attempts: p.integer(),
    /** Epoch milliseconds: when it may be tried next (a claim moves it ahead by the lease). */
    dueAt: p.bigint(),
    lastError: p.string().length(255).nullable(),
    createdAt: p.string().length(19),
    sentAt: p.string().length(19).nullable(),
  },
});

/** Single-use links (password reset, email verification): only the token's hash is stored. */
export const EmailToken = defineEntity({
  name: 'EmailToken',
  tableName: 'email_tokens',
  indexes: [{ properties: ['userId'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    tokenHash: p.string().length(64).unique(),
    /** The account; for a `guest-order` token, the store order its link shows. */
    userId: p.integer(),
    /** reset-password, verify-email or guest-order. */
    purpose: p.string().length(16),
    expiresAt: p.string().length(19),
    usedAt: p.string().length(19).nullable(),
    createdAt: p.string().length(19),
  },
});

export const entities = [EmailOutbox, EmailToken];
