/**
 * Stripe Billing through HTTP: the checkout in subscription mode asked of Stripe (nock), and
 * Stripe's webhooks signed as Stripe signs them, redelivered and racing on two instances.
 */
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import t from 'tap';
import { count, fields, sql } from '../../../core/sql.ts';
import { offline, STRIPE_ENV, stripeWebhook } from '../../../test/gateways.ts';
import { rowCount } from '../../../test/fixtures.ts';
import { call, overBoth, sharedDatabaseUrl } from '../../../test/helper.ts';
import { TestClock } from '../../../core/clock.ts';
import { CreditsLedgerEntry } from '../../credits/entities.ts';
import { SubscriptionsPeriod } from '../entities.ts';
import { balanceOf, commands, makeUser, roles, subscriptionOf, subscriptionsApp, sweep, until, vipPlan } from './fixtures.ts';

offline(t);

const DAY_S = 86_400;
const T0 = Math.floor(Date.UTC(2027, 0, 10) / 1000);

const stripeApp = (t: Parameters<typeof subscriptionsApp>[0], opts: { databaseUrl?: string; clock?: TestClock } = {}) =>
  subscriptionsApp(t, { ...opts, features: ['payments'], env: STRIPE_ENV });

/** Stripe's answer to a Checkout Session create, handing the form it was sent to `asked`. */
function mockSession(sessionId: string, asked?: (form: URLSearchParams) => void): nock.Scope {
  return nock('https://api.stripe.com')
    .post('/v1/checkout/sessions', (body) => {
      asked?.(new URLSearchParams(body as string));
      return true;
    })
    .reply(200, { id: sessionId, object: 'checkout.session', url: `https://checkout.stripe.com/c/pay/${sessionId}` });
}

const checkout = (app: FastifyInstance, userId: number, productId: number, body: Record<string, unknown> = {}) =>
  call(app, '/api/subscriptions/checkout', {
    body: {
      userID: userId,
      productID: productId,
      gateway: 'stripe',
      returnURL: 'https://play.example.com/ok',
      cancelURL: 'https://play.example.com/no',
      ...body,
    },
    as: 'json',
  });

const started = (eventId: string, reference: string, subscription: string, amount = 500) => ({
  id: eventId,
  type: 'checkout.session.completed',
  data: {
    object: {
      id: `cs_${reference}`,
      object: 'checkout.session',
      mode: 'subscription',
      client_reference_id: reference,
      subscription,
      payment_status: amount > 0 ? 'paid' : 'no_payment_required',
      amount_total: amount,
      currency: 'usd',
    },
  },
});

const invoice = (eventId: string, type: string, subscription: string, o: { reason?: string; end?: number; amount?: number } = {}) => ({
  id: eventId,
  type,
  data: {
    object: {
      id: `in_${eventId}`,
      object: 'invoice',
      billing_reason: o.reason ?? 'subscription_cycle',
      amount_paid: type === 'invoice.paid' ? (o.amount ?? 500) : 0,
      amount_due: o.amount ?? 500,
      currency: 'usd',
      parent: { type: 'subscription_details', subscription_details: { subscription, metadata: {} } },
      lines: { object: 'list', data: [{ id: 'il_1', object: 'line_item', period: { start: (o.end ?? T0) - 30 * DAY_S, end: o.end ?? T0 } }] },
    },
  },
});

const deleted = (eventId: string, subscription: string) => ({
  id: eventId,
  type: 'customer.subscription.deleted',
  data: { object: { id: subscription, object: 'subscription', status: 'canceled' } },
});

const result = async (res: Awaited<ReturnType<typeof stripeWebhook>>) => {
  if (res.statusCode !== 200) throw new Error(`webhook answered ${res.statusCode}: ${res.body}`);
  return res.json().data.result as string;
};

/** A checkout at Stripe and its completion: the subscription's id. */
async function subscribeAtStripe(app: FastifyInstance, userId: number, productId: number, subscription: string): Promise<string> {
  mockSession(`cs_${subscription}`);
  const res = await checkout(app, userId, productId);
  if (res.statusCode !== 201) throw new Error(res.body);
  if ((await result(await stripeWebhook(app, started(`evt_start_${subscription}`, res.json().reference, subscription)))) !== 'started')
    throw new Error('not started');
  const [sub] = (await call(app, `/api/subscriptions?userID=${userId}`)).json();
  return sub.id;
}

t.test('Stripe Billing: the checkout in subscription mode, the start, renewals from invoice.paid, each event acted on once', async (t) => {
  const app = await stripeApp(t);
  const { productId, roleId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve', 0);
  const renewed: number[] = [];
  app.events.on('subscriptions.renewed', (e) => void renewed.push(e.period));

  let form = new URLSearchParams();
  mockSession('cs_1', (f) => {
    form = f;
  });
  const res = await checkout(app, steve, productId);
  t.equal(res.statusCode, 201, res.body);
  const { reference, checkoutURL } = res.json();
  t.equal(checkoutURL, 'https://checkout.stripe.com/c/pay/cs_1');
  t.equal(form.get('mode'), 'subscription');
  t.equal(form.get('line_items[0][price_data][unit_amount]'), '500');
  t.equal(form.get('line_items[0][price_data][recurring][interval]'), 'month');
  t.equal(form.get('line_items[0][price_data][recurring][interval_count]'), '1');
  t.equal(form.get('client_reference_id'), reference);
  t.same(await call(app, `/api/subscriptions?userID=${steve}`).then((r) => r.json()), [], 'nothing runs before Stripe says it was paid');

  t.equal(await result(await stripeWebhook(app, started('evt_1', reference, 'sub_1'))), 'started');
  t.equal(await result(await stripeWebhook(app, started('evt_1', reference, 'sub_1'))), 'duplicate', 'a redelivery is acknowledged');
  t.equal(await result(await stripeWebhook(app, started('evt_1b', reference, 'sub_1'))), 'unchanged', 'another start event of the same subscription');
  const [sub] = (await call(app, `/api/subscriptions?userID=${steve}`)).json();
  t.match(sub, { gateway: 'stripe', status: 'active', period: '1', price: '5.00' });
  t.ok((await roles(app, steve)).has(roleId));
  t.same(await commands(app, steve), ['lp user steve parent add vip']);
  t.equal(await balanceOf(app, steve), 0, 'the wallet is not touched');

  t.equal(
    await result(await stripeWebhook(app, invoice('evt_first', 'invoice.paid', 'sub_1', { reason: 'subscription_create' }))),
    'ignored',
    "the first invoice is the checkout's",
  );
  const end = T0 + 60 * DAY_S;
  t.equal(await result(await stripeWebhook(app, invoice('evt_2', 'invoice.paid', 'sub_1', { end }))), 'renewed');
  t.equal(await result(await stripeWebhook(app, invoice('evt_2', 'invoice.paid', 'sub_1', { end }))), 'duplicate');
  const after = await subscriptionOf(app, sub.id);
  t.match(after, { status: 'active', period: '2', periodEnd: '2027-03-11 00:00:00' }, "the period ends where Stripe's invoice says");
  t.same(await commands(app, steve), ['lp user steve parent add vip', 'say steve renewed VIP'], 'one set of renewal commands');
  await until(() => renewed.length === 1);
  t.same(renewed, [2]);
  const [periods] = await app.db.query(sql`select ${fields({ n: count() })} from ${SubscriptionsPeriod}`);
  t.equal(Number(periods!.n), 2);
  const [ledger] = await app.db.query(sql`select ${fields({ n: count() })} from ${CreditsLedgerEntry}`);
  t.equal(Number(ledger!.n), 0, 'no ledger row: the money is at Stripe');
  t.same(await sweep(app), { renewed: 0, failed: 0, ended: 0 }, "the wallet's sweep leaves a Stripe subscription alone");
});

t.test('a failed charge starts the grace period once; a later invoice.paid renews; customer.subscription.deleted ends it', async (t) => {
  const app = await stripeApp(t);
  const { productId, roleId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve');
  const id = await subscribeAtStripe(app, steve, productId, 'sub_f');
  const failed: number[] = [];
  const ended: string[] = [];
  app.events.on('subscriptions.payment_failed', (e) => void failed.push(e.period));
  app.events.on('subscriptions.ended', (e) => void ended.push(e.reason));

  t.equal(await result(await stripeWebhook(app, invoice('evt_f1', 'invoice.payment_failed', 'sub_f'))), 'payment_failed');
  t.equal(await result(await stripeWebhook(app, invoice('evt_f2', 'invoice.payment_failed', 'sub_f'))), 'unchanged', "Stripe's retry failing again");
  const due = await subscriptionOf(app, id);
  t.match(due, { status: 'past_due', period: '1' });
  t.ok(due.graceUntil);
  t.ok((await roles(app, steve)).has(roleId), 'the role holds through the grace');
  t.equal(await result(await stripeWebhook(app, invoice('evt_p', 'invoice.paid', 'sub_f', { end: T0 + 60 * DAY_S }))), 'renewed', 'a retry paid');
  t.match(await subscriptionOf(app, id), { status: 'active', period: '2', graceUntil: null });

  t.equal(await result(await stripeWebhook(app, invoice('evt_f3', 'invoice.payment_failed', 'sub_f'))), 'payment_failed');
  t.equal(await result(await stripeWebhook(app, deleted('evt_d', 'sub_f'))), 'ended');
  t.equal(await result(await stripeWebhook(app, deleted('evt_d', 'sub_f'))), 'duplicate');
  t.match(await subscriptionOf(app, id), { status: 'ended', endReason: 'unpaid' });
  t.notOk((await roles(app, steve)).has(roleId), 'the role ended');
  t.equal((await commands(app, steve)).at(-1), 'lp user steve parent remove vip');
  t.equal(
    await result(await stripeWebhook(app, invoice('evt_late', 'invoice.paid', 'sub_f', { end: T0 + 90 * DAY_S }))),
    'unchanged',
    'nothing renews an ended one',
  );
  await until(() => ended.length === 1);
  t.same([failed, ended], [[2, 3], ['unpaid']]);

  mockSession('cs_again');
  t.equal((await checkout(app, steve, productId)).statusCode, 201, 'a lapsed subscription can be started again');
});

t.test("a player's cancel tells Stripe to stop at the period's end; staff's end it now", async (t) => {
  const clock = new TestClock();
  const app = await stripeApp(t, { clock });
  const { productId, roleId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve');
  const alex = await makeUser(app, 'alex');
  const a = await subscribeAtStripe(app, steve, productId, 'sub_a');
  const b = await subscribeAtStripe(app, alex, productId, 'sub_b');

  let asked = '';
  nock('https://api.stripe.com')
    .post('/v1/subscriptions/sub_a', (body) => {
      asked = new URLSearchParams(body as string).toString();
      return true;
    })
    .reply(200, { id: 'sub_a', object: 'subscription', cancel_at_period_end: true });
  const cancel = await call(app, `/api/subscriptions/${a}/cancel`, { body: { userID: steve }, as: 'json' });
  t.equal(cancel.statusCode, 200, cancel.body);
  t.equal(asked, 'cancel_at_period_end=true');
  t.match(cancel.json(), { status: 'active', cancelAtPeriodEnd: '1', nextPaymentDate: null });
  t.equal(await result(await stripeWebhook(app, deleted('evt_da', 'sub_a'))), 'unchanged', 'an end before the period paid is over leaves it running');
  t.match(await subscriptionOf(app, a), { status: 'active' });
  clock.advance(32 * 86_400_000);
  t.equal(await result(await stripeWebhook(app, deleted('evt_da2', 'sub_a'))), 'ended', "Stripe's end at the period's end");
  t.match(await subscriptionOf(app, a), { status: 'ended', endReason: 'cancelled' });
  t.same(await sweep(app), { renewed: 0, failed: 0, ended: 0 });

  nock('https://api.stripe.com')
    .delete('/v1/subscriptions/sub_b')
    .reply(500, { error: { type: 'api_error', message: 'down' } });
  const refused = await call(app, `/api/admin/subscriptions/${b}/cancel`, { body: { when: 'now' }, as: 'json' });
  t.same([refused.statusCode, refused.json().error], [502, 'GATEWAY_ERROR']);
  t.match(await subscriptionOf(app, b), { status: 'active', cancelAtPeriodEnd: '0' }, 'a refusal at Stripe changes nothing here');
  nock('https://api.stripe.com').delete('/v1/subscriptions/sub_b').reply(200, { id: 'sub_b', object: 'subscription', status: 'canceled' });
  const now = await call(app, `/api/admin/subscriptions/${b}/cancel`, { body: { when: 'now' }, as: 'json' });
  t.match(now.json(), { status: 'ended', endReason: 'staff' });
  t.notOk((await roles(app, alex)).has(roleId));
  t.equal(await result(await stripeWebhook(app, deleted('evt_db', 'sub_b'))), 'unchanged', "Stripe's deleted event after staff ended it");
  const refund = await call(app, `/api/admin/subscriptions/${b}/refund`, { method: 'POST' });
  t.same([refund.statusCode, refund.json().error], [409, 'SUBSCRIPTION_NOT_REFUNDABLE']);
});

t.test('bad input: a clear error, nothing changed', async (t) => {
  const app = await stripeApp(t);
  const { productId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve');
  const bad = await checkout(app, steve, productId, { gateway: 'bitcoin' });
  t.same([bad.statusCode, bad.json().error], [400, 'VALIDATION_ERROR']);
  t.match(bad.json().message, 'gateway');
  const url = await checkout(app, steve, productId, { returnURL: 'javascript:alert(1)' });
  t.same([url.statusCode, url.json().error], [400, 'INVALID_URL']);
  const paypal = await checkout(app, steve, productId, { gateway: 'paypal' });
  t.same([paypal.statusCode, paypal.json().error], [400, 'GATEWAY_UNAVAILABLE']);
  const plan = await checkout(app, steve, 9999);
  t.same([plan.statusCode, plan.json().error], [404, 'SUBSCRIPTION_PLAN_NOT_FOUND']);
  const unknown = await stripeWebhook(app, invoice('evt_x', 'invoice.paid', 'sub_nobody'));
  t.same([unknown.statusCode, unknown.json().error], [400, 'UNKNOWN_PAYMENT']);
  const forged = await stripeWebhook(app, started('evt_y', '1', 'sub_y'), 'whsec_wrong');
  t.same([forged.statusCode, forged.json().error], [400, 'INVALID_SIGNATURE']);
  const noCheckout = await stripeWebhook(app, started('evt_z', '777', 'sub_z'));
  t.same([noCheckout.statusCode, noCheckout.json().error], [400, 'UNKNOWN_PAYMENT']);
  t.same((await call(app, `/api/subscriptions?userID=${steve}`)).json(), []);
  t.equal(await rowCount(app, 'subscriptions_checkouts'), 0, 'no refused checkout left a row');
});

t.test('two instances receiving the same events at once: started once, each renewal once, the failure told once', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const a = await stripeApp(t, { databaseUrl: url });
  const b = await stripeApp(t, { databaseUrl: url });
  const { productId } = await vipPlan(a);
  const steve = await makeUser(a, 'steve');
  const counted: Record<string, number> = {};
  for (const app of [a, b])
    for (const name of ['subscriptions.started', 'subscriptions.renewed', 'subscriptions.payment_failed'] as const)
      app.events.on(name, () => void (counted[name] = (counted[name] ?? 0) + 1));
  mockSession('cs_race');
  const { reference } = (await checkout(a, steve, productId)).json();

  const starts = await overBoth([a, b], 6, (app) => stripeWebhook(app, started('evt_s', reference, 'sub_r')).then(result));
  t.same(starts.sort(), ['duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'started']);
  const fails = await overBoth([a, b], 6, (app) => stripeWebhook(app, invoice('evt_f', 'invoice.payment_failed', 'sub_r')).then(result));
  t.same(fails.filter((r) => r === 'payment_failed').length, 1);
  // Two renewal events of two periods, each delivered three times to each instance.
  const paid = await overBoth([a, b], 12, (app, i) =>
    stripeWebhook(app, invoice(`evt_p${i % 2}`, 'invoice.paid', 'sub_r', { end: T0 + (i % 2) * 30 * DAY_S })).then(result),
  );
  t.same(paid.filter((r) => r === 'renewed').length, 2, 'each period renewed once');
  t.same(
    paid.filter((r) => r !== 'renewed' && r !== 'duplicate'),
    [],
  );
  const [sub] = (await call(a, `/api/subscriptions?userID=${steve}`)).json();
  t.match(sub, { status: 'active', period: '3' });
  t.equal((await commands(a, steve)).filter((c) => c.includes('renewed')).length, 2);
  await until(() => (counted['subscriptions.renewed'] ?? 0) === 2);
  t.same(counted, { 'subscriptions.started': 1, 'subscriptions.payment_failed': 1, 'subscriptions.renewed': 2 });
});
