/**
 * Direct purchases: a basket paid at a gateway, completed once by the verified webhook through the
 * store's buy (order, stock, roles, delivery commands), whatever the retries, the races and the
 * expiry sweep; credited or refunded when the purchase is no longer possible; guests.
 */
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import t from 'tap';
import { createHmac } from 'node:crypto';
import { apiKey, build, call, onMysql } from '../../../test/helper.ts';
import { created, makeCategory, makeProduct, makeRole, newUser, read, rowCount, snapshot } from '../../../test/fixtures.ts';
import { paymentsRef } from '../contract.ts';
import { fields, sql } from '../../../core/sql.ts';
import { CreditsLedgerEntry } from '../../credits/entities.ts';
import { DeliveryQueue } from '../../delivery/entities.ts';
import { StoreOrder } from '../../store/entities.ts';
import { PaymentsPayment } from '../entities.ts';
import type { DbPaymentsService } from '../service.ts';
import {
  balanceOf,
  buildShop,
  chargeRefunded,
  disputeCreated,
  mockPayPalToken,
  mockPayPalVerify,
  mockStripeSession,
  offline,
  PAYPAL_API,
  paypalWebhook,
  sessionCompleted,
  stripeWebhook,
} from './fixtures.ts';

offline(t);

const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };
const TABLES = ['payments_payments', 'payments_events', 'store_orders', 'store_order_items', 'credits_ledger', 'delivery_queue'];

/** A product with a purchase and a refund command on a game server. */
async function shop(app: FastifyInstance, product: Record<string, unknown> = {}): Promise<number> {
  const categoryID = await makeCategory(app, { name: 'Items' });
  const id = await makeProduct(app, { categoryID, name: 'Diamonds', price: '5.00', ...product });
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Survival' }, 'json');
  await created(
    app,
    `/api/admin/store/products/${id}/commands`,
    { serverID: server.id, trigger: 'purchase', command: 'give {username} diamond {quantity}' },
    'json',
  );
  await created(
    app,
    `/api/admin/store/products/${id}/commands`,
    { serverID: server.id, trigger: 'refund', command: 'clear {username} diamond {quantity}' },
    'json',
  );
  return id;
}

/** Starts a purchase through the public route, the gateway's checkout mocked by `mock`. */
async function purchase(
  app: FastifyInstance,
  body: Record<string, unknown>,
  mock = () => {
    mockStripeSession('cs_buy');
  },
): Promise<{ paymentID: string; amount: string }> {
  mock();
  const res = await call(app, '/api/payments/purchase', {
    body: { gateway: 'stripe', ...URLS, ...body },
    as: 'json',
    key: await apiKey(app, `shop-${Math.random()}`),
  });
  if (res.statusCode !== 200) throw new Error(`purchase answered ${res.statusCode}: ${res.body}`);
  return res.json().data;
}

const Q = DeliveryQueue.c;
const payments = (app: FastifyInstance) => app.services.get(paymentsRef) as DbPaymentsService;
const commands = async (app: FastifyInstance, runOn = 'purchase') =>
  (
    await app.db.query(
      sql`select ${fields({ command: Q.command, username: Q.username, user_id: Q.userId })} from ${DeliveryQueue} where ${Q.runOn} = ${runOn} order by ${Q.id}`,
    )
  ).map((c) => ({ ...c, user_id: Number(c.user_id) }));
const orders = (app: FastifyInstance) => StoreOrder.select(app.db, sql`order by ${StoreOrder.c.id}`);
/** A payment made long ago, past any expiry. */
const backdate = (app: FastifyInstance, paymentID: string) =>
  app.db.run(sql`update ${PaymentsPayment} set ${PaymentsPayment.c.creationDate} = '2020-01-01 00:00:00' where ${PaymentsPayment.c.id} = ${paymentID}`);
const stockOf = async (app: FastifyInstance, id: number) => (await read(app, `/api/store/products/${id}`)).stock;

t.test(
  `Stripe: the same completion 5 times at once, racing the expiry sweep: one order, one set of commands (${onMysql ? 'MariaDB' : 'SQLite'})`,
  async (t) => {
    const app = await buildShop(t);
    const steve = await newUser(app, 'steve');
    const product = await shop(app, { stock: '10' });
    let asked = '';
    const { paymentID, amount } = await purchase(
      app,
      { username: 'steve', lines: [{ productID: product, quantity: 2, price: '0.01' }], amount: '0.01' },
      () => {
        mockStripeSession('cs_buy', (body) => {
          asked = body;
        });
      },
    );
    t.equal(amount, '10.00', 'the price comes from the catalogue');
    t.match(asked, /unit_amount%5D=1000/, 'Stripe is asked for 10.00');
    t.match(await payments(app).purchaseStatus(paymentID), {
      kind: 'purchase',
      status: 'pending',
      userId: steve.id,
      guestName: null,
      amount: 1000,
      currency: 'USD',
      orderId: null,
    });

    // Unpaid past its expiry: the sweep may flip it to expired before, between or after the webhooks.
    await backdate(app, paymentID);
    const [answers, swept] = await Promise.all([
      Promise.all(Array.from({ length: 5 }, () => stripeWebhook(app, sessionCompleted('evt_buy', paymentID, 'cs_buy', 1000)))),
      Promise.all(Array.from({ length: 3 }, () => payments(app).expirePending())),
    ]);
    t.strictSame(
      answers.map((a) => a.statusCode),
      [200, 200, 200, 200, 200],
      answers.map((a) => a.body).join('\n'),
    );
    const results = answers.map((a) => a.json().data.result as string).sort();
    t.strictSame(results, ['completed', 'duplicate', 'duplicate', 'duplicate', 'duplicate'], `swept ${swept.join(',')}`);

    const [order] = await orders(app);
    const status = await payments(app).purchaseStatus(paymentID);
    t.match(status, { status: 'completed', orderId: order!.id });
    t.match(order, {
      accountId: steve.id,
      type: 'payment',
      status: 'completed',
      total: 1000,
      earnings: 1000,
      credit: 0,
      paymentApi: 'stripe',
      paymentId: paymentID,
    });
    t.equal(await rowCount(app, 'store_orders'), 1);
    t.strictSame(await commands(app), [{ command: 'give steve diamond 2', username: 'steve', user_id: steve.id }], 'delivery queued once');
    t.equal(await stockOf(app, product), '8');
    t.equal(await balanceOf(app, 'steve'), 0, 'no credits moved');
    t.match(await read(app, '/api/users/steve/orders'), [{ id: String(order!.id), type: 'payment', paymentAPI: 'stripe', paymentID, earnings: '10.00' }]);
    t.match(await read(app, `/api/payments/${paymentID}`), { kind: 'purchase', status: 'completed', userID: String(steve.id), guestName: null });
    t.equal(await payments(app).expirePending(), 0, 'a completed purchase never expires');
  },
);

t.test('an unpaid purchase expires; a payment arriving later still completes it', async (t) => {
  const app = await buildShop(t);
  await newUser(app, 'steve');
  const product = await shop(app);
  const { paymentID } = await purchase(app, { username: 'steve', lines: [{ productID: product }] });
  t.equal(await payments(app).expirePending(), 0, 'not before its time');
  await backdate(app, paymentID);
  t.equal(await payments(app).expirePending(), 1);
  t.equal((await payments(app).purchaseStatus(paymentID)).status, 'expired');
  const res = await stripeWebhook(app, sessionCompleted('evt_late', paymentID, 'cs_buy', 500));
  t.strictSame(res.json(), { status: true, data: { result: 'completed' } }, res.body);
  t.equal(await rowCount(app, 'store_orders'), 1);
});

t.test('the last unit sold out while an account paid: the money goes to its balance (credited)', async (t) => {
  const app = await buildShop(t);
  await newUser(app, 'steve');
  const alex = await newUser(app, 'alex', { cents: 1000 });
  const product = await shop(app, { stock: '1' });
  const { paymentID } = await purchase(app, { username: 'steve', lines: [{ productID: product }] });
  t.equal((await call(app, '/api/store/buy', { body: { userID: alex.id, products: [product] }, as: 'json' })).statusCode, 200, 'alex buys the last one');

  const answers = await Promise.all(Array.from({ length: 3 }, () => stripeWebhook(app, sessionCompleted('evt_late', paymentID, 'cs_buy', 500))));
  t.strictSame(answers.map((a) => a.json().data.result).sort(), ['credited', 'duplicate', 'duplicate'], answers.map((a) => a.body).join('\n'));
  t.equal(await balanceOf(app, 'steve'), 5, "the 5.00 paid is on steve's balance");
  t.match(await payments(app).purchaseStatus(paymentID), { status: 'credited' });
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'credited', credits: '5.00' });
  const steveOrders = (await orders(app)).filter((o) => o.paymentId === paymentID);
  t.match(steveOrders, [{ type: 'payment', total: 500, credit: 500, paymentApi: 'stripe' }], 'a payment order records the money');
  t.equal(await rowCount(app, 'store_order_items'), 1, "only alex's line");
  t.strictSame(
    (await commands(app)).map((c) => c.username),
    ['alex'],
    'nothing delivered to steve',
  );
  t.equal(await stockOf(app, product), '0');
  const ledger = await CreditsLedgerEntry.select(app.db, sql`where ${CreditsLedgerEntry.c.reason} = 'payment'`);
  t.strictSame(
    ledger.map((l) => [Number(l.delta), l.reason]),
    [[500, 'payment']],
  );

  // A later refund of that payment takes the credits back as a top-up's would.
  const refund = await stripeWebhook(app, chargeRefunded('evt_refund', 'cs_buy', 500));
  t.strictSame(refund.json(), { status: true, data: { result: 'refunded' } }, refund.body);
  t.equal(await balanceOf(app, 'steve'), 0);
});

t.test('the last unit sold out while a guest paid: refunded through Stripe, once, even when the refund call fails first', async (t) => {
  const app = await buildShop(t);
  const alex = await newUser(app, 'alex', { cents: 1000 });
  const product = await shop(app, { stock: '1' });
  const { paymentID } = await purchase(app, { guestName: 'Notch_1', lines: [{ productID: product }] });
  t.equal((await call(app, '/api/store/buy', { body: { userID: alex.id, products: [product] }, as: 'json' })).statusCode, 200, 'alex buys the last one');

  nock('https://api.stripe.com')
    .post('/v1/refunds')
    .reply(400, { error: { type: 'invalid_request_error', message: 'try later' } });
  const failed = await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_buy', 500));
  t.equal(failed.statusCode, 502, failed.body);
  t.equal(failed.json().error, 'GATEWAY_ERROR');
  t.equal((await payments(app).purchaseStatus(paymentID)).status, 'pending', 'nothing settled: Stripe sends the webhook again');

  let refundBody = '';
  let idempotencyKey: string | undefined;
  nock('https://api.stripe.com', {
    reqheaders: {
      'idempotency-key': (v) => {
        idempotencyKey = v ?? undefined;
        return true;
      },
    },
  })
    .post('/v1/refunds', (body) => {
      refundBody = new URLSearchParams(body as string).toString();
      return true;
    })
    .reply(200, { id: 're_1', object: 'refund', amount: 500, status: 'succeeded' });
  const retried = await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_buy', 500));
  t.strictSame(retried.json(), { status: true, data: { result: 'refunded' } }, retried.body);
  t.equal(refundBody, 'payment_intent=pi_cs_buy', 'the whole payment intent');
  t.equal(idempotencyKey, `refund-${paymentID}`, 'keyed by the payment: a retried refund is the same refund');
  t.match(await payments(app).purchaseStatus(paymentID), { status: 'refunded', guestName: 'Notch_1', orderId: null });
  t.equal(await rowCount(app, 'store_orders'), 1, "only alex's order");
  t.strictSame(
    (await stripeWebhook(app, chargeRefunded('evt_refund', 'cs_buy', 500))).json(),
    { status: true, data: { result: 'unchanged' } },
    "Stripe's charge.refunded for our own refund changes nothing",
  );
  t.strictSame((await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_buy', 500))).json(), { status: true, data: { result: 'duplicate' } });
});

t.test('a guest buys by in-game name; the account registered later with that name sees the order', async (t) => {
  const app = await buildShop(t);
  const product = await shop(app);
  const { paymentID } = await purchase(app, { guestName: 'Herobrine', lines: [{ productID: product, quantity: 3 }] });
  t.match(await read(app, `/api/payments/${paymentID}`), { kind: 'purchase', userID: '0', guestName: 'Herobrine', amount: '15.00' });
  const done = await stripeWebhook(app, sessionCompleted('evt_g', paymentID, 'cs_buy', 1500));
  t.strictSame(done.json(), { status: true, data: { result: 'completed' } }, done.body);
  t.strictSame(await commands(app), [{ command: 'give Herobrine diamond 3', username: 'Herobrine', user_id: 0 }], 'the commands run for the name typed');
  t.match(await orders(app), [{ accountId: 0, guestName: 'Herobrine', type: 'payment', total: 1500 }]);
  const other = await purchase(app, { guestName: 'Dinnerbone', lines: [{ productID: product }] }, () => {
    mockStripeSession('cs_other');
  });
  await stripeWebhook(app, sessionCompleted('evt_o', other.paymentID, 'cs_other', 500));
  t.match(
    await read(app, '/api/store/donations?type=top-alltime'),
    [
      { username: 'Herobrine', raw_total: '15.00' },
      { username: 'Dinnerbone', raw_total: '5.00' },
    ],
    'each guest has a line of their own on the boards',
  );

  await newUser(app, 'heroBRINE');
  await newUser(app, 'notch');
  t.match(await read(app, '/api/users/herobrine/orders'), [{ paymentID, total: '15.00', type: 'payment' }], 'the name matches whatever its case');
  t.equal((await read(app, '/api/users/herobrine/orders')).length, 1);
  t.strictSame(await read(app, '/api/users/notch/orders'), [], 'nobody else sees it');

  const disputed = await stripeWebhook(app, disputeCreated('evt_dispute', 'cs_buy', 1500));
  t.strictSame(disputed.json(), { status: true, data: { result: 'disputed' } }, disputed.body);
  t.strictSame(
    await commands(app, 'refund'),
    [{ command: 'clear Herobrine diamond 3', username: 'Herobrine', user_id: 0 }],
    'a dispute runs the refund commands for the guest',
  );
  t.match(await read(app, '/api/users/herobrine/orders'), [{ paymentID, status: 'refunded' }]);
});

t.test('a refund webhook of a direct order refunds the order and runs its refund commands, once', async (t) => {
  const app = await buildShop(t);
  const steve = await newUser(app, 'steve');
  const role = await makeRole(app, 'vip');
  const product = await shop(app, { stock: '5', giveRoleID: role, duration: '30' });
  const { paymentID } = await purchase(app, { userID: steve.id, lines: [{ productID: product }] });
  await stripeWebhook(app, sessionCompleted('evt_c', paymentID, 'cs_buy', 500));
  t.match(await read(app, `/api/users/${steve.id}/roles`), [{ name: 'vip' }], 'the role was granted');
  t.equal(await stockOf(app, product), '4');

  const answers = await Promise.all([0, 1, 0, 1].map((i) => stripeWebhook(app, chargeRefunded(`evt_r${i}`, 'cs_buy', 500))));
  t.strictSame(answers.map((a) => a.json().data.result).sort(), ['duplicate', 'duplicate', 'refunded', 'unchanged'], answers.map((a) => a.body).join('\n'));
  t.match(await orders(app), [{ status: 'refunded' }]);
  t.strictSame(
    (await commands(app, 'refund')).map((c) => c.command),
    ['clear steve diamond 1'],
    'the refund command queued once',
  );
  t.equal(await stockOf(app, product), '5', 'the unit is back');
  t.strictSame(await read(app, `/api/users/${steve.id}/roles`), [], 'the role is taken back');
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'refunded', reclaimed: '0.00', debt: '0.00' });
});

t.test('PayPal: a purchase completed by the verified webhook, 5 deliveries at once, one order', async (t) => {
  const app = await buildShop(t);
  await newUser(app, 'steve');
  const product = await shop(app);
  let order: any;
  const { paymentID } = await purchase(app, { gateway: 'paypal', username: 'steve', lines: [{ productID: product, quantity: 2 }] }, () => {
    mockPayPalToken();
    nock(PAYPAL_API)
      .post('/v2/checkout/orders', (body) => {
        order = body;
        return true;
      })
      .reply(201, {
        id: 'ORDER-9',
        status: 'PAYER_ACTION_REQUIRED',
        links: [{ rel: 'payer-action', href: 'https://www.sandbox.paypal.com/checkoutnow?token=ORDER-9' }],
      });
  });
  t.match(order.purchase_units[0], { custom_id: paymentID, amount: { currency_code: 'USD', value: '10.00' } });
  const captured = {
    id: 'WH-BUY-1',
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: {
      id: 'CAP-9',
      status: 'COMPLETED',
      custom_id: paymentID,
      amount: { currency_code: 'USD', value: '10.00' },
      supplementary_data: { related_ids: { order_id: 'ORDER-9' } },
    },
  };
  for (let i = 0; i < 5; i++) mockPayPalVerify('SUCCESS');
  const answers = await Promise.all(Array.from({ length: 5 }, () => paypalWebhook(app, captured)));
  t.strictSame(
    answers.map((a) => a.json().data.result).sort(),
    ['completed', 'duplicate', 'duplicate', 'duplicate', 'duplicate'],
    answers.map((a) => a.body).join('\n'),
  );
  t.strictSame(
    (await commands(app)).map((c) => c.command),
    ['give steve diamond 2'],
  );
  t.match(await orders(app), [{ type: 'payment', paymentApi: 'paypal', paymentId: paymentID, earnings: 1000 }]);
});

t.test("PayPal: a guest's purchase no longer possible is refunded by its capture", async (t) => {
  const app = await buildShop(t);
  const product = await shop(app, { stock: '1' });
  const { paymentID } = await purchase(app, { gateway: 'paypal', guestName: 'Jeb_', lines: [{ productID: product }] }, () => {
    mockPayPalToken();
    nock(PAYPAL_API)
      .post('/v2/checkout/orders')
      .reply(201, { id: 'ORDER-8', links: [{ rel: 'payer-action', href: 'https://www.sandbox.paypal.com/checkoutnow?token=ORDER-8' }] });
  });
  await call(app, `/api/admin/store/products/${product}`, { method: 'PATCH', body: { isActive: false }, as: 'json' });
  mockPayPalVerify('SUCCESS');
  let requestId: string | undefined;
  nock(PAYPAL_API, {
    reqheaders: {
      'paypal-request-id': (v) => {
        requestId = v ?? undefined;
        return true;
      },
    },
  })
    .post('/v2/payments/captures/CAP-8/refund')
    .reply(201, { id: 'REF-1', status: 'COMPLETED' });
  const res = await paypalWebhook(app, {
    id: 'WH-BUY-2',
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: { id: 'CAP-8', status: 'COMPLETED', custom_id: paymentID, amount: { currency_code: 'USD', value: '5.00' } },
  });
  t.strictSame(res.json(), { status: true, data: { result: 'refunded' } }, res.body);
  t.equal(requestId, `refund-${paymentID}`);
  t.equal(await rowCount(app, 'store_orders'), 0);
});

t.test("a guest's purchase no longer possible at a gateway that cannot refund: refund-due, listed for staff", async (t) => {
  const app = await build(t, {
    features: ['users', 'credits', 'store', 'donations', 'delivery', 'payments'],
    env: { EXAMPLEPAY_SECRET: 'ep-secret' },
    config: { plugins: { examplepay: { enabled: true } } },
  });
  const product = await shop(app);
  const { paymentID } = await purchase(app, { gateway: 'examplepay', guestName: 'Jeb_', lines: [{ productID: product }] }, () => undefined);
  await call(app, `/api/admin/store/products/${product}`, { method: 'PATCH', body: { isActive: false }, as: 'json' });
  const payload = JSON.stringify({ id: 'ep_1', type: 'payment.succeeded', paymentID, amount: 500, currency: 'USD' });
  const res = await app.inject({
    method: 'POST',
    url: '/api/payments/webhooks/examplepay',
    payload,
    headers: { 'content-type': 'application/json', 'x-examplepay-signature': createHmac('sha256', 'ep-secret').update(payload).digest('hex') },
  });
  t.strictSame(res.json(), { status: true, data: { result: 'refund-due' } }, res.body);
  t.match(await payments(app).list({ status: 'refund-due', limit: 10 }), [{ id: paymentID, guestName: 'Jeb_' }], 'the console lists it for staff');
  t.equal(await rowCount(app, 'store_orders'), 0);
});

t.test("starting a purchase: bad input is a clear error and stores nothing; the price is never the caller's", async (t) => {
  const app = await buildShop(t);
  const steve = await newUser(app, 'steve');
  const role = await makeRole(app, 'vip');
  const product = await shop(app, { stock: '2' });
  const categoryID = await makeCategory(app, { name: 'Ranks' });
  const rank = await makeProduct(app, { categoryID, name: 'VIP', price: '9.00', giveRoleID: role });
  const hidden = await makeProduct(app, { categoryID, name: 'Old', price: '1.00', isActive: false });
  const free = await makeProduct(app, { categoryID, name: 'Gift', price: '0' });
  const picky = await makeProduct(app, { categoryID, name: 'Kit', price: '1.00', variables: [{ name: 'server', required: true, values: ['eu', 'us'] }] });
  const needs = await makeProduct(app, { categoryID, name: 'Upgrade', price: '1.00' });
  await call(app, `/api/admin/store/products/${needs}/rules`, { method: 'PATCH', body: { requiredProductID: rank }, as: 'json' });
  const before = await snapshot(app, TABLES);
  const line = (productID: unknown, more: Record<string, unknown> = {}) => ({ lines: [{ productID, ...more }] });
  const cases: [Record<string, unknown>, number, string][] = [
    [{ username: 'steve', ...line(999) }, 404, 'PRODUCT_NOT_FOUND'],
    [{ username: 'steve', ...line(hidden) }, 404, 'PRODUCT_NOT_FOUND'],
    [{ username: 'steve', ...line(product, { quantity: 0 }) }, 400, 'INVALID_QUANTITY'],
    [{ username: 'steve', ...line(product, { quantity: 101 }) }, 400, 'INVALID_QUANTITY'],
    [{ username: 'steve', ...line(product, { quantity: 3 }) }, 400, 'OUT_OF_STOCK'],
    [{ username: 'steve', ...line(picky) }, 400, 'INVALID_VARIABLE'],
    [{ username: 'steve', ...line(picky, { variables: { server: 'mars' } }) }, 400, 'INVALID_VARIABLE'],
    [{ username: 'steve', ...line(needs) }, 400, 'REQUIRED_PRODUCT'],
    [{ username: 'steve', ...line(free) }, 400, 'INVALID_AMOUNT'],
    [{ username: 'nobody', ...line(product) }, 404, 'USER_NOT_FOUND'],
    [{ guestName: 'ab', ...line(product) }, 400, 'INVALID_GUEST_NAME'],
    [{ guestName: 'no spaces', ...line(product) }, 400, 'INVALID_GUEST_NAME'],
    [{ guestName: 'Herobrine', ...line(rank) }, 400, 'ACCOUNT_REQUIRED'],
    [{ guestName: 'Herobrine', userID: steve.id, ...line(product) }, 400, 'VALIDATION_ERROR'],
    [{ ...line(product) }, 400, 'VALIDATION_ERROR'],
    [{ username: 'steve', lines: [] }, 400, 'VALIDATION_ERROR'],
    [{ username: 'steve', ...line(product), gateway: 'nope' }, 400, 'GATEWAY_UNAVAILABLE'],
    [{ username: 'steve', ...line(product), returnURL: 'javascript:alert(1)' }, 400, 'INVALID_URL'],
  ];
  for (const [body, status, error] of cases) {
    const res = await call(app, '/api/payments/purchase', { body: { gateway: 'stripe', ...URLS, ...body }, as: 'json' });
    t.equal(res.statusCode, status, `${JSON.stringify(body)}: ${res.body}`);
    t.equal(res.json().error, error, JSON.stringify(body));
  }
  t.strictSame(await snapshot(app, TABLES), before, 'nothing stored, no gateway asked');

  const off = await buildShop(t, { guestCheckout: false });
  const offProduct = await shop(off);
  const res = await call(off, '/api/payments/purchase', { body: { gateway: 'stripe', ...URLS, guestName: 'Herobrine', ...line(offProduct) }, as: 'json' });
  t.equal(res.statusCode, 403);
  t.equal(res.json().error, 'GUEST_CHECKOUT_DISABLED');
});

t.test('the contract: gateways, packages, a top-up and a purchase for a front end', async (t) => {
  const app = await buildShop(t);
  const steve = await newUser(app, 'steve');
  const product = await shop(app);
  const service = payments(app);
  t.strictSame(service.availableGateways().sort(), ['paypal', 'stripe']);
  await call(app, '/api/admin/payments/packages', { body: { name: 'Gold', price: '10.00', credits: '10.00', bonus: '2.50' } });
  await call(app, '/api/admin/payments/packages', { body: { name: 'Iron', price: '2.00', credits: '2.00' } });
  const packages = await service.topUpPackages();
  t.match(packages, [
    { name: 'Iron', price: 200, credits: 200, currency: 'USD' },
    { name: 'Gold', price: 1000, credits: 1250 },
  ]);

  mockStripeSession('cs_top');
  const topUp = await service.startTopUp({ gateway: 'stripe', userId: steve.id, packageId: packages[1]!.id, ...URLS });
  t.equal(topUp.checkoutURL, 'https://checkout.stripe.com/c/pay/cs_top');
  t.match(await service.purchaseStatus(topUp.paymentId), { kind: 'top-up', status: 'pending', amount: 1000 });
  await stripeWebhook(app, sessionCompleted('evt_top', topUp.paymentId, 'cs_top', 1000));
  t.equal(await balanceOf(app, 'steve'), 12.5);

  mockStripeSession('cs_direct');
  const started = await service.startPurchase({ gateway: 'stripe', userId: steve.id, lines: [{ productId: product, quantity: 1, variables: {} }], ...URLS });
  t.match(started, { amount: 500, currency: 'USD', checkoutURL: 'https://checkout.stripe.com/c/pay/cs_direct' });
  await t.rejects(service.purchaseStatus('f'.repeat(32)), { code: 'PAYMENT_NOT_FOUND' });
});

t.test('GET /api/payments/packages: the packages on offer, to a public key', async (t) => {
  const app = await buildShop(t);
  await call(app, '/api/admin/payments/packages', { body: { name: 'Gold', price: '10.00', credits: '10.00', bonus: '2.50' } });
  const res = await call(app, '/api/payments/packages', { key: await apiKey(app) });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), [{ name: 'Gold', price: '10.00', credits: '10.00', bonus: '2.50', currency: 'USD' }]);
});

t.test('a purchase reads the buyer once for its own checks (exists, not blocked, within the spending limit) and once in the quote', async (t) => {
  const app = await buildShop(t);
  const steve = await newUser(app, 'steve');
  const product = await shop(app);
  const reads: string[] = [];
  for (const method of ['query', 'queryArrays'] as const) {
    const original = app.db[method].bind(app.db) as (statement: { text: string }) => Promise<never>;
    app.db[method] = ((statement: { text: string }) => {
      if (/from `users_accounts`/.test(statement.text)) reads.push(statement.text);
      return original(statement);
    }) as never;
  }
  await purchase(app, { userID: String(steve.id), lines: [{ productID: product, quantity: 1 }] });
  t.equal(reads.length, 2, reads.join('\n'));
});
