/**
 * The rush's checkout through Stripe by hand (bench/rush.ts), as a careful hand-written server
 * would do it, each distinct statement of the server's once: `POST /api/payments/purchase` reads
 * the buyer, the blocks and the basket, prices the sale and the coupon (judged within the limits on
 * wrong codes, bench/store-promotions.ts), claims the request's fingerprint, makes the Checkout
 * Session at Stripe's stand-in (STRIPE_API_BASE, kept-alive) and stores the pending payment.
 * Stripe's signed `checkout.session.completed` webhook is verified (HMAC-SHA256 of `t.payload`)
 * and completes the order in one transaction: the event recorded once by its unique key, the
 * basket checked again, the order, its promotions, the game server's command and the donation
 * written, the payment moved from pending by a conditional update, and the order's event for the
 * webhook relay (bench/base-webhooks.ts).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import type { FastifyReply } from 'fastify';
import { now } from '../core/format.ts';
import { type BaseDb, BaseDb as Db, type Row } from './base-db.ts';
import { checkoutTax, netPaid, type TaxedSession, type TaxQuote, taxRow } from './base-tax.ts';
import type { BaselineRoute } from './scenario.ts';
import { liveDiscount, onShow } from './store.ts';
import {
  bestSale,
  COUPON,
  couponOff,
  judging,
  Limited,
  playerFirst,
  type PricedLine,
  promotionRows,
  Refused,
  runningSales,
  type Taken,
  useCoupon,
  usePlayer,
} from './store-promotions.ts';

const USER =
  'select a.id, a.username, a.username_key, a.email_key, l.platform, l.external_id from users_accounts a ' +
  'left join users_linked_accounts l on l.user_id = a.id where a.id = ?';
const BLOCKS = 'select id from payments_blocks where lifted_date is null and (name_key = ? or user_id = ? or email_key = ?) limit 1';
const marks = (n: number) => Array(n).fill('?').join(', ');
const PRODUCTS = (n: number) =>
  'select p.id, p.category_id, p.name, p.price, p.discounted_price, p.discount_expiry_date, p.stock, r.required_product_id, r.require_linked_account, ' +
  `r.prevent_downgrade from store_products p left join store_product_rules r on r.product_id = p.id where p.id in (${marks(n)}) and p.is_active = 1`;
const VARIABLES = (n: number) => `select product_id, name, \`required\`, allowed_values from store_product_variables where product_id in (${marks(n)})`;
const CATEGORIES = 'select id, parent_id, is_active from store_categories';
const CLAIM = 'insert into payments_checkouts (fingerprint, payment_id, creation_date) values (?, ?, ?)';
const PAYMENT_COLUMNS = 'id, user_id, amount, currency, purchase_lines, tax_facts, status, checkout_ref, checkout_url, creation_date from payments_payments';
const PAYMENT = `select ${PAYMENT_COLUMNS} where gateway = 'stripe' and id = ?`;
const PAYMENT_INSERT = `insert into payments_payments (user_id, guest_name, guest_email, package_id, amount, currency, credits, bonus, purchase_lines,
  tax_facts, id, gateway, checkout_ref, charge_ref, status, order_id, reclaimed, debt, checkout_url, creation_date, update_date)
  values (?, null, null, null, ?, 'USD', 0, 0, ?, ?, ?, 'stripe', ?, null, 'pending', null, 0, 0, ?, ?, ?)`;

interface PurchaseBody {
  gateway: string;
  userID: string;
  lines: { productID: string; quantity?: number }[];
  coupon?: string;
  returnURL: string;
  cancelURL: string;
}

/** A basket as the payment keeps it, for the completion (the server's `purchase_lines`). */
interface Basket {
  lines: { productId: number; productName: string; quantity: number; variables: Record<string, string>; unitPrice: number; unitTotal: number }[];
  adjustments: { kind: 'coupon'; code: string; amount: number; paid: false }[];
}

const refused = (reply: FastifyReply, status: number, error: string, message: string) => reply.code(status).send({ status: false, error, message });

/** Whether a write failed on a unique key (SQLite or MySQL). */
const duplicate = (err: unknown) => (err as { code?: string }).code === 'ER_DUP_ENTRY' || /UNIQUE constraint failed/.test(String((err as Error).message));

/** The basket's lines priced as the store's quote does: the product's own price, lowered by the running sale. */
async function priced(db: BaseDb, body: PurchaseBody, at: string) {
  const ids = body.lines.map((l) => Number(l.productID));
  const products = onShow(await db.all(PRODUCTS(ids.length), ids), await db.all(CATEGORIES));
  await db.all(VARIABLES(ids.length), ids);
  const sales = await runningSales(db, at);
  const byId = new Map(products.map((p) => [Number(p.id), p]));
  return body.lines.map((line): PricedLine & { name: string; price: number } => {
    const p = byId.get(Number(line.productID))!;
    const own = liveDiscount(p, at) ? Number(p.discounted_price) : Number(p.price);
    const sale = bestSale(sales, Number(p.category_id), Number(p.price), at);
    const lowered = sale !== undefined && sale.price < own;
    return {
      id: Number(p.id),
      categoryId: Number(p.category_id),
      quantity: line.quantity ?? 1,
      own,
      unit: lowered ? sale.price : own,
      sale: lowered ? sale.id : undefined,
      name: String(p.name),
      price: Number(p.price),
    };
  });
}

/** Claims the request's fingerprint for payment `id`; a pending payment a copy of it started already is the answer instead. */
async function claim(db: BaseDb, fingerprint: string, id: string, at: string): Promise<Row | undefined> {
  try {
    await db.all(CLAIM, [fingerprint, id, at]);
    return undefined;
  } catch (err) {
    if (!duplicate(err)) throw err;
  }
  const [held] = await db.all('select payment_id from payments_checkouts where fingerprint = ?', [fingerprint]);
  const [payment] = await db.all(PAYMENT, [held?.payment_id ?? '']);
  if (payment?.status === 'pending') return payment;
  // Paid (the rush completes each checkout next): this request starts a new one.
  await db.all('update payments_checkouts set payment_id = ?, creation_date = ? where fingerprint = ? and payment_id = ?', [
    id,
    at,
    fingerprint,
    held?.payment_id ?? '',
  ]);
  return undefined;
}

const stripeAgent = new Agent({ keepAlive: true });

/** A Checkout Session at Stripe (its stand-in), form-encoded as Stripe's SDK sends it: its id and the address to send the player to. */
function stripeSession(id: string, amount: number, description: string, body: PurchaseBody, tax: TaxQuote | undefined): Promise<{ id: string; url: string }> {
  const form = new URLSearchParams({
    mode: 'payment',
    'line_items[0][quantity]': '1',
    'line_items[0][price_data][currency]': 'usd',
    'line_items[0][price_data][unit_amount]': String(amount),
    'line_items[0][price_data][product_data][name]': description,
    ...(tax ? { 'line_items[0][price_data][tax_behavior]': tax.behavior, 'automatic_tax[enabled]': 'true', billing_address_collection: 'required' } : {}),
    success_url: body.returnURL,
    cancel_url: body.cancelURL,
    client_reference_id: id,
    'metadata[paymentID]': id,
    'payment_intent_data[metadata][paymentID]': id,
  }).toString();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${process.env.STRIPE_API_BASE}/v1/checkout/sessions`,
      {
        method: 'POST',
        agent: stripeAgent,
        headers: {
          authorization: `Bearer ${process.env.STRIPE_SECRET_KEY}`,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': String(Buffer.byteLength(form)),
          'idempotency-key': `stripe-node-retry-${randomBytes(16).toString('hex')}`,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text) as { id: string; url: string }) : reject(new Error(`Stripe: ${text}`))));
      },
    );
    req.on('error', reject);
    req.end(form);
  });
}

async function purchase(db: BaseDb, body: PurchaseBody, ip: string) {
  const at = now();
  const [user] = await db.all(USER, [Number(body.userID)]);
  if (!user) throw new Refused(`There is no user ${body.userID}.`);
  if ((await db.all(BLOCKS, [user.username_key, user.id, user.email_key])).length) throw new Refused('This buyer may not buy.');
  const lines = await priced(db, body, at);
  const subtotal = lines.reduce((sum, l) => sum + l.unit * l.quantity, 0);
  let off = 0;
  let code = '';
  if (body.coupon) {
    const sent = body.coupon;
    off = await judging(db, ip, Number(user.id), async () => {
      const [coupon] = await db.all(COUPON, [sent.trim().toLowerCase()]);
      code = String(coupon?.code);
      return couponOff(sent, coupon, undefined, lines, subtotal, at);
    });
  }
  const amount = subtotal - off;
  const tax = checkoutTax();
  const basket: Basket = {
    lines: lines.map((l) => ({ productId: l.id, productName: l.name, quantity: l.quantity, variables: {}, unitPrice: l.price, unitTotal: l.unit })),
    adjustments: off ? [{ kind: 'coupon', code, amount: off, paid: false }] : [],
  };
  const id = randomBytes(16).toString('hex');
  const fingerprint = createHash('sha256')
    .update(JSON.stringify(['purchase', 'stripe', user.id, body.lines, body.coupon?.toLowerCase() ?? null, amount, 'USD', body.returnURL, body.cancelURL]))
    .digest('hex');
  const held = await claim(db, fingerprint, id, at);
  if (held) return { id: String(held.id), url: String(held.checkout_url), amount, tax };
  const description = basket.lines.map((l) => `${l.productName} x${l.quantity}`).join(', ');
  const session = await stripeSession(id, amount, description, body, tax);
  await db.all(PAYMENT_INSERT, [user.id, amount, JSON.stringify(basket), tax?.facts ?? null, id, session.id, session.url, at, at]);
  return { id, url: session.url, amount, tax };
}

// ---- the completion

/** Stripe's signature scheme: `t=<seconds>,v1=<hex>`, the HMAC-SHA256 of `t.payload` with the signing secret, within five minutes. */
function verified(raw: Buffer, header: unknown): boolean {
  if (typeof header !== 'string') return false;
  const parts = header.split(',').map((p) => p.split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  if (!t || Math.abs(Date.now() / 1000 - Number(t)) > 300) return false;
  const expected = createHmac('sha256', String(process.env.STRIPE_WEBHOOK_SECRET)).update(`${t}.`).update(raw).digest();
  return parts.some(([k, v]) => k === 'v1' && v !== undefined && v.length === 64 && timingSafeEqual(Buffer.from(v, 'hex'), expected));
}

interface Session extends TaxedSession {
  id: string;
  client_reference_id: string;
  payment_status: string;
  currency: string;
  payment_intent: string;
}

export const baselineRoutes: BaselineRoute[] = [
  {
    method: 'POST',
    url: '/api/payments/purchase',
    async handler(db, request, reply) {
      try {
        const { id, url, amount, tax } = await purchase(db, request.body as PurchaseBody, request.ip);
        const total = amount + (tax && !tax.inclusive ? tax.amount : 0);
        const money = (cents: number) => (cents / 100).toFixed(2);
        return {
          status: true,
          data: { paymentID: id, checkoutURL: url, amount: money(amount), currency: 'USD', tax: money(tax?.amount ?? 0), total: money(total) },
        };
      } catch (err) {
        if (err instanceof Refused) return refused(reply, 400, 'REFUSED', err.message);
        if (err instanceof Limited)
          return reply.code(429).header('retry-after', err.retryAfter).send({ status: false, error: 'RATE_LIMITED', message: err.message });
        throw err;
      }
    },
  },
  {
    method: 'POST',
    url: '/api/payments/webhooks/stripe',
    raw: true,
    async handler(db, request, reply) {
      const raw = request.body as Buffer;
      if (!verified(raw, request.headers['stripe-signature'])) return refused(reply, 400, 'INVALID_SIGNATURE', 'The Stripe signature does not match.');
      const event = JSON.parse(raw.toString('utf8')) as { id: string; type: string; data: { object: Session } };
      const session = event.data.object;
      if (event.type !== 'checkout.session.completed' || session.payment_status !== 'paid') return { status: true, data: { result: 'ignored' } };
      const told = await db.subscribed(['store.order.completed']);
      const sales = await runningSales(db, now());
      try {
        const result = db.sqlite ? completeSqlite(db, event.id, session, told, sales) : await completeMysql(db, event.id, session, told, sales);
        return { status: true, data: { result } };
      } catch (err) {
        if (err instanceof Refused) return refused(reply, 400, 'REFUSED', err.message);
        throw err;
      }
    },
  },
];

type Sales = Awaited<ReturnType<typeof runningSales>>;
type Statement = { sql: string; params: unknown[] };

/** What the completion writes after its reads, in the server's order; `coupon`: the coupon's row (read by its code in the transaction). */
function completion(payment: Row, user: Row, products: Row[], sales: Sales, at: string) {
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
      guest_name, guest_key, guest_email, creation_date) values (?, 'completed', ?, ?, ?, 'payment', ?, 0, 0, 'USD', 'stripe', ?, 0, null, null, null, ?)`,
    params: [user.id, subtotal, subtotal - total, total, total, payment.id, at],
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
function afterOrder(c: Completion, payment: Row, user: Row, commands: Row[], orderId: number, session: Session, told: string[], at: string): Statement[] {
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
  out.push({
    sql: 'insert into donations_entries (order_id, user_id, username, amount, currency, creation_date) values (?, ?, ?, ?, ?, ?)',
    params: [orderId, user.id, user.username, c.total, 'USD', at],
  });
  out.push({
    sql: "update payments_payments set status = 'completed', order_id = ?, charge_ref = ?, credits = 0, update_date = ? where id = ? and status = 'pending'",
    params: [orderId, session.payment_intent, at, payment.id],
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
    test: false,
  };
  const events = Db.outbox(told.includes('store.order.completed') ? [{ name: 'store.order.completed', payload }] : []);
  if (events) out.push(events);
  return out;
}

/** The payment the event names, checked against what was paid; `undefined` when the event was seen already. */
function matches(payment: Row | undefined, session: Session): Row {
  if (!payment) throw new Refused(`The event names no payment of stripe.`);
  if (netPaid(session) !== Number(payment.amount) || session.currency.toUpperCase() !== payment.currency) {
    throw new Refused(`The event paid ${session.amount_total} ${session.currency}, the payment asks ${payment.amount} ${payment.currency}.`);
  }
  return payment;
}

const EVENT = "insert into payments_events (gateway, event_id, payment_id, kind, creation_date) values ('stripe', ?, ?, 'completed', ?)";

function completeSqlite(db: BaseDb, eventId: string, session: Session, told: string[], sales: Sales): string {
  const sqlite = db.sqlite!;
  const run = (s: Statement) => sqlite.run(s.sql, ...(s.params as (string | number | null)[])).changes;
  return sqlite.tx(() => {
    const at = now();
    const payment = matches(sqlite.all(PAYMENT, session.client_reference_id)[0], session);
    try {
      sqlite.run(EVENT, eventId, payment.id, at);
    } catch (err) {
      if (duplicate(err)) return 'duplicate';
      throw err;
    }
    if (payment.status !== 'pending') return 'unchanged';
    const [user] = sqlite.all(USER, payment.user_id);
    const ids = (JSON.parse(String(payment.purchase_lines)) as Basket).lines.map((l) => l.productId);
    const products = onShow(sqlite.all(PRODUCTS(ids.length), ...ids), sqlite.all(CATEGORIES));
    sqlite.all(VARIABLES(ids.length), ...ids);
    const c = completion(payment, user!, products, sales, at);
    const orderId = sqlite.run(c.order.sql, ...(c.order.params as (string | number)[])).lastId;
    run(c.items(orderId));
    const taken = takenSqlite(sqlite, c, user!);
    for (const row of promotionRows(orderId, c.lines, c.priced, taken, at)) run(row);
    for (const l of c.stocked) if (sqlite.run(STOCK, l.quantity, l.id, l.quantity).changes === 0) throw new Refused('out of stock');
    const rest = afterOrder(c, payment, user!, sqlite.all(COMMANDS(c.ids.length), ...c.ids), orderId, session, told, at);
    for (const s of rest) if (run(s) === 0 && s.sql.startsWith('update payments_payments')) throw new Refused('completed twice');
    const tax = taxRow(payment, session);
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

async function completeMysql(db: BaseDb, eventId: string, session: Session, told: string[], sales: Sales): Promise<string> {
  return db.mysqlTx(async (conn) => {
    const all = async (sql: string, params: unknown[]) => (await conn.execute(sql, params as never[]))[0] as Row[];
    const run = async (s: Statement) => (await conn.execute(s.sql, s.params as never[]))[0] as unknown as { affectedRows: number; insertId: number };
    const at = now();
    const payment = matches((await all(`${PAYMENT} for update`, [session.client_reference_id]))[0], session);
    try {
      await run({ sql: EVENT, params: [eventId, payment.id, at] });
    } catch (err) {
      if (duplicate(err)) return 'duplicate';
      throw err;
    }
    if (payment.status !== 'pending') return 'unchanged';
    const [user] = await all(USER, [payment.user_id]);
    const ids = (JSON.parse(String(payment.purchase_lines)) as Basket).lines.map((l) => l.productId);
    const [products, categories] = await Promise.all([all(PRODUCTS(ids.length), ids), all(CATEGORIES, [])]);
    await all(VARIABLES(ids.length), ids);
    const c = completion(payment, user!, onShow(products, categories), sales, at);
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
    const rest = afterOrder(c, payment, user!, await all(COMMANDS(c.ids.length), c.ids), orderId, session, told, at);
    for (const s of rest) if ((await run(s)).affectedRows === 0 && s.sql.startsWith('update payments_payments')) throw new Refused('completed twice');
    const tax = taxRow(payment, session);
    if (tax) await run(tax);
    return 'completed';
  });
}
