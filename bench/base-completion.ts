/**
 * The completion of a checkout paid at a gateway, by hand (bench/base-checkout.ts): Stripe's
 * verified webhook, or the test gateway's checkout paid in the console. One transaction, as the
 * server's: the payment locked and held against what was paid, the event recorded once by its
 * unique key, the basket checked again, the order, its promotions, the game server's command and
 * the donation (not for a test order) written, the payment moved from pending by a conditional
 * update (exactly once), and the order's event for the webhook relay (bench/base-webhooks.ts).
 */
import { now } from '../core/format.ts';
import { type BaseDb, BaseDb as Db, type Row } from './base-db.ts';
import { liveDiscount, onShow } from './store.ts';
import {
  bestSale,
  COUPON,
  playerFirst,
  type PricedLine,
  promotionRows,
  Refused,
  type runningSales,
  type Taken,
  useCoupon,
  usePlayer,
} from './store-promotions.ts';

/** A payment its gateway vouches for. */
export interface Paid {
  gateway: 'stripe' | 'test';
  eventId: string;
  paymentId: string;
  chargeRef: string;
  /** What the buyer paid before tax, in cents, and its currency (upper case). */
  net: number;
  currency: string;
  /** The tax row the completion records, when the gateway computed a tax. */
  tax?: (payment: Row) => { sql: string; params: (string | number)[] } | undefined;
}

/** A basket as the payment keeps it (the server's `purchase_lines`). */
export interface Basket {
  lines: { productId: number; productName: string; quantity: number; variables: Record<string, string>; unitPrice: number; unitTotal: number }[];
  adjustments: { kind: 'coupon'; code: string; amount: number; paid: false }[];
}

export const USER =
  'select a.id, a.username, a.username_key, a.email_key, l.platform, l.external_id from users_accounts a ' +
  'left join users_linked_accounts l on l.user_id = a.id where a.id = ?';
export const marks = (n: number) => Array(n).fill('?').join(', ');
export const PRODUCTS = (n: number) =>
  'select p.id, p.category_id, p.name, p.price, p.discounted_price, p.discount_expiry_date, p.stock, r.required_product_id, r.require_linked_account, ' +
  `r.prevent_downgrade from store_products p left join store_product_rules r on r.product_id = p.id where p.id in (${marks(n)}) and p.is_active = 1`;
export const VARIABLES = (n: number) => `select product_id, name, \`required\`, allowed_values from store_product_variables where product_id in (${marks(n)})`;
export const CATEGORIES = 'select id, parent_id, is_active from store_categories';

/** Whether a write failed on a unique key (SQLite or MySQL). */
export const duplicate = (err: unknown) =>
  (err as { code?: string }).code === 'ER_DUP_ENTRY' || /UNIQUE constraint failed/.test(String((err as Error).message));

/** `paid` acted on once: `completed`, `duplicate` (its event seen already) or `unchanged` (the payment is no longer pending). */
export async function complete(db: BaseDb, paid: Paid, told: string[], sales: Sales): Promise<string> {
  return db.sqlite ? completeSqlite(db, paid, told, sales) : completeMysql(db, paid, told, sales);
}

type Sales = Awaited<ReturnType<typeof runningSales>>;
type Statement = { sql: string; params: unknown[] };

/** What the completion writes after its reads, in the server's order. */
function completion(paid: Paid, payment: Row, user: Row, products: Row[], sales: Sales, at: string) {
  const basket = JSON.parse(String(payment.purchase_lines)) as Basket;
  const byId = new Map(products.map((p) => [Number(p.id), p]));
  const lines: PricedLine[] = basket.lines.map((l) => {
    const p = byId.get(l.productId);
    if (!p) throw new Refused('product not found');
    const own = liveDiscount(p, at) ? Number(p.discounted_price) : Number(p.price);
    return {
      id: l.productId,
      categoryId: Number(p.category_id),
      quantity: l.quantity,
      own,
      unit: l.unitTotal,
      sale: bestSale(sales, Number(p.category_id), Number(p.price), at)?.id,
    };
  });
  const subtotal = basket.lines.reduce((sum, l) => sum + l.unitPrice * l.quantity, 0);
  const priced = basket.lines.reduce((sum, l) => sum + l.unitTotal * l.quantity, 0);
  const total = Number(payment.amount);
  const order: Statement = {
    sql: `insert into store_orders (account_id, status, subtotal, discount, total, type, earnings, cashback, credit, currency, payment_api, payment_id, test,
      guest_name, guest_key, guest_email, creation_date) values (?, 'completed', ?, ?, ?, 'payment', ?, 0, 0, 'USD', ?, ?, ?, null, null, null, ?)`,
    params: [user.id, subtotal, subtotal - total, total, total, paid.gateway, payment.id, paid.gateway === 'test' ? 1 : 0, at],
  };
  const items = (orderId: number): Statement => ({
    sql: `insert into store_order_items (order_id, product_id, product_name, quantity, unit_price, unit_total, variables) values ${basket.lines.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
    params: basket.lines.flatMap((l) => [orderId, l.productId, l.productName, l.quantity, l.unitPrice, l.unitTotal, '{}']),
  });
  const stocked = lines.filter((l) => Number(byId.get(l.id)!.stock) !== -1).sort((a, b) => a.id - b.id);
  return { basket, lines, priced, total, order, items, stocked, ids: basket.lines.map((l) => l.productId) };
}

type Completion = ReturnType<typeof completion>;

const COMMANDS = (n: number) => `select c.id, c.product_id, c.server_id, c.command, c.run_on, c.require_online, c.per_unit
  from delivery_commands c join delivery_servers s on s.id = c.server_id where c.run_on = 'purchase' and s.is_active = 1 and c.product_id in (${marks(n)}) order by c.id`;
const STOCK = 'update store_products set stock = stock - ? where id = ? and stock >= ?';

/** The writes after the order's: its commands queued, the donation, the payment moved on from pending (once), the order's event. */
function afterOrder(c: Completion, paid: Paid, user: Row, commands: Row[], orderId: number, told: string[], at: string): Statement[] {
  const out: Statement[] = [];
  if (commands.length) {
    out.push({
      sql:
        'insert into delivery_queue (server_id, user_id, username, order_id, product_id, command, run_on, require_online, status, tries, not_before, ' +
        `last_error, creation_date, updated_date) values ${commands.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, 'waiting', 0, null, null, ?, ?)").join(', ')}`,
      params: commands.flatMap((cmd) => [
        cmd.server_id,
        user.id,
        user.username,
        orderId,
        cmd.product_id,
        String(cmd.command).replaceAll('{username}', user.username),
        cmd.run_on,
        cmd.require_online,
        at,
        at,
      ]),
    });
  }
  // A test order stays off the donation boards.
  if (paid.gateway !== 'test') {
    out.push({
      sql: 'insert into donations_entries (order_id, user_id, username, amount, currency, creation_date) values (?, ?, ?, ?, ?, ?)',
      params: [orderId, user.id, user.username, c.total, 'USD', at],
    });
  }
  out.push({
    sql: "update payments_payments set status = 'completed', order_id = ?, charge_ref = ?, credits = 0, update_date = ? where id = ? and status = 'pending'",
    params: [orderId, paid.chargeRef, at, paid.paymentId],
  });
  const payload = {
    orderId,
    userId: Number(user.id),
    username: user.username,
    linkedAccounts: {},
    type: 'payment',
    total: c.total,
    currency: 'USD',
    creationDate: at,
    items: c.basket.lines.map((l) => ({ productId: l.productId, productName: l.productName, quantity: l.quantity, variables: {} })),
    guestEmail: null,
    test: paid.gateway === 'test',
  };
  const events = Db.outbox(told.includes('store.order.completed') ? [{ name: 'store.order.completed', payload }] : []);
  if (events) out.push(events);
  return out;
}

/** The payment the event names, held against what was paid. */
function matches(payment: Row | undefined, paid: Paid): Row {
  if (!payment) throw new Refused(`The event names no payment of ${paid.gateway}.`);
  if (paid.net !== Number(payment.amount) || paid.currency !== payment.currency) {
    throw new Refused(`The event paid ${paid.net} ${paid.currency}, the payment asks ${payment.amount} ${payment.currency}.`);
  }
  return payment;
}

const EVENT = "insert into payments_events (gateway, event_id, payment_id, kind, creation_date) values (?, ?, ?, 'completed', ?)";
const PAYMENT = 'select id, user_id, amount, currency, purchase_lines, status from payments_payments where gateway = ? and id = ?';

function completeSqlite(db: BaseDb, paid: Paid, told: string[], sales: Sales): string {
  const sqlite = db.sqlite!;
  const run = (s: Statement) => sqlite.run(s.sql, ...(s.params as (string | number | null)[])).changes;
  return sqlite.tx(() => {
    const at = now();
    const payment = matches(sqlite.all(PAYMENT, paid.gateway, paid.paymentId)[0], paid);
    try {
      sqlite.run(EVENT, paid.gateway, paid.eventId, payment.id, at);
    } catch (err) {
      if (duplicate(err)) return 'duplicate';
      throw err;
    }
    if (payment.status !== 'pending') return 'unchanged';
    const [user] = sqlite.all(USER, payment.user_id);
    const ids = (JSON.parse(String(payment.purchase_lines)) as Basket).lines.map((l) => l.productId);
    const products = onShow(sqlite.all(PRODUCTS(ids.length), ...ids), sqlite.all(CATEGORIES));
    sqlite.all(VARIABLES(ids.length), ...ids);
    const c = completion(paid, payment, user!, products, sales, at);
    const orderId = sqlite.run(c.order.sql, ...(c.order.params as (string | number)[])).lastId;
    run(c.items(orderId));
    const taken = takenSqlite(sqlite, c, user!);
    for (const row of promotionRows(orderId, c.lines, c.priced, taken, at)) run(row);
    for (const l of c.stocked) if (sqlite.run(STOCK, l.quantity, l.id, l.quantity).changes === 0) throw new Refused('out of stock');
    const rest = afterOrder(c, paid, user!, sqlite.all(COMMANDS(c.ids.length), ...c.ids), orderId, told, at);
    for (const s of rest) if (run(s) === 0 && s.sql.startsWith('update payments_payments')) throw new Refused('completed twice');
    const tax = paid.tax?.(payment);
    if (tax) run(tax);
    return 'completed';
  });
}

/** The coupon's use and the player's counted, as the buy does (the coupon's row read by its code). */
function takenSqlite(sqlite: NonNullable<BaseDb['sqlite']>, c: Completion, user: Row): Taken | undefined {
  const adjustment = c.basket.adjustments[0];
  if (!adjustment) return undefined;
  const [coupon] = sqlite.all(COUPON, adjustment.code.toLowerCase());
  const taken: Taken = { coupon: coupon!, buyer: String(user.username).toLowerCase(), amount: adjustment.amount };
  const step = (s: { sql: string; params: (string | number)[] }) => sqlite.run(s.sql, ...s.params).changes;
  if (step(useCoupon(taken)) === 0) throw new Refused('the coupon is used up.');
  const first = playerFirst(taken);
  if (step(usePlayer(taken)) === 0 && step({ ...first, sql: `${first.sql} on conflict (coupon_id, buyer_key) do nothing` }) === 0) {
    throw new Refused('the coupon is used up for this player.');
  }
  return taken;
}

async function completeMysql(db: BaseDb, paid: Paid, told: string[], sales: Sales): Promise<string> {
  return db.mysqlTx(async (conn) => {
    const all = async (sql: string, params: unknown[]) => (await conn.execute(sql, params as never[]))[0] as Row[];
    const run = async (s: Statement) => (await conn.execute(s.sql, s.params as never[]))[0] as unknown as { affectedRows: number; insertId: number };
    const at = now();
    const payment = matches((await all(`${PAYMENT} for update`, [paid.gateway, paid.paymentId]))[0], paid);
    try {
      await run({ sql: EVENT, params: [paid.gateway, paid.eventId, payment.id, at] });
    } catch (err) {
      if (duplicate(err)) return 'duplicate';
      throw err;
    }
    if (payment.status !== 'pending') return 'unchanged';
    const [user] = await all(USER, [payment.user_id]);
    const ids = (JSON.parse(String(payment.purchase_lines)) as Basket).lines.map((l) => l.productId);
    const [products, categories] = await Promise.all([all(PRODUCTS(ids.length), ids), all(CATEGORIES, [])]);
    await all(VARIABLES(ids.length), ids);
    const c = completion(paid, payment, user!, onShow(products, categories), sales, at);
    const orderId = (await run(c.order)).insertId;
    await run(c.items(orderId));
    let taken: Taken | undefined;
    const adjustment = c.basket.adjustments[0];
    if (adjustment) {
      const [coupon] = await all(COUPON, [adjustment.code.toLowerCase()]);
      taken = { coupon: coupon!, buyer: String(user!.username).toLowerCase(), amount: adjustment.amount };
      if ((await run(useCoupon(taken))).affectedRows === 0) throw new Refused('the coupon is used up.');
      if ((await run(usePlayer(taken))).affectedRows === 0) await run(playerFirst(taken));
    }
    for (const row of promotionRows(orderId, c.lines, c.priced, taken, at)) await run(row);
    for (const l of c.stocked) if ((await run({ sql: STOCK, params: [l.quantity, l.id, l.quantity] })).affectedRows === 0) throw new Refused('out of stock');
    const rest = afterOrder(c, paid, user!, await all(COMMANDS(c.ids.length), c.ids), orderId, told, at);
    for (const s of rest) if ((await run(s)).affectedRows === 0 && s.sql.startsWith('update payments_payments')) throw new Refused('completed twice');
    const tax = paid.tax?.(payment);
    if (tax) await run(tax);
    return 'completed';
  });
}
