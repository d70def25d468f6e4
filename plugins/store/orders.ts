/**
 * Orders: a purchase paid from the credit balance (the buy), a real-money payment (recorded by an
 * admin or by the payments feature), and a user's order history. Each is one transaction: it happens entirely or not at all.
 */
import { isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { PERMANENT, addSeconds, now, requireMoney } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { TableRecord } from '../../core/table.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { UsersService } from '../users/contract.ts';
import { effectivePrice, type Catalogue, type Product } from './catalogue.ts';
import type { OrderItemEvent, OrderRow } from './contract.ts';
import { StoreOrder, StoreOrderItem } from './entities.ts';
import { orderRow, type Order } from './rows.ts';
import type { Rules } from './rules.ts';

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

export interface PaymentInput {
  username: string;
  amount: unknown;
  currency?: string;
  paymentAPI?: string;
  paymentID?: string;
  credit?: unknown;
}

/** A real-money payment with its values checked, in cents. */
export interface PaymentOrderInput {
  username: string;
  amount: number;
  /** Credits added to the balance. */
  credit: number;
  currency: string;
  paymentApi: string;
  paymentId: string | null;
  keyName?: string;
}

const MAX_QUANTITY = 100;
const MAX_VARIABLE_LENGTH = 255;

/** A requested line before the catalogue is consulted: the product id as sent, quantity checked. */
interface RequestedLine {
  productId: number;
  /** As the client sent it, for the error message. */
  sentId: string;
  quantity: number;
  /** A map, not an object: a variable may be called `__proto__` and still be judged like any other name. */
  variables: Map<string, string>;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The `products` field in every form clients send it (decisions.md §5): ids (`products[]=5`,
 * repeated keys, a single value) or objects with id, quantity and variables.
 */
function parseLines(raw: unknown): RequestedLine[] {
  let items: unknown[];
  if (Array.isArray(raw)) items = raw;
  else if (isPlainObject(raw) && 'id' in raw) items = [raw];
  else if (isPlainObject(raw)) items = Object.values(raw); // `products[7][id]=…` with sparse keys
  else if (raw === undefined || raw === null || raw === '') items = [];
  else items = [raw];
  if (items.length === 0) throw new DomainError('VALIDATION_ERROR', 'products is required: send at least one product ID.');
  if (items.length > MAX_QUANTITY) throw new DomainError('VALIDATION_ERROR', `products: at most ${MAX_QUANTITY} lines in one order.`);
  return items.map((item, i) => {
    const obj = isPlainObject(item) ? item : { id: item };
    if (obj.id === undefined || isPlainObject(obj.id) || Array.isArray(obj.id)) {
      throw new DomainError('VALIDATION_ERROR', `products[${i}].id is required`);
    }
    const sentId = String(obj.id).trim();
    return {
      sentId,
      productId: /^[0-9]{1,15}$/.test(sentId) ? Number(sentId) : 0,
      quantity: parseQuantity(obj.quantity),
      variables: parseVariables(obj.variables, sentId),
    };
  });
}

function parseQuantity(value: unknown): number {
  if (value === undefined || value === null || value === '') return 1;
  const text = String(value).trim();
  const n = /^[0-9]{1,4}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_QUANTITY)) {
    throw new DomainError('INVALID_QUANTITY', `quantity must be a whole number from 1 to ${MAX_QUANTITY} (got "${text.slice(0, 20)}").`);
  }
  return n;
}

function parseVariables(value: unknown, productId: string): Map<string, string> {
  const out = new Map<string, string>();
  if (value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)) return out;
  if (!isPlainObject(value)) {
    throw new DomainError('INVALID_VARIABLE', `Invalid variables for product ${productId}: send them as variables[name]=value.`);
  }
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'string' && typeof v !== 'number') {
      throw new DomainError('INVALID_VARIABLE', `Invalid value of variable "${name}" for product ${productId}.`);
    }
    out.set(name, String(v));
  }
  return out;
}

/** The variables of one line against what the product declares: every required one present, every value allowed. */
function checkVariables(line: RequestedLine, product: Product): BuyLine['variables'] {
  const fail = (why: string) => new DomainError('INVALID_VARIABLE', `Invalid variable for product ${product.id}: ${why}.`);
  const declared = new Map(product.variables.map((v) => [v.name, v]));
  for (const name of line.variables.keys()) {
    if (!declared.has(name)) throw fail(`it has no variable "${name}"`);
  }
  const chosen: BuyLine['variables'] = [];
  for (const v of product.variables) {
    const value = line.variables.get(v.name)?.trim() ?? '';
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

type OrderItem = TableRecord<typeof StoreOrderItem>;

function itemEvent(i: OrderItem): OrderItemEvent {
  return { productId: i.productId, productName: i.productName, quantity: i.quantity, variables: JSON.parse(i.variables) as Record<string, string> };
}

export class Orders {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #settings: SettingsService;
  readonly #users: UsersService;
  readonly #credits: CreditsService;
  readonly #catalogue: Catalogue;
  readonly #rules: Rules;

  constructor(deps: { db: Database; events: EventBus; settings: SettingsService; users: UsersService; credits: CreditsService; catalogue: Catalogue; rules: Rules }) {
    this.#db = deps.db;
    this.#events = deps.events;
    this.#settings = deps.settings;
    this.#users = deps.users;
    this.#credits = deps.credits;
    this.#catalogue = deps.catalogue;
    this.#rules = deps.rules;
  }

  /**
   * The buy: check the user, products, variables and stock, write the order, debit the balance,
   * grant roles, credit the cashback, take the stock. Any failure rolls all of it back.
   */
  async buy(userId: number, rawProducts: unknown, keyName?: string): Promise<BuyResult> {
    const requested = parseLines(rawProducts);
    return this.#db.transaction(async () => {
      const user = await this.#users.requireById(userId);
      const products = await this.#catalogue.productsById(requested.map((l) => l.productId), true);
      const at = now();
      const lines = requested.map((line) => {
        const product = products.get(line.productId);
        if (!product) throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${line.sentId}.`);
        return { product, quantity: line.quantity, variables: checkVariables(line, product), unitTotal: effectivePrice(product, at) };
      });
      await this.#rules.check(user, lines.map((l) => l.product));

      // A first look at the stock as read, lock-free: most refusals end here. The binding take is
      // the last step (#takeStock).
      const wanted = new Map<number, number>();
      for (const l of lines) wanted.set(l.product.id, (wanted.get(l.product.id) ?? 0) + l.quantity);
      for (const { product } of lines) {
        if (product.stock !== -1 && wanted.get(product.id)! > product.stock) throw outOfStock(product.id);
      }

      const subtotal = lines.reduce((sum, l) => sum + l.product.price * l.quantity, 0);
      const total = lines.reduce((sum, l) => sum + l.unitTotal * l.quantity, 0);
      const settings = this.#settings.get();
      const cashback = percentOf(total, settings.cashbackPercent);
      const order = await this.#insertOrder({
        accountId: user.id, type: 'credit', status: 'completed', subtotal, discount: subtotal - total, total,
        earnings: 0, cashback, credit: cashback, currency: settings.currency, paymentApi: 'credits', paymentId: null,
        creationDate: at,
      });
      // Every line in one statement.
      await StoreOrderItem.insertMany(this.#db, lines.map((l) => ({
        orderId: order.id, productId: l.product.id, productName: l.product.name, quantity: l.quantity, unitPrice: l.product.price,
        unitTotal: l.unitTotal, variables: JSON.stringify(Object.fromEntries(l.variables.map((v) => [v.name, v.value]))),
      })));

      let balance = total > 0
        ? await this.#credits.change(user.id, -total, { reason: 'purchase', orderId: order.id, keyName, insufficientCode: 'INSUFFICIENT_BALANCE' })
        : undefined;
      for (const l of lines) {
        if (l.product.giveRoleId <= 0 || l.product.duration < 0) continue;
        // Several units of a timed role add up; a permanent one stays permanent.
        await this.#users.extendRole(user.id, l.product.giveRoleId, l.product.duration * l.quantity);
      }
      if (cashback > 0) balance = await this.#credits.change(user.id, cashback, { reason: 'cashback', orderId: order.id, keyName });
      balance ??= await this.#credits.balance(user.id);

      // The order's listeners (delivery queues its commands) run in this transaction before the
      // stock is taken, so the shared product rows are locked for the last statement only.
      await this.#completed(order, user.username, lines.map((l) => ({
        productId: l.product.id, productName: l.product.name, quantity: l.quantity,
        variables: Object.fromEntries(l.variables.map((v) => [v.name, v.value])),
      })));
      await this.#takeStock(lines);
      return {
        orderId: order.id, balance, subtotal, discount: subtotal - total, total, cashback,
        lines: lines.map((l) => ({ productId: l.product.id, quantity: l.quantity, variables: l.variables })),
      };
    });
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
        'update store_products set stock = stock - ? where id = ? and stock >= ?', [line.quantity, line.product.id, line.quantity]);
      if (affectedRows === 0) throw outOfStock(line.product.id);
    }
  }

  /** A real-money payment: an order of type `payment`, the credits it buys, and (through the event) a donation entry. */
  async recordPayment(input: PaymentInput, keyName?: string): Promise<OrderRow> {
    const amount = requireMoney(input.amount, 'INVALID_AMOUNT', 'amount');
    if (amount < 1) throw new DomainError('INVALID_AMOUNT', 'amount must be at least 0.01.');
    const credit = input.credit === undefined || input.credit === '' ? amount : requireMoney(input.credit, 'INVALID_AMOUNT', 'credit');
    return this.recordPaymentOrder({
      username: input.username, amount, credit, currency: input.currency ?? this.#settings.get().currency,
      paymentApi: input.paymentAPI ?? 'manual', paymentId: input.paymentID ? input.paymentID : null, keyName,
    });
  }

  /** recordPayment with checked values in cents; joins the caller's transaction. */
  async recordPaymentOrder(payment: PaymentOrderInput): Promise<OrderRow> {
    const { paymentApi, paymentId } = payment;
    const order = await this.#db.transaction(async () => {
      const user = await this.#users.requireByUsername(payment.username);
      let created: Order;
      try {
        created = await this.#insertOrder({
          accountId: user.id, type: 'payment', status: 'completed', subtotal: payment.amount, discount: 0, total: payment.amount,
          earnings: payment.amount, cashback: 0, credit: payment.credit, currency: payment.currency.toUpperCase(),
          paymentApi, paymentId, creationDate: now(),
        });
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new DomainError('CONFLICT', `The payment ${paymentApi} ${paymentId} is recorded already.`);
        }
        throw err;
      }
      if (payment.credit > 0) await this.#credits.change(user.id, payment.credit, { reason: 'payment', orderId: created.id, keyName: payment.keyName });
      await this.#completed(created, user.username, []);
      return created;
    });
    return orderRow(order, this.#settings.get().timezone);
  }

  /** A completed `payment` order becomes `refunded`; false when there is no such order. */
  async markPaymentRefunded(orderId: number): Promise<boolean> {
    const { affectedRows } = await this.#db.run(
      "update store_orders set status = 'refunded' where id = ? and type = 'payment' and status = 'completed'", [orderId]);
    return affectedRows > 0;
  }

  /**
   * Undoes a purchase paid from the balance: the price back, the cashback taken back, the stock
   * restored, the roles it granted shortened by what it added (revoked when that was all of it).
   * The status flip is conditional, so of two refunds of one order exactly one does anything.
   */
  async refund(orderId: number, keyName?: string): Promise<OrderRow> {
    const order = await this.#db.transaction(async () => {
      const [row] = await this.#db.query(`select ${StoreOrder.columns} from store_orders where id = ?`, [orderId]);
      if (!row) throw new DomainError('ORDER_NOT_FOUND', `No order with ID ${orderId}.`);
      const current = StoreOrder.fromRow(row);
      if (current.type !== 'credit') throw new DomainError('VALIDATION_ERROR', `Order ${orderId} is a payment: refund it through its payment gateway.`);
      const { affectedRows } = await this.#db.run("update store_orders set status = 'refunded' where id = ? and status = 'completed'", [orderId]);
      if (affectedRows === 0) throw new DomainError('CONFLICT', `Order ${orderId} is ${current.status}: it cannot be refunded.`);
      const user = await this.#users.requireById(current.accountId);
      const items = (await this.#db.query(`select ${StoreOrderItem.columns} from store_order_items where order_id = ? order by id`, [orderId]))
        .map((r) => StoreOrderItem.fromRow(r));

      // The price first: the balance then always covers the cashback (never more than the price).
      if (current.total > 0) await this.#credits.change(user.id, current.total, { reason: 'refund', orderId, keyName });
      if (current.cashback > 0) await this.#credits.change(user.id, -current.cashback, { reason: 'refund', orderId, keyName });

      const products = await this.#catalogue.productsById(items.map((i) => i.productId), false);
      for (const item of [...items].sort((a, b) => a.productId - b.productId)) {
        const product = products.get(item.productId);
        if (!product) continue;
        await this.#db.run('update store_products set stock = stock + ? where id = ? and stock <> -1', [item.quantity, product.id]);
        if (product.giveRoleId > 0 && product.duration >= 0) await this.#takeBackRole(user.id, product.giveRoleId, product.duration * item.quantity);
      }
      await this.#events.emit('store.order.refunded', {
        orderId, userId: user.id, username: user.username,
        items: items.map(itemEvent),
      });
      return { ...current, status: 'refunded' };
    });
    return orderRow(order, this.#settings.get().timezone);
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
    else await this.#users.grantRole(userId, roleId, shortened);
  }

  async lastPurchaseGranting(userId: number, roleId: number): Promise<{ orderId: number; items: OrderItemEvent[] } | undefined> {
    const rows = (await this.#db.query(
      `select ${StoreOrderItem.qualifiedColumns('i')}
       from store_order_items i join store_products p on p.id = i.product_id
       where i.order_id = (select max(o.id) from store_orders o join store_order_items oi on oi.order_id = o.id join store_products op on op.id = oi.product_id
                           where o.account_id = ? and o.type = 'credit' and o.status = 'completed' and op.give_role_id = ?)
         and p.give_role_id = ? order by i.id`, [userId, roleId, roleId])).map((r) => StoreOrderItem.fromRow(r));
    if (rows.length === 0) return undefined;
    return { orderId: rows[0]!.orderId, items: rows.map(itemEvent) };
  }

  /**
   * Orders newest first, filtered, `limit` at most, older than the order `before` (keyset paging:
   * the last page costs what the first does).
   */
  async list(filter: { status?: string; type?: string; userId?: number; before?: number; limit: number }): Promise<OrderRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    for (const [column, value] of [['status', filter.status], ['type', filter.type], ['account_id', filter.userId], ['id <', filter.before]] as const) {
      if (value === undefined) continue;
      where.push(column.includes('<') ? `${column} ?` : `${column} = ?`);
      params.push(value);
    }
    const rows = await this.#db.query(
      `select ${StoreOrder.columns} from store_orders${where.length ? ` where ${where.join(' and ')}` : ''} order by id desc limit ?`, [...params, filter.limit]);
    const { timezone } = this.#settings.get();
    return rows.map((r) => orderRow(StoreOrder.fromRow(r), timezone));
  }

  /** One order and what was bought; ORDER_NOT_FOUND when there is none. */
  async get(orderId: number): Promise<{ order: OrderRow; items: OrderItemEvent[] }> {
    const [row] = await this.#db.query(`select ${StoreOrder.columns} from store_orders where id = ?`, [orderId]);
    if (!row) throw new DomainError('ORDER_NOT_FOUND', `No order with ID ${orderId}.`);
    const items = (await this.#db.query(`select ${StoreOrderItem.columns} from store_order_items where order_id = ? order by id`, [orderId]))
      .map((r) => StoreOrderItem.fromRow(r));
    return { order: orderRow(StoreOrder.fromRow(row), this.#settings.get().timezone), items: items.map(itemEvent) };
  }

  /** Completed orders since a stored UTC time: their count and the money or credits they took, in cents, by type. */
  async salesSince(since: string): Promise<{ type: string; orders: number; total: number }[]> {
    const rows = await this.#db.query<{ type: string; n: number | string; total: number | string | null }>(
      "select type, count(*) as n, sum(total) as total from store_orders where status = 'completed' and creation_date >= ? group by type order by type", [since]);
    return rows.map((r) => ({ type: r.type, orders: Number(r.n), total: Number(r.total ?? 0) }));
  }

  async ordersOf(userId: number): Promise<OrderRow[]> {
    const rows = await this.#db.query(`select ${StoreOrder.columns} from store_orders where account_id = ? order by id desc`, [userId]);
    const { timezone } = this.#settings.get();
    return rows.map((r) => orderRow(StoreOrder.fromRow(r), timezone));
  }

  async #insertOrder(order: Omit<Order, 'id'>): Promise<Order> {
    return { id: await StoreOrder.insert(this.#db, order), ...order };
  }

  #completed(order: Order, username: string, items: OrderItemEvent[]): Promise<void> {
    return this.#events.emit('store.order.completed', {
      orderId: order.id, userId: order.accountId, username, type: order.type, total: order.total,
      currency: order.currency, creationDate: order.creationDate, items,
    });
  }
}
