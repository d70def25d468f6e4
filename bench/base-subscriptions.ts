/**
 * The rush's monthly packages by hand (BENCH_RUSH_VARIANT=subscriptions, bench/rush.ts), as the
 * server's subscriptions feature sells them through Stripe Billing, each distinct statement of the
 * server's once. `POST /api/subscriptions/checkout` reads the product's plan, the buyer and the
 * product, refuses a second live subscription of the pair, records the checkout, asks Stripe's
 * stand-in for a Checkout Session in subscription mode and keeps its id. Stripe's
 * `checkout.session.completed` in subscription mode (bench/base-checkout.ts verifies it) starts the
 * subscription once, in one transaction: the event recorded by its unique key, the subscription
 * (unique while live for its player and product) and its first paid period, the product's
 * commands queued, the checkout and the event tied to it.
 */
import { parseTimestamp, now, toTimestamp } from '../core/format.ts';
import type { BaseDb, Row } from './base-db.ts';
import { CATEGORIES, duplicate, USER } from './base-completion.ts';
import { onShow, queued } from './store.ts';
import { Refused } from './store-promotions.ts';

const PLAN = 'select id, product_id, interval_unit, interval_count, price, trial_days, role_id, role_days, renew_with, is_active from subscriptions_plans ';
const PRODUCT = 'select id, category_id, name, price, is_active from store_products where id in (?) and is_active = 1 order by priority, id';
const VARIABLES =
  'select product_id, name, `required`, allowed_values from store_product_variables where product_id in (select id from store_products where id in (?)) ' +
  'order by product_id, `position`';
const LIVE = 'select id from subscriptions_subscriptions where live_key = ?';
const CHECKOUT =
  "insert into subscriptions_checkouts (user_id, product_id, plan_id, gateway, checkout_ref, subscription_id, creation_date) values (?, ?, ?, 'stripe', null, null, ?)";
const BLOCKS = 'select id from payments_blocks where lifted_date is null and (name_key = ? or user_id = ? or email_key = ?) limit 1';

/** A player who already has this product live: 409, as the server's SUBSCRIPTION_EXISTS. */
export class Exists extends Error {}

/** A subscription checkout opened: its reference (the checkout's id) and what it costs a period, for Stripe's session. */
export async function subscriptionCheckout(db: BaseDb, userId: number, productId: number): Promise<{ reference: string; plan: Row; user: Row; name: string }> {
  const [plan] = await db.all(`${PLAN}where product_id = ? and is_active = 1`, [productId]);
  if (!plan) throw new Refused(`Product ${productId} is not sold as a subscription.`);
  const [user] = await db.all(USER, [userId]);
  if (!user) throw new Refused(`There is no user ${userId}.`);
  const [product] = onShow(await db.all(PRODUCT, [productId]), await db.all(CATEGORIES));
  await db.all(VARIABLES, [productId]);
  if ((await db.all(LIVE, [`${userId}:${productId}`])).length) throw new Exists(`Player ${userId} already subscribes to product ${productId}.`);
  const at = now();
  let reference: number;
  if (db.sqlite) reference = db.sqlite.run(CHECKOUT, userId, productId, plan.id, at).lastId;
  else reference = ((await db.pool!.execute(CHECKOUT, [userId, productId, plan.id, at]))[0] as { insertId: number }).insertId;
  if ((await db.all(BLOCKS, [user.username_key, user.id, user.email_key])).length) throw new Refused('This buyer may not buy.');
  return { reference: String(reference), plan, user, name: String(product!.name) };
}

/** The Checkout Session's id kept with the checkout. */
export async function keepSession(db: BaseDb, reference: string, sessionId: string): Promise<void> {
  await db.all('update subscriptions_checkouts set checkout_ref = ? where id = ?', [sessionId, Number(reference)]);
}

/** The end of a period `count` `unit`s after `start`, as the server's plans count it. */
function periodEnd(start: string, unit: string, count: number): string {
  const date = parseTimestamp(start);
  if (unit === 'days') date.setUTCDate(date.getUTCDate() + count);
  else if (unit === 'weeks') date.setUTCDate(date.getUTCDate() + 7 * count);
  else if (unit === 'years') date.setUTCFullYear(date.getUTCFullYear() + count);
  else date.setUTCMonth(date.getUTCMonth() + count);
  return toTimestamp(date);
}

type Statement = { sql: string; params: (string | number | null)[] };

const EVENT =
  "insert into subscriptions_gateway_events (gateway, event_id, subscription_id, kind, creation_date) values ('stripe', ?, 0, 'subscription-started', ?)";
const SUBSCRIPTION = `insert into subscriptions_subscriptions (user_id, product_id, plan_id, live_key, gateway, gateway_ref, anchor_date, interval_unit,
  interval_count, price, currency, status, period_no, period_start, period_end, grace_until, cancel_at_period_end, reminded_period, next_plan_id,
  start_date, end_date, end_reason) values (?, ?, ?, ?, 'stripe', ?, ?, ?, ?, ?, 'USD', 'active', 1, ?, ?, null, 0, 0, null, ?, null, null)`;
const COMMANDS = `select c.id, c.product_id, c.server_id, c.command, c.run_on, c.require_online, c.per_unit
  from delivery_commands c join delivery_servers s on s.id = c.server_id where c.run_on = 'purchase' and s.is_active = 1 and c.product_id in (?) order by c.id`;

/** The subscription's writes after its reads: the subscription, its first period, its commands; then what ties the checkout and the event to it. */
function started(checkout: Row, plan: Row, user: Row, ref: string, amount: number, at: string) {
  const end = periodEnd(at, String(plan.interval_unit), Number(plan.interval_count));
  const subscription: Statement = {
    sql: SUBSCRIPTION,
    params: [
      checkout.user_id,
      checkout.product_id,
      plan.id,
      `${checkout.user_id}:${checkout.product_id}`,
      ref,
      at,
      plan.interval_unit,
      plan.interval_count,
      plan.price,
      at,
      end,
      at,
    ],
  };
  const rest = (id: number, commands: Row[], eventId: string): Statement[] => {
    const queue = queued(commands, user, 0, at);
    return [
      {
        sql: "insert into subscriptions_periods (subscription_id, period_no, amount, period_start, period_end, status, paid_date) values (?, 1, ?, ?, ?, 'paid', ?)",
        params: [id, amount, at, end, at],
      },
      ...(queue ? [queue] : []),
      { sql: 'update subscriptions_checkouts set subscription_id = ? where id = ? and subscription_id is null', params: [id, checkout.id] },
      { sql: "update subscriptions_gateway_events set subscription_id = ? where gateway = 'stripe' and event_id = ?", params: [id, eventId] },
    ];
  };
  return { subscription, rest };
}

const CHECKOUT_ROW = 'select id, user_id, product_id, plan_id, gateway, checkout_ref, subscription_id from subscriptions_checkouts where id = ?';
const BY_REF = "select id from subscriptions_subscriptions where gateway = 'stripe' and gateway_ref = ?";

/** Stripe's first payment of subscription `ref` for checkout `reference`: `started`, or `duplicate` / `unchanged` when seen already. */
export async function startSubscription(db: BaseDb, eventId: string, reference: string, ref: string, amount: number): Promise<string> {
  if (db.sqlite) {
    const sqlite = db.sqlite;
    return sqlite.tx(() => {
      const at = now();
      try {
        sqlite.run(EVENT, eventId, at);
      } catch (err) {
        if (duplicate(err)) return 'duplicate';
        throw err;
      }
      const [checkout] = sqlite.all(CHECKOUT_ROW, Number(reference));
      if (!checkout) throw new Refused(`There is no subscription checkout ${reference}.`);
      if (sqlite.all(BY_REF, ref).length) return 'unchanged';
      const [plan] = sqlite.all(`${PLAN}where id = ?`, checkout.plan_id);
      const [user] = sqlite.all(USER, checkout.user_id);
      const s = started(checkout, plan!, user!, ref, amount, at);
      const id = sqlite.run(s.subscription.sql, ...s.subscription.params).lastId;
      sqlite.all(PRODUCT, checkout.product_id);
      sqlite.all(VARIABLES, checkout.product_id);
      for (const statement of s.rest(id, sqlite.all(COMMANDS, checkout.product_id), eventId)) sqlite.run(statement.sql, ...statement.params);
      return 'started';
    });
  }
  return db.mysqlTx(async (conn) => {
    const all = async (sql: string, params: unknown[]) => (await conn.execute(sql, params as never[]))[0] as Row[];
    const at = now();
    try {
      await conn.execute(EVENT, [eventId, at]);
    } catch (err) {
      if (duplicate(err)) return 'duplicate';
      throw err;
    }
    const [checkout] = await all(CHECKOUT_ROW, [Number(reference)]);
    if (!checkout) throw new Refused(`There is no subscription checkout ${reference}.`);
    if ((await all(BY_REF, [ref])).length) return 'unchanged';
    const [plan] = await all(`${PLAN}where id = ?`, [checkout.plan_id]);
    const [user] = await all(USER, [checkout.user_id]);
    const s = started(checkout, plan!, user!, ref, amount, at);
    const id = ((await conn.execute(s.subscription.sql, s.subscription.params))[0] as { insertId: number }).insertId;
    await all(PRODUCT, [checkout.product_id]);
    await all(VARIABLES, [checkout.product_id]);
    for (const statement of s.rest(id, await all(COMMANDS, [checkout.product_id]), eventId)) await conn.execute(statement.sql, statement.params);
    return 'started';
  });
}
