/**
 * The console's Disputes section: disputes open, won and lost and the dispute rate on the
 * dashboard, the disputes list, and the block list with a button to lift each block.
 */
import { counted, displayTimestamp, formatMoney } from '../../core/format.ts';
import { playerCell, sharedFigures, type ConsoleSection } from '../../core/console.ts';
import { usersRef } from '../users/contract.ts';
import type { DbPaymentsService } from './service.ts';

const PAGE = 100;
/** The dashboard's window for the dispute rate. */
const RATE_DAYS = 90;

export const disputesSection: ConsoleSection<unknown, DbPaymentsService> = {
  id: 'disputes',
  title: 'Disputes',
  order: 66,
  pages(pages, { settings, services }, payments) {
    const users = services.get(usersRef);
    const figures = sharedFigures(() => payments.disputes.figures(RATE_DAYS));
    pages.dashboard(async () => {
      const f = await figures();
      return [
        { label: 'disputes open', value: String(f.open), href: `${pages.base}?status=open` },
        { label: `disputes won (${RATE_DAYS} days)`, value: String(f.won), href: `${pages.base}?status=won` },
        { label: `disputes lost (${RATE_DAYS} days)`, value: String(f.lost), href: `${pages.base}?status=lost` },
        { label: `dispute rate (${RATE_DAYS} days)`, value: `${(f.rate * 100).toFixed(2)}%`, href: pages.base },
      ];
    });
    pages.attention(async () => {
      const f = await figures();
      return [{ count: f.open, text: `${counted(f.open, 'dispute')} open at the gateways`, href: `${pages.base}?status=open` }];
    });
    pages.get('', async ({ query }) => {
      const status = (['open', 'won', 'lost'] as const).find((s) => s === query.status);
      const tz = settings.get().timezone;
      const [disputes, blocks] = await Promise.all([payments.disputes.list({ status, limit: PAGE }), payments.blocks.list({ limit: PAGE })]);
      const names = await users.usernames(blocks.map((b) => b.userId).filter((id) => id > 0));
      return {
        title: 'Disputes',
        blocks: [
          {
            kind: 'table',
            caption: status ? `Disputes ${status}, newest first` : 'Disputes, newest first',
            empty: 'No dispute.',
            columns: [
              { key: 'date', label: 'Opened' },
              { key: 'payment', label: 'Payment' },
              { key: 'gateway', label: 'Gateway' },
              { key: 'reason', label: 'Reason' },
              { key: 'status', label: 'Status' },
              { key: 'amount', label: 'Amount', numeric: true },
            ],
            rows: disputes.map((d) => ({
              date: displayTimestamp(d.creationDate, tz),
              payment: d.paymentId,
              gateway: d.disputeRef ? `${d.gateway} (${d.disputeRef})` : d.gateway,
              reason: d.reason,
              status: d.status,
              amount: `${formatMoney(d.amount)} ${d.currency}`,
            })),
          },
          {
            kind: 'table',
            caption: 'Players blocked from paying',
            empty: 'Nobody is blocked.',
            columns: [
              { key: 'date', label: 'Since' },
              { key: 'player', label: 'Player' },
              { key: 'email', label: 'Email' },
              { key: 'ip', label: 'Address' },
              { key: 'reason', label: 'Reason' },
              { key: 'lift', label: 'Lift' },
            ],
            rows: blocks.map((b) => ({
              date: displayTimestamp(b.creationDate, tz),
              player: b.userId > 0 ? playerCell(pages, b.userId, names) : `guest ${b.nameKey}`,
              email: b.emailKey ?? '',
              ip: b.ip ?? '',
              reason: b.reason,
              lift: { action: `${pages.base}/blocks/${b.id}/lift`, label: `Lift block ${b.id}`, confirm: `Let ${b.nameKey} pay again?` },
            })),
          },
        ],
      };
    });
    pages.post('/blocks/:id/lift', async ({ params }) => {
      const block = await payments.blocks.liftByStaff(/^[0-9]{1,15}$/.test(params.id ?? '') ? Number(params.id) : 0);
      return { redirect: pages.base, notice: `${block.nameKey} may pay again.` };
    });
  },
};
