/**
 * The payments feature's console section: the gateways and why one is off, the payments (newest
 * first, keyset pages, by status), the debts refunds left, and the top-up packages (created,
 * changed, deleted with the admin API's schemas and the service's own checks).
 */
import type { Static } from '@sinclair/typebox';
import { errorsFor, playerCell, type ConsoleField, type ConsolePage, type ConsolePages, type ConsoleSection, type ShownForm } from '../../core/console.ts';
import { counted, displayTimestamp, formatMoney } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { type PlayerPanel, usersRef, type UsersService } from '../users/contract.ts';
import { PackageCreateBody, PackagePatchBody } from './schemas.ts';
import { pricedBasket } from './model.ts';
import type { DbPaymentsService, Package, Payment } from './service.ts';
import { taxPages } from './tax-console.ts';
import { testCheckoutPages } from './test-gateway.ts';

const PAGE = 50;
const STATUSES: Payment['status'][] = ['pending', 'completed', 'credited', 'refund-due', 'refunded', 'disputed', 'expired'];

const FIELDS: ConsoleField[] = [
  { name: 'name', label: 'Name', required: true },
  { name: 'price', label: 'Price', type: 'number', required: true, hint: 'What the player pays, e.g. 9.99.' },
  { name: 'currency', label: 'Currency', hint: 'Three letters; the site currency when empty.' },
  { name: 'credits', label: 'Credits', type: 'number', required: true },
  { name: 'bonus', label: 'Bonus credits', type: 'number', hint: 'Added on top; 0 when empty.' },
];

const errors = (err: unknown) => errorsFor(err, Object.keys(PackageCreateBody.properties), { INVALID_CURRENCY: 'currency' });

export const paymentsSection: ConsoleSection<unknown, DbPaymentsService> = {
  id: 'payments',
  title: 'Payments',
  order: 65,
  pages(pages, { settings, services, db }, payments) {
    const cp: PaymentsPages = { pages, payments, settings };
    attention(cp);
    paymentsRoute(cp, services.get(usersRef));
    packageRoutes(cp);
    testCheckoutPages(pages, payments);
    taxPages(pages, db, payments.taxRates, settings);
  },
};

/** What each group of pages works with. */
interface PaymentsPages {
  pages: ConsolePages;
  payments: DbPaymentsService;
  settings: SettingsService;
}

/** What needs staff: disputes, players owing credits, guests' payments to refund by hand. */
function attention({ pages, payments }: PaymentsPages): void {
  pages.attention(async () => {
    const t = await payments.trouble();
    return [
      { count: t.disputed, text: `${counted(t.disputed, 'payment')} disputed by the payer's bank`, href: `${pages.base}?status=disputed` },
      { count: t.debtors, text: `${counted(t.debtors, 'player')} owing ${formatMoney(t.debt)} in credits after a reversed payment`, href: pages.base },
      { count: t.refundDue, text: `${counted(t.refundDue, 'guest payment')} to refund by hand`, href: `${pages.base}?status=refund-due` },
    ];
  });
}

/** A payment as a row of the section's tables, its player linked to their page. */
const paymentRow = (pages: ConsolePages, tz: string, names: ReadonlyMap<number, string>) => (p: Payment) => ({
  date: displayTimestamp(p.creationDate, tz),
  // The id players and gateways quote, linked to its order once there is one.
  payment: linked(p.id, p.orderId === null ? undefined : pages.href('orders', `/${p.orderId}`)),
  player: p.userId === 0 ? `guest ${p.guestName ?? ''}${p.guestEmail ? ` (${p.guestEmail})` : ''}` : playerCell(pages, p.userId, names),
  gateway: p.gateway,
  status: p.status,
  amount: `${formatMoney(p.amount)} ${p.currency}`,
  credits: formatMoney(p.credits),
  debt: p.debt ? formatMoney(p.debt) : '',
  codes: p.purchaseLines === null ? '' : codesOf(p.purchaseLines),
});

const linked = (text: string, href: string | undefined) => (href ? { text, href } : text);

/** The coupon and gift card a purchase was priced with. */
const codesOf = (lines: string) =>
  pricedBasket(lines)
    .adjustments.map((a) => `${a.kind === 'gift-card' ? 'gift card' : a.kind} ${a.code}`)
    .join(', ');
const paymentColumns = [
  { key: 'date', label: 'Date' },
  { key: 'payment', label: 'Payment' },
  { key: 'player', label: 'Player' },
  { key: 'gateway', label: 'Gateway' },
  { key: 'status', label: 'Status' },
  { key: 'amount', label: 'Paid', numeric: true },
  { key: 'credits', label: 'Credits', numeric: true },
  { key: 'debt', label: 'Debt', numeric: true },
  { key: 'codes', label: 'Codes' },
];

/** The section's first page: the gateways, the payments by status (keyset pages), the debts and the refunds due. */
function paymentsRoute({ pages, payments, settings }: PaymentsPages, users: UsersService): void {
  pages.get('', async ({ query }) => {
    const status = STATUSES.find((s) => s === query.status);
    const before = /^[0-9a-f]{32}$/.test(query.before ?? '') ? query.before : undefined;
    const [rows, debts, refundsDue] = await Promise.all([
      payments.list({ status, before, limit: PAGE }),
      payments.debts(),
      payments.list({ status: 'refund-due', limit: PAGE }),
    ]);
    const row = paymentRow(pages, settings.get().timezone, await users.usernames([...rows, ...debts, ...refundsDue].map((p) => p.userId)));
    const link = (extra: Record<string, string>) => `${pages.base}?${new URLSearchParams({ ...(status ? { status } : {}), ...extra })}`;
    return {
      title: 'Payments',
      blocks: [
        {
          kind: 'links',
          heading: 'Top-up packages and tax',
          items: [
            { label: 'Packages players buy credits with', href: `${pages.base}/packages` },
            { label: 'Tax collected and tax rates', href: `${pages.base}/tax` },
          ],
        },
        {
          kind: 'table',
          caption: 'Gateways',
          empty: 'No gateway.',
          columns: [
            { key: 'name', label: 'Gateway' },
            { key: 'state', label: 'State' },
          ],
          rows: payments.gateways().map((g) => ({ name: g.name, state: g.reason ? `off: ${g.reason}` : 'on' })),
        },
        {
          kind: 'form',
          id: 'payment-filter',
          title: 'Payments',
          method: 'get',
          action: pages.base,
          submit: 'Show payments',
          values: { status: status ?? '' },
          fields: [
            { name: 'status', label: 'Status', type: 'select', options: [{ value: '', label: 'any' }, ...STATUSES.map((s) => ({ value: s, label: s }))] },
          ],
        },
        {
          kind: 'table',
          caption: 'Payments, newest first',
          empty: 'No payment here.',
          columns: paymentColumns,
          rows: rows.map(row),
          next: rows.length === PAGE ? link({ before: rows.at(-1)!.id }) : undefined,
          first: before ? link({}) : undefined,
        },
        {
          kind: 'table',
          caption: 'Debts: credits a refund or dispute could not take back',
          empty: 'Nobody owes credits.',
          columns: paymentColumns,
          rows: debts.map(row),
        },
        {
          kind: 'form',
          id: 'clear-tests',
          title: 'Test orders',
          action: `${pages.base}/test-orders/clear`,
          submit: 'Clear test orders',
          confirm: 'Delete every test order and test payment? Real orders are not touched.',
          fields: [],
        },
        {
          kind: 'table',
          caption: 'To refund by hand at the gateway: guests paid for a purchase that could no longer be made',
          empty: 'Nothing to refund.',
          columns: paymentColumns,
          rows: refundsDue.map(row),
        },
      ],
    };
  });
}

/** The packages' list with a form for a new one. */
async function packagesPage({ pages, payments, settings }: PaymentsPages, add?: ShownForm): Promise<ConsolePage> {
  return {
    title: 'Top-up packages',
    status: add ? 422 : 200,
    blocks: [
      { kind: 'links', items: [{ label: 'Payments', href: pages.base }] },
      {
        kind: 'table',
        caption: 'Packages',
        empty: 'No package: players top up any amount.',
        columns: [
          { key: 'name', label: 'Name' },
          { key: 'price', label: 'Price', numeric: true },
          { key: 'credits', label: 'Credits', numeric: true },
          { key: 'bonus', label: 'Bonus', numeric: true },
          { key: 'delete', label: 'Delete' },
        ],
        rows: (await payments.packages()).map((p) => ({
          name: { text: p.name, href: `${pages.base}/packages/${p.id}` },
          price: `${formatMoney(p.price)} ${p.currency}`,
          credits: formatMoney(p.credits),
          bonus: formatMoney(p.bonus),
          delete: {
            action: `${pages.base}/packages/${p.id}/delete`,
            label: `Delete ${p.name}`,
            confirm: `Delete the package ${p.name}? Payments made keep their amounts.`,
          },
        })),
      },
      {
        kind: 'form',
        id: 'new-package',
        title: 'New package',
        action: `${pages.base}/packages`,
        submit: 'Create package',
        values: add?.values ?? { currency: settings.get().currency },
        errors: add?.errors,
        fields: FIELDS,
      },
    ],
  };
}

/** One package's edit form. */
function packagePage(pages: ConsolePages, p: Package, edit?: ShownForm): ConsolePage {
  return {
    title: p.name,
    status: edit ? 422 : 200,
    blocks: [
      { kind: 'links', items: [{ label: 'All packages', href: `${pages.base}/packages` }] },
      {
        kind: 'form',
        id: 'edit-package',
        title: 'Edit package',
        action: `${pages.base}/packages/${p.id}`,
        submit: 'Save package',
        values: edit?.values ?? {
          name: p.name,
          price: formatMoney(p.price),
          currency: p.currency,
          credits: formatMoney(p.credits),
          bonus: formatMoney(p.bonus),
        },
        errors: edit?.errors,
        fields: FIELDS,
      },
    ],
  };
}

/** The top-up packages' pages: listed, created, edited and deleted. */
function packageRoutes(cp: PaymentsPages): void {
  const { pages, payments } = cp;
  const packageId = (text: string | undefined) => (/^[0-9]{1,15}$/.test(text ?? '') ? Number(text) : 0);

  pages.get('/packages', async () => packagesPage(cp));

  pages.post(
    '/packages',
    async ({ body, invalid, form }) => {
      if (invalid) return packagesPage(cp, { values: form, errors: invalid });
      try {
        const p = await payments.createPackage(body as Static<typeof PackageCreateBody>);
        return {
          redirect: `${pages.base}/packages`,
          notice: `Package ${p.name} created: ${formatMoney(p.price)} ${p.currency} for ${formatMoney(p.credits + p.bonus)} credits.`,
        };
      } catch (err) {
        return packagesPage(cp, { values: form, errors: errors(err) });
      }
    },
    { body: PackageCreateBody },
  );

  pages.get('/packages/:id', async ({ params }) => packagePage(pages, await payments.requirePackage(packageId(params.id))));

  pages.post(
    '/packages/:id',
    async ({ params, body, invalid, form }) => {
      const p = await payments.requirePackage(packageId(params.id));
      if (invalid) return packagePage(pages, p, { values: form, errors: invalid });
      try {
        const b = body as Static<typeof PackagePatchBody>;
        // An emptied bonus is no bonus, as the form says.
        const saved = await payments.updatePackage(p.id, { ...b, bonus: b.bonus ?? '0' });
        return { redirect: `${pages.base}/packages`, notice: `Package ${saved.name} saved.` };
      } catch (err) {
        return packagePage(pages, p, { values: form, errors: errors(err) });
      }
    },
    { body: PackagePatchBody },
  );

  pages.post('/packages/:id/delete', async ({ params }) => {
    const p = await payments.requirePackage(packageId(params.id));
    await payments.deletePackage(p.id);
    return { redirect: `${pages.base}/packages`, notice: `Package ${p.name} deleted.` };
  });
}

/** The player's page: flagged while a chargeback of theirs stands (a dispute not won, a debt), with what it was. */
export function chargebackPanel(payments: DbPaymentsService, settings: SettingsService): PlayerPanel {
  return {
    async view({ player }) {
      const flagged = await payments.chargebacksOf(player.id);
      if (flagged.length === 0) return {};
      const debt = flagged.reduce((sum, p) => sum + p.debt, 0);
      const tz = settings.get().timezone;
      return {
        stats: [{ label: 'chargeback', value: 'flagged' }],
        blocks: [
          {
            kind: 'table',
            caption: 'Chargebacks',
            empty: '',
            columns: [
              { key: 'date', label: 'Date' },
              { key: 'gateway', label: 'Gateway' },
              { key: 'status', label: 'Status' },
              { key: 'amount', label: 'Paid', numeric: true },
              { key: 'debt', label: 'Owes', numeric: true },
            ],
            rows: flagged.map((p) => ({
              date: displayTimestamp(p.updateDate, tz),
              gateway: p.gateway,
              status: p.status,
              amount: `${formatMoney(p.amount)} ${p.currency}`,
              debt: formatMoney(p.debt),
            })),
          },
          { kind: 'text', text: `Flagged while a dispute stands (a won one clears it) or a debt remains; owes ${formatMoney(debt)} in credits in all.` },
        ],
      };
    },
  };
}
