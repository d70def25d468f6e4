/**
 * Catalogue and orders as the API shows them: every row value a string (decisions.md §2), money
 * as `"12.50"`, times in the site's zone; the listing's computed fields typed as decisions.md §5 says.
 */
import type { Static } from '@sinclair/typebox';
import { displayTimestamp, flag, formatMoney, moneyNumber } from '../../core/format.ts';
import type { TableRecord } from '../../core/table.ts';
import type { Category, CategoryNode, Product } from './catalogue.ts';
import { effectivePrice } from './catalogue.ts';
import type { OrderRow } from './contract.ts';
import type { StoreOrder } from './entities.ts';
import type { CategoryRow, ListingProduct, ProductRow } from './schemas.ts';

export type Order = TableRecord<typeof StoreOrder>;

export function categoryRow(c: Category): Static<typeof CategoryRow> {
  return {
    id: String(c.id), parentID: String(c.parentId), name: c.name, slug: c.slug, imageID: c.imageId, imageType: c.imageType,
    priority: String(c.priority), gameStatus: flag(c.gameStatus), gameTitle: c.gameTitle, gameDescription: c.gameDescription,
    gameItem: c.gameItem, isActive: flag(c.isActive), gameItemModelID: '0', isCumulative: '0',
  };
}

export function productRow(p: Product, timeZone: string): Static<typeof ProductRow> {
  return {
    id: String(p.id), categoryID: String(p.categoryId), giveRoleID: String(p.giveRoleId), name: p.name,
    imageID: p.imageId, imageType: p.imageType, details: p.details, price: formatMoney(p.price),
    discountedPrice: formatMoney(p.discountedPrice), discountExpiryDate: displayTimestamp(p.discountExpiryDate, timeZone),
    duration: String(p.duration), stock: String(p.stock), priority: String(p.priority), isFeaturedProduct: flag(p.isFeatured),
    gameStatus: flag(p.gameStatus), gameTitle: p.gameTitle, gameDescription: p.gameDescription, gameItem: p.gameItem,
    isActive: flag(p.isActive), creationDate: displayTimestamp(p.creationDate, timeZone), gameItemModelID: '0', requireOnlyOneProduct: '0',
    variables: p.variables.map((v) => ({ name: v.name, required: flag(v.required), values: v.values })),
  };
}

export interface ListingContext {
  timeZone: string;
  currency: string;
  /** Stored UTC timestamp the discounts are judged at. */
  at: string;
  /** Roles the asking user holds permanently: buying their products again would change nothing. */
  permanentRoles: ReadonlySet<number>;
}

export function listingProduct(p: Product, ctx: ListingContext): Static<typeof ListingProduct> {
  const total = effectivePrice(p, ctx.at);
  const discount = p.price - total;
  // The product's row gains the listing's fields in place: a listing has a thousand of them.
  return Object.assign(productRow(p, ctx.timeZone), {
    total: moneyNumber(total),
    originalPrice: moneyNumber(p.price),
    discount: moneyNumber(discount),
    discountPercent: p.price > 0 ? Math.round((discount * 100) / p.price) : 0,
    restricted: p.giveRoleId > 0 && p.duration >= 0 && ctx.permanentRoles.has(p.giveRoleId),
    totalFormatted: `${formatMoney(total)} ${ctx.currency}`,
    originalPriceFormatted: `${formatMoney(p.price)} ${ctx.currency}`,
  });
}

type TreeRow<P> = Static<typeof CategoryRow> & { subcategories: TreeRow<P>[]; products: P[] };

/** A category tree with each product shown by `show`. */
export function treeRows<P>(nodes: CategoryNode[], show: (p: Product) => P): TreeRow<P>[] {
  return nodes.map((n) => ({ ...categoryRow(n), subcategories: treeRows(n.subcategories, show), products: n.products.map(show) }));
}

export function orderRow(o: Order, timeZone: string): OrderRow {
  return {
    id: String(o.id), accountID: String(o.accountId),
    coupon: null, // coupons are not offered (yet); api.md allows null
    total: formatMoney(o.total), discount: formatMoney(o.discount), subtotal: formatMoney(o.subtotal),
    earnings: formatMoney(o.earnings), cashback: formatMoney(o.cashback), credit: formatMoney(o.credit),
    type: o.type, status: o.status, paymentAPI: o.paymentApi, paymentID: o.paymentId ?? '',
    creationDate: displayTimestamp(o.creationDate, timeZone),
  };
}
