/**
 * The console's tax page (Payments → Tax): the tax collected per country over a period, split by
 * state or province where a state's rate was charged, with its OSS CSV download (and one by state),
 * and the owner's rate table (set and deleted with the admin API's checks, audited under the staff
 * member).
 */
import type { Static } from '@sinclair/typebox';
import { errorsFor, type ConsolePage, type ConsolePages, type ShownForm } from '../../core/console.ts';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { percentOf, type TaxRates } from './tax-rates.ts';
import { csvName, TaxRateBody, taxCsv, taxRows } from './tax-routes.ts';

const today = () => new Date().toISOString().slice(0, 10);
/** The first day of the current quarter: an OSS return is filed per quarter. */
function quarterStart(): string {
  const d = new Date();
  return `${d.getUTCFullYear()}-${String(Math.floor(d.getUTCMonth() / 3) * 3 + 1).padStart(2, '0')}-01`;
}

async function taxPage(
  pages: ConsolePages,
  db: Database,
  rates: TaxRates,
  settings: SettingsService,
  period: { from: string; to: string },
  add?: ShownForm,
): Promise<ConsolePage> {
  const { taxMode, timezone } = settings.get();
  let report: Awaited<ReturnType<typeof taxRows>> = [];
  let periodError: string | undefined;
  try {
    report = await taxRows(db, period.from, period.to, true);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    periodError = err.message;
  }
  const query = new URLSearchParams(period).toString();
  // A state's column only for an owner who charges a state's rate: an EU owner's report stays as the OSS return reads.
  const byRegion = report.some((r) => r.region);
  return {
    title: 'Tax',
    status: add || periodError ? 422 : 200,
    blocks: [
      {
        kind: 'text',
        text:
          `Tax is ${taxMode === 'off' ? 'off' : taxMode === 'inclusive' ? 'included in prices' : 'added at checkout'} (Site settings: Tax). ` +
          'Stripe computes its own (Stripe Tax); every other gateway charges the rates below by the buyer’s billing country.',
      },
      {
        kind: 'form',
        id: 'tax-period',
        title: 'Period',
        method: 'get',
        action: `${pages.base}/tax`,
        submit: 'Show',
        values: period,
        errors: periodError ? { _form: periodError } : undefined,
        fields: [
          { name: 'from', label: 'From', hint: 'First day, YYYY-MM-DD (UTC).', required: true },
          { name: 'to', label: 'To', hint: 'Last day, included.', required: true },
        ],
      },
      {
        kind: 'table',
        caption: `Tax collected from ${period.from} to ${period.to}`,
        empty: 'No tax recorded in this period.',
        columns: [
          { key: 'country', label: 'Country' },
          ...(byRegion ? [{ key: 'region', label: 'State or province' }] : []),
          { key: 'currency', label: 'Currency' },
          { key: 'payments', label: 'Payments', numeric: true },
          { key: 'tax', label: 'Tax', numeric: true },
        ],
        rows: report.map((r) => ({ country: r.country || 'unknown', region: r.region || '—', currency: r.currency, payments: r.payments, tax: r.tax })),
      },
      ...(periodError
        ? []
        : [
            {
              kind: 'links' as const,
              items: [
                { label: 'Download the OSS CSV', href: `${pages.base}/tax.csv?${query}` },
                ...(byRegion ? [{ label: 'Download the CSV by state or province', href: `${pages.base}/tax.csv?${query}&by=region` }] : []),
              ],
            },
          ]),
      {
        kind: 'table',
        caption: 'Tax rates (gateways other than Stripe)',
        empty: 'No rate: buyers pay no tax at those gateways.',
        columns: [
          { key: 'place', label: 'Country or state' },
          { key: 'rate', label: 'Rate', numeric: true },
          { key: 'date', label: 'Set' },
          { key: 'delete', label: 'Delete' },
        ],
        rows: (await rates.list()).map((r) => {
          const place = r.region ? `${r.country}-${r.region}` : r.country;
          return {
            place,
            rate: `${percentOf(r.rate)} %`,
            date: displayTimestamp(r.updateDate, timezone),
            delete: { action: `${pages.base}/tax/rates/${r.id}/delete`, label: `Delete the rate of ${place}`, confirm: `Delete the rate of ${place}?` },
          };
        }),
      },
      {
        kind: 'form',
        id: 'tax-rate',
        title: 'Set a rate',
        action: `${pages.base}/tax/rates`,
        submit: 'Save rate',
        values: add?.values,
        errors: add?.errors,
        fields: [
          { name: 'country', label: 'Country', required: true, hint: 'Two letters (ISO 3166-1), like DE.' },
          { name: 'region', label: 'State or province', hint: 'Only where its rate differs from the country’s, like CA for California.' },
          { name: 'rate', label: 'Rate (%)', required: true, inputmode: 'decimal', hint: 'From 0 to 50, like 19 or 7.25. A rate set again replaces it.' },
        ],
      },
    ],
  };
}

export function taxPages(pages: ConsolePages, db: Database, rates: TaxRates, settings: SettingsService): void {
  const periodOf = (query: Record<string, string>) => ({ from: query.from ?? quarterStart(), to: query.to ?? today() });

  pages.get('/tax', async ({ query }) => taxPage(pages, db, rates, settings, periodOf(query)));

  pages.get('/tax.csv', async ({ query }) => {
    const { from, to } = periodOf(query);
    const byRegion = query.by === 'region';
    return {
      download: { filename: csvName(from, to, byRegion), type: 'text/csv; charset=utf-8', body: taxCsv(await taxRows(db, from, to, byRegion), byRegion) },
    };
  });

  pages.post(
    '/tax/rates',
    async ({ body, invalid, form, query }) => {
      if (invalid) return taxPage(pages, db, rates, settings, periodOf(query), { values: form, errors: invalid });
      try {
        const r = await rates.set(body as Static<typeof TaxRateBody>);
        return { redirect: `${pages.base}/tax`, notice: `Rate of ${r.region ? `${r.country}-${r.region}` : r.country} set to ${percentOf(r.rate)} %.` };
      } catch (err) {
        return taxPage(pages, db, rates, settings, periodOf(query), { values: form, errors: errorsFor(err, Object.keys(TaxRateBody.properties)) });
      }
    },
    { body: TaxRateBody },
  );

  pages.post('/tax/rates/:id/delete', async ({ params }) => {
    const old = await rates.delete(/^[0-9]{1,15}$/.test(params.id ?? '') ? Number(params.id) : 0);
    return { redirect: `${pages.base}/tax`, notice: `Rate of ${old.region ? `${old.country}-${old.region}` : old.country} deleted.` };
  });
}
