/**
 * The store's HTTP shapes: rows as api.md and decisions.md §2/§5 fix them (every row value a
 * string, money as `"12.50"`, times in the site's zone; the listing's computed fields typed), and
 * request bodies with what they mean to the service.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, flag, formatMoney, MAX_CENTS, moneyNumber, parseClientTimestamp, requireMoney } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import { promotionCodes, type Category, type CategoryNode, type PricedProduct, type Product, type PurchaseRules } from './contract.ts';
import type { CategoryInput, ProductInput } from './catalogue.ts';

const VariableRow = Type.Object({ name: S.example('server'), required: S.flagStr(), values: Type.Array(S.example('eu')) });

export const CategoryRow = S.row({
  id: S.idStr(),
  parentID: S.str('0 for a top-level category', '0'),
  name: S.example('Ranks'),
  slug: S.example('ranks'),
  imageID: S.example('ranks'),
  imageType: S.example('png'),
  priority: S.example('10'),
  gameStatus: S.flagStr(),
  gameTitle: S.example('&6Ranks'),
  gameDescription: S.example('Ranks with kits and perks'),
  gameItem: S.example('DIAMOND'),
  isActive: S.flagStr(),
  // Read by the Kotlin wrapper's models (docs/clients.md); this store has neither feature.
  gameItemModelID: S.str('custom model data of the in-game icon; 0 = none (not offered: always 0)', '0'),
  isCumulative: S.str('flag: upgrade pricing within the category (not offered: always 0)', '0'),
});

const productFields = {
  id: S.idStr(),
  categoryID: S.idStr(),
  giveRoleID: S.str('0 = none', '3'),
  name: S.example('VIP Rank'),
  imageID: S.example('vip'),
  imageType: S.example('png'),
  details: S.str('HTML', '<p>Kits, a coloured name and <b>/fly</b>.</p>'),
  price: S.moneyStr(),
  discountedPrice: S.str('decimal; 0.00 = no discount', '3.99'),
  discountExpiryDate: S.str('timestamp; 1000-01-01 00:00:00 = never expires', '2026-12-31 23:59:59'),
  duration: S.str('days the role is granted: 0 = permanent, -1 = no role', '30'),
  stock: S.str('-1 = unlimited', '-1'),
  priority: S.example('10'),
  isFeaturedProduct: S.flagStr(),
  gameStatus: S.flagStr(),
  gameTitle: S.example('&bVIP Rank'),
  gameDescription: S.example('30 days of VIP'),
  gameItem: S.example('DIAMOND'),
  isActive: S.flagStr(),
  creationDate: S.dateStr(),
  // Read by the Kotlin wrapper's models (docs/clients.md); this store has neither feature.
  gameItemModelID: S.str('custom model data of the in-game icon; 0 = none (not offered: always 0)', '0'),
  requireOnlyOneProduct: S.str('flag (not offered: always 0)', '0'),
  variables: Type.Array(VariableRow, { description: 'values the buyer supplies with this product' }),
};

export const ProductRow = S.row(productFields);

/** How a product's own discount and a running sale combine (docs and the OpenAPI document say it). */
export const PRICE_RULE =
  "the lower of the product's own price (its discountedPrice while it runs) and a running sale's price " +
  "(the sale's percent off its list price); they never stack";

/**
 * A product in the listing: the row plus the computed fields the game plugin reads (typed, not
 * strings). `stock` stays the row's string: the Kotlin wrapper decodes it as one, and the game
 * plugin's `getInt` reads `"-1"` as well as `-1` (docs/clients.md).
 */
export const ListingProduct = Type.Object({
  ...productFields,
  total: Type.Number({ description: `price to pay now: ${PRICE_RULE}`, examples: [3.99] }),
  originalPrice: Type.Number({ examples: [4.99] }),
  discount: Type.Number({ examples: [1] }),
  discountPercent: Type.Integer({ examples: [20] }),
  restricted: Type.Boolean({ description: 'the user named by ?username= cannot usefully buy it (holds its role permanently)' }),
  totalFormatted: Type.String({ examples: ['3.99 USD'] }),
  originalPriceFormatted: Type.String({ examples: ['4.99 USD'] }),
});

/** A category with its subcategories (same shape, any depth) and its products. */
function categoryTree(id: string, product: TSchema) {
  return Type.Recursive(
    (self) =>
      Type.Object({
        ...CategoryRow.properties,
        subcategories: Type.Array(self),
        products: Type.Array(product),
      }),
    { $id: id },
  );
}

export const CategoryTree = categoryTree('StoreCategoryTree', ProductRow);
export const ListingCategory = categoryTree('StoreListingCategory', ListingProduct);

export const BuyResponse = S.ok({
  orderID: S.idStr(),
  credits: S.str('balance after the purchase', '95.01'),
  products: Type.Array(
    Type.Object({
      id: Type.Integer({ examples: [42] }),
      quantity: Type.Integer({ examples: [1] }),
      variables: Type.Array(Type.Object({ name: Type.String({ examples: ['server'] }), value: Type.String({ examples: ['eu'] }) })),
    }),
  ),
  cashback: S.str('credits given back', '0.25'),
  total: S.moneyStr(),
  subtotal: S.moneyStr(),
  discount: S.str('decimal', '0.00'),
  data: Type.Object({ orderID: S.idStr(), credits: Type.Number({ examples: [95.01] }) }),
});

/** Where api.md names the error for a bad value (INVALID_QUANTITY, INVALID_VARIABLE…), the schema stays loose and the service decides. */
export const BuyBody = Type.Object({
  userID: S.integerText(),
  products: Type.Unknown({
    description: 'product ids (`products[]=5`) or objects ' + '(`products[0][id]=5&products[0][quantity]=2&products[0][variables][server]=eu`)',
  }),
  ...promotionCodes,
});

// ---- admin bodies: numbers and flags may arrive as strings from forms (AJV coerces integers).

const int = (minimum: number, maximum = 2_147_483_647) => Type.Integer({ minimum, maximum });
const text = (maxLength: number) => Type.String({ maxLength });
/** A text column holds 64 KiB on MySQL: 16,000 characters fit in any encoding. */
const longText = () => text(16_000);
const money = () => S.decimalText({ description: 'decimal with at most two places' });
/** A timestamp in the site's time zone, or the sentinel `1000-01-01 00:00:00`. */
const timestamp = () => Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$' });

const categoryBody = {
  parentID: int(0),
  name: Type.String({ minLength: 1, maxLength: 128 }),
  slug: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_-]+$' }),
  imageID: text(64),
  imageType: text(16),
  priority: int(-1_000_000, 1_000_000),
  gameStatus: S.boolish(),
  gameTitle: text(255),
  gameDescription: longText(),
  gameItem: text(128),
  isActive: S.boolish(),
};

export const CategoryCreateBody = Type.Object({ ...Type.Partial(Type.Object(categoryBody)).properties, name: categoryBody.name });
export const CategoryPatchBody = Type.Partial(Type.Object(categoryBody));

const VariableBody = Type.Object({
  name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
  required: Type.Optional(S.boolish()),
  // Small enough that the JSON list always fits its text column.
  values: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50 })),
});

const productBody = {
  categoryID: int(1),
  giveRoleID: int(0),
  name: Type.String({ minLength: 1, maxLength: 128 }),
  imageID: text(64),
  imageType: text(16),
  details: longText(),
  price: money(),
  discountedPrice: money(),
  discountExpiryDate: timestamp(),
  duration: int(-1, 36500),
  stock: int(-1),
  priority: int(-1_000_000, 1_000_000),
  isFeaturedProduct: S.boolish(),
  gameStatus: S.boolish(),
  gameTitle: text(255),
  gameDescription: longText(),
  gameItem: text(128),
  isActive: S.boolish(),
  // A form cannot send an empty list: `variables=` (empty) clears them too.
  variables: Type.Union([Type.Array(VariableBody, { maxItems: 20 }), Type.Literal('')]),
};

export const ProductCreateBody = Type.Object({
  ...Type.Partial(Type.Object(productBody)).properties,
  categoryID: productBody.categoryID,
  name: productBody.name,
  price: productBody.price,
});
export const ProductPatchBody = Type.Partial(Type.Object(productBody));

export const ReorderBody = Type.Object({ ids: Type.Array(int(1), { minItems: 1, maxItems: 1000 }) });

/** A recorded payment's amounts stay loose: the service answers INVALID_AMOUNT for a malformed one, as credits do (decisions.md §6). */
const amount = () => S.numeric({ description: 'decimal with at most two places' });
export const PaymentBody = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 64 }),
  amount: amount(),
  currency: Type.Optional(Type.String({ pattern: '^[A-Za-z]{3}$' })),
  paymentAPI: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  paymentID: Type.Optional(Type.String({ maxLength: 128 })),
  credit: Type.Optional(amount()),
});

/** A path id kept loose: an id that is not a number is simply not found (PRODUCT_NOT_FOUND, not a validation error). */
export const IdParam = Type.Object({ id: Type.String({ maxLength: 32 }) });
export const ListingQuery = Type.Object({ username: Type.Optional(Type.String({ maxLength: 64 })) });

export const RulesRow = Type.Object({
  requiredProductID: S.str('a product the buyer must have bought before; 0 = none', '0'),
  requireLinkedAccount: Type.Boolean({ description: 'the buyer needs a linked chat account' }),
  preventDowngrade: Type.Boolean({ description: 'refused while the buyer holds a higher-priority role of a product of the same category' }),
});
export const RulesPatchBody = Type.Partial(
  Type.Object({
    requiredProductID: int(0),
    requireLinkedAccount: S.boolish(),
    preventDowngrade: S.boolish(),
  }),
);

// ---- rows as the API shows them

export function categoryRow(c: Category): Static<typeof CategoryRow> {
  return {
    id: String(c.id),
    parentID: String(c.parentId),
    name: c.name,
    slug: c.slug,
    imageID: c.imageId,
    imageType: c.imageType,
    priority: String(c.priority),
    gameStatus: flag(c.gameStatus),
    gameTitle: c.gameTitle,
    gameDescription: c.gameDescription,
    gameItem: c.gameItem,
    isActive: flag(c.isActive),
    gameItemModelID: '0',
    isCumulative: '0',
  };
}

/** A product as the API shows it. */
export const productRow = (p: Product, timeZone: string): Static<typeof ProductRow> => productAnswer(p, timeZone, NOT_LISTED);

export interface ListingContext {
  timeZone: string;
  currency: string;
  /** Stored UTC timestamp the discounts are judged at. */
  at: string;
  /** What a unit costs at `at` (StoreService.unitPrice: its own discount or a sale). */
  unitPrice: (p: PricedProduct, at: string) => number;
  /** Roles the asking user holds permanently: buying their products again would change nothing. */
  permanentRoles: ReadonlySet<number>;
}

/** What the in-game listing adds to a product's row: what it costs now, and for whom. */
export type Listed = Omit<Static<typeof ListingProduct>, keyof Static<typeof ProductRow>>;

/** A product's listing fields: its price now and whether the asking user may usefully buy it. */
export function listedFields(p: Product, ctx: ListingContext): Listed {
  const total = ctx.unitPrice(p, ctx.at);
  const discount = p.price - total;
  return {
    total: moneyNumber(total),
    originalPrice: moneyNumber(p.price),
    discount: moneyNumber(discount),
    discountPercent: p.price > 0 ? Math.round((discount * 100) / p.price) : 0,
    restricted: p.giveRoleId > 0 && p.duration >= 0 && ctx.permanentRoles.has(p.giveRoleId),
    totalFormatted: `${formatMoney(total)} ${ctx.currency}`,
    originalPriceFormatted: `${formatMoney(p.price)} ${ctx.currency}`,
  };
}

/** A product as the in-game listing shows it: its row and its listing fields. */
export const listingProduct = (p: Product, timeZone: string, listed: Listed): Static<typeof ListingProduct> => productAnswer(p, timeZone, listed);

/** A row outside the listing: these fields undefined, which no answer of a row writes. */
const NOT_LISTED: { [K in keyof Listed]: undefined } = {
  total: undefined,
  originalPrice: undefined,
  discount: undefined,
  discountPercent: undefined,
  restricted: undefined,
  totalFormatted: undefined,
  originalPriceFormatted: undefined,
};

/**
 * The row and the listing's fields in one object made whole: a listing shows a thousand products,
 * and rows given the listing's fields afterwards (or copied) cost it more to make and to serialise.
 */
function productAnswer(p: Product, timeZone: string, listed: Listed): Static<typeof ListingProduct>;
function productAnswer(p: Product, timeZone: string, listed: typeof NOT_LISTED): Static<typeof ProductRow>;
function productAnswer(p: Product, timeZone: string, listed: Listed | typeof NOT_LISTED): Static<typeof ProductRow> & Partial<Listed> {
  return {
    id: String(p.id),
    categoryID: String(p.categoryId),
    giveRoleID: String(p.giveRoleId),
    name: p.name,
    imageID: p.imageId,
    imageType: p.imageType,
    details: p.details,
    price: formatMoney(p.price),
    discountedPrice: formatMoney(p.discountedPrice),
    discountExpiryDate: displayTimestamp(p.discountExpiryDate, timeZone),
    duration: String(p.duration),
    stock: String(p.stock),
    priority: String(p.priority),
    isFeaturedProduct: flag(p.isFeatured),
    gameStatus: flag(p.gameStatus),
    gameTitle: p.gameTitle,
    gameDescription: p.gameDescription,
    gameItem: p.gameItem,
    isActive: flag(p.isActive),
    creationDate: displayTimestamp(p.creationDate, timeZone),
    gameItemModelID: '0',
    requireOnlyOneProduct: '0',
    variables: p.variables.map((v) => ({ name: v.name, required: flag(v.required), values: v.values })),
    total: listed.total,
    originalPrice: listed.originalPrice,
    discount: listed.discount,
    discountPercent: listed.discountPercent,
    restricted: listed.restricted,
    totalFormatted: listed.totalFormatted,
    originalPriceFormatted: listed.originalPriceFormatted,
  };
}

type TreeRow<P> = Static<typeof CategoryRow> & { subcategories: TreeRow<P>[]; products: P[] };

/** A category tree with each product shown by `show`. */
export function treeRows<P>(nodes: CategoryNode[], show: (p: Product) => P): TreeRow<P>[] {
  return nodes.map((n) => ({ ...categoryRow(n), subcategories: treeRows(n.subcategories, show), products: n.products.map(show) }));
}

// ---- admin bodies as the service takes them

export const rulesRow = (r: PurchaseRules): Static<typeof RulesRow> => ({
  requiredProductID: String(r.requiredProductId),
  requireLinkedAccount: r.requireLinkedAccount,
  preventDowngrade: r.preventDowngrade,
});

type CategoryBody = Static<typeof CategoryPatchBody>;
type ProductBody = Static<typeof ProductPatchBody>;

export const optionalBool = (v: unknown) => (v === undefined ? undefined : S.toBool(v));

export function categoryInput(b: CategoryBody): CategoryInput {
  return {
    parentId: b.parentID,
    name: b.name,
    slug: b.slug,
    imageId: b.imageID,
    imageType: b.imageType,
    priority: b.priority,
    gameStatus: optionalBool(b.gameStatus),
    gameTitle: b.gameTitle,
    gameDescription: b.gameDescription,
    gameItem: b.gameItem,
    isActive: optionalBool(b.isActive),
  };
}

function price(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  const cents = requireMoney(value, 'VALIDATION_ERROR', field);
  if (cents > MAX_CENTS) throw new DomainError('VALIDATION_ERROR', `${field} must be at most ${MAX_CENTS / 100}`);
  return cents;
}

export function productInput(b: ProductBody, timeZone: string): ProductInput {
  let discountExpiryDate: string | undefined;
  if (b.discountExpiryDate !== undefined) {
    discountExpiryDate = parseClientTimestamp(b.discountExpiryDate, timeZone);
    if (!discountExpiryDate) throw new DomainError('VALIDATION_ERROR', 'discountExpiryDate must be a date YYYY-MM-DD HH:MM:SS');
  }
  return {
    categoryId: b.categoryID,
    giveRoleId: b.giveRoleID,
    name: b.name,
    imageId: b.imageID,
    imageType: b.imageType,
    details: b.details,
    price: price(b.price, 'price'),
    discountedPrice: price(b.discountedPrice, 'discountedPrice'),
    discountExpiryDate,
    duration: b.duration,
    stock: b.stock,
    priority: b.priority,
    isFeatured: optionalBool(b.isFeaturedProduct),
    gameStatus: optionalBool(b.gameStatus),
    gameTitle: b.gameTitle,
    gameDescription: b.gameDescription,
    gameItem: b.gameItem,
    isActive: optionalBool(b.isActive),
    variables:
      b.variables === undefined
        ? undefined
        : b.variables === ''
          ? []
          : b.variables.map((v) => ({ name: v.name, required: S.toBool(v.required), values: v.values ?? [] })),
  };
}

/** A path id: anything that is not a plain number names nothing (a not-found error, not a validation error). */
export function pathId(id: string): number {
  return /^[0-9]{1,15}$/.test(id) ? Number(id) : 0;
}

/** The answer of a change with nothing else to say. */
export const done = { status: true as const };
