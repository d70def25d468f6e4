/**
 * The store: the catalogue (nested categories, products and their variables), the purchase rules
 * of each product, and the orders: a purchase paid from the credit balance (the buy), a real-money
 * payment (recorded by an admin or by the payments feature), and a user's order history. Plain
 * data in, money in cents and times as stored UTC text; orders come out as the API shows them.
 * Each write is one transaction: it happens entirely or not at all.
 */
import type { AuditLog } from '../../core/audit.ts';
import { countParam, isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { PERMANENT, addSeconds, displayTimestamp, formatMoney, hasControlCharacter, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { sql, where, type Sql } from '../../core/sql.ts';
import { joined, type TableRecord } from '../../core/table.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { UserAccount, UsersService } from '../users/contract.ts';
import type {
  Adjustment, BuyLine, BuyResult, Category, CategoryNode, Checkout, OrderItemEvent, OrderRow, PaymentOrderInput, PriceAdjuster, PricedLine, PricedProduct,
  Product, PromotionCodes, PurchaseBuyer, PurchaseRules, Quote, RequestedLine, ShownCategory, ShownProduct, StoreService, Variable,
} from './contract.ts';
import { effectivePrice, shownCategoryMap } from './contract.ts';
import { StoreCategory, StoreOrder, StoreOrderAdjustment, StoreOrderItem, StoreProduct, StoreProductRule, StoreProductVariable } from './entities.ts';

export type CategoryInput = Partial<Omit<Category, 'id'>>;
export type ProductInput = Partial<Omit<Product, 'id' | 'creationDate'>>;

/** Largest price in cents: the column is a signed 32-bit integer. */
export const MAX_PRICE = 2_147_483_647;

const C = StoreCategory.c;
const P = StoreProduct.c;
const V = StoreProductVariable.c;
const O = StoreOrder.c;
const I = StoreOrderItem.c;
const A = StoreOrderAdjustment.c;

/** Priority first, then age: the order of every list (decisions.md §5). */
const CATEGORY_ORDER = sql`order by ${C.priority}, ${C.id}`;
const PRODUCT_ORDER = sql`order by ${P.priority}, ${P.id}`;
const p = StoreProduct.as('p');
const r = StoreProductRule.as('r');
const o = StoreOrder.as('o');
const oi = StoreOrderItem.as('oi');
/** A product for sale with its purchase rules, by a left join: undefined rules where it has none. */
const FOR_SALE = joined({ product: p, rules: r.optional() });
/** What decides whether a category is on show (shownCategoryMap). */
const CATEGORY_FLAGS = StoreCategory.pick('id', 'parentId', 'isActive');
const ACTIVE_PRODUCT = sql`${P.isActive} = 1`;
const VARIABLE = StoreProductVariable.pick('productId', 'name', 'required', 'allowedValues');
/** The columns a page of the catalogue shows (the storefront's): its pages read no others. */
const SHOWN_CATEGORY = StoreCategory.pick('id', 'parentId', 'name', 'gameDescription');
const SHOWN_PRODUCT = StoreProduct.pick('id', 'categoryId', 'name', 'imageId', 'imageType', 'details', 'price', 'discountedPrice', 'discountExpiryDate',
  'stock');

/** A slug from a name: `VIP Ranks!` → `vip-ranks`. */
function slugify(name: string): string {
  return name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 128) || 'category';
}

const CATEGORY_DEFAULTS: Omit<Category, 'id' | 'name' | 'slug'> = {
  parentId: 0, imageId: '', imageType: '', priority: 0, gameStatus: true, gameTitle: '', gameDescription: '',
  gameItem: '', isActive: true,
};

const PRODUCT_DEFAULTS: Omit<Product, 'id' | 'categoryId' | 'name' | 'price' | 'creationDate'> = {
  giveRoleId: 0, imageId: '', imageType: '', details: '', discountedPrice: 0, discountExpiryDate: PERMANENT,
  duration: 0, stock: -1, priority: 0, isFeatured: false, gameStatus: true, gameTitle: '', gameDescription: '',
  gameItem: '', isActive: true, variables: [],
};

function invalid(message: string): DomainError {
  return new DomainError('VALIDATION_ERROR', message);
}

/** Drops the keys a partial update leaves out, so they do not overwrite stored values. */
function defined<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}

const NONE: PurchaseRules = { requiredProductId: 0, requireLinkedAccount: false, preventDowngrade: false };

/** The distinct ids a product can have (positive safe integers): the others match no row, so no statement asks for them. */
function productIds(ids: number[]): number[] {
  return [...new Set(ids.filter((id) => Number.isSafeInteger(id) && id > 0))];
}

/** The record gains its variables in place, not by a copy of every field into a new object. */
function withVariables<R extends { id: number }>(record: R, variables: Map<number, Variable[]>): R & { variables: Variable[] } {
  const product = record as R & { variables: Variable[] };
  product.variables = variables.get(product.id) ?? [];
  return product;
}

export type Order = TableRecord<typeof StoreOrder>;

/** Who buys: an account, or a guest (id 0) known by the name typed at checkout. */
type Buyer = Pick<UserAccount, 'id' | 'username' | 'linkedAccounts'>;

interface CheckedLine {
  product: Product;
  rules: PurchaseRules;
  quantity: number;
  variables: BuyLine['variables'];
  /** Cents a unit costs after its discount. */
  unitTotal: number;
}

const MAX_VARIABLE_LENGTH = 255;

/**
 * The variables of one line against what the product declares: every required one present, every
 * value allowed and free of control characters (a value may be rendered into a game command).
 */
function checkVariables(line: RequestedLine, product: Product): BuyLine['variables'] {
  const fail = (why: string) => new DomainError('INVALID_VARIABLE', `Invalid variable for product ${product.id}: ${why}.`);
  const declared = new Map(product.variables.map((v) => [v.name, v]));
  for (const name of line.variables.keys()) {
    if (!declared.has(name)) throw fail(`it has no variable "${name}"`);
  }
  const chosen: BuyLine['variables'] = [];
  for (const v of product.variables) {
    const sent = line.variables.get(v.name) ?? '';
    if (hasControlCharacter(sent)) throw fail(`"${v.name}" holds a line break or another control character`);
    const value = sent.trim();
    if (value === '') {
      if (v.required) throw fail(`"${v.name}" is required`);
      continue;
    }
    if (v.values.length ? !v.values.includes(value) : value.length > MAX_VARIABLE_LENGTH) {
      throw fail(v.values.length ? `"${v.name}" must be one of ${v.values.join(', ')}` : `"${v.name}" is longer than ${MAX_VARIABLE_LENGTH} characters`);
    }
    chosen.push({ name: v.name, value });
  }
  return chosen;
}

function outOfStock(productId: number): DomainError {
  return new DomainError('OUT_OF_STOCK', `Product ${productId} is out of stock.`);
}

/** `percent` of `cents`, rounded down, in integers only (the percent is kept to hundredths). */
function percentOf(cents: number, percent: number): number {
  return Math.floor((cents * Math.round(percent * 100)) / 10_000);
}

const sum = (adjustments: Adjustment[]) => adjustments.reduce((total, a) => total + a.amount, 0);

/**
 * An order's amounts: the list prices (`subtotal`), what was taken off them (the products' own
 * discounts, sales, coupons: `discount`) and what is paid (`total`, a gift card's share left out).
 */
function amounts(lines: { unitPrice: number; unitTotal: number; quantity: number }[],
  adjustments: Adjustment[]): { subtotal: number; discount: number; total: number } {
  const subtotal = lines.reduce((total, l) => total + l.unitPrice * l.quantity, 0);
  const priced = lines.reduce((total, l) => total + l.unitTotal * l.quantity, 0);
  const lowered = sum(adjustments.filter((a) => !a.paid));
  return { subtotal, discount: subtotal - priced + lowered, total: priced - sum(adjustments) };
}

type OrderItem = TableRecord<typeof StoreOrderItem>;

function itemEvent(i: OrderItem): OrderItemEvent {
  return { productId: i.productId, productName: i.productName, quantity: i.quantity, variables: JSON.parse(i.variables) as Record<string, string> };
}

function orderRow(o: Order, timeZone: string, coupon: string | null = null): OrderRow {
  return {
    id: String(o.id), accountID: String(o.accountId), coupon,
    total: formatMoney(o.total), discount: formatMoney(o.discount), subtotal: formatMoney(o.subtotal),
    earnings: formatMoney(o.earnings), cashback: formatMoney(o.cashback), credit: formatMoney(o.credit),
    type: o.type, status: o.status, paymentAPI: o.paymentApi, paymentID: o.paymentId ?? '',
    creationDate: displayTimestamp(o.creationDate, timeZone),
  };
}

export class DbStoreService implements StoreService {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #settings: SettingsService;
  readonly #users: UsersService;
  readonly #credits: CreditsService;
  readonly #audit: AuditLog;
  readonly #adjusters: PriceAdjuster[] = [];

  constructor(deps: { db: Database; events: EventBus; settings: SettingsService; users: UsersService; credits: CreditsService; audit: AuditLog }) {
    this.#db = deps.db;
    this.#events = deps.events;
    this.#settings = deps.settings;
    this.#users = deps.users;
    this.#credits = deps.credits;
    this.#audit = deps.audit;
  }

  // ---- prices

  addPriceAdjuster(adjuster: PriceAdjuster): void {
    this.#adjusters.push(adjuster);
  }

  /** The lower of the product's own price and any sale's: a sale never raises a price already discounted lower. */
  unitPrice(p: PricedProduct, at: string): number {
    let price = effectivePrice(p, at);
    for (const adjuster of this.#adjusters) {
      const sale = adjuster.salePrice(p, at);
      if (sale !== undefined && sale < price) price = sale;
    }
    return price;
  }

  /** What the codes take off the lines (nothing asked when no code was sent): each adjuster prices what the ones before it left. */
  async #adjustments(user: Buyer, lines: CheckedLine[], codes: PromotionCodes, at: string): Promise<{ checkout: Checkout; adjustments: Adjustment[] }> {
    const checkout: Checkout = {
      userId: user.id, username: user.username, codes,
      lines: lines.map((l) => ({
        productId: l.product.id, categoryId: l.product.categoryId, quantity: l.quantity, unitPrice: l.product.price,
        ownPrice: effectivePrice(l.product, at), unitTotal: l.unitTotal,
      })),
      total: lines.reduce((sum, l) => sum + l.unitTotal * l.quantity, 0),
    };
    const adjustments: Adjustment[] = [];
    if (!codes.coupon && !codes.giftCard) return { checkout, adjustments };
    for (const adjuster of this.#adjusters) {
      const taken = await adjuster.price({ ...checkout, total: checkout.total - sum(adjustments) });
      adjustments.push(...taken);
    }
    return { checkout, adjustments };
  }

  /** `fn`, a buy or quote judging `codes`, within each adjuster's `judging` (a limit on guessing codes). */
  #judged<T>(codes: PromotionCodes, buyer: PurchaseBuyer, fn: () => Promise<T>): Promise<T> {
    if (!codes.coupon && !codes.giftCard) return fn();
    return this.#adjusters.reduce<() => Promise<T>>((inner, a) => (a.judging ? () => a.judging!(codes, buyer, inner) : inner), fn)();
  }

  /** The adjustments on the order, and each adjuster takes its own for good (in the order's transaction; a sale's figures need no code). */
  async #takeAdjustments(checkout: Checkout, orderId: number, adjustments: Adjustment[]): Promise<void> {
    if (adjustments.length > 0) await StoreOrderAdjustment.insertMany(this.#db, adjustments.map((a) => ({ orderId, ...a })));
    for (const adjuster of this.#adjusters) await adjuster.take(checkout, orderId, adjustments);
  }

  /** The coupon code of each order that used one. */
  async #coupons(orderIds: number[]): Promise<Map<number, string>> {
    if (orderIds.length === 0) return new Map();
    const rows = await StoreOrderAdjustment.select(this.#db, sql`where ${A.kind} = 'coupon' and ${A.orderId} in ${orderIds}`);
    return new Map(rows.map((r) => [r.orderId, r.code]));
  }

  async #orderRows(orders: Order[]): Promise<OrderRow[]> {
    const coupons = await this.#coupons(orders.map((o) => o.id));
    const { timezone } = this.#settings.get();
    return orders.map((o) => orderRow(o, timezone, coupons.get(o.id) ?? null));
  }

  async revenueBetween(from: string, to: string): Promise<number> {
    const [row] = await this.#db.query<{ total: number | string | null }>(sql`select sum(${O.earnings}) as total from ${StoreOrder}
      where ${O.type} = 'payment' and ${O.status} = 'completed' and ${O.creationDate} >= ${from} and ${O.creationDate} < ${to}`);
    return Number(row?.total ?? 0);
  }

  // ---- catalogue: categories

  async categories(activeOnly = false): Promise<Category[]> {
    return StoreCategory.select(this.#db, sql`${where(activeOnly && sql`${C.isActive} = 1`)} ${CATEGORY_ORDER}`);
  }

  async requireCategory(id: number): Promise<Category> {
    const category = await StoreCategory.find(this.#db, id);
    if (!category) throw new DomainError('CATEGORY_NOT_FOUND', `No store category with ID ${id}.`);
    return category;
  }

  async createCategory(input: CategoryInput & { name: string }): Promise<Category> {
    return this.#db.transaction(async () => {
      const category = { ...CATEGORY_DEFAULTS, slug: slugify(input.name), ...defined(input), name: input.name };
      await this.#checkParent(undefined, category.parentId);
      const id = await StoreCategory.insert(this.#db, category);
      return { id, ...category };
    });
  }

  async updateCategory(id: number, patch: CategoryInput): Promise<Category> {
    return this.#db.transaction(async () => {
      const changes = defined(patch);
      const category = { ...await this.requireCategory(id), ...changes };
      await this.#checkParent(id, category.parentId);
      await StoreCategory.update(this.#db, id, changes);
      return category;
    });
  }

  /** The parent must exist, and a category may not move under itself (the tree stays a tree). */
  async #checkParent(id: number | undefined, parentId: number): Promise<void> {
    if (parentId === 0) return;
    const all = new Map((await this.categories()).map((c) => [c.id, c]));
    if (!all.has(parentId)) throw new DomainError('CATEGORY_NOT_FOUND', `parentID: no store category with ID ${parentId}.`);
    for (let at = all.get(parentId); at; at = all.get(at.parentId)) {
      if (at.id === id) throw invalid(`parentID: category ${parentId} is category ${id} itself or one of its subcategories.`);
    }
  }

  /** Refuses to delete a category that still holds subcategories or products: nothing vanishes by accident. */
  async deleteCategory(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      await this.requireCategory(id);
      const [children] = await this.#db.query<{ n: number }>(
        sql`select (select count(*) from ${StoreCategory} where ${C.parentId} = ${id})
          + (select count(*) from ${StoreProduct} where ${P.categoryId} = ${id}) as n`);
      if (Number(children?.n) > 0) throw new DomainError('CONFLICT', `Store category ${id} still holds subcategories or products; move or delete them first.`);
      await this.#db.run(sql`delete from ${StoreCategory} where ${C.id} = ${id}`);
    });
  }

  // ---- products

  /**
   * Products matching the conditions (on store_products) with their variables: two queries however many
   * products there are, sent together (on MySQL, on two pooled connections outside a transaction).
   */
  async #products(onSaleOnly: boolean, ...conditions: (Sql | false)[]): Promise<Product[]> {
    const clause = where(...conditions, onSaleOnly && ACTIVE_PRODUCT);
    const [records, variables, shown] = await Promise.all([
      StoreProduct.select(this.#db, sql`${clause} ${PRODUCT_ORDER}`),
      this.#variables(sql`${V.productId} in (select ${P.id} from ${StoreProduct} ${clause})`),
      onSaleOnly ? this.#shownCategoryIds() : undefined,
    ]);
    return (shown ? records.filter((record) => shown.has(record.categoryId)) : records).map((record) => withVariables(record, variables));
  }

  /**
   * The ids of the categories on show (shownCategoryMap): a read of three columns of a small table,
   * beside each read of products for sale, so that a product under a hidden category is never sold.
   */
  async #shownCategoryIds(): Promise<ReadonlySet<number>> {
    const rows = await this.#db.queryArrays(sql`select ${CATEGORY_FLAGS.columns} from ${StoreCategory}`);
    return new Set(shownCategoryMap(rows.map(CATEGORY_FLAGS.fromArray)).keys());
  }

  /** The variables of the products matching `condition` (on store_product_variables), by product, in their order. */
  async #variables(condition: Sql): Promise<Map<number, Variable[]>> {
    const rows = await this.#db.queryArrays(
      sql`select ${VARIABLE.columns} from ${StoreProductVariable} where ${condition} order by ${V.productId}, ${V.position}`);
    const byProduct = new Map<number, Variable[]>();
    for (const row of rows) {
      const { productId, name, required, allowedValues } = VARIABLE.fromArray(row);
      const list = byProduct.get(productId) ?? [];
      list.push({ name, required, values: JSON.parse(allowedValues) as string[] });
      byProduct.set(productId, list);
    }
    return byProduct;
  }

  /**
   * The products for sale a buy names, each with its purchase rules (joined into the product's
   * read: one statement fewer in every buy) and its variables (their ids are known, so no subquery).
   */
  async #forSale(ids: number[]): Promise<Map<number, { product: Product; rules: PurchaseRules }>> {
    const valid = productIds(ids);
    if (valid.length === 0) return new Map();
    const [rows, variables, shown] = await Promise.all([
      this.#db.queryArrays(sql`select ${FOR_SALE.columns} from ${p} left join ${r} on ${r.c.productId} = ${p.c.id}
        where ${p.c.id} in ${valid} and ${p.c.isActive} = 1`),
      this.#variables(sql`${V.productId} in ${valid}`),
      this.#shownCategoryIds(),
    ]);
    const forSale = new Map<number, { product: Product; rules: PurchaseRules }>();
    for (const row of rows) {
      const { product: record, rules } = FOR_SALE.read(row);
      if (shown.has(record.categoryId)) forSale.set(record.id, { product: withVariables(record, variables), rules: rules ?? NONE });
    }
    return forSale;
  }

  /** Every product, or only those for sale. */
  products(onSaleOnly = false): Promise<Product[]> {
    return this.#products(onSaleOnly);
  }

  shownCategories(): Promise<ShownCategory[]> {
    return this.#db.queryArrays(sql`select ${SHOWN_CATEGORY.columns} from ${StoreCategory} where ${C.isActive} = 1 ${CATEGORY_ORDER}`)
      .then((rows) => rows.map(SHOWN_CATEGORY.fromArray));
  }

  async shownProducts(filter: { categoryIds?: number[]; ids?: number[]; featuredOnly?: boolean }): Promise<ShownProduct[]> {
    const conditions: Sql[] = [];
    for (const [column, list] of [[P.categoryId, filter.categoryIds], [P.id, filter.ids]] as const) {
      if (!list) continue;
      const ids = productIds(list);
      if (ids.length === 0) return [];
      conditions.push(sql`${column} in ${ids}`);
    }
    if (filter.featuredOnly) conditions.push(sql`${P.isFeatured} = 1`);
    conditions.push(ACTIVE_PRODUCT);
    const clause = where(...conditions);
    const [rows, variables, shown] = await Promise.all([
      this.#db.queryArrays(sql`select ${SHOWN_PRODUCT.columns} from ${StoreProduct} ${clause} ${PRODUCT_ORDER}`),
      this.#variables(sql`${V.productId} in (select ${P.id} from ${StoreProduct} ${clause})`),
      this.#shownCategoryIds(),
    ]);
    return rows.map(SHOWN_PRODUCT.fromArray).filter((product) => shown.has(product.categoryId)).map((product) => withVariables(product, variables));
  }

  /** The products of the given ids that exist (and are for sale, if asked), in one round of queries. */
  async productsById(ids: number[], onSaleOnly: boolean): Promise<Map<number, Product>> {
    const valid = productIds(ids);
    if (valid.length === 0) return new Map();
    const found = await this.#products(onSaleOnly, sql`${P.id} in ${valid}`);
    return new Map(found.map((p) => [p.id, p]));
  }

  async requireProduct(id: number): Promise<Product> {
    const product = (await this.productsById([id], false)).get(id);
    if (!product) throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${id}.`);
    return product;
  }

  async createProduct(input: ProductInput & Pick<Product, 'categoryId' | 'name' | 'price'>): Promise<Product> {
    return this.#db.transaction(async () => {
      const { categoryId, name, price } = input;
      const product: Omit<Product, 'id'> = { ...PRODUCT_DEFAULTS, creationDate: now(), ...defined(input), categoryId, name, price };
      await this.#checkProduct(product);
      const id = await StoreProduct.insert(this.#db, product);
      await this.#writeVariables(id, product.variables);
      await this.#audit.record({ action: 'store.product.create', target: { type: 'product', id }, summary: `Created product ${product.name}`, after: { id,
        ...product } });
      return { id, ...product };
    });
  }

  async updateProduct(id: number, patch: ProductInput): Promise<Product> {
    return this.#db.transaction(async () => {
      const changes = defined(patch);
      const before = await this.requireProduct(id);
      await this.#checkProduct({ ...before, ...changes });
      await StoreProduct.update(this.#db, id, changes);
      if (changes.variables) {
        await this.#db.run(sql`delete from ${StoreProductVariable} where ${V.productId} = ${id}`);
        await this.#writeVariables(id, changes.variables);
      }
      // Read again: the stock may have moved since the read above.
      const after = await this.requireProduct(id);
      await this.#audit.record({ action: 'store.product.update', target: { type: 'product', id }, summary: `Changed product ${after.name}`, before, after });
      return after;
    });
  }

  async deleteProduct(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const before = await this.requireProduct(id);
      await this.#db.run(sql`delete from ${StoreProductVariable} where ${V.productId} = ${id}`);
      await this.#db.run(sql`delete from ${StoreProduct} where ${P.id} = ${id}`);
      await this.#audit.record({ action: 'store.product.delete', target: { type: 'product', id }, summary: `Deleted product ${before.name}`, before });
    });
  }

  /** What the schema cannot check: references, and rules between fields. */
  async #checkProduct(p: Omit<Product, 'id'>): Promise<void> {
    await this.requireCategory(p.categoryId);
    if (p.giveRoleId > 0) {
      const role = await this.#users.getRole(p.giveRoleId);
      if (!role) throw new DomainError('ROLE_NOT_FOUND', `giveRoleID: no role with ID ${p.giveRoleId}.`);
      const privileged = this.#users.privilegeOf(role);
      if (privileged) throw invalid(`giveRoleID: role ${role.id} (${role.name}) ${privileged}: it is never sold, only an admin grants it.`);
    }
    if (p.discountedPrice > 0 && p.discountedPrice >= p.price) {
      throw invalid('discountedPrice must be below price (0 = no discount).');
    }
    const names = new Set<string>();
    for (const v of p.variables) {
      if (names.has(v.name.toLowerCase())) throw invalid(`variables: the name "${v.name}" is declared twice.`);
      names.add(v.name.toLowerCase());
    }
  }

  async #writeVariables(productId: number, variables: Variable[]): Promise<void> {
    for (const [position, v] of variables.entries()) {
      await StoreProductVariable.insert(this.#db, {
        productId, name: v.name, required: v.required, allowedValues: JSON.stringify([...new Set(v.values)]), position,
      });
    }
  }

  // ---- both

  /** Sets the priority of the listed categories or products to their place in the list. */
  async reorder(kind: 'categories' | 'products', ids: number[]): Promise<void> {
    const table = kind === 'categories' ? StoreCategory : StoreProduct;
    const code = kind === 'categories' ? 'CATEGORY_NOT_FOUND' : 'PRODUCT_NOT_FOUND';
    await this.#db.transaction(async () => {
      for (const [priority, id] of ids.entries()) {
        const { affectedRows } = await this.#db.run(sql`update ${table} set ${table.c.priority} = ${priority} where ${table.c.id} = ${id}`);
        // MySQL counts only changed rows, so a row already at its place needs a look.
        if (affectedRows === 0 && !(await this.#db.query(sql`select ${table.c.id} from ${table} where ${table.c.id} = ${id}`)).length) {
          throw new DomainError(code, `No ${kind === 'categories' ? 'store category' : 'product'} with ID ${id}.`);
        }
      }
    });
  }

  /**
   * Categories nested to any depth with their products, ordered by priority then id, in three
   * queries whatever the size of the catalogue. `activeOnly` shows only what is for sale: the
   * categories on show (shownCategoryMap: a hidden one hides all it contains) and their active
   * products; `rootId` returns that category's subtree instead of the top-level list.
   */
  async tree(opts: { activeOnly: boolean; rootId?: number }): Promise<CategoryNode[]> {
    // The whole catalogue's products are read beside its categories; a subtree's products come
    // after them, since the categories say which ids the subtree holds.
    const [read, allProducts] = await Promise.all([
      this.categories(opts.activeOnly), opts.rootId === undefined ? this.#products(false, opts.activeOnly && ACTIVE_PRODUCT) : undefined,
    ]);
    const categories = opts.activeOnly ? [...shownCategoryMap(read).values()] : read;
    if (opts.rootId !== undefined && !categories.some((c) => c.id === opts.rootId)) {
      throw new DomainError('CATEGORY_NOT_FOUND', `No store category with ID ${opts.rootId}.`);
    }
    // Products attach to the categories kept only: with activeOnly, an active product of a category on show, the rule of a buy.
    const nodes = new Map<number, CategoryNode>(categories.map((c) => [c.id, { ...c, subcategories: [], products: [] }]));
    const roots: CategoryNode[] = [];
    for (const node of nodes.values()) {
      if (node.id === opts.rootId) roots.push(node);
      if (node.parentId === 0) {
        if (opts.rootId === undefined) roots.push(node);
      } else {
        nodes.get(node.parentId)?.subcategories.push(node);
      }
    }
    const products = allProducts ?? await this.#subtreeProducts(roots[0]!, opts.activeOnly);
    for (const p of products) nodes.get(p.categoryId)?.products.push(p);
    return roots;
  }

  #subtreeProducts(root: CategoryNode, onSaleOnly: boolean): Promise<Product[]> {
    const ids: number[] = [];
    const walk = (n: CategoryNode) => { ids.push(n.id); n.subcategories.forEach(walk); };
    walk(root);
    return this.#products(false, sql`${P.categoryId} in ${ids}`, onSaleOnly && ACTIVE_PRODUCT);
  }

  // ---- purchase rules

  async rulesFor(productIds: number[]): Promise<Map<number, PurchaseRules>> {
    if (productIds.length === 0) return new Map();
    const rows = await StoreProductRule.select(this.#db, sql`where ${StoreProductRule.c.productId} in ${productIds}`);
    return new Map(rows.map(({ productId, ...rules }) => [productId, rules]));
  }

  /** A product's purchase rules; throws PRODUCT_NOT_FOUND. */
  async rulesOf(productId: number): Promise<PurchaseRules> {
    await this.requireProduct(productId);
    return (await this.rulesFor([productId])).get(productId) ?? NONE;
  }

  async setRules(productId: number, patch: Partial<PurchaseRules>): Promise<PurchaseRules> {
    return this.#db.transaction(async () => {
      await this.requireProduct(productId);
      const changes = defined(patch);
      const stored = (await this.rulesFor([productId])).get(productId);
      const next = { ...stored ?? NONE, ...changes };
      if (next.requiredProductId === productId) throw new DomainError('VALIDATION_ERROR', 'requiredProductID: a product cannot require itself.');
      if (next.requiredProductId > 0 && !(await this.productsById([next.requiredProductId], false)).has(next.requiredProductId)) {
        throw new DomainError('PRODUCT_NOT_FOUND', `requiredProductID: no product with ID ${next.requiredProductId}.`);
      }
      // Only the rules given are written, so two admins setting different rules both keep theirs.
      if (stored) await StoreProductRule.update(this.#db, productId, changes);
      else await this.#insertRules(productId, next, changes);
      return next;
    });
  }

  async #insertRules(productId: number, rules: PurchaseRules, changes: Partial<PurchaseRules>): Promise<void> {
    try {
      await StoreProductRule.insert(this.#db, { ...rules, productId });
    } catch (err) {
      // Another admin's first rules for the product came first: write ours over theirs.
      if (!isUniqueViolation(err)) throw err;
      await StoreProductRule.update(this.#db, productId, changes);
    }
  }

  /** The buy's checks of the purchase rules, inside its transaction: each refusal names the product. */
  async #checkRules(user: Buyer, lines: { product: Product; rules: PurchaseRules }[]): Promise<void> {
    for (const { product, rules } of lines) {
      // A guest has no account to hold a role, a linked account or an earlier purchase.
      if (user.id === 0 && (product.giveRoleId > 0 || rules.requiredProductId > 0 || rules.requireLinkedAccount)) {
        throw new DomainError('ACCOUNT_REQUIRED', `${product.name} (product ${product.id}) can be bought only with an account.`);
      }
      if (rules.requiredProductId > 0) {
        const [bought] = await this.#db.query(sql`select ${o.c.id} from ${o} join ${oi} on ${oi.c.orderId} = ${o.c.id}
           where ${o.c.accountId} = ${user.id} and ${o.c.status} = 'completed' and ${oi.c.productId} = ${rules.requiredProductId} limit 1`);
        if (!bought) {
          const required = (await this.productsById([rules.requiredProductId], false)).get(rules.requiredProductId);
          throw new DomainError('REQUIRED_PRODUCT', `${product.name} (product ${product.id}) requires buying ${required?.name ?? `product ` +
            `${rules.requiredProductId}`} first.`);
        }
      }
      if (rules.requireLinkedAccount && !user.linkedAccounts.chat) {
        throw new DomainError('REQUIRED_LINKED_ACCOUNT', `${product.name} (product ${product.id}) requires a linked chat account.`);
      }
      if (rules.preventDowngrade && product.giveRoleId > 0) await this.#checkDowngrade(user, product);
    }
  }

  /** Refuses a rank below one the buyer holds from a product of the same category. */
  async #checkDowngrade(user: Buyer, product: Product): Promise<void> {
    const role = await this.#users.getRole(product.giveRoleId);
    if (!role) return;
    const ranks = await this.#db.query<{ give_role_id: number }>(
      sql`select distinct ${P.giveRoleId} as give_role_id from ${StoreProduct} where ${P.categoryId} = ${product.categoryId} and ${P.giveRoleId} > 0`);
    const sameCategory = new Set(ranks.map((r) => Number(r.give_role_id)));
    const higher = (await this.#users.rolesOf(user.id)).find((r) => sameCategory.has(r.id) && r.priority > role.priority);
    if (higher) {
      throw new DomainError('DOWNGRADE_NOT_ALLOWED', `${product.name} (product ${product.id}) would be a downgrade: you hold ${higher.name}.`);
    }
  }

  // ---- orders

  /**
   * The buy's checks, before it writes: the products for sale, the variables, the purchase rules,
   * a first look at the stock. The lines come back with the price each unit costs now.
   */
  async #checked(user: Buyer, requested: RequestedLine[]): Promise<CheckedLine[]> {
    const forSale = await this.#forSale(requested.map((l) => l.productId));
    const at = now();
    const lines = requested.map((line) => {
      const found = forSale.get(line.productId);
      if (!found) throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${line.sentId}.`);
      const { product, rules } = found;
      return { product, rules, quantity: line.quantity, variables: checkVariables(line, product), unitTotal: this.unitPrice(product, at) };
    });
    await this.#checkRules(user, lines);

    // A first look at the stock as read, lock-free: most refusals end here. The binding take is
    // the last step (#takeStock).
    const wanted = new Map<number, number>();
    for (const l of lines) wanted.set(l.product.id, (wanted.get(l.product.id) ?? 0) + l.quantity);
    for (const { product } of lines) {
      if (product.stock !== -1 && wanted.get(product.id)! > product.stock) throw outOfStock(product.id);
    }
    return lines;
  }

  /**
   * The buy: check the user, products, variables and stock, write the order, debit the balance,
   * grant roles, credit the cashback, take the stock. Any failure rolls all of it back.
   */
  async buy(userId: number, requested: RequestedLine[], keyName?: string, codes: PromotionCodes = {}): Promise<BuyResult> {
    return this.#judged(codes, { userId }, () => this.#db.transaction(async () => {
      const user = await this.#users.requireById(userId);
      const lines = await this.#checked(user, requested);
      const at = now();
      const { checkout, adjustments } = await this.#adjustments(user, lines, codes, at);

      const { subtotal, discount, total } = amounts(lines.map((l) => ({ ...l, unitPrice: l.product.price })), adjustments);
      const settings = this.#settings.get();
      const cashback = percentOf(total, settings.cashbackPercent);
      const order = await this.#insertOrder({
        accountId: user.id, type: 'credit', status: 'completed', subtotal, discount, total,
        earnings: 0, cashback, credit: cashback, currency: settings.currency, paymentApi: 'credits', paymentId: null,
        guestName: null, guestKey: null, creationDate: at,
      });
      const items = await this.#insertItems(order.id, lines.map((l) => ({ ...l, unitPrice: l.product.price })));
      await this.#takeAdjustments(checkout, order.id, adjustments);

      let balance = total > 0 ? await this.#pay(user.id, total, order.id, keyName) : undefined;
      await this.#grantRoles(user.id, lines);
      if (cashback > 0) balance = await this.#credits.change(user.id, cashback, { reason: 'cashback', orderId: order.id, keyName });
      balance ??= await this.#credits.balance(user.id);

      // The order's listeners (delivery queues its commands) run in this transaction before the
      // stock is taken, so the shared product rows are locked for the last statement only.
      await this.#completed(order, user, items);
      await this.#takeStock(lines);
      return {
        orderId: order.id, balance, subtotal, discount, total, cashback,
        lines: lines.map((l) => ({ productId: l.product.id, quantity: l.quantity, variables: l.variables })),
      };
    }));
  }

  /** Every line in one statement; the lines as the order's event carries them. */
  async #insertItems(orderId: number, lines: (CheckedLine & { unitPrice: number })[]): Promise<OrderItemEvent[]> {
    const items = lines.map((l) => ({
      productId: l.product.id, productName: l.product.name, quantity: l.quantity,
      variables: Object.fromEntries(l.variables.map((v) => [v.name, v.value])),
    }));
    await StoreOrderItem.insertMany(this.#db, lines.map((l, i) => ({
      orderId, productId: l.product.id, productName: l.product.name, quantity: l.quantity, unitPrice: l.unitPrice,
      unitTotal: l.unitTotal, variables: JSON.stringify(items[i]!.variables),
    })));
    return items;
  }

  async #grantRoles(userId: number, lines: CheckedLine[]): Promise<void> {
    for (const l of lines) {
      if (l.product.giveRoleId <= 0 || l.product.duration < 0) continue;
      // Several units of a timed role add up; a permanent one stays permanent.
      try {
        await this.#users.extendRole(userId, l.product.giveRoleId, l.product.duration * l.quantity);
      } catch (err) {
        // A product saved before its role became privileged: refused, and the rollback undoes the payment.
        if (err instanceof DomainError && err.code === 'FORBIDDEN') throw new DomainError('FORBIDDEN',
          `${l.product.name} (product ${l.product.id}) is not for sale: ${err.message}`);
        throw err;
      }
    }
  }

  /** The account, or a guest: no account (id 0), the name typed at checkout, no linked accounts. */
  async #buyer(buyer: PurchaseBuyer): Promise<Buyer> {
    if ('userId' in buyer) return this.#users.requireById(buyer.userId);
    return { id: 0, username: buyer.guestName, linkedAccounts: {} };
  }

  async quote(buyer: PurchaseBuyer, requested: RequestedLine[], codes: PromotionCodes = {}): Promise<Quote> {
    const user = await this.#buyer(buyer);
    const lines = await this.#checked(user, requested);
    const { adjustments } = await this.#judged(codes, buyer, () => this.#adjustments(user, lines, codes, now()));
    const priced = lines.map((l) => ({
      productId: l.product.id, productName: l.product.name, quantity: l.quantity,
      variables: Object.fromEntries(l.variables.map((v) => [v.name, v.value])), unitPrice: l.product.price, unitTotal: l.unitTotal,
    }));
    const { subtotal, total } = amounts(priced, adjustments);
    return { lines: priced, currency: this.#settings.get().currency, subtotal, total, adjustments };
  }

  /**
   * The buy paid with real money: the same checks, roles, event and stock as `buy`, at the prices
   * the buyer was offered (and paid), no balance moved; the order is of type `payment` and records
   * the gateway's payment, unique, so a second completion of one payment is a CONFLICT.
   */
  async buyPaid(buyer: PurchaseBuyer, offered: PricedLine[],
    payment: { paymentApi: string; paymentId: string; currency: string }, adjustments: Adjustment[] = []): Promise<{ orderId: number }> {
    return this.#db.transaction(async () => {
      const user = await this.#buyer(buyer);
      const checked = await this.#checked(user, offered.map((l) => ({
        productId: l.productId, sentId: String(l.productId), quantity: l.quantity, variables: new Map(Object.entries(l.variables)),
      })));
      // At the prices the buyer was offered and paid, not today's.
      const lines = checked.map((l, i) => ({ ...l, unitTotal: offered[i]!.unitTotal }));
      const { subtotal, discount, total } = amounts(offered, adjustments);
      let order: Order;
      try {
        order = await this.#insertOrder({
          accountId: user.id, type: 'payment', status: 'completed', subtotal, discount, total, earnings: total,
          cashback: 0, credit: 0, currency: payment.currency, paymentApi: payment.paymentApi, paymentId: payment.paymentId,
          guestName: user.id === 0 ? user.username : null, guestKey: user.id === 0 ? user.username.toLowerCase() : null, creationDate: now(),
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `The payment ${payment.paymentApi} ${payment.paymentId} is recorded already.`);
        throw err;
      }
      const items = await this.#insertItems(order.id, lines.map((l, i) => ({ ...l, unitPrice: offered[i]!.unitPrice })));
      await this.#takeAdjustments((await this.#adjustments(user, lines, {}, order.creationDate)).checkout, order.id, adjustments);
      if (user.id !== 0) await this.#grantRoles(user.id, lines);
      await this.#completed(order, user, items);
      await this.#takeStock(lines);
      return { orderId: order.id };
    });
  }

  /** The price from the balance. Too low a balance is the store's INSUFFICIENT_BALANCE (api.md), not the credits feature's code. */
  async #pay(userId: number, cents: number, orderId: number, keyName?: string): Promise<number> {
    try {
      return await this.#credits.change(userId, -cents, { reason: 'purchase', orderId, keyName });
    } catch (err) {
      if (err instanceof DomainError && err.code === 'NOT_ENOUGH_CREDITS') throw new DomainError('INSUFFICIENT_BALANCE', err.message);
      throw err;
    }
  }

  /**
   * Takes the stock with conditional updates: the row lock makes the check and the take one step,
   * so concurrent buyers never sell more than there is. Last in the buy, because a product's row
   * is the one lock all its buyers share: it is held only from here to the commit. Rows are taken
   * in product id order, so two buyers of the same products queue instead of deadlocking.
   */
  async #takeStock(lines: { product: Product; quantity: number }[]): Promise<void> {
    for (const line of [...lines].sort((a, b) => a.product.id - b.product.id)) {
      if (line.product.stock === -1) continue;
      const { affectedRows } = await this.#db.run(
        sql`update ${StoreProduct} set ${P.stock} = ${P.stock} - ${line.quantity} where ${P.id} = ${line.product.id} and ${P.stock} >= ${line.quantity}`);
      if (affectedRows === 0) throw outOfStock(line.product.id);
    }
  }

  /**
   * A real-money payment: an order of type `payment`, the credits it buys, and (through the
   * event) a donation entry; joins the caller's transaction.
   */
  async recordPayment(payment: PaymentOrderInput): Promise<OrderRow> {
    const { paymentApi, paymentId } = payment;
    const order = await this.#db.transaction(async () => {
      const user = await this.#users.requireByUsername(payment.username);
      let created: Order;
      try {
        created = await this.#insertOrder({
          accountId: user.id, type: 'payment', status: 'completed', subtotal: payment.amount, discount: 0, total: payment.amount,
          earnings: payment.amount, cashback: 0, credit: payment.credit, currency: payment.currency.toUpperCase(),
          paymentApi, paymentId, guestName: null, guestKey: null, creationDate: now(),
        });
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new DomainError('CONFLICT', `The payment ${paymentApi} ${paymentId} is recorded already.`);
        }
        throw err;
      }
      if (payment.credit > 0) await this.#credits.change(user.id, payment.credit, { reason: 'payment', orderId: created.id, keyName: payment.keyName });
      await this.#completed(created, user, []);
      return created;
    });
    return orderRow(order, this.#settings.get().timezone);
  }

  /**
   * A completed `payment` order becomes `refunded`; false when there is no such order. A direct
   * purchase's lines are undone as a refund from the balance undoes them (stock, roles, the
   * `store.order.refunded` its refund commands come from); a top-up has none.
   */
  async markPaymentRefunded(orderId: number): Promise<boolean> {
    return this.#db.transaction(async () => {
      const { affectedRows } = await this.#db.run(
        sql`update ${StoreOrder} set ${O.status} = 'refunded' where ${O.id} = ${orderId} and ${O.type} = 'payment' and ${O.status} = 'completed'`);
      if (affectedRows === 0) return false;
      const order = (await StoreOrder.find(this.#db, orderId))!;
      const buyer = order.accountId === 0 ? { id: 0, username: order.guestName ?? '', linkedAccounts: {} } : await this.#users.requireById(order.accountId);
      await this.#undoItems(orderId, buyer);
      return true;
    });
  }

  /**
   * Undoes a purchase paid from the balance: the price back, the cashback taken back, the stock
   * restored, the roles it granted shortened by what it added (revoked when that was all of it).
   * The status flip is conditional, so of two refunds of one order exactly one does anything.
   */
  async refund(orderId: number, keyName?: string): Promise<OrderRow> {
    const order = await this.#db.transaction(async () => {
      const current = await StoreOrder.find(this.#db, orderId);
      if (!current) throw new DomainError('ORDER_NOT_FOUND', `No order with ID ${orderId}.`);
      if (current.type !== 'credit') throw new DomainError('VALIDATION_ERROR', `Order ${orderId} is a payment: refund it through its payment gateway.`);
      const { affectedRows } = await this.#db.run(
        sql`update ${StoreOrder} set ${O.status} = 'refunded' where ${O.id} = ${orderId} and ${O.status} = 'completed'`);
      if (affectedRows === 0) throw new DomainError('CONFLICT', `Order ${orderId} is ${current.status}: it cannot be refunded.`);
      const user = await this.#users.requireById(current.accountId);
      // The price first: the balance then always covers the cashback (never more than the price).
      if (current.total > 0) await this.#credits.change(user.id, current.total, { reason: 'refund', orderId, keyName });
      if (current.cashback > 0) await this.#credits.change(user.id, -current.cashback, { reason: 'refund', orderId, keyName });
      await this.#undoItems(orderId, user);
      await this.#audit.record({
        action: 'store.order.refund', target: { type: 'order', id: orderId },
          summary: `Refunded order ${orderId} of ${user.username} (${formatMoney(current.total)})`,
        before: { status: current.status }, after: { status: 'refunded' },
      });
      return { ...current, status: 'refunded' };
    });
    return (await this.#orderRows([order]))[0]!;
  }

  /** The stock back, the roles taken back, and `store.order.refunded` (refund commands) for an order's lines, if it has any. */
  async #undoItems(orderId: number, user: Buyer): Promise<void> {
    const items = await this.#items(orderId);
    if (items.length === 0) return;
    const products = await this.productsById(items.map((i) => i.productId), false);
    for (const item of [...items].sort((a, b) => a.productId - b.productId)) {
      const product = products.get(item.productId);
      if (!product) continue;
      await this.#db.run(sql`update ${StoreProduct} set ${P.stock} = ${P.stock} + ${item.quantity} where ${P.id} = ${product.id} and ${P.stock} <> -1`);
      if (user.id !== 0 && product.giveRoleId > 0 && product.duration >= 0) {
        await this.#takeBackRole(user.id, product.giveRoleId, product.duration * item.quantity);
      }
    }
    await this.#events.emit('store.order.refunded', {
      orderId, userId: user.id, username: user.username, linkedAccounts: user.linkedAccounts, items: items.map(itemEvent),
    });
  }

  /** Takes back `days` of a role a purchase added (0 = it was permanent); a permanent grant from elsewhere stays. */
  async #takeBackRole(userId: number, roleId: number, days: number): Promise<void> {
    const held = (await this.#users.rolesOf(userId)).find((r) => r.id === roleId);
    if (!held) return;
    if (days === 0) {
      await this.#users.revokeRole(userId, roleId);
      return;
    }
    if (held.expiryDate === PERMANENT) return;
    const shortened = addSeconds(held.expiryDate, -days * 86400);
    if (shortened <= now()) await this.#users.revokeRole(userId, roleId);
    // A refund is an admin's (admin API, console admins): it may shorten a privileged role an older product sold.
    else await this.#users.grantRole(userId, roleId, shortened, { admin: true });
  }

  async lastPurchaseGranting(userId: number, roleId: number): Promise<{ orderId: number; items: OrderItemEvent[] } | undefined> {
    const [i, op] = [StoreOrderItem.as('i'), StoreProduct.as('op')];
    const rows = (await this.#db.queryArrays(sql`select ${i.columns} from ${i} join ${p} on ${p.c.id} = ${i.c.productId}
       where ${i.c.orderId} = (select max(${o.c.id}) from ${o} join ${oi} on ${oi.c.orderId} = ${o.c.id} join ${op} on ${op.c.id} = ${oi.c.productId}
                           where ${o.c.accountId} = ${userId} and ${o.c.type} = 'credit' and ${o.c.status} = 'completed' and ${op.c.giveRoleId} = ${roleId})
         and ${p.c.giveRoleId} = ${roleId} order by ${i.c.id}`)).map((r) => StoreOrderItem.fromArray(r));
    if (rows.length === 0) return undefined;
    return { orderId: rows[0]!.orderId, items: rows.map(itemEvent) };
  }

  /**
   * Orders newest first, filtered, `limit` at most, older than the order `before` (keyset paging:
   * the last page costs what the first does).
   */
  async listOrders(filter: { status?: string; type?: string; userId?: number; before?: number; limit: number }): Promise<OrderRow[]> {
    const { status, type, userId, before } = filter;
    const rows = await StoreOrder.select(this.#db, sql`${where(
      status !== undefined && sql`${O.status} = ${status}`, type !== undefined && sql`${O.type} = ${type}`,
      userId !== undefined && sql`${O.accountId} = ${userId}`, before !== undefined && sql`${O.id} < ${before}`,
    )} order by ${O.id} desc limit ${countParam(filter.limit)}`);
    return this.#orderRows(rows);
  }

  /** One order and what was bought; ORDER_NOT_FOUND when there is none. */
  async getOrder(orderId: number): Promise<{ order: OrderRow; items: OrderItemEvent[]; adjustments: Adjustment[] }> {
    const order = await StoreOrder.find(this.#db, orderId);
    if (!order) throw new DomainError('ORDER_NOT_FOUND', `No order with ID ${orderId}.`);
    const [items, adjusted] = await Promise.all([
      this.#items(orderId),
      StoreOrderAdjustment.select(this.#db, sql`where ${A.orderId} = ${orderId} order by ${A.id}`),
    ]);
    const adjustments = adjusted.map(({ kind, code, amount, paid }) => ({ kind, code, amount, paid }));
    const coupon = adjustments.find((a) => a.kind === 'coupon')?.code ?? null;
    return { order: orderRow(order, this.#settings.get().timezone, coupon), items: items.map(itemEvent), adjustments };
  }

  /** Completed orders since a stored UTC time: their count and the money or credits they took, in cents, by type. */
  async creditOrdersAfter(userId: number, afterOrderId: number): Promise<number[]> {
    const rows = await this.#db.query<{ id: number }>(sql`select ${O.id} as id from ${StoreOrder}
      where ${O.accountId} = ${userId} and ${O.type} = 'credit' and ${O.status} = 'completed' and ${O.id} > ${afterOrderId} order by ${O.id}`);
    return rows.map((r) => Number(r.id));
  }

  /** Completed orders' totals since `since`, by UTC hour (`2026-11-25 14`) and type: at most 24 rows a day per type, whatever the sales. */
  async salesByHour(since: string): Promise<{ hour: string; type: string; total: number }[]> {
    const rows = await this.#db.query<{ hour: string; type: string; total: number | string | null }>(sql`
      select substr(${O.creationDate}, 1, 13) as hour, ${O.type} as type, sum(${O.total}) as total from ${StoreOrder}
      where ${O.status} = 'completed' and ${O.creationDate} >= ${since} group by substr(${O.creationDate}, 1, 13), ${O.type}`);
    return rows.map((r) => ({ hour: r.hour, type: r.type, total: Number(r.total ?? 0) }));
  }

  async salesSince(since: string): Promise<{ type: string; orders: number; total: number }[]> {
    const rows = await this.#db.query<{ type: string; n: number | string; total: number | string | null }>(
      sql`select ${O.type} as type, count(*) as n, sum(${O.total}) as total
      from ${StoreOrder} where ${O.status} = 'completed' and ${O.creationDate} >= ${since} group by ${O.type} order by ${O.type}`);
    return rows.map((r) => ({ type: r.type, orders: Number(r.n), total: Number(r.total ?? 0) }));
  }

  /** With the guest orders placed under the account's username before it was registered (case-insensitive). */
  async ordersOf(userId: number): Promise<OrderRow[]> {
    const user = await this.#users.findById(userId);
    const rows = await StoreOrder.select(this.#db,
      sql`where ${O.accountId} = ${userId} or ${O.guestKey} = ${user?.username.toLowerCase() ?? ''} order by ${O.id} desc`);
    return this.#orderRows(rows);
  }

  /** An order's lines, in the order they were bought. */
  #items(orderId: number): Promise<OrderItem[]> {
    return StoreOrderItem.select(this.#db, sql`where ${I.orderId} = ${orderId} order by ${I.id}`);
  }

  async #insertOrder(order: Omit<Order, 'id'>): Promise<Order> {
    return { id: await StoreOrder.insert(this.#db, order), ...order };
  }

  #completed(order: Order, user: Buyer, items: OrderItemEvent[]): Promise<void> {
    return this.#events.emit('store.order.completed', {
      orderId: order.id, userId: order.accountId, username: user.username, linkedAccounts: user.linkedAccounts, type: order.type, total: order.total,
      currency: order.currency, creationDate: order.creationDate, items,
    });
  }

  /** A product's name, active or not; undefined when there is no such product. */
  async productName(productId: number): Promise<string | undefined> {
    return (await this.productsById([productId], false)).get(productId)?.name;
  }
}
