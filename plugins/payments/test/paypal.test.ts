import nock from 'nock';
import t from 'tap';
import { call } from '../../../test/helper.ts';
import { newUser, read, rowCount, snapshot } from '../../../test/fixtures.ts';
import { balanceOf, buildPayments, mockPayPalToken, mockPayPalVerify, offline, PAYPAL_API, paypalWebhook } from './fixtures.ts';

offline(t);

const captureOf = (paymentID: string, value: string, currency = 'USD') => ({
  id: 'ORDER-1', status: 'COMPLETED',
  purchase_units: [{ custom_id: paymentID, payments: { captures: [{ id: 'CAP-1', status: 'COMPLETED', amount: { currency_code: currency, value } }] } }],
});

async function paypalCheckout(app: Parameters<typeof call>[0], username: string, amount: string): Promise<string> {
  mockPayPalToken();
  let order: any;
  nock(PAYPAL_API).post('/v2/checkout/orders', (body) => { order = body; return true; }).reply(201, {
    id: 'ORDER-1', status: 'PAYER_ACTION_REQUIRED',
    links: [{ rel: 'self', href: `${PAYPAL_API}/v2/checkout/orders/ORDER-1` }, { rel: 'payer-action', href: 'https://www.sandbox.paypal.com/checkoutnow?token=ORDER-1' }],
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
  mockPayPalVerify('SUCCESS', (body) => { verified = body; });
  nock(PAYPAL_API).post('/v2/checkout/orders/ORDER-1/capture').reply(201, captureOf(paymentID, '10.00'));
  const approved = { id: 'WH-EVT-1', event_type: 'CHECKOUT.ORDER.APPROVED', resource: { id: 'ORDER-1', status: 'APPROVED' } };
  const res = await paypalWebhook(app, approved);
  t.strictSame(res.json(), { status: true, data: { result: 'completed' } }, res.body);
  t.match(verified, { webhook_id: 'WH-1', transmission_id: 'tx-1', auth_algo: 'SHA256withRSA', webhook_event: { id: 'WH-EVT-1' } });
  t.equal(await balanceOf(app, 'steve'), 10);
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'completed', gateway: 'paypal' });

  mockPayPalVerify('SUCCESS');
  const captured = {
    id: 'WH-EVT-2', event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: { id: 'CAP-1', status: 'COMPLETED', custom_id: paymentID, amount: { currency_code: 'USD', value: '10.00' }, supplementary_data: { related_ids: { order_id: 'ORDER-1' } } },
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
    id: 'WH-EVT-3', event_type: 'PAYMENT.CAPTURE.REFUNDED',
    resource: {
      id: 'REF-1', status: 'COMPLETED', amount: { currency_code: 'USD', value: '10.00' },
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
    id: 'WH-C', event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: { id: 'CAP-9', status: 'COMPLETED', custom_id: paymentID, amount: { currency_code: 'USD', value: '3.00' } },
  };
  t.strictSame((await paypalWebhook(app, captured)).json(), { status: true, data: { result: 'completed' } });
  mockPayPalVerify('SUCCESS');
  const dispute = { id: 'WH-D', event_type: 'CUSTOMER.DISPUTE.CREATED', resource: { dispute_id: 'PP-D-1', disputed_transactions: [{ seller_transaction_id: 'CAP-9' }] } };
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
    id: `WH-${value}-${currency}`, event_type: 'PAYMENT.CAPTURE.COMPLETED',
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
  res = await paypalWebhook(app, { ...captured('10.00'), resource: { id: 'CAP-X', custom_id: 'f'.repeat(32), amount: { currency_code: 'USD', value: '10.00' } } });
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
