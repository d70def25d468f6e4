import { defineEntity, p } from '../../core/table.ts';

/** Money columns hold integer cents; times are UTC text `YYYY-MM-DD HH:MM:SS` (core/format.ts); a null end never ends. */

export const PromotionsCoupon = defineEntity({
  name: 'PromotionsCoupon',
  tableName: 'promotions_coupons',
  properties: {
    id: p.integer().primary().autoincrement(),
    /** As staff typed it; `codeKey` is its lower-cased form, unique: codes are case-insensitive. */
    code: p.string().length(64),
    codeKey: p.string().length(64).unique(),
    /** `percent` (value 1 to 100) or `fixed` (value in cents). */
    kind: p.string().length(16).$type<'percent' | 'fixed'>(),
    value: p.integer(),
    /** The basket must cost at least this (0 = any). */
    minBasket: p.integer(),
    startDate: p.string().length(19).nullable(),
    endDate: p.string().length(19).nullable(),
    /** 0 = unlimited. */
    maxUses: p.integer(),
    perPlayer: p.integer(),
    /** Uses taken: moved only by conditional updates, so the last one is the database's decision. */
    uses: p.integer(),
    /** JSON arrays of ids; empty = every product. */
    productIds: p.text(),
    categoryIds: p.text(),
    /** Off: the coupon leaves the lines a sale already lowers alone. */
    stacksWithSale: p.boolean(),
    isActive: p.boolean(),
    creationDate: p.string().length(19),
  },
});

/** A player's uses of a coupon, by lower-cased name (a guest's name meets the account registered with it later). */
export const PromotionsCouponPlayer = defineEntity({
  name: 'PromotionsCouponPlayer',
  tableName: 'promotions_coupon_players',
  uniques: [{ properties: ['couponId', 'buyerKey'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    couponId: p.integer(),
    buyerKey: p.string().length(64),
    uses: p.integer(),
  },
});

/** Each order a coupon was used on: what it took off and what the order brought. */
export const PromotionsCouponUse = defineEntity({
  name: 'PromotionsCouponUse',
  tableName: 'promotions_coupon_uses',
  properties: {
    id: p.integer().primary().autoincrement(),
    couponId: p.integer().index(),
    orderId: p.integer().index(),
    buyerKey: p.string().length(64),
    amount: p.bigint('number'),
    revenue: p.bigint('number'),
    /** `used`, or `returned` by the order's refund. */
    status: p.string().length(16),
    creationDate: p.string().length(19),
  },
});

export const PromotionsGiftCard = defineEntity({
  name: 'PromotionsGiftCard',
  tableName: 'promotions_gift_cards',
  properties: {
    id: p.integer().primary().autoincrement(),
    code: p.string().length(64),
    codeKey: p.string().length(64).unique(),
    /** Moved only by conditional updates that keep it at 0 or above, each with its ledger row. */
    balance: p.bigint('number'),
    initialAmount: p.bigint('number'),
    isActive: p.boolean(),
    /** The account that bought it (0: issued by staff, or bought by a guest). */
    ownerId: p.integer().index(),
    /** The order that bought it; 0 when staff issued it. */
    orderId: p.integer().index(),
    note: p.string().length(255),
    creationDate: p.string().length(19),
  },
});

/** Every movement of a gift card's balance. */
export const PromotionsGiftCardLedger = defineEntity({
  name: 'PromotionsGiftCardLedger',
  tableName: 'promotions_gift_card_ledger',
  properties: {
    id: p.integer().primary().autoincrement(),
    cardId: p.integer().index(),
    delta: p.bigint('number'),
    /** The balance after the movement. */
    balance: p.bigint('number'),
    /** issue, purchase, spend, refund, redeem, void. */
    reason: p.string().length(16),
    orderId: p.integer().nullable().index(),
    userId: p.integer(),
    creationDate: p.string().length(19),
  },
});

/** A store product that sells a gift card of `amount` per unit. */
export const PromotionsGiftCardProduct = defineEntity({
  name: 'PromotionsGiftCardProduct',
  tableName: 'promotions_gift_card_products',
  properties: {
    productId: p.integer().primary().autoincrement(false),
    amount: p.integer(),
  },
});

export const PromotionsSale = defineEntity({
  name: 'PromotionsSale',
  tableName: 'promotions_sales',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(128),
    /** Off the list price, 1 to 100. */
    percent: p.integer(),
    /** JSON array of category ids; empty = the whole store. */
    categoryIds: p.text(),
    startDate: p.string().length(19),
    endDate: p.string().length(19),
    isActive: p.boolean(),
    creationDate: p.string().length(19),
  },
});

/** What a sale took off each order it lowered, and what the lowered lines brought. */
export const PromotionsSaleUse = defineEntity({
  name: 'PromotionsSaleUse',
  tableName: 'promotions_sale_uses',
  properties: {
    id: p.integer().primary().autoincrement(),
    saleId: p.integer().index(),
    orderId: p.integer().index(),
    amount: p.bigint('number'),
    revenue: p.bigint('number'),
    status: p.string().length(16),
    creationDate: p.string().length(19),
  },
});

export const entities = [
  PromotionsCoupon,
  PromotionsCouponPlayer,
  PromotionsCouponUse,
  PromotionsGiftCard,
  PromotionsGiftCardLedger,
  PromotionsGiftCardProduct,
  PromotionsSale,
  PromotionsSaleUse,
];
