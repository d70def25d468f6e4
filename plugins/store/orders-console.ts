/**
 * The store's Orders section of the staff console: the sales figures on the dashboard and its
 * charts, the orders filtered and paged, one order with its deliveries, redelivery and refund.
 * Each group of pages is registered by a function of its own.
 */
import {
  playerCell,
  type ConsoleBlock,
  type ConsolePage,
  type ConsolePages,
  type ConsoleRequest,
  type ConsoleSection,
  idOf,
  sharedFigures,
} from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import { counted, displayTimestamp, formatMoney, now, parseClientTimestamp } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { deliveryRef, type DeliveryService } from '../delivery/contract.ts';
import { usersRef, type UsersService } from '../users/contract.ts';
import type { DbOrders } from './orders.ts';

const PAGE = 50;
/** The dashboard's charts: one bar a day for this many days. */
const CHART_DAYS = 30;
const STATUSES = ['completed', 'refunded', 'disputed'];

/** What the orders' pages work with. */
interface OrderPages {
  pages: ConsolePages;
  orders: DbOrders;
  users: UsersService;
  settings: SettingsService;
  /** The delivery feature's service, when it runs (looked up when used). */
  delivery: () => DeliveryService | undefined;
}

export const ordersSection: ConsoleSection<unknown, { orders: DbOrders }> = {
  id: 'orders',
  title: 'Orders',
  order: 50,
  pages(pages, ctx, { orders }) {
    const op: OrderPages = {
      pages,
      orders,
      users: ctx.services.get(usersRef),
      settings: ctx.settings,
      delivery: () => ctx.services.find(deliveryRef),
    };
    salesFigures(op);
    pages.get('', async ({ query }) => orderListPage(op, query));
    pages.get('/:id', async ({ params }) => orderPage(op, idOf(params.id)));
    orderActions(op);
  },
};

/**
 * The dashboard's sales of today and this month, and the charts of the last days, in the site's time
 * zone: one statement for both (the figures and the chart of one dashboard share it).
 */
function salesFigures({ pages, orders, settings }: OrderPages): void {
  const sales = sharedFigures(async () => {
    const tz = settings.get().timezone;
    const local = displayTimestamp(now(), tz);
    const days = Array.from({ length: CHART_DAYS }, (_, i) =>
      new Date(Date.parse(`${local.slice(0, 10)}T00:00:00Z`) - (CHART_DAYS - 1 - i) * 86_400_000).toISOString().slice(0, 10),
    );
    const month = parseClientTimestamp(`${local.slice(0, 8)}01 00:00:00`, tz)!;
    const chartFrom = parseClientTimestamp(`${days[0]} 00:00:00`, tz)!;
    const rows = await orders.salesByHour([month, chartFrom].sort()[0]!, month, parseClientTimestamp(`${local.slice(0, 10)} 00:00:00`, tz)!);
    return { tz, days, rows };
  });

  pages.dashboard(async () => {
    const { rows } = await sales();
    const sum = (period: number, type: string) =>
      rows
        .filter((r) => r.period >= period && r.type === type)
        .reduce((a, r) => ({ orders: a.orders + r.orders, total: a.total + r.total }), { orders: 0, total: 0 });
    const currency = settings.get().currency;
    return [
      { label: `credit sales today (${counted(sum(TODAY, 'credit').orders, 'order')})`, value: formatMoney(sum(TODAY, 'credit').total), href: pages.base },
      { label: `credit sales this month (${counted(sum(MONTH, 'credit').orders, 'order')})`, value: formatMoney(sum(MONTH, 'credit').total), href: pages.base },
      { label: `${currency} received today`, value: formatMoney(sum(TODAY, 'payment').total), href: `${pages.base}?type=payment` },
      { label: `${currency} received this month`, value: formatMoney(sum(MONTH, 'payment').total), href: `${pages.base}?type=payment` },
    ];
  });

  // Sales and top-ups of the last 30 days, one bar a day; today's bar is the day's own period.
  pages.charts(async () => {
    const { tz, days, rows } = await sales();
    const byDay = (type: string) => {
      const sums = new Map(days.map((d) => [d, 0]));
      for (const h of rows) {
        const day = h.period === TODAY ? days.at(-1)! : displayTimestamp(`${h.hour}:00:00`, tz).slice(0, 10);
        if (h.type === type && sums.has(day)) sums.set(day, sums.get(day)! + h.total);
      }
      return [...sums.values()];
    };
    return [
      { heading: `Credit sales, last ${CHART_DAYS} days`, labels: days, values: byDay('credit'), money: true },
      { heading: `${settings.get().currency} received (top-ups and purchases), last ${CHART_DAYS} days`, labels: days, values: byDay('payment'), money: true },
    ];
  });
}

/** `salesByHour`'s periods. */
const TODAY = 2;
const MONTH = 1;

/** A guest's order has no account to link to: the in-game name typed at checkout, and the email given for the receipt. */
const guestCell = (o: { guestName: string | null; guestEmail?: string | null }) => `guest ${o.guestName ?? ''}${o.guestEmail ? ` (${o.guestEmail})` : ''}`;

/** The orders, newest first, filtered by status, type and player, a page at a time. */
async function orderListPage({ pages, orders, users }: OrderPages, query: Record<string, string | undefined>): Promise<ConsolePage> {
  const filter = { status: query.status || undefined, type: query.type || undefined, search: query.search?.trim() || undefined };
  const errors: Record<string, string> = {};
  let userId: number | undefined;
  if (filter.status && !STATUSES.includes(filter.status)) errors.status = 'status must be completed, refunded or disputed';
  if (filter.type && !['credit', 'payment'].includes(filter.type)) errors.type = 'type must be credit or payment';
  if (query.username) {
    const user = await users.findByUsername(query.username);
    if (user) userId = user.id;
    else errors.username = `No user is named ${query.username}.`;
  }
  const before = /^[0-9]{1,15}$/.test(query.before ?? '') ? Number(query.before) : undefined;
  const rows = Object.keys(errors).length ? [] : await orders.listOrders({ ...filter, userId, before, limit: PAGE });
  const values = { status: query.status ?? '', type: query.type ?? '', username: query.username ?? '', search: query.search ?? '' };
  const keep = new URLSearchParams(Object.entries(values).filter(([, v]) => v));
  const link = (extra: Record<string, string>) => `${pages.base}?${new URLSearchParams([...keep, ...Object.entries(extra)])}`;
  const names = await users.usernames(rows.map((o) => Number(o.accountID)));
  return {
    title: 'Orders',
    status: Object.keys(errors).length ? 422 : 200,
    blocks: [
      {
        kind: 'form',
        id: 'order-filter',
        title: 'Filter',
        method: 'get',
        action: pages.base,
        submit: 'Show orders',
        errors,
        values,
        fields: [
          { name: 'status', label: 'Status', type: 'select', options: [{ value: '', label: 'any' }, ...STATUSES.map((s) => ({ value: s, label: s }))] },
          {
            name: 'type',
            label: 'Paid with',
            type: 'select',
            options: [
              { value: '', label: 'any' },
              { value: 'credit', label: 'credits' },
              { value: 'payment', label: 'real money' },
            ],
          },
          { name: 'username', label: 'Player', type: 'search', hint: 'Exact username.' },
          { name: 'search', label: 'Name or email', type: 'search', hint: "A username, a guest's in-game name or the email a guest gave (exact, any case)." },
        ],
      },
      {
        kind: 'table',
        caption: 'Orders, newest first',
        empty: 'No order matches.',
        columns: [
          { key: 'id', label: 'Order' },
          { key: 'date', label: 'Date' },
          { key: 'player', label: 'Player' },
          { key: 'type', label: 'Type' },
          { key: 'total', label: 'Total', numeric: true },
          { key: 'status', label: 'Status' },
        ],
        rows: rows.map((o) => ({
          id: { text: `#${o.id}`, href: `${pages.base}/${o.id}` },
          date: o.creationDate,
          player: o.accountID === '0' ? guestCell(o) : playerCell(pages, o.accountID, names),
          type: o.test ? `${o.type} (test)` : o.type,
          total: o.total,
          status: o.status,
        })),
        next: rows.length === PAGE ? link({ before: rows.at(-1)!.id }) : undefined,
        first: before !== undefined ? link({}) : undefined,
      },
    ],
  };
}

/** One order: its figures, its items, the refund form while it is refundable, and its deliveries. */
async function orderPage(op: OrderPages, id: number): Promise<ConsolePage> {
  const { pages, orders, users } = op;
  const { order, items, adjustments } = await orders.getOrder(id);
  const refundable = order.type === 'credit' && order.status === 'completed';
  const player = order.accountID === '0' ? guestCell(order) : playerCell(pages, order.accountID, await users.usernames([Number(order.accountID)]));
  return {
    title: `Order #${order.id}`,
    blocks: [
      {
        kind: 'stats',
        items: [
          { label: 'status', value: order.status },
          { label: 'total', value: order.total },
          { label: 'type', value: order.test ? `${order.type} (test: no money moved)` : order.type },
          { label: 'date', value: order.creationDate },
          typeof player === 'string' ? { label: 'player', value: player } : { label: 'player', value: player.text, href: player.href },
          { label: 'cashback', value: order.cashback },
          ...(order.paymentID ? [{ label: `payment (${order.paymentAPI})`, value: order.paymentID }] : []),
        ],
      },
      {
        kind: 'table',
        caption: 'Codes used',
        empty: 'No coupon or gift card.',
        columns: [
          { key: 'kind', label: 'Kind' },
          { key: 'code', label: 'Code' },
          { key: 'amount', label: 'Took off', numeric: true },
        ],
        rows: adjustments.map((a) => ({ kind: a.kind === 'gift-card' ? 'gift card' : a.kind, code: a.code, amount: formatMoney(a.amount) })),
      },
      {
        kind: 'table',
        caption: 'Items',
        empty: 'A payment: no items.',
        columns: [
          { key: 'product', label: 'Product' },
          { key: 'quantity', label: 'Quantity', numeric: true },
          { key: 'variables', label: 'Variables' },
        ],
        rows: items.map((i) => ({
          product: i.productName,
          quantity: String(i.quantity),
          variables: Object.entries(i.variables)
            .map(([k, v]) => `${k}=${v}`)
            .join(', '),
        })),
      },
      ...(refundable
        ? [
            {
              kind: 'form' as const,
              id: 'refund',
              title: 'Refund',
              action: `${pages.base}/${order.id}/refund`,
              submit: 'Refund order',
              fields: [],
              confirm: `Refund order #${order.id}? The price goes back to the balance, the cashback is taken back and granted roles are shortened.`,
            },
          ]
        : []),
      ...(await deliveries(op, Number(order.id))),
    ],
  };
}

/** The order's commands on game servers and whether each ran, with redeliver, when the delivery feature runs. */
async function deliveries({ pages, delivery: find }: OrderPages, orderId: number): Promise<ConsoleBlock[]> {
  const delivery = find();
  if (!delivery) return [];
  const [rows, servers] = await Promise.all([delivery.listQueue({ orderId, page: 1, perPage: 200 }), delivery.listServers()]);
  const serverNames = new Map(servers.map((s) => [s.id, s.name]));
  return [
    {
      kind: 'table',
      caption: 'Delivery',
      empty: 'No command was queued for this order.',
      columns: [
        { key: 'server', label: 'Game server' },
        { key: 'command', label: 'Command' },
        { key: 'trigger', label: 'On' },
        { key: 'status', label: 'Status' },
        { key: 'tries', label: 'Tries', numeric: true },
        { key: 'error', label: 'Last error' },
        { key: 'updated', label: 'Updated' },
        { key: 'action', label: 'Action' },
      ],
      rows: rows.map((r) => ({
        server: serverNames.get(r.serverID) ?? `#${r.serverID}`,
        command: r.command,
        trigger: r.trigger,
        status: r.status,
        tries: r.tries,
        error: r.lastError ?? '',
        updated: r.updatedDate,
        action: ['done', 'failed', 'cancelled'].includes(r.status)
          ? {
              action: `${pages.base}/${orderId}/deliveries/${r.id}/redeliver`,
              label: `Redeliver command ${r.id}`,
              confirm: `Run "${r.command}" on ${serverNames.get(r.serverID) ?? 'its server'} again?`,
            }
          : '',
      })),
    },
  ];
}

/** An order's actions: a delivered command run again, and the refund. */
function orderActions({ pages, orders, delivery: find }: OrderPages): void {
  pages.post('/:id/deliveries/:queueId/redeliver', async ({ params }) => {
    const orderId = idOf(params.id);
    const delivery = find();
    const row = delivery ? (await delivery.listQueue({ orderId, page: 1, perPage: 200 })).find((r) => r.id === params.queueId) : undefined;
    if (!delivery || !row) throw new DomainError('ORDER_NOT_FOUND', `Order ${orderId} has no queued command ${params.queueId}.`);
    try {
      await delivery.redeliver(Number(row.id));
    } catch (err) {
      if (err instanceof DomainError && err.code === 'CONFLICT') return { redirect: `${pages.base}/${orderId}`, notice: `Not redelivered: ${err.message}` };
      throw err;
    }
    return { redirect: `${pages.base}/${orderId}`, notice: `Command ${row.id} is waiting to be delivered again.` };
  });

  pages.post('/:id/refund', async ({ params, staff }: ConsoleRequest) => {
    const id = /^[0-9]{1,15}$/.test(params.id!) ? Number(params.id) : 0;
    try {
      await orders.refund(id, `console:${staff.username}`);
    } catch (err) {
      if (err instanceof DomainError && err.code !== 'ORDER_NOT_FOUND') return { redirect: `${pages.base}/${id}`, notice: `Not refunded: ${err.message}` };
      throw err;
    }
    return { redirect: `${pages.base}/${id}`, notice: `Order #${id} refunded.` };
  });
}
