/**
 * Tax's admin API: the owner's rate table (for gateways that compute no tax), and the tax report:
 * tax recorded per country (or per state or province) over a period, as JSON or as the CSV an EU
 * OSS return or a state's sales tax return is filled from.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, formatMoney } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import * as S from '../../core/schemas.ts';
import { taxReport } from './tax.ts';
import { percentOf, type TaxRate, type TaxRates } from './tax-rates.ts';

const DAY = '^[0-9]{4}-[0-9]{2}-[0-9]{2}$';

const TaxQuery = Type.Object({
  from: Type.String({ pattern: DAY, description: 'first day (UTC), YYYY-MM-DD' }),
  to: Type.String({ pattern: DAY, description: 'last day (UTC), YYYY-MM-DD, included' }),
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')])),
  by: Type.Optional(
    Type.Union([Type.Literal('country'), Type.Literal('region')], {
      description: "region: each country's lines split by the state or province charged (US, Canada); country (the default): one line a country and currency",
    }),
  ),
});

const TaxLineRow = Type.Object({
  country: S.str('ISO 3166-1 alpha-2 of the billing address; empty when the gateway gave none', 'DE'),
  region: Type.Optional(S.str("with by=region: the state or province (ISO 3166-2 suffix); '' for tax of the whole country", 'CA')),
  currency: S.str(undefined, 'EUR'),
  payments: S.str(undefined, '12'),
  tax: S.moneyStr(),
});

/** The day after `day`, as a stored timestamp: the period's end, excluded. */
function dayAfter(day: string): string {
  const next = new Date(`${day}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return `${next.toISOString().slice(0, 10)} 00:00:00`;
}

const TaxRateRow = S.row({
  id: S.idStr(),
  country: S.str('ISO 3166-1 alpha-2', 'DE'),
  region: S.str("a state or province (ISO 3166-2 suffix); '' for the whole country", ''),
  rate: S.str('percent', '19'),
  updateDate: S.dateStr(),
});

export const TaxRateBody = Type.Object({
  country: Type.String({ maxLength: 8, description: 'ISO 3166-1 alpha-2', examples: ['DE'] }),
  region: Type.Optional(Type.String({ maxLength: 8, description: 'a state or province (ISO 3166-2 suffix: CA, QC); empty or absent for the whole country' })),
  rate: S.numeric({ description: 'percent, 0 to 50, at most three decimals', examples: ['19'] }),
});

const showRate = (r: TaxRate, tz: string) => ({
  id: String(r.id),
  country: r.country,
  region: r.region,
  rate: percentOf(r.rate),
  updateDate: displayTimestamp(r.updateDate, tz),
});

/** The report's lines from day `from` to day `to` (UTC, both included), split by state or province with `byRegion`; VALIDATION_ERROR for days that are not, or out of order. */
export async function taxRows(db: Database, from: string, to: string, byRegion = false): Promise<Static<typeof TaxLineRow>[]> {
  const day = new RegExp(DAY);
  if (!day.test(from) || !day.test(to) || Number.isNaN(Date.parse(`${from}T00:00:00Z`)) || Number.isNaN(Date.parse(`${to}T00:00:00Z`))) {
    throw new DomainError('VALIDATION_ERROR', 'from and to must be days of the calendar.');
  }
  if (to < from) throw new DomainError('VALIDATION_ERROR', 'to must not be before from.');
  const lines = await taxReport(db, `${from} 00:00:00`, dayAfter(to), byRegion);
  return lines.map((l) => ({
    country: l.country,
    ...(byRegion ? { region: l.region } : {}),
    currency: l.currency,
    payments: String(l.payments),
    tax: formatMoney(l.tax),
  }));
}

/** The report as the CSV an OSS return is filled from; with `byRegion`, a region column after the country. */
export function taxCsv(rows: Static<typeof TaxLineRow>[], byRegion = false): string {
  const head = byRegion ? 'country,region,currency,payments,tax' : 'country,currency,payments,tax';
  const line = (r: Static<typeof TaxLineRow>) => [r.country, ...(byRegion ? [r.region ?? ''] : []), r.currency, r.payments, r.tax].join(',');
  return `${[head, ...rows.map(line)].join('\n')}\n`;
}

/** The CSV's file name: the period, and `-by-region` when split so. */
export const csvName = (from: string, to: string, byRegion = false) => `tax-${from}-${to}${byRegion ? '-by-region' : ''}.csv`;

export function taxRoutes(fastify: FastifyInstance, db: Database, rates: TaxRates, settings: SettingsService): void {
  const app = fastify.withTypeProvider<S.TypeBoxProvider>();
  const tz = () => settings.get().timezone;
  app.get(
    '/api/admin/payments/tax-rates',
    {
      schema: {
        tags: ['payments'],
        summary: 'The tax rates charged at gateways that compute no tax (all but Stripe)',
        response: { 200: Type.Array(TaxRateRow) },
      },
    },
    async () => (await rates.list()).map((r) => showRate(r, tz())),
  );
  app.put(
    '/api/admin/payments/tax-rates',
    {
      schema: {
        tags: ['payments'],
        summary: "Set a country's (or a state's) tax rate",
        description:
          'Creates or replaces the rate of `country`, or of its `region` (a state or province whose rate differs). ' +
          'Charged while the site setting taxMode is on, at every gateway but Stripe (Stripe Tax computes its own).',
        body: TaxRateBody,
        response: { 200: TaxRateRow },
        errors: ['VALIDATION_ERROR', 'CONFLICT'],
      },
    },
    async (request) => showRate(await rates.set(request.body), tz()),
  );
  app.delete(
    '/api/admin/payments/tax-rates/:id',
    {
      schema: {
        tags: ['payments'],
        summary: 'Delete a tax rate (payments made keep their tax)',
        params: S.idParam('id'),
        response: { 200: S.ok() },
        errors: ['TAX_RATE_NOT_FOUND'],
      },
    },
    async (request) => {
      await rates.delete(Number(request.params.id));
      return { status: true as const };
    },
  );
  app.get(
    '/api/admin/payments/tax',
    {
      schema: {
        tags: ['payments'],
        summary: 'Tax collected per country (or per state or province) over a period',
        description:
          '`format=csv` answers `text/csv` (country, currency, payments, tax): the figures an EU OSS return declares per member state. ' +
          '`by=region` splits each country by the state or province its rate was charged for (a `region` field, and a region column in the CSV), ' +
          "as a US state's sales tax or a Canadian province's tax is declared; tax charged at the country's rate, or computed by Stripe, has region ''.",
        querystring: TaxQuery,
        response: {
          200: Type.Union([
            Type.Array(TaxLineRow),
            Type.String({ description: 'with format=csv', examples: ['country,currency,payments,tax\nDE,EUR,12,22.80\n'] }),
          ]),
        },
        errors: ['VALIDATION_ERROR'],
      },
    },
    async (request, reply) => {
      const { from, to, format, by } = request.query;
      const byRegion = by === 'region';
      const rows = await taxRows(db, from, to, byRegion);
      if (format !== 'csv') return rows;
      reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${csvName(from, to, byRegion)}"`);
      return taxCsv(rows, byRegion);
    },
  );
}
