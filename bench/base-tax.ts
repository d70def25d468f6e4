/**
 * The baseline's tax on the rush's Stripe checkouts (BENCH_RUSH_VARIANT=tax, bench/rush.ts), as the
 * server's payments feature does it with its tax mode on: the checkout asks Stripe to compute the
 * tax (Stripe Tax: the session's `automatic_tax`, the tax added at checkout), which costs no
 * statement, and the completion records what Stripe charged, with the buyer's country, in
 * payments_taxes inside its transaction. The mode comes from BENCH_BASE_TAX (`exclusive`, or
 * unset: off), as the server's comes from its site settings.
 */
import { now } from '../core/format.ts';
import type { Row } from './base-db.ts';

export interface TaxQuote {
  behavior: 'inclusive' | 'exclusive';
  inclusive: boolean;
  /** Cents, known at checkout only for a rate table's tax; Stripe computes its own at the session. */
  amount: number;
  /** The rate table's tax kept with the payment (null: the gateway computes it). */
  facts: string | null;
}

const MODE = process.env.BENCH_BASE_TAX;

/** What a Stripe checkout asks about tax: nothing while it is off. */
export function checkoutTax(): TaxQuote | undefined {
  if (MODE !== 'inclusive' && MODE !== 'exclusive') return undefined;
  return { behavior: MODE, inclusive: MODE === 'inclusive', amount: 0, facts: null };
}

/** Stripe's Checkout Session as its completion event tells of the tax. */
export interface TaxedSession {
  amount_total: number;
  amount_subtotal?: number;
  automatic_tax?: { enabled: boolean };
  total_details?: { amount_tax: number };
  customer_details?: { address?: { country?: string } };
}

/** The tax Stripe charged, if it computed one: included in the total (the total is the subtotal) or added to it. */
export function sessionTax(session: TaxedSession): { amount: number; inclusive: boolean; country: string } | undefined {
  if (!session.automatic_tax?.enabled) return undefined;
  return {
    amount: session.total_details?.amount_tax ?? 0,
    inclusive: session.amount_total === session.amount_subtotal,
    country: (session.customer_details?.address?.country ?? '').toUpperCase().slice(0, 2),
  };
}

/** What the buyer paid before tax, to hold against the payment's amount. */
export function netPaid(session: TaxedSession): number {
  const tax = sessionTax(session);
  return tax && !tax.inclusive ? session.amount_total - tax.amount : session.amount_total;
}

/** The completed payment's tax row, when Stripe computed a tax. */
export function taxRow(payment: Row, session: TaxedSession): { sql: string; params: (string | number)[] } | undefined {
  const tax = sessionTax(session);
  if (!tax) return undefined;
  return {
    sql:
      'insert into payments_taxes (payment_id, country, amount, currency, inclusive, region, ip_country, rate, creation_date) ' +
      "values (?, ?, ?, ?, ?, '', '', null, ?)",
    params: [String(payment.id), tax.country, tax.amount, String(payment.currency), tax.inclusive ? 1 : 0, now()],
  };
}
