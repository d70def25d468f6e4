/**
 * The rush's checkouts at a gateway by hand (bench/rush.ts), as a careful hand-written server would
 * do them, each distinct statement of the server's once: `POST /api/payments/purchase` reads the
 * buyer, the blocks and the basket, prices the sale and the coupon (judged within the limits on
 * wrong codes, bench/store-promotions.ts), claims the request's fingerprint, makes the Checkout
 * Session at Stripe's stand-in (STRIPE_API_BASE, kept-alive; the test gateway's checkout is a
 * console page, no call) and stores the pending payment. Stripe's signed
 * `checkout.session.completed` webhook is verified (HMAC-SHA256 of `t.payload`), and the test
 * checkout paid in the console on the staff session and its CSRF token (BENCH_BASE_TESTMODE=1, the
 * testmode variant); either completes the order once (bench/base-completion.ts).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import type { FastifyReply } from 'fastify';
import { now } from '../core/format.ts';
import type { BaseDb, Row } from './base-db.ts';
import { type Basket, CATEGORIES, complete, duplicate, type Paid, PRODUCTS, USER, VARIABLES } from './base-completion.ts';
import { Exists, keepSession, startSubscription, subscriptionCheckout } from './base-subscriptions.ts';
import { checkoutTax, netPaid, type TaxedSession, type TaxQuote, taxRow } from './base-tax.ts';
import { staffOf } from './dashboard.ts';
import type { BaselineRoute } from './scenario.ts';
import { onShow, pricedLine } from './store.ts';
import { COUPON, couponOff, judging, Limited, type PricedLine, Refused, runningSales } from './store-promotions.ts';

const BLOCKS = 'select id from payments_blocks where lifted_date is null and (name_key = ? or user_id = ? or email_key = ?) limit 1';
const CLAIM = 'insert into payments_checkouts (fingerprint, payment_id, creation_date) values (?, ?, ?)';
const PAYMENT = 'select id, gateway, amount, currency, status, checkout_url from payments_payments where id = ?';
const PAYMENT_INSERT = `insert into payments_payments (user_id, guest_name, guest_email, package_id, amount, currency, credits, bonus, purchase_lines,
  tax_facts, id, gateway, checkout_ref, charge_ref, status, order_id, reclaimed, debt, checkout_url, creation_date, update_date)
  values (?, null, null, null, ?, 'USD', 0, 0, ?, ?, ?, ?, ?, null, 'pending', null, 0, 0, ?, ?, ?)`;
/** The test gateway is offered while the shop is in test mode, as the server's site setting testMode. */
const TEST_MODE = process.env.BENCH_BASE_TESTMODE === '1';

interface PurchaseBody {
  gateway: string;
  userID: string;
  productID?: string;
  lines: { productID: string; quantity?: number }[];
  coupon?: string;
  returnURL: string;
  cancelURL: string;
}

const refused = (reply: FastifyReply, status: number, error: string, message: string) => reply.code(status).send({ status: false, error, message });

/** The basket's lines priced as the store's quote does: the product's own price, lowered by the running sale. */
async function priced(db: BaseDb, body: PurchaseBody, at: string) {
  const ids = body.lines.map((l) => Number(l.productID));
  const products = onShow(await db.all(PRODUCTS(ids.length), ids), await db.all(CATEGORIES));
  await db.all(VARIABLES(ids.length), ids);
  const sales = await runningSales(db, at);
  const byId = new Map(products.map((p) => [Number(p.id), p]));
  return body.lines.map((line): PricedLine & { name: string; price: number } => {
    const p = byId.get(Number(line.productID))!;
    return { ...pricedLine(p, line.quantity ?? 1, sales, at), name: String(p.name), price: Number(p.price) };
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
  return stripeCall({
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
  });
}

/** A Checkout Session in subscription mode for a plan's price every period (Stripe Billing). */
function subscriptionSession(reference: string, plan: Row, name: string, body: PurchaseBody): Promise<{ id: string; url: string }> {
  return stripeCall({
    mode: 'subscription',
    'line_items[0][quantity]': '1',
    'line_items[0][price_data][currency]': 'usd',
    'line_items[0][price_data][unit_amount]': String(plan.price),
    'line_items[0][price_data][product_data][name]': name,
    'line_items[0][price_data][recurring][interval]': String(plan.interval_unit).replace(/s$/, ''),
    'line_items[0][price_data][recurring][interval_count]': String(plan.interval_count),
    'subscription_data[metadata][subscriptionReference]': reference,
    success_url: body.returnURL,
    cancel_url: body.cancelURL,
    client_reference_id: reference,
    'metadata[subscriptionReference]': reference,
  });
}

/** A Checkout Session made at Stripe (its stand-in): its id and the address to send the player to. */
function stripeCall(fields: Record<string, string>): Promise<{ id: string; url: string }> {
  const form = new URLSearchParams(fields).toString();
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
  if (body.gateway !== 'stripe' && !(body.gateway === 'test' && TEST_MODE)) throw new Refused(`The gateway ${body.gateway} is not available.`);
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
    .update(JSON.stringify(['purchase', body.gateway, user.id, body.lines, body.coupon?.toLowerCase() ?? null, amount, 'USD', body.returnURL, body.cancelURL]))
    .digest('hex');
  const held = await claim(db, fingerprint, id, at);
  if (held) return { id: String(held.id), url: String(held.checkout_url), amount, tax };
  const description = basket.lines.map((l) => `${l.productName} x${l.quantity}`).join(', ');
  // The test gateway's checkout is the console's page, its buyer sent back to the addresses given.
  const back = new URLSearchParams({ return: body.returnURL, cancel: body.cancelURL });
  const session =
    body.gateway === 'test'
      ? { id: `test-${id}`, url: `/console/payments/test-checkout/${id}?${back}` }
      : await stripeSession(id, amount, description, body, tax);
  await db.all(PAYMENT_INSERT, [user.id, amount, JSON.stringify(basket), tax?.facts ?? null, id, body.gateway, session.id, session.url, at, at]);
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
  mode: string;
  subscription?: string;
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
    url: '/api/subscriptions/checkout',
    async handler(db, request, reply) {
      const body = request.body as PurchaseBody;
      try {
        const { reference, plan, name } = await subscriptionCheckout(db, Number(body.userID), Number(body.productID));
        const session = await subscriptionSession(reference, plan, name, body);
        await keepSession(db, reference, session.id);
        return reply.code(201).send({ reference, checkoutURL: session.url });
      } catch (err) {
        if (err instanceof Exists) return refused(reply, 409, 'SUBSCRIPTION_EXISTS', err.message);
        if (err instanceof Refused) return refused(reply, 400, 'REFUSED', err.message);
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
      if (session.mode === 'subscription') {
        const result = await startSubscription(db, event.id, session.client_reference_id, String(session.subscription), session.amount_total);
        return { status: true, data: { result } };
      }
      const paid: Paid = {
        gateway: 'stripe',
        eventId: event.id,
        paymentId: session.client_reference_id,
        chargeRef: session.payment_intent,
        net: netPaid(session),
        currency: session.currency.toUpperCase(),
        tax: (payment) => taxRow(payment, session),
      };
      try {
        const result = await complete(db, paid, await db.subscribed(['store.order.completed']), await runningSales(db, now()));
        return { status: true, data: { result } };
      } catch (err) {
        if (err instanceof Refused) return refused(reply, 400, 'REFUSED', err.message);
        throw err;
      }
    },
  },
  {
    method: 'POST',
    url: '/console/payments/test-checkout/:id/pay',
    session: true,
    async handler(db, request, reply) {
      const staff = await staffOf(db, request.headers.cookie);
      if (!staff) return reply.redirect('/console/login', 303);
      if ((request.body as { _csrf?: string })?._csrf !== staff.csrf || staff.access !== 'admin') return reply.code(403).send('Not allowed');
      const id = (request.params as { id: string }).id;
      const [payment] = await db.all(PAYMENT, [id]);
      if (payment?.gateway !== 'test') return reply.code(404).send(`There is no test payment ${id}.`);
      const paid: Paid = {
        gateway: 'test',
        eventId: `test-paid-${id}`,
        paymentId: id,
        chargeRef: `test-${id}`,
        net: Number(payment.amount),
        currency: payment.currency,
      };
      const result = await complete(db, paid, await db.subscribed(['store.order.completed']), await runningSales(db, now()));
      const onward = new URL(String(payment.checkout_url), 'http://localhost').searchParams.get('return') ?? '/';
      return reply
        .header('set-cookie', `console_notice=${encodeURIComponent(`Test payment ${result}.`)}; Max-Age=60; Path=/console; HttpOnly; SameSite=Strict`)
        .redirect(onward, 303);
    },
  },
];
