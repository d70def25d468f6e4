/**
 * PayPal Subscriptions through HTTP: the product, plan and subscription asked of PayPal's REST API
 * (nock), and PayPal's webhooks with its transmission headers, verified by its (mocked) verify call;
 * redelivered and racing on two instances.
 */
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import t from 'tap';
import { TestClock } from '../../../core/clock.ts';
import { mockPayPalToken, mockPayPalVerify, offline, PAYPAL_API, PAYPAL_ENV, paypalWebhook } from '../../../test/gateways.ts';
import { call, overBoth, sharedDatabaseUrl } from '../../../test/helper.ts';
import { commands, makeUser, roles, subscriptionOf, subscriptionsApp, sweep, until, vipPlan } from './fixtures.ts';

offline(t);

const paypalApp = async (t: Parameters<typeof subscriptionsApp>[0], opts: { databaseUrl?: string; clock?: TestClock } = {}) =>
  subscriptionsApp(t, { ...opts, features: ['payments'], env: PAYPAL_ENV, config: { payments: { paypalApiBase: PAYPAL_API } } });

/** PayPal's answers to the product, plan and subscription a checkout makes; what was asked goes to `asked`. */
function mockPayPalSubscription(id: string, asked: Record<string, any> = {}): void {
  const api = nock(PAYPAL_API, { reqheaders: { authorization: 'Bearer A21-token' } });
  const keep = (name: string) => (body: unknown) => {
    asked[name] = body;
    return true;
  };
  api.post('/v1/catalogs/products', keep('product')).reply(201, { id: `PROD-${id}` });
  api.post('/v1/billing/plans', keep('plan')).reply(201, { id: `P-${id}`, status: 'ACTIVE' });
  api.post('/v1/billing/subscriptions', keep('subscription')).reply(201, {
    id,
    status: 'APPROVAL_PENDING',
    links: [{ rel: 'approve', href: `https://www.sandbox.paypal.com/webapps/billing/subscriptions?ba_token=${id}` }],
  });
}

const checkout = (app: FastifyInstance, userId: number, productId: number) =>
  call(app, '/api/subscriptions/checkout', {
    body: { userID: userId, productID: productId, gateway: 'paypal', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no' },
    as: 'json',
  });

const activated = (eventId: string, id: string, reference: string, paid = '5.00') => ({
  id: eventId,
  event_type: 'BILLING.SUBSCRIPTION.ACTIVATED',
  resource: { id, custom_id: reference, status: 'ACTIVE', billing_info: paid ? { last_payment: { amount: { currency_code: 'USD', value: paid } } } : {} },
});
const sale = (eventId: string, id: string, at: Date) => ({
  id: eventId,
  event_type: 'PAYMENT.SALE.COMPLETED',
  resource: { id: `SALE-${eventId}`, state: 'completed', billing_agreement_id: id, amount: { total: '5.00', currency: 'USD' }, create_time: at.toISOString() },
});
const failedPayment = (eventId: string, id: string) => ({
  id: eventId,
  event_type: 'BILLING.SUBSCRIPTION.PAYMENT.FAILED',
  resource: { id, status: 'ACTIVE', billing_info: { last_failed_payment: { amount: { currency_code: 'USD', value: '5.00' } } } },
});
const ended = (eventId: string, id: string, type = 'BILLING.SUBSCRIPTION.CANCELLED') => ({
  id: eventId,
  event_type: type,
  resource: { id, status: 'CANCELLED' },
});

/** A webhook verified by PayPal's (mocked) call: the result it answered. */
async function deliver(app: FastifyInstance, event: Record<string, unknown>): Promise<string> {
  mockPayPalVerify('SUCCESS');
  const res = await paypalWebhook(app, event);
  if (res.statusCode !== 200) throw new Error(`webhook answered ${res.statusCode}: ${res.body}`);
  return res.json().data.result;
}

t.test('PayPal Subscriptions: plan and subscription through the REST API, activation, renewals by PAYMENT.SALE.COMPLETED, failure, the end', async (t) => {
  const clock = new TestClock();
  const app = await paypalApp(t, { clock });
  const { productId, roleId } = await vipPlan(app, { intervalCount: 3 });
  const steve = await makeUser(app, 'steve');
  mockPayPalToken();
  const asked: Record<string, any> = {};
  mockPayPalSubscription('I-STEVE', asked);
  const res = await checkout(app, steve, productId);
  t.equal(res.statusCode, 201, res.body);
  const { reference, checkoutURL } = res.json();
  t.equal(checkoutURL, 'https://www.sandbox.paypal.com/webapps/billing/subscriptions?ba_token=I-STEVE');
  t.match(asked.plan, {
    product_id: 'PROD-I-STEVE',
    billing_cycles: [
      {
        tenure_type: 'REGULAR',
        frequency: { interval_unit: 'MONTH', interval_count: 3 },
        pricing_scheme: { fixed_price: { value: '5.00', currency_code: 'USD' } },
      },
    ],
  });
  t.match(asked.subscription, { plan_id: 'P-I-STEVE', custom_id: reference });

  t.equal(await deliver(app, activated('WH-1', 'I-STEVE', reference)), 'started');
  t.equal(await deliver(app, activated('WH-1', 'I-STEVE', reference)), 'duplicate');
  const [sub] = (await call(app, `/api/subscriptions?userID=${steve}`)).json();
  t.match(sub, { gateway: 'paypal', status: 'active', period: '1' });
  t.ok((await roles(app, steve)).has(roleId));
  t.equal(await deliver(app, sale('WH-2', 'I-STEVE', new Date(clock.now()))), 'unchanged', "the first sale is the activation's period");

  clock.advance(92 * 86_400_000);
  t.equal(await deliver(app, sale('WH-3', 'I-STEVE', new Date(clock.now()))), 'renewed');
  t.equal(await deliver(app, sale('WH-3', 'I-STEVE', new Date(clock.now()))), 'duplicate');
  t.match(await subscriptionOf(app, sub.id), { status: 'active', period: '2' });
  t.same(await commands(app, steve), ['lp user steve parent add vip', 'say steve renewed VIP']);

  clock.advance(92 * 86_400_000);
  t.equal(await deliver(app, failedPayment('WH-4', 'I-STEVE')), 'payment_failed');
  t.equal(await deliver(app, failedPayment('WH-5', 'I-STEVE')), 'unchanged', "PayPal's retry failing again");
  t.match(await subscriptionOf(app, sub.id), { status: 'past_due' });
  t.equal(await deliver(app, ended('WH-6', 'I-STEVE', 'BILLING.SUBSCRIPTION.EXPIRED')), 'ended');
  t.match(await subscriptionOf(app, sub.id), { status: 'ended', endReason: 'unpaid' });
  t.notOk((await roles(app, steve)).has(roleId));
  t.equal((await commands(app, steve)).at(-1), 'lp user steve parent remove vip');
});

t.test("a player's cancel cancels at PayPal; what was paid runs to the period's end, then the sweep ends it", async (t) => {
  const clock = new TestClock();
  const app = await paypalApp(t, { clock });
  const { productId, roleId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve');
  mockPayPalToken();
  mockPayPalSubscription('I-C');
  const { reference } = (await checkout(app, steve, productId)).json();
  t.equal(await deliver(app, activated('WH-1', 'I-C', reference)), 'started');
  const [sub] = (await call(app, `/api/subscriptions?userID=${steve}`)).json();

  nock(PAYPAL_API).post('/v1/billing/subscriptions/I-C/cancel').reply(204);
  const cancel = await call(app, `/api/subscriptions/${sub.id}/cancel`, { body: { userID: steve }, as: 'json' });
  t.equal(cancel.statusCode, 200, cancel.body);
  t.equal(await deliver(app, ended('WH-2', 'I-C')), 'unchanged', "PayPal's CANCELLED at once leaves the period paid running");
  t.ok((await roles(app, steve)).has(roleId));
  clock.advance(32 * 86_400_000);
  t.same(await sweep(app), { renewed: 0, failed: 0, ended: 1 });
  t.match(await subscriptionOf(app, sub.id), { status: 'ended', endReason: 'cancelled' });
  t.notOk((await roles(app, steve)).has(roleId));
});

t.test('the same PayPal events delivered to two instances at once: started once, renewed once', async (t) => {
  const clock = new TestClock();
  const url = await sharedDatabaseUrl(t);
  const a = await paypalApp(t, { databaseUrl: url, clock });
  const b = await paypalApp(t, { databaseUrl: url, clock });
  const { productId } = await vipPlan(a);
  const steve = await makeUser(a, 'steve');
  const renewed: number[] = [];
  for (const app of [a, b]) app.events.on('subscriptions.renewed', (e) => void renewed.push(e.period));
  // Each instance asks for its own token, several at once when its first webhooks arrive together.
  nock(PAYPAL_API).post('/v1/oauth2/token').times(8).reply(200, { access_token: 'A21-token', token_type: 'Bearer', expires_in: 32400 });
  mockPayPalSubscription('I-R');
  const { reference } = (await checkout(a, steve, productId)).json();
  nock(PAYPAL_API).post('/v1/notifications/verify-webhook-signature').times(12).reply(200, { verification_status: 'SUCCESS' });
  const once = async (event: Record<string, unknown>) =>
    overBoth([a, b], 6, async (app) => {
      const res = await paypalWebhook(app, event);
      if (res.statusCode !== 200) throw new Error(res.body);
      return res.json().data.result as string;
    });
  t.same((await once(activated('WH-1', 'I-R', reference))).sort(), ['duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'started']);
  clock.advance(32 * 86_400_000);
  t.same((await once(sale('WH-2', 'I-R', new Date(clock.now())))).sort(), ['duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'renewed']);
  await until(() => renewed.length === 1);
  t.same(renewed, [2]);
  t.equal((await commands(a, steve)).filter((c) => c.includes('renewed')).length, 1);
});
