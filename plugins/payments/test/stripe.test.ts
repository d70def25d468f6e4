import nock from 'nock';
import t from 'tap';
import { apiKey, call, ENCODINGS } from '../../../test/helper.ts';
import { newUser, read, rowCount, snapshot } from '../../../test/fixtures.ts';
import { sql } from '../../../core/sql.ts';
import { CreditsLedgerEntry } from '../../credits/entities.ts';
import { StoreOrder } from '../../store/entities.ts';
import {
  balanceOf,
  buildPayments,
  chargeRefunded,
  disputeCreated,
  mockStripeSession,
  offline,
  sessionCompleted,
  stripeCheckout,
  stripeWebhook,
} from './fixtures.ts';

offline(t);
const TABLES = ['payments_payments', 'payments_events', 'store_orders', 'credits_ledger', 'donations_entries'];

t.test('checkout → signed completion: a payment order, credits plus bonus, ledger, donation, the payment shown', async (t) => {
  const app = await buildPayments(t);
  const steve = await newUser(app, 'steve');
  const pkg = (await call(app, '/api/admin/payments/packages', { body: { name: 'Gold', price: '10.00', credits: '10.00', bonus: '2.50' } })).json();
  let sent = '';
  mockStripeSession('cs_test_1', (body) => {
    sent = body;
  });
  const res = await call(app, '/api/payments/checkout', {
    body: { userID: steve.id, packageID: pkg.id, gateway: 'stripe', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no' },
  });
  t.equal(res.statusCode, 200, res.body);
  const { paymentID, checkoutURL } = res.json().data;
  t.equal(checkoutURL, 'https://checkout.stripe.com/c/pay/cs_test_1');
  t.match(sent, /unit_amount%5D=1000/, 'Stripe is asked for 10.00');
  t.match(sent, new RegExp(`client_reference_id=${paymentID}`));
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'pending', amount: '10.00', credits: '12.50', bonus: '2.50', orderID: null });

  const done = await stripeWebhook(app, sessionCompleted('evt_1', paymentID, 'cs_test_1', 1000));
  t.equal(done.statusCode, 200, done.body);
  t.strictSame(done.json(), { status: true, data: { result: 'completed' } });
  t.equal(await balanceOf(app, 'steve'), 12.5);
  const payment = await read(app, `/api/payments/${paymentID}`);
  t.match(payment, { status: 'completed', currency: 'USD' });
  const [order] = await StoreOrder.select(app.db);
  t.match(order, {
    id: Number(payment.orderID),
    type: 'payment',
    status: 'completed',
    total: 1000,
    credit: 1250,
    paymentApi: 'stripe',
    paymentId: paymentID,
  });
  t.equal(await rowCount(app, 'credits_ledger'), 1);
  const donations = await read(app, '/api/store/donations?type=latest');
  t.match(donations, [{ username: 'steve', raw_total: '10.00', currency: 'USD' }], 'the donation board shows it');

  const again = await stripeWebhook(app, sessionCompleted('evt_1', paymentID, 'cs_test_1', 1000));
  t.strictSame(again.json(), { status: true, data: { result: 'duplicate' } }, 'a redelivery is acknowledged');
  const other = await stripeWebhook(app, sessionCompleted('evt_2', paymentID, 'cs_test_1', 1000));
  t.strictSame(other.json(), { status: true, data: { result: 'unchanged' } }, 'a second completion event credits nothing');
  t.equal(await balanceOf(app, 'steve'), 12.5);
  t.equal(await rowCount(app, 'store_orders'), 1);
});

t.test('a checkout by amount credits 1:1 in the site currency', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'alex');
  const paymentID = await stripeCheckout(app, 'cs_test_2', { username: 'alex', amount: '4.20' });
  t.match(await read(app, `/api/payments/${paymentID}`), { amount: '4.20', credits: '4.20', currency: 'USD', packageID: null });
  t.equal((await stripeWebhook(app, sessionCompleted('evt_a', paymentID, 'cs_test_2', 420))).statusCode, 200);
  t.equal(await balanceOf(app, 'alex'), 4.2);
});

t.test('refund with a partly spent balance: what is left is taken, the rest is a debt shown to the admin', async (t) => {
  const app = await buildPayments(t);
  const steve = await newUser(app, 'steve');
  const paymentID = await stripeCheckout(app, 'cs_r', { username: 'steve', amount: '10.00' });
  await stripeWebhook(app, sessionCompleted('evt_c', paymentID, 'cs_r', 1000));
  await call(app, '/api/credits/remove', { body: { target_username: 'steve', amount: '6.00' } });
  const partial = await stripeWebhook(app, chargeRefunded('evt_p', 'cs_r', 1000, 300));
  t.strictSame(partial.json(), { status: true, data: { result: 'ignored' } }, 'a partial refund leaves the purchase standing');
  t.equal(await balanceOf(app, 'steve'), 4);
  const res = await stripeWebhook(app, chargeRefunded('evt_r', 'cs_r', 1000));
  t.strictSame(res.json(), { status: true, data: { result: 'refunded' } }, res.body);
  t.equal(await balanceOf(app, 'steve'), 0, 'never below zero');
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'refunded', reclaimed: '4.00', debt: '6.00' });
  t.match(await read(app, '/api/admin/payments/debts'), [{ paymentID, userID: String(steve.id), debt: '6.00' }]);
  const [order] = await StoreOrder.select(app.db);
  t.equal(order!.status, 'refunded');
  const ledger = await CreditsLedgerEntry.select(app.db, sql`order by ${CreditsLedgerEntry.c.id}`);
  t.match(ledger.at(-1), { delta: -400, reason: 'refund' });

  const dispute = await stripeWebhook(app, disputeCreated('evt_d', 'cs_r', 1000));
  t.strictSame(dispute.json(), { status: true, data: { result: 'unchanged' } }, 'a dispute after the refund takes nothing more');
  const late = await stripeWebhook(app, sessionCompleted('evt_c2', paymentID, 'cs_r', 1000));
  t.strictSame(late.json(), { status: true, data: { result: 'unchanged' } }, 'a late completion does not credit again');
  t.equal(await balanceOf(app, 'steve'), 0);
});

t.test('dispute with the credits unspent takes them all back, no debt', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve', { cents: 300 });
  const paymentID = await stripeCheckout(app, 'cs_d', { username: 'steve', amount: '5.00' });
  await stripeWebhook(app, sessionCompleted('evt_c', paymentID, 'cs_d', 500));
  t.equal(await balanceOf(app, 'steve'), 8);
  t.strictSame((await stripeWebhook(app, disputeCreated('evt_d', 'cs_d', 500))).json(), { status: true, data: { result: 'disputed' } });
  t.equal(await balanceOf(app, 'steve'), 3);
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'disputed', reclaimed: '5.00', debt: '0.00' });
  t.strictSame(await read(app, '/api/admin/payments/debts'), []);
});

t.test('out of order: a refund before the completion leaves nothing credited', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  const paymentID = await stripeCheckout(app, 'cs_o', { username: 'steve', amount: '5.00' });
  const refund = chargeRefunded('evt_r', 'cs_o', 500);
  refund.data.object.metadata = { paymentID };
  t.strictSame((await stripeWebhook(app, refund)).json(), { status: true, data: { result: 'refunded' } });
  t.strictSame((await stripeWebhook(app, sessionCompleted('evt_c', paymentID, 'cs_o', 500))).json(), { status: true, data: { result: 'unchanged' } });
  t.equal(await balanceOf(app, 'steve'), 0);
  t.equal(await rowCount(app, 'store_orders'), 0);
  t.equal(await rowCount(app, 'donations_entries'), 0);
});

t.test('bad webhooks: 400 with a clear code, nothing changed', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  const paymentID = await stripeCheckout(app, 'cs_b', { username: 'steve', amount: '5.00' });
  const before = await snapshot(app, TABLES);
  const cases: [string, Promise<{ statusCode: number; json(): any }>, string][] = [
    ['wrong secret', stripeWebhook(app, sessionCompleted('evt_1', paymentID, 'cs_b', 500), 'whsec_forged'), 'INVALID_SIGNATURE'],
    ['unsigned', app.inject({ method: 'POST', url: '/api/payments/webhooks/stripe', payload: { id: 'evt_x' } }), 'INVALID_SIGNATURE'],
    ['unknown payment', stripeWebhook(app, sessionCompleted('evt_2', 'f'.repeat(32), 'cs_nope', 500)), 'UNKNOWN_PAYMENT'],
    ['amount', stripeWebhook(app, sessionCompleted('evt_3', paymentID, 'cs_b', 499)), 'AMOUNT_MISMATCH'],
    ['currency', stripeWebhook(app, sessionCompleted('evt_4', paymentID, 'cs_b', 500, 'eur')), 'AMOUNT_MISMATCH'],
    ['unknown gateway', app.inject({ method: 'POST', url: '/api/payments/webhooks/nope', payload: '{}' }), 'GATEWAY_UNAVAILABLE'],
  ];
  for (const [label, pending, code] of cases) {
    const res = await pending;
    t.equal(res.statusCode, 400, label);
    t.match(res.json(), { status: false, error: code, message: String }, label);
  }
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/payments/webhooks/stripe', { body: { id: 'evt_form', type: 'checkout.session.completed' }, as, key: null });
    t.equal(res.statusCode, 400, `unsigned ${as} body, no API key`);
    t.equal(res.json().error, 'INVALID_SIGNATURE', as);
  }
  const empty = await app.inject({ method: 'POST', url: '/api/payments/webhooks/stripe' });
  t.equal(empty.json().error, 'INVALID_SIGNATURE', 'no body at all');
  // A body altered after signing fails the signature too.
  const payload = JSON.stringify(sessionCompleted('evt_5', paymentID, 'cs_b', 500));
  const signed = await stripeWebhook(app, { id: 'evt_6', type: 'customer.created', data: { object: {} } });
  t.strictSame(signed.json(), { status: true, data: { result: 'ignored' } }, 'an event of no interest is acknowledged');
  const tampered = await app.inject({
    method: 'POST',
    url: '/api/payments/webhooks/stripe',
    payload,
    headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
  });
  t.equal(tampered.statusCode, 400);
  t.strictSame(await snapshot(app, TABLES), before, 'nothing changed');
  t.equal(await balanceOf(app, 'steve'), 0);
});

t.test('checkout errors', async (t) => {
  const app = await buildPayments(t, {});
  await newUser(app, 'steve');
  const base = { username: 'steve', amount: '5.00', gateway: 'stripe', returnURL: 'https://a.example/ok', cancelURL: 'https://a.example/no' };
  const cases: [Record<string, unknown>, number, string][] = [
    [base, 400, 'GATEWAY_UNAVAILABLE'],
    [{ ...base, gateway: 'nope' }, 400, 'GATEWAY_UNAVAILABLE'],
  ];
  for (const [body, status, code] of cases) {
    const res = await call(app, '/api/payments/checkout', { body });
    t.equal(res.statusCode, status, JSON.stringify(body));
    t.equal(res.json().error, code);
  }
  t.match(
    (await call(app, '/api/payments/checkout', { body: base })).json().message,
    /STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET not set/,
    'a disabled gateway says why',
  );
  t.equal((await stripeWebhook(app, sessionCompleted('evt', 'x', 'cs', 1))).statusCode, 400, 'and takes no webhooks');
  t.equal(await rowCount(app, 'payments_payments'), 0);
});

t.test('a Stripe that does not answer in time: a clean 502 GATEWAY_ERROR within the configured timeout, nothing recorded', async (t) => {
  const app = await buildPayments(t, undefined, { stripeTimeoutMs: 300 });
  await newUser(app, 'steve');
  const before = await snapshot(app, TABLES);
  // Stripe's answer two seconds late: past the 300 ms, well within the SDK's own 80 s.
  nock('https://api.stripe.com')
    .post('/v1/checkout/sessions')
    .delay(2000)
    .reply(200, { id: 'cs_slow', object: 'checkout.session', url: 'https://checkout.stripe.com/c/pay/cs_slow' });
  const started = Date.now();
  const res = await call(app, '/api/payments/checkout', {
    body: { username: 'steve', amount: '5.00', gateway: 'stripe', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no' },
  });
  t.equal(res.statusCode, 502, res.body);
  t.strictSame(res.json(), { status: false, error: 'GATEWAY_ERROR', message: 'The gateway stripe did not create the checkout; try again later.' });
  t.ok(Date.now() - started < 1500, `answered once the timeout passed, not tried again (${Date.now() - started} ms)`);
  t.strictSame(await snapshot(app, TABLES), before, 'no payment, order or credit recorded');
});

t.test('checkout input errors with the gateway enabled', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  const base = { username: 'steve', amount: '5.00', gateway: 'stripe', returnURL: 'https://a.example/ok', cancelURL: 'https://a.example/no' };
  const cases: [Record<string, unknown>, number, string][] = [
    [{ ...base, amount: '0' }, 400, 'INVALID_AMOUNT'],
    [{ ...base, amount: '1.234' }, 400, 'INVALID_AMOUNT'],
    [{ ...base, amount: '100000' }, 400, 'INVALID_AMOUNT'],
    [{ ...base, amount: undefined }, 400, 'INVALID_AMOUNT'],
    [{ ...base, amount: undefined, packageID: '99' }, 404, 'PACKAGE_NOT_FOUND'],
    [{ ...base, username: 'nobody' }, 404, 'USER_NOT_FOUND'],
    [{ ...base, username: undefined }, 400, 'VALIDATION_ERROR'],
    [{ ...base, returnURL: 'javascript:alert(1)' }, 400, 'INVALID_URL'],
    [{ ...base, cancelURL: 'not a url' }, 400, 'INVALID_URL'],
  ];
  for (const [body, status, code] of cases) {
    const res = await call(app, '/api/payments/checkout', { body: Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) });
    t.equal(res.statusCode, status, JSON.stringify(body));
    t.equal(res.json().error, code, JSON.stringify(body));
  }
  t.equal((await call(app, `/api/payments/${'0'.repeat(32)}`)).json().error, 'PAYMENT_NOT_FOUND');
  t.equal((await call(app, '/api/payments/checkout', { body: base, key: null })).statusCode, 401, 'the checkout needs an API key');

  nock('https://api.stripe.com')
    .post('/v1/checkout/sessions')
    .reply(400, { error: { type: 'invalid_request_error', message: 'No such price' } });
  const refused = await call(app, '/api/payments/checkout', { body: base });
  t.equal(refused.statusCode, 502);
  t.equal(refused.json().error, 'GATEWAY_ERROR');
  t.equal(await rowCount(app, 'payments_payments'), 0, 'no payment without a checkout');
});

t.test('top-up packages: admin CRUD', async (t) => {
  const app = await buildPayments(t);
  const res = await call(app, '/api/admin/payments/packages', { body: { name: 'Starter', price: '5', credits: '5', currency: 'eur' } });
  t.equal(res.statusCode, 201, res.body);
  const pkg = res.json();
  t.match(pkg, { name: 'Starter', price: '5.00', credits: '5.00', bonus: '0.00', currency: 'EUR' });
  const patched = await call(app, `/api/admin/payments/packages/${pkg.id}`, { method: 'PATCH', body: { bonus: '1.5', name: 'Starter+' } });
  t.match(patched.json(), { id: pkg.id, name: 'Starter+', price: '5.00', bonus: '1.50' });
  t.match(await read(app, '/api/admin/payments/packages'), [{ id: pkg.id, name: 'Starter+' }]);
  t.match(await read(app, `/api/admin/payments/packages/${pkg.id}`), { bonus: '1.50' });
  const before = await snapshot(app, ['payments_packages']);
  const bad: [string, 'POST' | 'PATCH', Record<string, unknown>, number, string][] = [
    ['/api/admin/payments/packages', 'POST', { name: 'X', price: '0', credits: '1' }, 400, 'INVALID_AMOUNT'],
    ['/api/admin/payments/packages', 'POST', { name: 'X', price: '1', credits: '-1' }, 400, 'INVALID_AMOUNT'],
    ['/api/admin/payments/packages', 'POST', { name: 'X', price: '1', credits: '1', currency: 'dollars' }, 400, 'INVALID_CURRENCY'],
    ['/api/admin/payments/packages', 'POST', { name: 'X', credits: '1' }, 400, 'VALIDATION_ERROR'],
    [`/api/admin/payments/packages/${pkg.id}`, 'PATCH', { price: 'abc' }, 400, 'INVALID_AMOUNT'],
    ['/api/admin/payments/packages/999', 'PATCH', { name: 'Y' }, 404, 'PACKAGE_NOT_FOUND'],
  ];
  for (const [url, method, body, status, code] of bad) {
    const r = await call(app, url, { method, body });
    t.equal(r.statusCode, status, `${method} ${JSON.stringify(body)}`);
    t.equal(r.json().error, code, `${method} ${JSON.stringify(body)}`);
  }
  t.strictSame(await snapshot(app, ['payments_packages']), before, 'nothing changed');
  t.equal((await call(app, '/api/admin/payments/packages', { key: await apiKey(app) })).statusCode, 403, 'admins only');
  t.strictSame((await call(app, `/api/admin/payments/packages/${pkg.id}`, { method: 'DELETE' })).json(), { status: true });
  t.equal((await call(app, `/api/admin/payments/packages/${pkg.id}`, { method: 'DELETE' })).statusCode, 404);
  t.equal(
    (await call(app, '/api/admin/payments', { body: { username: 'x', amount: '1' } })).json().error,
    'USER_NOT_FOUND',
    "the store's payment record beneath the same path still answers",
  );
});
