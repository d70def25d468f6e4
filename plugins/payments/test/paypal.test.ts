import nock from 'nock';
import t from 'tap';
import { call } from '../../../test/helper.ts';
import { newUser, read, rowCount, snapshot } from '../../../test/fixtures.ts';
import { balanceOf, buildPayments, mockPayPalToken, mockPayPalVerify, offline, PAYPAL_API, paypalWebhook } from './fixtures.ts';

offline(t);

const captureOf = (paymentID: string, value: string, currency = 'USD') => ({
  id: 'ORDER-1',
  status: 'COMPLETED',
  purchase_units: [{ custom_id: paymentID, payments: { captures: [{ id: 'CAP-1', status: 'COMPLETED', amount: { currency_code: currency, value } }] } }],
});

async function paypalCheckout(app: Parameters<typeof call>[0], username: string, amount: string): Promise<string> {
  mockPayPalToken();
  let order: any;
  nock(PAYPAL_API)
    .post('/v2/checkout/orders', (body) => {
      order = body;
      return true;
    })
    .reply(201, {
      id: 'ORDER-1',
      status: 'PAYER_ACTION_REQUIRED',
      links: [
        { rel: 'self', href: `${PAYPAL_API}/v2/checkout/orders/ORDER-1` },
        { rel: 'payer-action', href: 'https://www.sandbox.paypal.com/checkoutnow?token=ORDER-1' },
      ],
    });
  const res = await call(app, '/api/payments/checkout', {
    body: { username, amount, gateway: 'paypal', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no' },
  });
  if (res.statusCode !== 200) throw new Error(res.body);
  const { paymentID, checkoutURL } = res.json().data;
  if (checkoutURL !== 'https://www.sandbox.paypal.com/checkoutnow?token=ORDER-1') throw new Error(checkoutURL);
  if (order.purchase_units[0].custom_id !== paymentID || order.purchase_units[0].amount.value !== amount) throw new Error(JSON.stringify(order));
  return paymentID;
}

t.test('approval → verified webhook → capture → completed once', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  const paymentID = await paypalCheckout(app, 'steve', '10.00');
  let verified: Record<string, unknown> = {};
  mockPayPalVerify('SUCCESS', (body) => {
    verified = body;
  });
  nock(PAYPAL_API).post('/v2/checkout/orders/ORDER-1/capture').reply(201, captureOf(paymentID, '10.00'));
  const approved = { id: 'WH-EVT-1', event_type: 'CHECKOUT.ORDER.APPROVED', resource: { id: 'ORDER-1', status: 'APPROVED' } };
  const res = await paypalWebhook(app, approved);
  t.strictSame(res.json(), { status: true, data: { result: 'completed' } }, res.body);
  t.match(verified, { webhook_id: 'WH-1', transmission_id: 'tx-1', auth_algo: 'SHA256withRSA', webhook_event: { id: 'WH-EVT-1' } });
  t.equal(await balanceOf(app, 'steve'), 10);
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'completed', gateway: 'paypal' });

  mockPayPalVerify('SUCCESS');
  const captured = {
    id: 'WH-EVT-2',
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: {
      id: 'CAP-1',
      status: 'COMPLETED',
      custom_id: paymentID,
      amount: { currency_code: 'USD', value: '10.00' },
      supplementary_data: { related_ids: { order_id: 'ORDER-1' } },
    },
  };
  t.strictSame((await paypalWebhook(app, captured)).json(), { status: true, data: { result: 'unchanged' } }, 'the capture event credits nothing more');
  mockPayPalVerify('SUCCESS');
  nock(PAYPAL_API).post('/v2/checkout/orders/ORDER-1/capture').reply(201, captureOf(paymentID, '10.00'));
  t.strictSame((await paypalWebhook(app, approved)).json(), { status: true, data: { result: 'duplicate' } });
  t.equal(await balanceOf(app, 'steve'), 10);
  t.equal(await rowCount(app, 'store_orders'), 1);

  await call(app, '/api/credits/remove', { body: { target_username: 'steve', amount: '7.50' } });
  mockPayPalVerify('SUCCESS');
  const refunded = {
    id: 'WH-EVT-3',
    event_type: 'PAYMENT.CAPTURE.REFUNDED',
    resource: {
      id: 'REF-1',
      status: 'COMPLETED',
      amount: { currency_code: 'USD', value: '10.00' },
      seller_payable_breakdown: { total_refunded_amount: { currency_code: 'USD', value: '10.00' } },
      links: [{ rel: 'up', href: `${PAYPAL_API}/v2/payments/captures/CAP-1`, method: 'GET' }],
    },
  };
  t.strictSame((await paypalWebhook(app, refunded)).json(), { status: true, data: { result: 'refunded' } });
  t.equal(await balanceOf(app, 'steve'), 0);
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'refunded', reclaimed: '2.50', debt: '7.50' });
  t.ok(nock.isDone(), 'every mocked PayPal call was made');
});

t.test('PAYMENT.CAPTURE.COMPLETED alone completes; a dispute takes the credits back', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  const paymentID = await paypalCheckout(app, 'steve', '3.00');
  mockPayPalVerify('SUCCESS');
  const captured = {
    id: 'WH-C',
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: { id: 'CAP-9', status: 'COMPLETED', custom_id: paymentID, amount: { currency_code: 'USD', value: '3.00' } },
  };
  t.strictSame((await paypalWebhook(app, captured)).json(), { status: true, data: { result: 'completed' } });
  mockPayPalVerify('SUCCESS');
  const dispute = {
    id: 'WH-D',
    event_type: 'CUSTOMER.DISPUTE.CREATED',
    resource: { dispute_id: 'PP-D-1', disputed_transactions: [{ seller_transaction_id: 'CAP-9' }] },
  };
  t.strictSame((await paypalWebhook(app, dispute)).json(), { status: true, data: { result: 'disputed' } });
  t.equal(await balanceOf(app, 'steve'), 0);
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'disputed', reclaimed: '3.00', debt: '0.00' });
});

t.test('refused webhooks: PayPal says FAILURE, headers missing, amount differs → 400, nothing changed', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  const paymentID = await paypalCheckout(app, 'steve', '10.00');
  const tables = ['payments_payments', 'payments_events', 'store_orders', 'credits_ledger', 'donations_entries'];
  const before = await snapshot(app, tables);
  const captured = (value: string, currency = 'USD') => ({
    id: `WH-${value}-${currency}`,
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: { id: 'CAP-1', status: 'COMPLETED', custom_id: paymentID, amount: { currency_code: currency, value } },
  });

  mockPayPalVerify('FAILURE');
  let res = await paypalWebhook(app, captured('10.00'));
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'INVALID_SIGNATURE');
  res = await paypalWebhook(app, captured('10.00'), {});
  t.equal(res.json().error, 'INVALID_SIGNATURE', 'no transmission headers: refused without asking PayPal');
  mockPayPalVerify('SUCCESS');
  res = await paypalWebhook(app, captured('9.99'));
  t.equal(res.json().error, 'AMOUNT_MISMATCH');
  mockPayPalVerify('SUCCESS');
  res = await paypalWebhook(app, captured('10.00', 'EUR'));
  t.equal(res.json().error, 'AMOUNT_MISMATCH');
  mockPayPalVerify('SUCCESS');
  res = await paypalWebhook(app, {
    ...captured('10.00'),
    resource: { id: 'CAP-X', custom_id: 'f'.repeat(32), amount: { currency_code: 'USD', value: '10.00' } },
  });
  t.equal(res.json().error, 'UNKNOWN_PAYMENT');
  t.strictSame(await snapshot(app, tables), before, 'nothing changed');
  t.ok(nock.isDone());
});

t.test('PayPal disabled without its secrets', async (t) => {
  const app = await buildPayments(t, { STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x', PAYPAL_CLIENT_ID: 'id' });
  const res = await call(app, '/api/payments/checkout', {
    body: { userID: '1', amount: '1', gateway: 'paypal', returnURL: 'https://a.example/', cancelURL: 'https://a.example/' },
  });
  t.equal(res.statusCode, 400);
  t.match(res.json(), { error: 'GATEWAY_UNAVAILABLE', message: /PAYPAL_CLIENT_SECRET, PAYPAL_WEBHOOK_ID not set/ });
  t.notMatch(res.json().message, /PAYPAL_CLIENT_ID/, 'the one set is not named');
});

/** PayPal's answer, two seconds late. */
const late = <T>(answer: T) => new Promise<T>((resolve) => setTimeout(() => resolve(answer), 2000));

t.test('a PayPal that does not answer in time: a clean 502 GATEWAY_ERROR, nothing recorded', async (t) => {
  const app = await buildPayments(t, undefined, { paypalTimeoutMs: 300 });
  await newUser(app, 'steve');
  const tables = ['payments_payments', 'payments_events', 'store_orders', 'credits_ledger', 'donations_entries'];
  const before = await snapshot(app, tables);
  mockPayPalToken();
  nock(PAYPAL_API)
    .post('/v2/checkout/orders')
    .reply(() => late([201, { id: 'ORDER-SLOW', links: [{ rel: 'payer-action', href: 'https://www.sandbox.paypal.com/x' }] }]));
  let started = Date.now();
  let res = await call(app, '/api/payments/checkout', {
    body: { username: 'steve', amount: '5.00', gateway: 'paypal', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no' },
  });
  t.equal(res.statusCode, 502, res.body);
  t.strictSame(res.json(), { status: false, error: 'GATEWAY_ERROR', message: 'The gateway paypal did not create the checkout; try again later.' });
  t.ok(Date.now() - started < 1500, `answered once the timeout passed (${Date.now() - started} ms)`);

  nock(PAYPAL_API)
    .post('/v1/notifications/verify-webhook-signature')
    .reply(() => late([200, { verification_status: 'SUCCESS' }]));
  started = Date.now();
  res = await paypalWebhook(app, {
    id: 'WH-SLOW',
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: { id: 'CAP-S', amount: { currency_code: 'USD', value: '5.00' } },
  });
  t.equal(res.statusCode, 502, res.body);
  t.match(res.json(), { status: false, error: 'GATEWAY_ERROR' });
  t.ok(Date.now() - started < 1500, `the webhook too (${Date.now() - started} ms): PayPal retries it later`);
  t.strictSame(await snapshot(app, tables), before, 'no payment, event, order or credit recorded');
});

t.test('the signature is verified over the bytes PayPal sent, not a re-serialised event', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  const paymentID = await paypalCheckout(app, 'steve', '3.00');
  // Key order, spacing, escapes and a number that JSON.stringify would all write differently.
  const raw =
    `{\n  "resource": {"amount": {"value": "3.00", "currency_code": "USD"}, "custom_id": "${paymentID}", "id": "CAP-RAW",` +
    ' "status": "COMPLETED", "note_to_payer": "Caf\\u00e9 \\/ café ☕", "seller_receivable_breakdown": {"gross_amount": 3.0}},\n' +
    '  "event_type":"PAYMENT.CAPTURE.COMPLETED", "id" : "WH-RAW",\t"create_time": "2026-11-23T08:00:00.000Z"\n}\n';
  let sent = '';
  const scope = nock(PAYPAL_API, { reqheaders: { authorization: 'Bearer A21-token' } })
    .post('/v1/notifications/verify-webhook-signature')
    .reply(200, { verification_status: 'SUCCESS' });
  scope.on('request', (_request: unknown, _interceptor: unknown, body: string) => {
    sent = body;
  });
  const res = await paypalWebhook(app, raw);
  t.strictSame(res.json(), { status: true, data: { result: 'completed' } }, res.body);
  t.ok(Buffer.from(sent).includes(Buffer.from(`"webhook_event":${raw}}`)), 'webhook_event holds the received bytes, byte for byte');
  t.notOk(sent.includes(JSON.stringify(JSON.parse(raw))), 'not the event re-serialised');
  t.strictSame(
    JSON.parse(sent),
    {
      auth_algo: 'SHA256withRSA',
      cert_url: 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-1',
      transmission_id: 'tx-1',
      transmission_sig: 'c2lnbmF0dXJl',
      transmission_time: '2026-11-23T08:00:00Z',
      webhook_id: 'WH-1',
      webhook_event: JSON.parse(raw),
    },
    'the rest of the verification request as PayPal documents it',
  );
  t.equal(await balanceOf(app, 'steve'), 3);
  t.ok(scope.isDone());
});
