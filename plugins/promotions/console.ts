/**
 * The promotions' console section: coupons, sales and gift cards, each a list with its uses and
 * revenue, a create form, an edit form (untick Active to pause) and delete; the products that sell
 * gift cards. Forms are checked with the admin API's schemas, so a page refuses what the API refuses.
 */
import type { Static } from '@sinclair/typebox';
import {
  type ConsoleBlock,
  type ConsoleField,
  type ConsolePages,
  type ConsoleRequest,
  type ConsoleSection,
  errorsFor,
  recordPages,
} from '../../core/console.ts';
import { displayTimestamp, formatMoney, now } from '../../core/format.ts';
import type { Coupon, GiftCard, Sale } from './gift-cards.ts';
import type { DbPromotionsService, Figures } from './service.ts';
import {
  COUPON_DEFAULTS,
  CouponBody,
  CouponPatchBody,
  GiftCardBody,
  GiftCardPatchBody,
  GiftProductBody,
  SaleBody,
  SalePatchBody,
  cents,
  couponInput,
  couponRow,
  giftCardRow,
  saleInput,
  saleRow,
} from './schemas.ts';

/** A checkbox is absent when unticked: on these forms that means off, not "unchanged". */
const ticked = (request: ConsoleRequest, names: string[]) => Object.fromEntries(names.map((n) => [n, request.form[n] === 'true']));
const defined = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
const figuresColumns = [
  { key: 'orders', label: 'Uses', numeric: true },
  { key: 'discountGiven', label: 'Taken off', numeric: true },
  { key: 'revenue', label: 'Revenue', numeric: true },
];

const COUPON_FIELDS: ConsoleField[] = [
  { name: 'code', label: 'Code', required: true, hint: '3 to 64 letters, digits, _ or -; players may type it in any case.' },
  {
    name: 'kind',
    label: 'Kind',
    type: 'select',
    required: true,
    options: [
      { value: 'percent', label: 'Percent off' },
      { value: 'fixed', label: 'Fixed amount off' },
    ],
  },
  { name: 'value', label: 'Value', type: 'number', required: true, hint: 'A percent (1 to 100), or an amount such as 5.00.' },
  { name: 'minBasket', label: 'Minimum basket', type: 'number', hint: '0 or empty: any basket.' },
  { name: 'startDate', label: 'Starts', type: 'datetime', hint: 'Empty: at once. Use the form 2026-12-31 23:59.' },
  { name: 'endDate', label: 'Ends', type: 'datetime', hint: 'Empty: never.' },
  { name: 'maxUses', label: 'Uses in all', type: 'number', hint: '0 or empty: unlimited.' },
  { name: 'perPlayer', label: 'Uses per player', type: 'number', hint: '0 or empty: unlimited.' },
  { name: 'productIDs', label: 'Only these product IDs', hint: 'Separated by commas; empty: any product.' },
  { name: 'categoryIDs', label: 'Only these category IDs', hint: 'Separated by commas; empty: any category.' },
  { name: 'stacksWithSale', label: 'Also lowers products on sale', type: 'checkbox' },
  { name: 'isActive', label: 'Active (untick to pause)', type: 'checkbox' },
];

const SALE_FIELDS: ConsoleField[] = [
  { name: 'name', label: 'Name', required: true },
  { name: 'percent', label: 'Percent off', type: 'number', required: true, hint: "Off the list price; a product's own lower price wins." },
  { name: 'categoryIDs', label: 'Only these category IDs', hint: 'Separated by commas; empty: the whole store.' },
  { name: 'startDate', label: 'Starts', type: 'datetime', required: true, hint: 'Use the form 2026-12-31 23:59.' },
  { name: 'endDate', label: 'Ends', type: 'datetime', required: true },
  { name: 'isActive', label: 'Active (untick to pause)', type: 'checkbox' },
];

const CARD_FIELDS: ConsoleField[] = [
  { name: 'amount', label: 'Amount', type: 'number', required: true, hint: 'Its balance, such as 25.00.' },
  { name: 'code', label: 'Code', hint: 'Empty: the server makes one.' },
  { name: 'note', label: 'Note', hint: 'For staff: who it is for.' },
];
const CARD_EDIT_FIELDS: ConsoleField[] = [
  { name: 'note', label: 'Note' },
  { name: 'isActive', label: 'Active (untick to pause)', type: 'checkbox' },
];

export const promotionsSections: ConsoleSection<unknown, DbPromotionsService>[] = [
  {
    id: 'promotions',
    title: 'Promotions',
    order: 35,
    pages(pages, ctx, promotions) {
      const tz = () => ctx.settings.get().timezone;
      // Each list page reads its figures (one grouped query) with its records, before its rows are drawn.
      const figures = { coupon: new Map(), sale: new Map(), card: new Map() } as Record<FigureKind, Map<number, Figures>>;
      const listed = async <R>(kind: FigureKind, records: Promise<R[]>): Promise<R[]> => {
        const [shown, list] = await Promise.all([promotions.figures(kind), records]);
        figures[kind] = shown;
        return list;
      };
      const manage: ConsoleBlock = {
        kind: 'links',
        items: [
          { label: 'Coupons', href: `${pages.base}/coupons` },
          { label: 'Sales', href: `${pages.base}/sales` },
          { label: 'Gift cards', href: `${pages.base}/gift-cards` },
          { label: 'Gift card products', href: `${pages.base}/gift-card-products` },
        ],
      };
      const pp: PromotionPages = { pages, promotions, tz, figures, listed, manage };
      overviewPage(pp);
      couponPages(pp);
      salePages(pp);
      giftCardPages(pp);
      giftProductPages(pp);
    },
  },
];

type FigureKind = 'coupon' | 'sale' | 'card';

/** What each group of the section's pages works with. */
interface PromotionPages {
  pages: ConsolePages;
  promotions: DbPromotionsService;
  tz: () => string;
  /** The figures of the list page being drawn, by promotion id. */
  figures: Record<FigureKind, Map<number, Figures>>;
  /** A list page's records, its figures read beside them. */
  listed: <R>(kind: FigureKind, records: Promise<R[]>) => Promise<R[]>;
  /** The links to each list, above each list. */
  manage: ConsoleBlock;
}

/** The section's first page: its links and the community goal. */
function overviewPage({ pages, promotions, tz, manage }: PromotionPages): void {
  pages.get('', async () => {
    const goal = await promotions.communityGoal();
    return {
      title: 'Promotions',
      blocks: [
        manage,
        {
          kind: 'stats',
          heading: 'Community goal',
          items: [
            { label: 'raised', value: `${formatMoney(goal.raised)} ${goal.currency}` },
            { label: 'target', value: goal.target > 0 ? `${formatMoney(goal.target)} ${goal.currency}` : 'none (site settings)' },
            { label: 'period', value: `${displayTimestamp(goal.start, tz())} to ${displayTimestamp(goal.end, tz())}` },
          ],
        },
      ],
    };
  });
}

/** The coupons: list with figures, create, edit, pause, delete. */
function couponPages({ pages, promotions, tz, figures, listed, manage }: PromotionPages): void {
  recordPages<Coupon>(pages, {
    path: '/coupons',
    title: 'Coupons',
    noun: 'coupon',
    above: [manage],
    fields: COUPON_FIELDS,
    columns: [{ key: 'offer', label: 'Offer' }, { key: 'state', label: 'State' }, { key: 'limit', label: 'Uses taken', numeric: true }, ...figuresColumns],
    createBody: CouponBody,
    editBody: CouponPatchBody,
    list: () => listed('coupon', promotions.coupons()),
    get: (id) => promotions.requireCoupon(id),
    create: (request) =>
      promotions.createCoupon({
        ...COUPON_DEFAULTS,
        ...defined(couponInput(request.body as Static<typeof CouponBody>, tz())),
        ...ticked(request, ['stacksWithSale', 'isActive']),
      } as Parameters<DbPromotionsService['createCoupon']>[0]),
    update: async (id, request) =>
      promotions.updateCoupon(id, {
        ...couponInput(request.body as Static<typeof CouponPatchBody>, tz(), (await promotions.requireCoupon(id)).kind),
        ...ticked(request, ['stacksWithSale', 'isActive']),
      }),
    remove: (id) => promotions.deleteCoupon(id),
    idOf: (c) => c.id,
    nameOf: (c) => c.code,
    values: (c) => {
      const row = couponRow(c, undefined, tz());
      return {
        code: row.code,
        kind: row.kind,
        value: row.value,
        minBasket: row.minBasket,
        startDate: row.startDate,
        endDate: row.endDate,
        maxUses: row.maxUses,
        perPlayer: row.perPlayer,
        productIDs: row.productIDs.join(', '),
        categoryIDs: row.categoryIDs.join(', '),
        stacksWithSale: String(c.stacksWithSale),
        isActive: String(c.isActive),
      };
    },
    initial: { stacksWithSale: String(COUPON_DEFAULTS.stacksWithSale), isActive: 'true' },
    cells: (c) =>
      cellsOf(couponRow(c, figures.coupon.get(c.id), tz()), {
        offer: c.kind === 'percent' ? `${c.value}% off` : `${formatMoney(c.value)} off`,
        state: c.isActive ? 'active' : 'paused',
        limit: `${c.uses}${c.maxUses ? ` of ${c.maxUses}` : ''}`,
      }),
  });
}

/** The sales: list with figures, create, edit, pause, delete. */
function salePages({ pages, promotions, tz, figures, listed, manage }: PromotionPages): void {
  recordPages<Sale>(pages, {
    path: '/sales',
    title: 'Sales',
    noun: 'sale',
    above: [manage],
    fields: SALE_FIELDS,
    columns: [{ key: 'percent', label: 'Off', numeric: true }, { key: 'when', label: 'When' }, { key: 'state', label: 'State' }, ...figuresColumns],
    createBody: SaleBody,
    editBody: SalePatchBody,
    list: () => listed('sale', promotions.sales()),
    get: (id) => promotions.requireSale(id),
    create: (request) =>
      promotions.createSale({
        categoryIds: '[]',
        ...defined(saleInput(request.body as Static<typeof SaleBody>, tz())),
        ...ticked(request, ['isActive']),
      } as Parameters<DbPromotionsService['createSale']>[0]),
    update: (id, request) =>
      promotions.updateSale(id, {
        ...saleInput(request.body as Static<typeof SalePatchBody>, tz()),
        ...ticked(request, ['isActive']),
      }),
    remove: (id) => promotions.deleteSale(id),
    idOf: (s) => s.id,
    nameOf: (s) => s.name,
    values: (s) => {
      const row = saleRow(s, undefined, tz(), now());
      return {
        name: s.name,
        percent: row.percent,
        categoryIDs: row.categoryIDs.join(', '),
        startDate: row.startDate,
        endDate: row.endDate,
        isActive: String(s.isActive),
      };
    },
    initial: { isActive: 'true' },
    cells: (s) => {
      const row = saleRow(s, figures.sale.get(s.id), tz(), now());
      return cellsOf(row, {
        percent: `${s.percent}%`,
        when: `${row.startDate} to ${row.endDate}`,
        state: row.running ? 'running' : s.isActive ? 'scheduled or ended' : 'paused',
      });
    },
  });
}

/** The gift cards: list with figures, issue, note and pause, delete (a card never used). */
function giftCardPages({ pages, promotions, tz, figures, listed, manage }: PromotionPages): void {
  recordPages<GiftCard>(pages, {
    path: '/gift-cards',
    title: 'Gift cards',
    noun: 'gift card',
    above: [manage],
    fields: CARD_FIELDS,
    columns: [
      { key: 'balance', label: 'Balance', numeric: true },
      { key: 'state', label: 'State' },
      { key: 'uses', label: 'Uses', numeric: true },
      { key: 'spent', label: 'Spent', numeric: true },
      { key: 'note', label: 'Note' },
    ],
    createBody: GiftCardBody,
    editBody: GiftCardPatchBody,
    list: () => listed('card', promotions.cards()),
    get: (id) => promotions.requireCard(id),
    create: ({ body }) => {
      const b = body as Static<typeof GiftCardBody>;
      return promotions.issueCard({ amount: cents(b.amount, 'amount', 1), code: b.code || undefined, note: b.note });
    },
    update: (id, request) => promotions.updateCard(id, { note: (request.body as Static<typeof GiftCardPatchBody>).note, ...ticked(request, ['isActive']) }),
    remove: (id) => promotions.deleteCard(id),
    idOf: (c) => c.id,
    nameOf: (c) => c.code,
    values: (c) => ({ note: c.note, isActive: String(c.isActive) }),
    cells: (c) => {
      const row = giftCardRow(c, figures.card.get(c.id), tz());
      return { balance: row.balance, state: c.isActive ? 'active' : 'paused', uses: row.uses, spent: row.spent, note: c.note };
    },
    // The edit form only pauses and notes; amounts move through the ledger alone.
    editFields: CARD_EDIT_FIELDS,
  });
}

/** The products that sell a gift card, and the form that makes one sell them. */
function giftProductPages({ pages, promotions, manage }: PromotionPages): void {
  const GiftProductForm = GiftProductBody;
  pages.get('/gift-card-products', async () => giftProductsPage());
  const giftProductsPage = async (failed?: { values: Record<string, string>; errors: Record<string, string> }) => ({
    title: 'Gift card products',
    status: failed ? 422 : 200,
    blocks: [
      manage,
      {
        kind: 'table' as const,
        caption: 'Products that sell a gift card',
        empty: 'No product sells a gift card.',
        columns: [
          { key: 'product', label: 'Product ID' },
          { key: 'amount', label: 'Amount on the card', numeric: true },
        ],
        rows: (await promotions.giftProducts()).map((p) => ({ product: String(p.productId), amount: formatMoney(p.amount) })),
      },
      {
        kind: 'form' as const,
        id: 'gift-card-product',
        title: 'Sell gift cards with a product',
        action: `${pages.base}/gift-card-products`,
        submit: 'Save',
        values: failed?.values,
        errors: failed?.errors,
        fields: [
          { name: 'productID', label: 'Product ID', type: 'number' as const, required: true, hint: 'Each unit bought issues a card to the buyer.' },
          { name: 'amount', label: 'Amount on the card', type: 'number' as const, required: true },
        ],
      },
    ],
  });
  pages.post(
    '/gift-card-products',
    async ({ body, invalid, form }) => {
      if (invalid) return giftProductsPage({ values: form, errors: invalid });
      const b = body as Static<typeof GiftProductForm>;
      try {
        await promotions.setGiftProduct(b.productID, cents(b.amount, 'amount', 1));
      } catch (err) {
        return giftProductsPage({ values: form, errors: errorsFor(err, ['productID', 'amount'], { PRODUCT_NOT_FOUND: 'productID' }) });
      }
      return {
        redirect: `${pages.base}/gift-card-products`,
        notice: `Product ${b.productID} sells gift cards of ${formatMoney(cents(b.amount, 'amount', 1))}.`,
      };
    },
    { body: GiftProductForm },
  );
}

/** A row's figure cells (uses, taken off, revenue) beside the given ones. */
function cellsOf(row: { orders: string; discountGiven: string; revenue: string }, cells: Record<string, string>): Record<string, string> {
  return { ...cells, orders: row.orders, discountGiven: row.discountGiven, revenue: row.revenue };
}
