/**
 * Limits an owner sets against card fraud: the most a new account may pay at the gateways in a
 * day, and 3-D Secure asked of every Stripe card payment. Both are site settings; the spending
 * limit is read only by gateway checkouts of accounts younger than newAccountDays.
 */
import { Type } from '@sinclair/typebox';
import type { SettingValues, SiteSetting } from '../../core/config.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, formatMoney, now } from '../../core/format.ts';
import { fields, sql, sum } from '../../core/sql.ts';
import type { UserAccount } from '../users/contract.ts';
import { PaymentsPayment } from './entities.ts';
import type { PaymentsDeps } from './model.ts';

const P = PaymentsPayment.c;

export const limitSettings = {
  newAccountDailyLimit: {
    schema: Type.Integer({
      minimum: 0,
      maximum: 1_000_000,
      default: 0,
      description: 'the most a new account may pay at the gateways in 24 hours, in the site currency; 0 = no limit',
      examples: [50],
    }),
    label: 'Daily limit of a new account',
    hint: 'Whole units of the site currency a new account may pay in 24 hours; 0 = no limit.',
  },
  newAccountDays: {
    schema: Type.Integer({ minimum: 1, maximum: 365, default: 7, description: 'days an account counts as new for the daily limit', examples: [7] }),
    label: 'An account is new for (days)',
  },
  stripeThreeDSecure: {
    schema: Type.Boolean({ default: false, description: 'ask Stripe for 3-D Secure on every card payment' }),
    label: 'Ask for 3-D Secure on every card payment (Stripe)',
    hint: "The bank then carries a fraudulent card payment's chargeback in most cases.",
  },
} satisfies Record<string, SiteSetting>;

declare module '../../core/config.ts' {
  interface SiteSettings extends SettingValues<typeof limitSettings> {}
}

/** SPENDING_LIMIT when a new account's payments of the last 24 hours and `amount` (cents) pass the owner's daily limit. */
export async function refuseOverLimit({ db, settings }: PaymentsDeps, user: Pick<UserAccount, 'id' | 'creationDate'>, amount: number): Promise<void> {
  const { newAccountDailyLimit, newAccountDays, currency } = settings.get();
  if (newAccountDailyLimit === 0) return;
  const at = now();
  if (user.creationDate < addSeconds(at, -newAccountDays * 86_400)) return;
  const [row] = await db.query(sql`select ${fields({ paid: sum(P.amount) })} from ${PaymentsPayment}
    where ${P.userId} = ${user.id} and ${P.status} in ${['completed', 'credited']} and ${P.creationDate} >= ${addSeconds(at, -86_400)}`);
  const limit = newAccountDailyLimit * 100;
  const paid = Number(row?.paid ?? 0);
  if (paid + amount > limit) {
    throw new DomainError(
      'SPENDING_LIMIT',
      `A new account may pay at most ${formatMoney(limit)} ${currency} in 24 hours (${formatMoney(Math.max(0, limit - paid))} left); try again later or ask the staff.`,
    );
  }
}
