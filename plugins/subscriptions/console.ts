/**
 * The subscriptions feature's console section: subscriptions by product, player and state, one
 * subscription with its cancel (at the period's end or now) and refund, and the dashboard's count
 * of running subscriptions.
 */
import { type ConsoleCell, type ConsolePage, type ConsoleSection, idOf } from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import { formatMoney } from '../../core/format.ts';
import { SUBSCRIPTION_STATES, type SubscriptionRow, type SubscriptionState, type SubscriptionsService } from './contract.ts';

const STATE_LABEL: Record<SubscriptionState, string> = { active: 'Active', past_due: 'Past due', ended: 'Ended' };

function stateText(s: SubscriptionRow): string {
  if (s.status === 'active' && s.cancelAtPeriodEnd === '1') return `Ends ${s.periodEnd}`;
  if (s.status === 'past_due') return `Past due: ends ${s.graceUntil ?? ''} unless paid`;
  return s.status === 'ended' ? `Ended (${s.endReason ?? ''})` : STATE_LABEL[s.status as SubscriptionState];
}

export const subscriptionsSection: ConsoleSection<unknown, SubscriptionsService> = {
  id: 'subscriptions',
  title: 'Subscriptions',
  order: 72,
  pages(pages, ctx, subs) {
    const player = (s: SubscriptionRow): ConsoleCell => {
      const href = pages.href('players', `/${s.userID}`);
      return href ? { text: s.username, href } : s.username;
    };

    pages.get('', async ({ query }) => {
      const status = (SUBSCRIPTION_STATES as readonly string[]).includes(query.status ?? '') ? (query.status as SubscriptionState) : undefined;
      const productId = idOf(query.productID) || undefined;
      const userId = idOf(query.userID) || undefined;
      const rows = await subs.list({ status, productId, userId });
      const page: ConsolePage = {
        title: 'Subscriptions',
        blocks: [
          {
            kind: 'links',
            heading: 'By state',
            items: [{ label: 'All', href: pages.base }, ...SUBSCRIPTION_STATES.map((s) => ({ label: STATE_LABEL[s], href: `${pages.base}?status=${s}` }))],
          },
          {
            kind: 'form',
            id: 'filter',
            title: 'Filter',
            method: 'get',
            action: pages.base,
            submit: 'Show',
            values: { productID: query.productID ?? '', userID: query.userID ?? '', status: status ?? '' },
            fields: [
              { name: 'productID', label: 'Product ID' },
              { name: 'userID', label: 'Player ID' },
            ],
          },
          {
            kind: 'table',
            caption: 'Subscriptions, newest first',
            empty: 'No subscription.',
            columns: [
              { key: 'id', label: 'ID' },
              { key: 'player', label: 'Player' },
              { key: 'product', label: 'Product' },
              { key: 'state', label: 'State' },
              { key: 'price', label: 'Price', numeric: true },
              { key: 'next', label: 'Next payment' },
            ],
            rows: rows.map((s) => ({
              id: { text: s.id, href: `${pages.base}/${s.id}` },
              player: player(s),
              product: { text: s.productName, href: `${pages.base}?productID=${s.productID}` },
              state: stateText(s),
              price: `${s.price} ${s.currency}`,
              next: s.nextPaymentDate ?? '',
            })),
          },
        ],
      };
      return page;
    });

    const detail = async (id: number): Promise<ConsolePage> => {
      const s = await subs.get(id);
      const running = s.status !== 'ended';
      const action = (path: string, label: string, confirm: string): ConsoleCell => ({ action: `${pages.base}/${s.id}/${path}`, label, confirm });
      return {
        title: `Subscription ${s.id}: ${s.productName}`,
        blocks: [
          {
            kind: 'links',
            items: [
              { label: 'All subscriptions', href: pages.base },
              { label: `${s.username}'s subscriptions`, href: `${pages.base}?userID=${s.userID}` },
            ],
          },
          {
            kind: 'stats',
            items: [
              { label: 'player', value: s.username },
              { label: 'state', value: stateText(s) },
              { label: 'terms', value: s.renews },
              { label: 'period', value: `${s.period}, to ${s.periodEnd}` },
              { label: 'next payment', value: s.nextPaymentDate ? `${s.nextAmount} ${s.currency} on ${s.nextPaymentDate}` : 'none' },
              { label: 'started', value: s.startDate },
            ],
          },
          {
            kind: 'table',
            caption: 'Actions',
            empty: 'It has ended.',
            columns: [
              { key: 'cancel', label: 'At the period end' },
              { key: 'now', label: 'Now' },
              { key: 'refund', label: 'Refund' },
            ],
            rows: running
              ? [
                  {
                    cancel:
                      s.cancelAtPeriodEnd === '1'
                        ? 'Cancelled'
                        : action('cancel', 'Cancel at period end', `Cancel ${s.username}'s ${s.productName} at the period's end?`),
                    now: action('cancel-now', 'End now', `End ${s.username}'s ${s.productName} now? The role ends and the expiry commands run.`),
                    refund: action('refund', 'Refund and end', `Give back ${s.price} ${s.currency} to ${s.username}'s balance and end the subscription?`),
                  },
                ]
              : [],
          },
        ],
      };
    };

    pages.get('/:id', async ({ params }) => detail(idOf(params.id)));

    const act = (path: string, run: (id: number) => Promise<SubscriptionRow>, done: string) =>
      pages.post(`/:id/${path}`, async ({ params }) => {
        const id = idOf(params.id);
        try {
          const s = await run(id);
          return { redirect: `${pages.base}/${s.id}`, notice: `${done}: ${s.username}'s ${s.productName}.` };
        } catch (err) {
          if (err instanceof DomainError && err.code !== 'SUBSCRIPTION_NOT_FOUND') return { redirect: `${pages.base}/${id}`, notice: err.message };
          throw err;
        }
      });
    act('cancel', (id) => subs.cancel(id, 'staff', 'period_end'), 'Cancelled at the period end');
    act('cancel-now', (id) => subs.cancel(id, 'staff', 'now'), 'Ended now');
    act('refund', (id) => subs.refund(id), 'Refunded and ended');

    pages.dashboard(async () => {
      const m = await subs.metrics();
      return [
        { label: 'subscriptions running', value: String(m.active), href: `${pages.base}?status=active` },
        { label: 'subscriptions past due', value: String(m.pastDue), href: `${pages.base}?status=past_due` },
        { label: 'monthly recurring revenue', value: `${formatMoney(m.mrr)} ${ctx.settings.get().currency}`, href: `${pages.base}?status=active` },
        { label: `churn (${m.windowDays} days)`, value: `${(m.churn * 100).toFixed(1)}% (${m.churned} ended)`, href: `${pages.base}?status=ended` },
      ];
    });
  },
};
