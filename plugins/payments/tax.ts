/**
 * Tax on gateway payments. Off by default, and then nothing here runs: no table is read or
 * written on any path. On, Stripe computes it (Stripe Tax: `automatic_tax` on the Checkout
 * session, which collects the billing address it needs), the other gateways charge the owner's
 * rate table (tax-rates.ts), and the completion records the tax with the buyer's country; prices
 * are shown tax included, or the tax is added at checkout.
 */
import { Type } from '@sinclair/typebox';
import type { SettingValues, SiteSetting } from '../../core/config.ts';
import type { Database } from '../../core/db.ts';
import { now } from '../../core/format.ts';
import { fields, sql, sum, typed } from '../../core/sql.ts';
import type { OrderTax, TaxFacts } from './contract.ts';
import { PaymentsPayment, PaymentsTax } from './entities.ts';

const X = PaymentsTax.c;
const P = PaymentsPayment.c;

export type TaxMode = 'off' | 'inclusive' | 'exclusive';

export const taxSettings = {
  taxMode: {
    schema: Type.Union([Type.Literal('off'), Type.Literal('inclusive'), Type.Literal('exclusive')], {
      default: 'off',
      description: 'tax on gateway payments: off, prices shown tax included, or tax added at checkout',
    }),
    label: 'Tax',
    hint: 'off; inclusive: prices include the tax; exclusive: the tax is added at checkout. Stripe computes it (turn Stripe Tax on in its dashboard); other gateways charge the rates of Payments → Tax.',
  },
  sellerTaxNumber: {
    schema: Type.String({ default: '', maxLength: 32, description: "the seller's VAT or tax number, shown with the tax", examples: ['DE123456789'] }),
    label: 'Your tax number',
    hint: 'Shown on receipts beside the tax, e.g. DE123456789.',
  },
} satisfies Record<string, SiteSetting>;

declare module '../../core/config.ts' {
  interface SiteSettings extends SettingValues<typeof taxSettings> {}
}

/** The tax a checkout asks its gateway for: none while tax is off. */
export const taxAsked = (mode: TaxMode): 'inclusive' | 'exclusive' | undefined => (mode === 'off' ? undefined : mode);

/** What the buyer pays before tax: a price shown tax included already holds it. */
export function netOf(paid: number, tax: TaxFacts | undefined): number {
  return tax && !tax.inclusive ? paid - tax.amount : paid;
}

/** The tax of the owner's rate table a checkout kept with its payment, if any. */
export const storedTax = (payment: { taxFacts: string | null }): TaxFacts | undefined =>
  payment.taxFacts === null ? undefined : (JSON.parse(payment.taxFacts) as TaxFacts);

/** The gateway's tax of a completed payment; inside the completion's transaction. */
export async function recordTax(db: Database, paymentId: string, currency: string, tax: TaxFacts): Promise<void> {
  await PaymentsTax.insert(db, {
    paymentId,
    country: (tax.country ?? '').toUpperCase().slice(0, 2),
    amount: tax.amount,
    currency,
    inclusive: tax.inclusive,
    region: tax.region ?? '',
    ipCountry: tax.ipCountry ?? '',
    rate: tax.rate ?? null,
    creationDate: now(),
  });
}

/** The tax recorded on the payment that made store order `orderId`, if any. */
export async function orderTax(db: Database, orderId: number, sellerTaxNumber: string): Promise<OrderTax | undefined> {
  const [row] = await db.query(sql`select ${fields({ amount: X.amount, currency: X.currency, inclusive: X.inclusive, country: X.country })}
    from ${PaymentsTax} where ${X.paymentId} in (select ${P.id} from ${PaymentsPayment} where ${P.orderId} = ${orderId})`);
  if (!row) return undefined;
  return { amount: Number(row.amount), currency: row.currency, inclusive: Boolean(row.inclusive), country: row.country, sellerTaxNumber };
}

export interface TaxLine {
  country: string;
  /** The state or province (ISO 3166-2 suffix) when split by region; '' for tax of the whole country. */
  region: string;
  currency: string;
  payments: number;
  /** Cents of tax. */
  tax: number;
}

/**
 * The tax recorded from `from` to `to` (stored UTC timestamps), by country and currency: what an
 * OSS return declares. `byRegion` splits each country's lines by the state or province whose rate
 * was charged, as US sales tax and Canadian provincial tax are filed.
 */
export async function taxReport(db: Database, from: string, to: string, byRegion = false): Promise<TaxLine[]> {
  const region = byRegion ? X.region : typed<string>(sql`''`);
  const place = byRegion ? sql`${X.country}, ${X.region}` : X.country;
  const rows = await db.query(sql`select ${fields({ country: X.country, region, currency: X.currency, payments: sum(sql`1`), tax: sum(X.amount) })}
    from ${PaymentsTax} where ${X.creationDate} >= ${from} and ${X.creationDate} < ${to}
    group by ${place}, ${X.currency} order by ${place}, ${X.currency}`);
  return rows.map((r) => ({ country: r.country, region: r.region, currency: r.currency, payments: Number(r.payments ?? 0), tax: Number(r.tax ?? 0) }));
}
