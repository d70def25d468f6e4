import { defineEntity, p } from '../../core/table.ts';

/** Money columns hold integer cents; times are UTC text `YYYY-MM-DD HH:MM:SS` (core/format.ts). */

export const StoreCategory = defineEntity({
  name: 'StoreCategory',
  tableName: 'store_categories',
  properties: {
    id: p.integer().primary().autoincrement(),
    /** 0 for a top-level category. */
    parentId: p.integer().index(),
    name: p.string().length(128),
    slug: p.string().length(128),
    imageId: p.string().length(64),
    imageType: p.string().length(16),
    priority: p.integer(),
    gameStatus: p.boolean(),
    gameTitle: p.string().length(255),
    gameDescription: p.text(),
    gameItem: p.string().length(128),
    isActive: p.boolean(),
  },
});

export const StoreProduct = defineEntity({
  name: 'StoreProduct',
  tableName: 'store_products',
  properties: {
    id: p.integer().primary().autoincrement(),
    categoryId: p.integer().index(),
    /** 0 = no role. */
    giveRoleId: p.integer(),
    name: p.string().length(128),
    imageId: p.string().length(64),
    imageType: p.string().length(16),
    details: p.text(),
    price: p.integer(),
    /** Applies when above 0 and discountExpiryDate is in the future or the PERMANENT sentinel. */
    discountedPrice: p.integer(),
    discountExpiryDate: p.string().length(19),
    /** Days the role is granted for: 0 = permanent, -1 = grant no role. */
    duration: p.integer(),
    /** -1 = unlimited. */
    stock: p.integer(),
    priority: p.integer(),
    isFeatured: p.boolean(),
    gameStatus: p.boolean(),
    gameTitle: p.string().length(255),
    gameDescription: p.text(),
    gameItem: p.string().length(128),
    isActive: p.boolean(),
    creationDate: p.string().length(19),
  },
});

export const StoreProductVariable = defineEntity({
  name: 'StoreProductVariable',
  tableName: 'store_product_variables',
  uniques: [{ properties: ['productId', 'name'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    productId: p.integer(),
    name: p.string().length(64),
    required: p.boolean(),
    /** JSON array of the allowed values; empty = any non-empty text. */
    allowedValues: p.text(),
    /** Order in which the admin declared the variables. */
    position: p.integer(),
  },
});

export const StoreOrder = defineEntity({
  name: 'StoreOrder',
  tableName: 'store_orders',
  // A payment gateway's id is recorded once: a retried webhook cannot credit twice.
  // Purchases from the balance have no payment id (NULL never collides).
  uniques: [{ properties: ['paymentApi', 'paymentId'] }],
  // The console's order list filtered by status or type, newest first: a page of refunds reads
  // its fifty rows, not every order since the last refund.
  indexes: [{ properties: ['status', 'id'] }, { properties: ['type', 'id'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    accountId: p.integer().index(),
    /** `credit` (paid from the balance) or `payment` (real money). */
    type: p.string().length(16).$type<'credit' | 'payment'>(),
    status: p.string().length(16),
    subtotal: p.bigint('number'),
    discount: p.bigint('number'),
    total: p.bigint('number'),
    /** Money received (payments). */
    earnings: p.bigint('number'),
    cashback: p.bigint('number'),
    /** Credits the order added to the balance. */
    credit: p.bigint('number'),
    currency: p.string().length(3),
    paymentApi: p.string().length(64),
    paymentId: p.string().length(128).nullable(),
    /** Paid at a test gateway (site setting testMode): no money moved; left out of revenue and the donation boards, cleared on request. */
    test: p.boolean().default(false),
    /** A guest's purchase (account 0): the in-game name typed at checkout, and its lower-cased form an account registered later with that name finds it by. */
    guestName: p.string().length(16).nullable(),
    guestKey: p.string().length(16).nullable().index(),
    /** A guest's email for the receipt, when one was typed (staff find the order by it). */
    guestEmail: p.string().length(191).nullable(),
    /** Indexed: the dashboard's sales of the day and month scan only the orders since then. */
    creationDate: p.string().length(19).index(),
  },
});

export const StoreOrderItem = defineEntity({
  name: 'StoreOrderItem',
  tableName: 'store_order_items',
  properties: {
    id: p.integer().primary().autoincrement(),
    orderId: p.integer().index(),
    /** No foreign key: a product may be deleted later, the order keeps what was bought. */
    productId: p.integer(),
    productName: p.string().length(128),
    quantity: p.integer(),
    /** Price per unit before and after the discount, in cents. */
    unitPrice: p.integer(),
    unitTotal: p.integer(),
    /** JSON object of the variables chosen. */
    variables: p.text(),
  },
});

/** What a buy participant's code took off an order (a coupon, a gift card), as the order records it. */
export const StoreOrderAdjustment = defineEntity({
  name: 'StoreOrderAdjustment',
  tableName: 'store_order_adjustments',
  properties: {
    id: p.integer().primary().autoincrement(),
    orderId: p.integer().index(),
    kind: p.string().length(32),
    code: p.string().length(64),
    amount: p.bigint('number'),
    /** A gift card pays part of the price; a coupon lowers it (the order's discount). */
    paid: p.boolean(),
  },
});

/** Purchase rules (DbCatalogue.rulesOf and setRules); a product without a row has none. */
export const StoreProductRule = defineEntity({
  name: 'StoreProductRule',
  tableName: 'store_product_rules',
  properties: {
    productId: p.integer().primary().autoincrement(false),
    /** 0 = none. */
    requiredProductId: p.integer(),
    requireLinkedAccount: p.boolean(),
    preventDowngrade: p.boolean(),
  },
});

export const entities = [StoreCategory, StoreProduct, StoreProductVariable, StoreOrder, StoreOrderItem, StoreProductRule, StoreOrderAdjustment];
