/**
 * The store's orders once placed: a user's history and the console's listing, refunds (from the
 * balance, or a gateway's of a real-money payment), real-money payments recorded (an admin's or the
 * payments feature's), and the figures reports read. Also the order's own writing (its row and
 * `store.order.completed`), which both buys of the checkout share.
 */
import type { AuditLog } from '../../core/audit.ts';
import { countParam, isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { PERMANENT, addSeconds, displayTimestamp, formatMoney, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { count, fields, identifier, sql, sum, typed, where } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { UserAccount, UsersService } from '../users/contract.ts';
import type { DbCatalogue } from './catalogue.ts';
import type { Adjustment, AdminOrderRow, ImportedOrderInput, OrderItemEvent, OrderRow, PaymentOrderInput, StoreOrders } from './contract.ts';
import { StoreOrder, StoreOrderAdjustment, StoreOrderItem, StoreProduct } from './entities.ts';

export type Order = TableRecord<typeof StoreOrder>;

/** Staff's listing: by status, type, account or `search` (see #searched), older than order `before`. */
export interface OrderFilter {
  status?: string;
  type?: string;
  userId?: number;
  search?: string;
  before?: number;
  limit: number;
}
type OrderItem = TableRecord<typeof StoreOrderItem>;

/** Who buys: an account, or a guest (id 0) known by the name typed at checkout. */
export type Buyer = Pick<UserAccount, 'id' | 'username' | 'linkedAccounts'> & Partial<Pick<UserAccount, 'email'>>;

const P = StoreProduct.c;
const O = StoreOrder.c;
const I = StoreOrderItem.c;
const A = StoreOrderAdjustment.c;
const p = StoreProduct.as('p');
const o = StoreOrder.as('o');
const oi = StoreOrderItem.as('oi');

function itemEvent(i: OrderItem): OrderItemEvent {
  return { productId: i.productId, productName: i.productName, quantity: i.quantity, variables: JSON.parse(i.variables) as Record<string, string> };
}

function orderRow(o: Order, timeZone: string, coupon: string | null = null): OrderRow {
  return {
    id: String(o.id),
    accountID: String(o.accountId),
    coupon,
    total: formatMoney(o.total),
    discount: formatMoney(o.discount),
    subtotal: formatMoney(o.subtotal),
    earnings: formatMoney(o.earnings),
    cashback: formatMoney(o.cashback),
    credit: formatMoney(o.credit),
    type: o.type,
    status: o.status,
    paymentAPI: o.paymentApi,
    paymentID: o.paymentId ?? '',
    test: o.test,
    guestName: o.guestName,
    creationDate: displayTimestamp(o.creationDate, timeZone),
  };
}

/** Writes an order; a gateway's payment is recorded once (its pair is unique): a second one is a CONFLICT. */
export async function insertOrder(db: Database, order: Omit<Order, 'id'>): Promise<Order> {
  try {
    return { id: await StoreOrder.insert(db, order), ...order };
  } catch (err) {
    if (isUniqueViolation(err) && order.paymentId !== null) {
      throw new DomainError('CONFLICT', `The payment ${order.paymentApi} ${order.paymentId} is recorded already.`);
    }
    throw err;
  }
}

/** `store.order.completed`, inside the order's transaction: its `onCommitting` listeners (delivery, donations) commit with it. */
export function orderCompleted(events: EventBus, order: Order, user: Buyer, items: OrderItemEvent[]): Promise<void> {
  return events.emit('store.order.completed', {
    orderId: order.id,
    userId: order.accountId,
    username: user.username,
    linkedAccounts: user.linkedAccounts,
    type: order.type,
    total: order.total,
    currency: order.currency,
    creationDate: order.creationDate,
    items,
    guestEmail: order.guestEmail,
    test: order.test,
  });
}

export class DbOrders implements StoreOrders {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #settings: SettingsService;
  readonly #users: UsersService;
  readonly #credits: CreditsService;
  readonly #audit: AuditLog;
  readonly #catalogue: DbCatalogue;

  constructor(deps: {
    db: Database;
    events: EventBus;
    settings: SettingsService;
    users: UsersService;
    credits: CreditsService;
    audit: AuditLog;
    catalogue: DbCatalogue;
  }) {
    this.#db = deps.db;
    this.#events = deps.events;
    this.#settings = deps.settings;
    this.#users = deps.users;
    this.#credits = deps.credits;
    this.#audit = deps.audit;
    this.#catalogue = deps.catalogue;
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
    const [row] = await this.#db.query(sql`select ${fields({ total: sum(O.earnings) })} from ${StoreOrder}
      where ${O.type} = 'payment' and ${O.status} = 'completed' and ${O.test} = ${false} and ${O.creationDate} >= ${from} and ${O.creationDate} < ${to}`);
    return Number(row?.total ?? 0);
  }

  async clearTestOrders(): Promise<number> {
    return this.#db.transaction(async () => {
      const tests = sql`select ${O.id} from ${StoreOrder} where ${O.test} = ${true}`;
      const orderIds = (await this.#db.query(tests)).map((r) => Number(r.id));
      if (orderIds.length) await this.#events.emit('store.order.cleared', { orderIds });
      await this.#db.run(sql`delete from ${StoreOrderItem} where ${I.orderId} in (${tests})`);
      await this.#db.run(sql`delete from ${StoreOrderAdjustment} where ${A.orderId} in (${tests})`);
      const { affectedRows } = await this.#db.run(sql`delete from ${StoreOrder} where ${O.test} = ${true}`);
      return affectedRows;
    });
  }

  /**
   * A real-money payment: an order of type `payment`, the credits it buys, and (through the
   * event) a donation entry; joins the caller's transaction.
   */
  async recordPayment(payment: PaymentOrderInput): Promise<OrderRow> {
    const order = await this.#db.transaction(async () => {
      const user = await this.#users.requireByUsername(payment.username);
      const created = await insertOrder(this.#db, {
        accountId: user.id,
        type: 'payment',
        status: 'completed',
        subtotal: payment.amount,
        discount: 0,
        total: payment.amount,
        earnings: payment.amount,
        cashback: 0,
        credit: payment.credit,
        currency: payment.currency.toUpperCase(),
        paymentApi: payment.paymentApi,
        paymentId: payment.paymentId,
        test: false,
        guestName: null,
        guestKey: null,
        guestEmail: null,
        creationDate: now(),
      });
      if (payment.credit > 0) await this.#credits.change(user.id, payment.credit, { reason: 'payment', orderId: created.id, keyName: payment.keyName });
      await orderCompleted(this.#events, created, user, []);
      const summary = `Recorded a payment of ${formatMoney(payment.amount)} ${created.currency} by ${user.username} (order ${created.id})`;
      await this.#audit.record({ action: 'store.payment.record', target: { type: 'order', id: created.id }, summary, after: payment });
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
        sql`update ${StoreOrder} set ${O.status} = 'refunded' where ${O.id} = ${orderId} and ${O.type} = 'payment' and ${O.status} = 'completed'`,
      );
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
        sql`update ${StoreOrder} set ${O.status} = 'refunded' where ${O.id} = ${orderId} and ${O.status} = 'completed'`,
      );
      if (affectedRows === 0) throw new DomainError('CONFLICT', `Order ${orderId} is ${current.status}: it cannot be refunded.`);
      const user = await this.#users.requireById(current.accountId);
      // The price first: the balance then always covers the cashback (never more than the price).
      if (current.total > 0) await this.#credits.change(user.id, current.total, { reason: 'refund', orderId, keyName });
      if (current.cashback > 0) await this.#credits.change(user.id, -current.cashback, { reason: 'refund', orderId, keyName });
      await this.#undoItems(orderId, user);
      await this.#audit.record({
        action: 'store.order.refund',
        target: { type: 'order', id: orderId },
        summary: `Refunded order ${orderId} of ${user.username} (${formatMoney(current.total)})`,
        before: { status: current.status },
        after: { status: 'refunded' },
      });
      return { ...current, status: 'refunded' };
    });
    return (await this.#orderRows([order]))[0]!;
  }

  /** The stock back, the roles taken back, and `store.order.refunded` (refund commands) for an order's lines, if it has any. */
  async #undoItems(orderId: number, user: Buyer): Promise<void> {
    const items = await this.#items(orderId);
    if (items.length === 0) return;
    const products = await this.#catalogue.productsById(
      items.map((i) => i.productId),
      false,
    );
    for (const item of [...items].sort((a, b) => a.productId - b.productId)) {
      const product = products.get(item.productId);
      if (!product) continue;
      await this.#db.run(sql`update ${StoreProduct} set ${P.stock} = ${P.stock} + ${item.quantity} where ${P.id} = ${product.id} and ${P.stock} <> -1`);
      if (user.id !== 0 && product.giveRoleId > 0 && product.duration >= 0) {
        await this.#takeBackRole(user.id, product.giveRoleId, product.duration * item.quantity);
      }
    }
    await this.#events.emit('store.order.refunded', {
      orderId,
      userId: user.id,
      username: user.username,
      linkedAccounts: user.linkedAccounts,
      items: items.map(itemEvent),
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
    const rows = (
      await this.#db.queryArrays(sql`select ${i.columns} from ${i} join ${p} on ${p.c.id} = ${i.c.productId}
       where ${i.c.orderId} = (select max(${o.c.id}) from ${o} join ${oi} on ${oi.c.orderId} = ${o.c.id} join ${op} on ${op.c.id} = ${oi.c.productId}
                           where ${o.c.accountId} = ${userId} and ${o.c.type} = 'credit' and ${o.c.status} = 'completed' and ${op.c.giveRoleId} = ${roleId})
         and ${p.c.giveRoleId} = ${roleId} order by ${i.c.id}`)
    ).map((r) => StoreOrderItem.fromArray(r));
    if (rows.length === 0) return undefined;
    return { orderId: rows[0]!.orderId, items: rows.map(itemEvent) };
  }

  /**
   * Orders newest first, filtered, `limit` at most, older than the order `before` (keyset paging:
   * the last page costs what the first does).
   */
  async listOrders(filter: OrderFilter): Promise<AdminOrderRow[]> {
    const { status, type, userId, before } = filter;
    const rows = await StoreOrder.select(
      this.#db,
      sql`${where(
        status !== undefined && sql`${O.status} = ${status}`,
        type !== undefined && sql`${O.type} = ${type}`,
        userId !== undefined && sql`${O.accountId} = ${userId}`,
        filter.search !== undefined && (await this.#searched(filter.search)),
        before !== undefined && sql`${O.id} < ${before}`,
      )} order by ${O.id} desc limit ${countParam(filter.limit)}`,
    );
    const shown = await this.#orderRows(rows);
    return shown.map((o, i) => ({ ...o, guestEmail: rows[i]!.guestEmail }));
  }

  /**
   * What a player tells staff, case-insensitive: an account's username (its orders), an in-game
   * name a guest bought under, or the email a guest typed for the receipt.
   */
  async #searched(text: string) {
    const key = text.trim().toLowerCase();
    const account = key.includes('@') ? undefined : await this.#users.findByUsername(key);
    return sql`(${O.guestKey} = ${key.slice(0, 16)} or lower(${O.guestEmail}) = ${key}${account ? sql` or ${O.accountId} = ${account.id}` : sql``})`;
  }

  /** One order and what was bought; ORDER_NOT_FOUND when there is none. */
  async getOrder(orderId: number): Promise<{ order: AdminOrderRow; items: OrderItemEvent[]; adjustments: Adjustment[] }> {
    const order = await StoreOrder.find(this.#db, orderId);
    if (!order) throw new DomainError('ORDER_NOT_FOUND', `No order with ID ${orderId}.`);
    const [items, adjusted] = await Promise.all([
      this.#items(orderId),
      StoreOrderAdjustment.select(this.#db, sql`where ${A.orderId} = ${orderId} order by ${A.id}`),
    ]);
    const adjustments = adjusted.map(({ kind, code, amount, paid }) => ({ kind, code, amount, paid }));
    const coupon = adjustments.find((a) => a.kind === 'coupon')?.code ?? null;
    return { order: { ...orderRow(order, this.#settings.get().timezone, coupon), guestEmail: order.guestEmail }, items: items.map(itemEvent), adjustments };
  }

  /** The ids of a user's completed balance purchases made after order `afterOrderId`, oldest first. */
  async creditOrdersAfter(userId: number, afterOrderId: number): Promise<number[]> {
    const rows = await this.#db.query(sql`select ${fields({ id: O.id })} from ${StoreOrder}
      where ${O.accountId} = ${userId} and ${O.type} = 'credit' and ${O.status} = 'completed' and ${O.id} > ${afterOrderId} order by ${O.id}`);
    return rows.map((r) => Number(r.id));
  }

  /**
   * Completed orders (test orders aside) since `from`, in one scan: their count and total in cents by
   * UTC hour (`2026-11-25 14`), type and period (2: since `today`, 1: since `month`, 0: before), so
   * the dashboard's figures of the day and month and its chart come from one statement; at most 24
   * rows a day per type, whatever the sales. An hour that a period starts in is split at its start.
   */
  async salesByHour(from: string, month: string, today: string): Promise<{ period: number; hour: string; type: string; orders: number; total: number }[]> {
    const period = typed<number>(sql`case when ${O.creationDate} >= ${today} then 2 when ${O.creationDate} >= ${month} then 1 else 0 end`);
    const hour = typed<string>(sql`substr(${O.creationDate}, 1, 13)`);
    const rows = await this.#db.query(sql`
      select ${fields({ period, hour, type: O.type, n: count(), total: sum(O.total) })} from ${StoreOrder}
      where ${O.status} = 'completed' and ${O.test} = ${false} and ${O.creationDate} >= ${from}
      group by ${identifier('period')}, ${identifier('hour')}, ${O.type}`);
    return rows.map((r) => ({ period: Number(r.period), hour: r.hour, type: r.type, orders: Number(r.n), total: Number(r.total ?? 0) }));
  }

  /** With the guest orders placed under the account's username before it was registered (case-insensitive). */
  async ordersOf(userId: number): Promise<OrderRow[]> {
    const user = await this.#users.findById(userId);
    const rows = await StoreOrder.select(
      this.#db,
      sql`where ${O.accountId} = ${userId} or ${O.guestKey} = ${user?.username.toLowerCase() ?? ''} order by ${O.id} desc`,
    );
    return this.#orderRows(rows);
  }

  async importOrder(input: ImportedOrderInput): Promise<{ orderId: number }> {
    return this.#db.transaction(async () => {
      const user = await this.#users.requireById(input.userId);
      const order = await insertOrder(this.#db, {
        accountId: user.id,
        type: input.type ?? 'payment',
        status: input.refunded ? 'refunded' : 'completed',
        subtotal: input.total,
        discount: 0,
        total: input.total,
        earnings: input.type === 'credit' ? 0 : input.total,
        cashback: 0,
        credit: 0,
        currency: (input.currency || this.#settings.get().currency).toUpperCase(),
        paymentApi: input.paymentApi,
        paymentId: input.paymentId,
        test: false,
        guestName: null,
        guestKey: null,
        guestEmail: null,
        creationDate: input.creationDate,
      });
      if (input.items.length)
        await StoreOrderItem.insertMany(
          this.#db,
          input.items.map((i) => ({ orderId: order.id, ...i, unitTotal: i.unitPrice, variables: '{}' })),
        );
      if (order.type === 'payment' && !input.refunded) {
        const { total, currency, creationDate } = order;
        await this.#events.emit('store.order.imported', { orderId: order.id, userId: user.id, username: user.username, total, currency, creationDate });
      }
      return { orderId: order.id };
    });
  }

  /** An order's lines, in the order they were bought. */
  #items(orderId: number): Promise<OrderItem[]> {
    return StoreOrderItem.select(this.#db, sql`where ${I.orderId} = ${orderId} order by ${I.id}`);
  }
}
