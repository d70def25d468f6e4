/**
 * The store feature's contract: its three parts, each with its interface and ref so a peer depends on
 * the part it uses (the catalogue, the checkout and its participants, the orders), the types they
 * serve, and the store's events and settings.
 */
import { Type } from '@sinclair/typebox';
import type { SettingValues, SiteSetting } from '../../core/config.ts';
import { createServiceRef } from '../../core/registry.ts';
import { PERMANENT } from '../../core/format.ts';
import { dateStr, moneyStr, str, strOrNull } from '../../core/schemas.ts';
import type { TableRecord } from '../../core/table.ts';
import type { StoreCategory, StoreProduct, StoreProductRule } from './entities.ts';

/** An order as the API shows it (money already formatted `"12.50"`, time in the site's zone). */
export const OrderRow = Type.Object({
  id: str(undefined, '310'),
  accountID: str(undefined, '7'),
  coupon: strOrNull('the coupon code used, if any', null),
  total: moneyStr('decimal: what was paid'),
  discount: str('decimal', '0.00'),
  subtotal: moneyStr(),
  earnings: str('decimal: real money received', '0.00'),
  cashback: str('decimal', '0.25'),
  credit: str('decimal: credits given', '0.25'),
  type: str('credit (paid from the balance) or payment (real money)', 'credit'),
  status: str('completed or refunded', 'completed'),
  paymentAPI: str('credits, or the gateway of a payment', 'credits'),
  paymentID: str('empty for credit orders', ''),
  test: Type.Boolean({ description: 'paid at the test gateway (test mode): no money moved', examples: [false] }),
  guestName: strOrNull("a guest's order (accountID 0): the in-game name typed at checkout", null),
  creationDate: dateStr(),
});
export type OrderRow = typeof OrderRow.static;

/** An order in staff's search: with the email a guest typed for the receipt. */
export const AdminOrderRow = Type.Object({ ...OrderRow.properties, guestEmail: strOrNull("a guest's email for the receipt", null) });
export type AdminOrderRow = typeof AdminOrderRow.static;

export type Category = TableRecord<typeof StoreCategory>;

/** A value the buyer supplies with a product, e.g. the game server to deliver on. */
export interface Variable {
  name: string;
  required: boolean;
  /** The allowed values; empty = any non-empty text. */
  values: string[];
}

export type Product = TableRecord<typeof StoreProduct> & { variables: Variable[] };

/** The price a buyer pays now: the discount counts while it is set and has not expired. */
export function effectivePrice(p: Pick<Product, 'price' | 'discountedPrice' | 'discountExpiryDate'>, at: string): number {
  const live = p.discountedPrice > 0 && (p.discountExpiryDate === PERMANENT || p.discountExpiryDate > at);
  return live ? p.discountedPrice : p.price;
}

/**
 * The categories on show, by id: those active with every category above them active too (they
 * nest to any depth), so a hidden category hides its whole branch. A category without `isActive`
 * counts as active (a list of active ones already). With the product's own `isActive`, this is the
 * one rule of what is for sale: the listing, the storefront, the basket and every checkout apply it.
 */
export function judgeCategories<C extends { id: number; parentId: number; isActive?: boolean }>(categories: readonly C[]): ReadonlyMap<number, C> {
  const byId = new Map<number, C>();
  for (const c of categories) byId.set(c.id, c);
  const decided = new Map<number, boolean>();
  // Up to the top, a hidden or missing category, or one decided before; deeper than the list is long
  // is a loop (the API refuses one), which hides its members.
  const judge = (category: C, depth: number): boolean => {
    const judged = decided.get(category.id);
    if (judged !== undefined) return judged;
    if (depth > categories.length) return false;
    let visible = category.isActive !== false;
    if (visible && category.parentId !== 0) {
      const parent = byId.get(category.parentId);
      visible = parent !== undefined && judge(parent, depth + 1);
    }
    decided.set(category.id, visible);
    return visible;
  };
  const shown = new Map<number, C>();
  for (const c of categories) if (judge(c, 0)) shown.set(c.id, c);
  return shown;
}

/**
 * judgeCategories of a page's own categories read, judged once however often asked: by the product
 * read beside it (shownProducts) and by the page itself. A list read from the database is not changed
 * after. A read judged once (a buy's, the listing's) calls judgeCategories and keeps nothing.
 */
export function shownCategoryMap<C extends { id: number; parentId: number; isActive?: boolean }>(categories: readonly C[]): ReadonlyMap<number, C> {
  let shown = shownOf.get(categories) as ReadonlyMap<number, C> | undefined;
  if (!shown) shownOf.set(categories, (shown = judgeCategories(categories)));
  return shown;
}

const shownOf = new WeakMap<readonly object[], ReadonlyMap<number, unknown>>();

/** What a page of the catalogue shows of a category. */
export type ShownCategory = Pick<Category, 'id' | 'parentId' | 'name' | 'slug' | 'gameDescription'>;

/** What a page of the catalogue shows of a product: its card, its page and its price. */
export type ShownProduct = Pick<
  Product,
  'id' | 'categoryId' | 'name' | 'imageId' | 'imageType' | 'details' | 'price' | 'discountedPrice' | 'discountExpiryDate' | 'stock' | 'variables'
>;

export interface CategoryNode extends Category {
  subcategories: CategoryNode[];
  products: Product[];
}

/**
 * A product's purchase rules, one row per product that has any: a product bought before, a linked
 * chat account, no rank downgrade within a category.
 */
export type PurchaseRules = Omit<TableRecord<typeof StoreProductRule>, 'productId'>;

export interface BuyLine {
  productId: number;
  quantity: number;
  variables: { name: string; value: string }[];
}

export interface BuyResult {
  orderId: number;
  /** Balance after the purchase and its cashback, in cents. */
  balance: number;
  lines: BuyLine[];
  subtotal: number;
  discount: number;
  total: number;
  cashback: number;
}

/** A line of a buy as the client asked for it, before the catalogue is consulted: the product id as sent, quantity checked. */
export interface RequestedLine {
  productId: number;
  /** As the client sent it, for the error message. */
  sentId: string;
  quantity: number;
  /** A map, not an object: a variable may be called `__proto__` and still be judged like any other name. */
  variables: Map<string, string>;
}

/** Who pays a direct purchase: an account, or a guest known only by the in-game name the commands run for. */
export type PurchaseBuyer = { userId: number } | { guestName: string; guestEmail?: string };

/** A line of a direct purchase with the prices offered, in cents a unit: before (`unitPrice`) and after (`unitTotal`) the discount. */
export interface PricedLine extends OrderItemEvent {
  unitPrice: number;
  unitTotal: number;
}

export interface Quote {
  lines: PricedLine[];
  subtotal: number;
  /** What is to be paid: the lines after their sale and discount, less the adjustments. */
  total: number;
  /** What the buyer's codes took off (a coupon, a gift card), in the order they apply. */
  adjustments: Adjustment[];
  /** The site currency. */
  currency: string;
}

/** Who sends codes, for a participant's limit on guessing them (plugins.promotions.wrongCodes). */
export interface CodeSender {
  /** The client's address as this server sees it. */
  address: string;
  /** Sent through the API: the address is the API client's (a game server, a web front end), which many players share. */
  api?: boolean;
  /** A guest's browser session (the storefront's): what a guest's codes count against besides the address. */
  session?: string;
}

/** Codes a buyer sends with a buy (`coupon`, `giftCard`), for the buy's participants to judge. */
export interface PromotionCodes {
  coupon?: string;
  giftCard?: string;
  /** Who sent them: every client's codes carry it; the server's own (none today) are not counted. */
  sender?: CodeSender;
}

/** The codes' fields of a buy's body (the store's buy, the payments feature's purchase). */
export const promotionCodes = {
  coupon: Type.Optional(Type.String({ maxLength: 64, description: 'a coupon code (case-insensitive)' })),
  giftCard: Type.Optional(Type.String({ maxLength: 64, description: 'a gift card code: its balance pays what it covers' })),
};

/** What a product's price is judged on: its list price, its own discount, and where it sits. */
export type PricedProduct = Pick<Product, 'id' | 'categoryId' | 'price' | 'discountedPrice' | 'discountExpiryDate'>;

/** A line of a basket as a buy's participant sees it; cents a unit. */
export interface PricingLine {
  productId: number;
  categoryId: number;
  quantity: number;
  /** The list price. */
  unitPrice: number;
  /** The product's own price now (its discount while it runs). */
  ownPrice: number;
  /** What a unit costs now: the lower of its own price and a participant's sale price. */
  unitTotal: number;
}

/** A basket at checkout, as the buy's participants see it. */
export interface Checkout {
  /** The buyer's account; 0 for a guest. */
  userId: number;
  username: string;
  lines: PricingLine[];
  /** What the lines cost at their unit totals, before any adjustment. */
  total: number;
  codes: PromotionCodes;
}

/** What a code took off a basket, recorded on the order (`store_order_adjustments`). */
export interface Adjustment {
  /** `coupon`, `gift-card`: the order's `coupon` field shows the code of the `coupon` one. */
  kind: string;
  code: string;
  /** Cents taken off, above 0. */
  amount: number;
  /** It pays part of the price (a gift card) rather than lowering it: not counted in the order's `discount`. */
  paid: boolean;
}

/**
 * A peer taking part in every buy (the promotions feature; a subscriptions feature would join the
 * same way), registered with `addParticipant` on the checkout. This is the one door a peer enters a
 * buy by: it prices (`salePrice`, `price`, within `judging`) and then, inside the order's
 * transaction, commits what the order used or bought (`take`). Refunds reach it through
 * `store.order.refunded` (inside the refund's transaction).
 */
export interface BuyParticipant {
  /**
   * A product's sale price at `at`, or undefined when no sale covers it. Asked for every product a
   * listing or a buy shows, synchronously: answer from memory. The lower of it and the product's own
   * price is what the product costs.
   */
  salePrice(p: PricedProduct, at: string): number | undefined;
  /**
   * What the buyer's codes take off the basket (`checkout.total` is what remains after the participants
   * before this one), without writing: a code that does not apply is its DomainError. Asked only when
   * the buyer sent a code.
   */
  price(checkout: Checkout): Promise<Adjustment[]>;
  /**
   * Inside every order's transaction, once the order, its lines, its payment and its listeners'
   * work are written (with no adjustment too), before the stock: takes for good what `price`
   * offered (a coupon's use, a gift card's amount) and what the lines bought that is the
   * participant's to hand out (a gift card, a sale's figures), decided by the database; a
   * DomainError (used up, spent meanwhile) rolls the order back. Rows every buyer shares go last:
   * on MySQL they stay locked until the commit.
   */
  take(checkout: Checkout, orderId: number, adjustments: Adjustment[]): Promise<void>;
  /**
   * Around a buy or a quote that judges codes sent by a client, outside any transaction (a rollback
   * would undo what it writes): a participant limiting guesses counts the attempt, and refuses it
   * (RATE_LIMITED) while its sender is over the limit.
   */
  judging?<T>(codes: PromotionCodes, buyer: PurchaseBuyer, fn: () => Promise<T>): Promise<T>;
}

/** The catalogue as peers read it (`catalogueRef`): categories, products for sale, purchase rules. */
export interface StoreCatalogue {
  /**
   * Categories nested to any depth with their products, ordered by priority then id. `activeOnly`
   * hides inactive categories (with all they contain) and inactive products; `rootId` returns that
   * category's subtree (CATEGORY_NOT_FOUND when it is not there).
   */
  tree(opts: { activeOnly: boolean; rootId?: number }): Promise<CategoryNode[]>;
  /** Every category, ordered by priority then id; `activeOnly` leaves out inactive ones (not their children: see tree). */
  categories(activeOnly: boolean): Promise<Category[]>;
  /** The active categories with what a page shows of them, ordered by priority then id (not their children: see tree). */
  shownCategories(): Promise<ShownCategory[]>;
  /**
   * Products for sale (active, and so is their category and every category above it: the rule the
   * buy, the quote and the paid completion apply too) of some categories, of some ids, or the
   * featured ones, with what a page shows of them and their variables, ordered by priority then
   * id: only those columns are read. `categories`: the page's own shownCategories read, which then
   * decides what is on show, so a page reads the categories once, not twice.
   */
  shownProducts(
    filter: { categoryIds?: number[]; ids?: number[]; featuredOnly?: boolean },
    categories?: readonly ShownCategory[] | Promise<readonly ShownCategory[]>,
  ): Promise<ShownProduct[]>;
  /** The purchase rules of products that have any, by product id: one read. */
  rulesFor(productIds: number[]): Promise<Map<number, PurchaseRules>>;
  /** Products by id, with their variables; `onSaleOnly` leaves out those not for sale (see shownProducts). */
  productsById(ids: number[], onSaleOnly: boolean): Promise<Map<number, Product>>;
  /** A product's purchase rules; PRODUCT_NOT_FOUND when there is no such product. */
  rulesOf(productId: number): Promise<PurchaseRules>;
  /** A product's name, active or not; undefined when there is no such product. */
  productName(productId: number): Promise<string | undefined>;
  /** Makes a category (tools such as imports; admins use the routes); the slug comes from the name unless given. CATEGORY_NOT_FOUND for a missing parent. */
  createCategory(input: Partial<Omit<Category, 'id'>> & { name: string }): Promise<Category>;
  /** Makes a product; the catalogue's own checks answer VALIDATION_ERROR or CATEGORY_NOT_FOUND. */
  createProduct(input: Partial<Omit<Product, 'id' | 'creationDate'>> & Pick<Product, 'categoryId' | 'name' | 'price'>): Promise<Product>;
}

/** Prices and the two buys (`checkoutRef`): what a basket costs, and the order it becomes. */
export interface StoreCheckout {
  /**
   * The buy paid from the balance, as `POST /api/store/buy` runs it (its rules, stock, roles, delivery,
   * the codes' adjustments), in one transaction.
   */
  buy(userId: number, requested: RequestedLine[], keyName?: string, codes?: PromotionCodes): Promise<BuyResult>;
  /**
   * The buy's checks without buying (products for sale, variables, stock as read, the purchase
   * rules; a guest may not buy what needs an account: ACCOUNT_REQUIRED) and the prices now, the
   * codes' adjustments taken off.
   */
  quote(buyer: PurchaseBuyer, requested: RequestedLine[], codes?: PromotionCodes): Promise<Quote>;
  /**
   * A buy paid with real money at the prices offered, in the caller's transaction: the buy's checks,
   * roles, `store.order.completed` (delivery) and stock, no balance moved; an order of type
   * `payment` recording the gateway's payment (CONFLICT when it is recorded already). The quote's
   * adjustments are taken for good (a coupon used up meanwhile refuses). A refusal (stock, rules, a
   * product gone or off sale, its category hidden, a promotion) is its DomainError.
   */
  buyPaid(
    buyer: PurchaseBuyer,
    offered: PricedLine[],
    /** `test`: paid at a test gateway, so a test order (no money moved). */
    payment: { paymentApi: string; paymentId: string; currency: string; test?: boolean },
    adjustments?: Adjustment[],
  ): Promise<{ orderId: number }>;
  /** Adds a peer to every buy: sale prices in listings and buys, codes at checkout, its part of each order (see BuyParticipant). */
  addParticipant(participant: BuyParticipant): void;
  /** What a unit of the product costs at `at`: the lower of its own price and the participants' sale prices. */
  unitPrice(p: PricedProduct, at: string): number;
}

/** Orders once placed (`ordersRef`): listing, refunds, real-money payments recorded, figures. */
export interface StoreOrders {
  /** Real money received (completed `payment` orders' earnings) from `from` to before `to`, stored UTC times, in cents. */
  revenueBetween(from: string, to: string): Promise<number>;
  /** Deletes every test order (paid at a test gateway) with its lines and codes' adjustments, in the caller's transaction; how many. */
  clearTestOrders(): Promise<number>;
  /** One order, what was bought and what codes took off; ORDER_NOT_FOUND when there is none. */
  getOrder(orderId: number): Promise<{ order: OrderRow; items: OrderItemEvent[]; adjustments: Adjustment[] }>;
  /** A user's orders, newest first, with the guest orders placed under the username before the account existed. */
  ordersOf(userId: number): Promise<OrderRow[]>;
  /**
   * Records a real-money payment as `POST /api/admin/payments` does, in the caller's transaction:
   * a `payment` order, its credits (ledger reason `payment`) and `store.order.completed` (the
   * donation entry). Amounts in cents. CONFLICT when paymentApi + paymentId is recorded already.
   */
  recordPayment(payment: PaymentOrderInput): Promise<OrderRow>;
  /**
   * A completed `payment` order becomes `refunded`; a direct purchase's lines are undone (stock,
   * roles, `store.order.refunded`: its refund commands). False when there is no such order.
   */
  markPaymentRefunded(orderId: number): Promise<boolean>;
  /**
   * Refunds a purchase paid from the balance as `POST /api/admin/store/orders/<id>/refund` does:
   * ORDER_NOT_FOUND, CONFLICT when it is not completed.
   */
  refund(orderId: number, keyName?: string): Promise<OrderRow>;
  /** The ids of a user's completed balance purchases made after order `afterOrderId`, oldest first. */
  creditOrdersAfter(userId: number, afterOrderId: number): Promise<number[]>;
  /**
   * The user's latest completed balance purchase of a product that grants `roleId`, with only
   * those lines: what a role's expiry undoes.
   */
  lastPurchaseGranting(userId: number, roleId: number): Promise<{ orderId: number; items: OrderItemEvent[] } | undefined>;
  /**
   * An order another store took, brought by an import (the imports feature): a `payment` order at
   * its own date with its lines, so the buyer's history, the purchase rules and the boards count it.
   * Nothing is delivered, mailed or credited: `store.order.imported` (the boards' entry) is emitted
   * instead of `store.order.completed`, only for a completed `payment` one. CONFLICT when paymentApi +
   * paymentId is recorded already; joins the caller's transaction.
   */
  importOrder(order: ImportedOrderInput): Promise<{ orderId: number }>;
}

/** An order of another store, in cents, for importOrder. */
export interface ImportedOrderInput {
  userId: number;
  /** `payment` (real money: the boards count it, the default) or `credit` (paid from a balance there: history only). */
  type?: 'credit' | 'payment';
  /** What was paid, in cents. */
  total: number;
  /** Empty for the site's currency. */
  currency: string;
  /** The store it came from, e.g. `tebex`, and its id of the payment there. */
  paymentApi: string;
  paymentId: string;
  /** Stored UTC timestamp of the payment there. */
  creationDate: string;
  /** Refunded or charged back there: kept in the history, left off the boards. */
  refunded: boolean;
  /** Its lines: a product brought by the same import, or id 0 when it was not; unitPrice in cents. */
  items: { productId: number; productName: string; quantity: number; unitPrice: number }[];
}

/** The whole store, the three parts in one (`storeRef`): a peer should ask for the part it uses instead. */
export type StoreService = StoreCatalogue & StoreCheckout & StoreOrders;

/** A real-money payment with its values checked, in cents. */
export interface PaymentOrderInput {
  username: string;
  amount: number;
  /** Credits added to the balance. */
  credit: number;
  currency: string;
  /** The gateway (`manual` when an admin records it). */
  paymentApi: string;
  /** The gateway's id of the payment; null when there is none. */
  paymentId: string | null;
  /** Name of the API key that recorded it, for the ledger. */
  keyName?: string;
}

/** One line of an order as its event carries it. */
export interface OrderItemEvent {
  productId: number;
  productName: string;
  quantity: number;
  /** The variables the buyer chose, by name. */
  variables: Record<string, string>;
}

export const catalogueRef = createServiceRef<StoreCatalogue>('store.catalogue');
export const checkoutRef = createServiceRef<StoreCheckout>('store.checkout');
export const ordersRef = createServiceRef<StoreOrders>('store.orders');
/** The three parts as one service, for plugin packages written before the store was split: prefer the part's own ref. */
export const storeRef = createServiceRef<StoreService>('store');

/** Where the store serves the images uploaded in the console: `<PRODUCT_IMAGE_PATH><imageID>.<imageType>`. */
export const PRODUCT_IMAGE_PATH = '/images/';
/** The types the store keeps, by the imageType it gives them. */
export const PRODUCT_IMAGE_TYPES = { png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif' } as const;

/** The address of a product's image when it is one uploaded to the store (its id the hash of its bytes); undefined otherwise. */
export function storedImage(p: Pick<Product, 'imageId' | 'imageType'>): string | undefined {
  return /^[0-9a-f]{64}$/.test(p.imageId) && Object.hasOwn(PRODUCT_IMAGE_TYPES, p.imageType) ? `${PRODUCT_IMAGE_PATH}${p.imageId}.${p.imageType}` : undefined;
}

declare module '../../core/events.ts' {
  interface EventMap {
    /**
     * Emitted inside the order's transaction (`onCommitting` listeners commit or roll back with it).
     * `type` `credit`: a purchase paid from the balance; `payment`: real money (an admin's record or a gateway's webhook).
     */
    'store.order.completed': {
      orderId: number;
      userId: number;
      /** As registered, at the time of the order. */
      username: string;
      /** The buyer's linked accounts (platform → id) as the order read them, so listeners need not read the user again. */
      linkedAccounts: Record<string, string>;
      type: 'credit' | 'payment';
      /** In cents: the price paid (credit) or the money received (payment). */
      total: number;
      currency: string;
      /** Stored UTC timestamp of the order. */
      creationDate: string;
      /** What was bought (empty for a payment). */
      items: OrderItemEvent[];
      /** Paid at a test gateway: no money moved (receipts, webhooks and boards say so or leave it out). */
      test?: boolean;
      /** A guest's order (user 0): the email typed at checkout for its receipt, or null. */
      guestEmail?: string | null;
    };
    /** An order another store took, brought by an import, completed there (the boards count it; nothing is delivered). Inside its transaction. */
    'store.order.imported': {
      orderId: number;
      userId: number;
      username: string;
      /** In cents. */
      total: number;
      currency: string;
      /** Stored UTC timestamp of the payment there. */
      creationDate: string;
    };
    /**
     * Emitted inside the transaction that deletes the test orders (test mode's "clear"): the
     * features that keep rows of an order forget these orders' rows (queued commands, coupon uses).
     */
    'store.order.cleared': { orderIds: number[] };
    /** Emitted inside the refund's transaction: the order is `refunded` once this commits. */
    'store.order.refunded': {
      orderId: number;
      userId: number;
      username: string;
      linkedAccounts: Record<string, string>;
      items: OrderItemEvent[];
    };
  }
}

/** The store's site settings (its definition declares them). */
export const storeSettings = {
  cashbackPercent: {
    schema: Type.Number({ minimum: 0, maximum: 100, default: 0, examples: [5] }),
    label: 'Cashback (%)',
    hint: 'Credits given back on each purchase, 0 to 100.',
  },
  /** 200 by default, the only success the official game plugin accepts (docs/clients.md); api.md says 201. */
  buyResponseStatus: { schema: Type.Union([Type.Literal(200), Type.Literal(201)], { default: 200 }), label: 'Status of a successful buy' },
} satisfies Record<string, SiteSetting>;

declare module '../../core/config.ts' {
  interface SiteSettings extends SettingValues<typeof storeSettings> {}
}
