/**
 * The owner's tax rate table, for the gateways that compute no tax themselves (PayPal, the test
 * gateway, a package's gateway; Stripe keeps Stripe Tax). While the site's taxMode is on, a
 * checkout at such a gateway looks up the buyer's country (and state or province) in one statement
 * and keeps the tax with the pending payment; the completion records it as Stripe's is recorded.
 *
 * The buyer's country is the billing country they chose at checkout; the country of their address
 * (the owner's proxy header, ipCountryHeader) is recorded beside it as evidence. When the two
 * disagree the billing country decides the rate and the payment goes through (a traveller, a VPN):
 * both stay on the record (payments_taxes.country and ip_country) for the owner's evidence.
 *
 * Rounding: the tax is computed in integer cents and rounded half up on the cent, once per payment.
 * Added at checkout it is round(net × rate); included in a price it is price − round(price ÷ (1 + rate)).
 */
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { isUniqueViolation } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { now } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { TaxFacts } from './contract.ts';
import { PaymentsTaxRate } from './entities.ts';

const R = PaymentsTaxRate.c;

export type TaxRate = TableRecord<typeof PaymentsTaxRate>;

/** ISO 3166-1 alpha-2: every country and territory code assigned. */
const COUNTRIES = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL ' +
    'CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT ' +
    'GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY ' +
    'MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN ' +
    'PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT ' +
    'TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
  ).split(' '),
);

/** The highest rate the table takes, in thousandths of a percent: no sales tax or VAT comes near 50 %. */
const MAX_RATE = 50_000;

/** A country code as sent, upper-cased; VALIDATION_ERROR naming `field` unless ISO 3166-1 assigned it. */
export function countryOf(value: unknown, field: string): string {
  const code = typeof value === 'string' ? value.trim().toUpperCase() : '';
  if (!COUNTRIES.has(code)) throw new DomainError('VALIDATION_ERROR', `${field} must be a country's two-letter code (ISO 3166-1), like DE or US.`);
  return code;
}

/** A state or province code (ISO 3166-2 without its country: CA, QC), upper-cased; '' for none. */
export function regionOf(value: unknown, field: string): string {
  if (value === undefined || value === null || value === '') return '';
  const code = typeof value === 'string' ? value.trim().toUpperCase() : '';
  if (!/^[A-Z0-9]{1,3}$/.test(code))
    throw new DomainError('VALIDATION_ERROR', `${field} must be a state or province code of 1 to 3 letters or digits, like CA or QC.`);
  return code;
}

/** A percentage as sent ("19", "7.125", 20) → thousandths of a percent; VALIDATION_ERROR unless 0 to 50 with at most 3 decimals. */
export function rateOf(value: unknown): number {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
  const match = /^([0-9]{1,3})(?:\.([0-9]{1,3}))?$/.exec(text);
  const rate = match ? Number(match[1]) * 1000 + Number((match[2] ?? '').padEnd(3, '0')) : Number.NaN;
  if (!(rate >= 0 && rate <= MAX_RATE))
    throw new DomainError('VALIDATION_ERROR', 'rate must be a percentage from 0 to 50 with at most three decimals, like 19 or 7.125.');
  return rate;
}

/** Thousandths of a percent as the percentage shown: 19000 → "19", 7125 → "7.125". */
export const percentOf = (rate: number): string => String(rate / 1000);

/** Cents of tax on `amount` at `rate`, rounded half up on the cent: on top of it, or within it. */
export function taxOn(amount: number, rate: number, inclusive: boolean): number {
  if (!inclusive) return Math.floor((amount * rate * 2 + 100_000) / 200_000);
  const net = Math.floor((amount * 200_000 + 100_000 + rate) / (2 * (100_000 + rate)));
  return amount - net;
}

/** The tax the store computed at checkout, kept with the pending payment as JSON (PaymentsPayment.taxFacts). */
export interface TableTax extends TaxFacts {
  country: string;
  region: string;
  ipCountry: string;
  rate: number;
}

/** What the buyer pays at the gateway: the price, and the tax when it is added on top. */
export const grossOf = (amount: number, tax: TaxFacts | undefined): number => (tax && !tax.inclusive ? amount + tax.amount : amount);

/** The country of the buyer's address from the owner's proxy header; '' when none is configured, sent or known (Cloudflare's XX, T1). */
export function ipCountryOf(headers: Record<string, string | string[] | undefined> | undefined, header: string): string {
  const value = header ? headers?.[header.toLowerCase()] : undefined;
  const code = typeof value === 'string' ? value.trim().toUpperCase() : '';
  return COUNTRIES.has(code) ? code : '';
}

/** The buyer's place as a checkout sends it. */
export interface BillingPlace {
  billingCountry?: string;
  billingRegion?: string;
  headers?: Record<string, string | string[] | undefined>;
}

export class TaxRates {
  readonly #db: Database;
  readonly #audit: AuditLog;

  constructor(db: Database, audit: AuditLog) {
    this.#db = db;
    this.#audit = audit;
  }

  async list(): Promise<TaxRate[]> {
    return PaymentsTaxRate.select(this.#db, sql`order by ${R.country}, ${R.region}`);
  }

  /** Sets the rate of a country (or of one of its states or provinces), creating or replacing it; audited. */
  async set(input: { country?: unknown; region?: unknown; rate?: unknown }): Promise<TaxRate> {
    const country = countryOf(input.country, 'country');
    const region = regionOf(input.region, 'region');
    const rate = rateOf(input.rate);
    const place = region ? `${country}-${region}` : country;
    return this.#db.transaction(async () => {
      const updateDate = now();
      const [old] = await PaymentsTaxRate.select(this.#db, sql`where ${R.country} = ${country} and ${R.region} = ${region}`);
      let id = old?.id;
      if (old) await this.#db.run(sql`update ${PaymentsTaxRate} set ${R.rate} = ${rate}, ${R.updateDate} = ${updateDate} where ${R.id} = ${old.id}`);
      else {
        try {
          id = await PaymentsTaxRate.insert(this.#db, { country, region, rate, updateDate });
        } catch (err) {
          // Another admin set it a moment ago: theirs stands, and this one is told to look again.
          if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `The rate of ${place} was set meanwhile; reload and try again.`);
          throw err;
        }
      }
      const row = { id: id!, country, region, rate, updateDate };
      await this.#audit.record({
        action: old ? 'payments.tax-rate.update' : 'payments.tax-rate.create',
        target: { type: 'tax-rate', id: row.id },
        summary: `Tax rate of ${place} set to ${percentOf(rate)} %`,
        before: old,
        after: row,
      });
      return row;
    });
  }

  async delete(id: number): Promise<TaxRate> {
    return this.#db.transaction(async () => {
      const [old] = await PaymentsTaxRate.select(this.#db, sql`where ${R.id} = ${id}`);
      if (!old) throw new DomainError('TAX_RATE_NOT_FOUND', `There is no tax rate ${id}.`);
      await this.#db.run(sql`delete from ${PaymentsTaxRate} where ${R.id} = ${id}`);
      const place = old.region ? `${old.country}-${old.region}` : old.country;
      await this.#audit.record({ action: 'payments.tax-rate.delete', target: { type: 'tax-rate', id }, summary: `Tax rate of ${place} deleted`, before: old });
      return old;
    });
  }

  /**
   * The tax on `amount` for the buyer at `place`, one statement: the state's or province's rate when
   * the table has one, else the country's, else none (0, still recorded with the country). The
   * billing country decides; without one, the address's country does; without either, VALIDATION_ERROR.
   */
  async quote(amount: number, inclusive: boolean, place: BillingPlace, ipCountryHeader: string): Promise<TableTax> {
    const ipCountry = ipCountryOf(place.headers, ipCountryHeader);
    const sent = place.billingCountry?.trim();
    if (!sent && !ipCountry) throw new DomainError('VALIDATION_ERROR', 'billingCountry is required: the tax depends on it.');
    const country = sent ? countryOf(sent, 'billingCountry') : ipCountry;
    const region = regionOf(place.billingRegion, 'billingRegion');
    const rows = await PaymentsTaxRate.select(this.#db, sql`where ${R.country} = ${country} and ${R.region} in ${['', region]}`);
    const found = rows.find((r) => r.region === region && region !== '') ?? rows.find((r) => r.region === '');
    const rate = found?.rate ?? 0;
    return { amount: taxOn(amount, rate, inclusive), inclusive, country, region: found?.region ?? '', ipCountry, rate };
  }
}
