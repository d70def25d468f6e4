/** Refunds and reversals: a payment refunded or disputed at its gateway takes its credits back; a dispute won gives them again. */
import { now } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import { PaymentsPayment } from './entities.ts';
import type { Payment, PaymentsDeps, WebhookResult } from './model.ts';

const P = PaymentsPayment.c;

/**
 * A dispute the merchant won: the credits it took back are given back and its debt is cleared,
 * which ends the player's flag. A direct purchase's order stays refunded (its roles and commands
 * were undone); staff sell it again by hand if they wish.
 */
export async function disputeWon({ db, credits }: PaymentsDeps, payment: Payment): Promise<WebhookResult> {
  if (payment.status !== 'disputed' || payment.orderId === null) return 'unchanged';
  if (payment.reclaimed > 0) await credits.change(payment.userId, payment.reclaimed, { reason: 'dispute won', orderId: payment.orderId });
  await db.run(sql`update ${PaymentsPayment} set ${P.status} = 'completed', ${P.reclaimed} = 0, ${P.debt} = 0, ${P.updateDate} = ${now()}
    where ${P.id} = ${payment.id}`);
  return 'reinstated';
}

/**
 * Takes the credits back as far as the balance allows; the rest is the player's debt, kept on
 * the payment for the admin (a balance never goes negative).
 */
export async function reverse(deps: PaymentsDeps, payment: Payment, kind: 'refunded' | 'disputed', chargeRef: string | undefined): Promise<WebhookResult> {
  const { db, credits, store, events } = deps;
  if (payment.status === 'pending' || payment.status === 'expired' || payment.status === 'refund-due') {
    // Reversed before we saw it paid, or nothing was given for it: it can no longer complete, so nothing was or will be credited.
    await db.run(sql`update ${PaymentsPayment} set ${P.status} = ${kind}, ${P.chargeRef} = ${chargeRef ?? payment.chargeRef}, ${P.updateDate} = ${now()}
      where ${P.id} = ${payment.id}`);
    return kind;
  }
  if (payment.status !== 'completed' && payment.status !== 'credited') return 'unchanged';
  const orderId = payment.orderId!;
  if (payment.credits > 0 && deps.chargebackRefundsOrders) {
    // Before the credits are taken: what the purchases give back covers the debt first.
    for (const bought of await store.creditOrdersAfter(payment.userId, orderId)) await store.refund(bought);
  }
  // A direct purchase added no credits: its order's refund takes back what it gave (roles, refund commands).
  const reclaimed =
    payment.credits === 0 ? 0 : await credits.takeUpTo(payment.userId, payment.credits, { reason: kind === 'refunded' ? 'refund' : 'dispute', orderId });
  const debt = payment.credits - reclaimed;
  await store.markPaymentRefunded(orderId);
  await db.run(sql`update ${PaymentsPayment} set ${P.status} = ${kind}, ${P.reclaimed} = ${reclaimed}, ${P.debt} = ${debt}, ${P.updateDate} = ${now()}
    where ${P.id} = ${payment.id}`);
  await events.emit('payments.reversed', {
    paymentId: payment.id,
    userId: payment.userId,
    orderId,
    gateway: payment.gateway,
    kind,
    reclaimed,
    debt,
  });
  return kind;
}
