/**
 * The donations feature's console section: the same boards the API serves (the latest payments,
 * the top donors of the day, month, year or all time), read from the feature's own table.
 */
import type { ConsoleSection } from '../../core/console.ts';
import { displayTimestamp, formatMoney } from '../../core/format.ts';
import { DONATION_TYPES, MAX_LIMIT, type DonationsService, type DonationType } from './contract.ts';

const LABELS: Record<DonationType, string> = {
  latest: 'Latest payments',
  'top-daily': 'Top donors today',
  'top-monthly': 'Top donors this month',
  'top-annual': 'Top donors this year',
  'top-alltime': 'Top donors of all time',
};

export const donationsSection: ConsoleSection<unknown, DonationsService> = {
  id: 'donations',
  title: 'Donations',
  order: 70,
  pages(pages, { settings }, donations) {
    pages.get('', async ({ query }) => {
      const type = (DONATION_TYPES as readonly string[]).includes(query.type ?? '') ? (query.type as DonationType) : 'latest';
      const tz = settings.get().timezone;
      const rows = await donations.board(type, MAX_LIMIT, tz);
      return {
        title: 'Donations',
        blocks: [
          {
            kind: 'form',
            id: 'donation-board',
            title: 'Board',
            method: 'get',
            action: pages.base,
            submit: 'Show board',
            values: { type },
            fields: [{ name: 'type', label: 'Board', type: 'select', options: DONATION_TYPES.map((value) => ({ value, label: LABELS[value] })) }],
          },
          {
            kind: 'table',
            caption: LABELS[type],
            empty: 'No donation in this period.',
            columns: [
              { key: 'player', label: 'Player' },
              { key: 'amount', label: 'Amount', numeric: true },
              { key: 'date', label: type === 'latest' ? 'Date' : 'Last payment' },
            ],
            rows: rows.map((d) => ({ player: d.username, amount: `${formatMoney(d.amount)} ${d.currency}`, date: displayTimestamp(d.date, tz) })),
          },
        ],
      };
    });
  },
};
