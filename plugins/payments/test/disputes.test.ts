/**
 * Disputes on both gateways, through their signed webhooks: each opened, won or lost is acted on
 * once, takes the credits back (the reversal), is recorded, announced and audited, and blocks the
 * buyer from paying again until staff lift it or the dispute is won.
 */
import nock from 'nock';
import t from 'tap';
import { newUser, read, rowCount } from '../../../test/fixtures.ts';
import { call } from '../../../test/helper.ts';
import {
  balanceOf,
  buildShop,
  disputeCreated,
  mockPayPalToken,
  mockPayPalVerify,
  mockStripeSession,
  offline,
  PAYPAL_API,
  paypalWebhook,
  sessionCompleted,
  stripeCheckout,
  stripeWebhook,
} from './fixtures.ts';

offline(t);

const disputeClosed = (eventId: string, sessionId: string, status: 'won' | 'lost') => ({
  id: eventId,
  type: 'charge.dispute.closed',
  data: {
    object: { id: `dp_${sessionId}`, object: 'dispute', status, reason: 'fraudulent', amount: 1000, currency: 'usd', payment_intent: `pi_${sessionId}` },
  },
});

const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/shop' };

t.test('a Stripe dispute blocks the buyer, is recorded and announced once; lost keeps the block, staff lift it', async (t) => {
  const app = await buildShop(t);
  await newUser(app, 'steve', { email: 'steve@example.com' });
  const seen: string[] = [];
  for (const name of ['payments.dispute.opened', 'payments.dispute.closed', 'payments.block.added', 'payments.block.lifted'] as const) {
    app.events.on(name, () => {
      seen.push(name);
    });
  }
  const paymentID = await stripeCheckout(app, 'cs_d1', { username: 'steve', amount: '10.00' });
  t.equal((await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_d1', 1000))).statusCode, 200);

  const opened = { ...disputeCreated('evt_dispute', 'cs_d1', 1000) };
  Object.assign(opened.data.object, { reason: 'fraudulent', currency: 'usd' });
  t.strictSame((await stripeWebhook(app, opened)).json(), { status: true, data: { result: 'disputed' } });
  t.strictSame((await stripeWebhook(app, opened)).json(), { status: true, data: { result: 'duplicate' } }, 'a redelivery is acted on once');
  t.equal(await balanceOf(app, 'steve'), 0, 'the credits are taken back');
  t.match(await read(app, '/api/admin/payments/disputes'), [
    { paymentID, gateway: 'stripe', disputeRef: 'dp_cs_d1', reason: 'fraudulent', status: 'open', amount: '10.00', currency: 'USD' },
  ]);
  const blocks = await read(app, '/api/admin/payments/blocks');
  t.match(blocks, [{ name: 'steve', email: 'steve@example.com', ip: null, paymentID, liftedDate: null }]);
  t.equal(blocks.length, 1, 'one block for one dispute');
  t.same(seen, ['payments.dispute.opened', 'payments.block.added']);

  await t.test('the blocked player is refused a checkout and a purchase, changing nothing', async (t) => {
    const topUp = await call(app, '/api/payments/checkout', { body: { gateway: 'stripe', username: 'steve', amount: '5.00', ...URLS } });
    t.equal(topUp.statusCode, 403);
    t.match(topUp.json(), { status: false, error: 'PURCHASES_BLOCKED', message: /blocked .* disputed payment/ });
    const guest = await call(app, '/api/payments/purchase', {
      body: { gateway: 'stripe', guestName: 'Steve', lines: [{ productID: '1' }], ...URLS },
    });
    t.equal(guest.statusCode, 403, 'the in-game name is blocked as a guest too');
    t.equal(guest.json().error, 'PURCHASES_BLOCKED');
    t.equal(await rowCount(app, 'payments_payments'), 1, 'no payment was started');
  });

  await t.test('a lost dispute is recorded once and keeps the block', async (t) => {
    t.strictSame((await stripeWebhook(app, disputeClosed('evt_lost', 'cs_d1', 'lost'))).json(), { status: true, data: { result: 'lost' } });
    t.strictSame((await stripeWebhook(app, disputeClosed('evt_lost2', 'cs_d1', 'lost'))).json(), { status: true, data: { result: 'unchanged' } });
    t.match(await read(app, '/api/admin/payments/disputes?status=lost'), [{ paymentID, status: 'lost' }]);
    t.equal((await read(app, '/api/admin/payments/blocks')).length, 1);
    t.same(seen.slice(2), ['payments.dispute.closed']);
  });

  await t.test('staff lift the block: the player pays again, and the audit log has it all', async (t) => {
    const [block] = await read(app, '/api/admin/payments/blocks');
    const lifted = await call(app, `/api/admin/payments/blocks/${block.id}/lift`, { method: 'POST' });
    t.equal(lifted.statusCode, 200, lifted.body);
    t.match(lifted.json(), { id: block.id, liftedBy: String });
    t.equal((await call(app, '/api/admin/payments/blocks/999/lift', { method: 'POST' })).json().error, 'BLOCK_NOT_FOUND');
    t.same(await read(app, '/api/admin/payments/blocks'), []);
    t.equal((await read(app, '/api/admin/payments/blocks?all=true')).length, 1, 'kept, lifted');
    mockStripeSession('cs_d2');
    const again = await call(app, '/api/payments/checkout', { body: { gateway: 'stripe', username: 'steve', amount: '5.00', ...URLS } });
    t.equal(again.statusCode, 200, again.body);
    const audit = await read(app, '/api/admin/audit?action=payments.');
    t.match(
      audit.map((e: { action: string; actorKind?: string }) => e.action),
      ['payments.block.lifted', 'payments.dispute.closed', 'payments.block.added', 'payments.dispute.opened'],
    );
    t.same(seen.slice(3), ['payments.block.lifted']);
  });
});

t.test('a won Stripe dispute gives the credits back and lifts the block it placed', async (t) => {
  const app = await buildShop(t);
  await newUser(app, 'alex');
  const paymentID = await stripeCheckout(app, 'cs_w', { username: 'alex', amount: '10.00' });
  await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_w', 1000));
  await stripeWebhook(app, disputeCreated('evt_dispute', 'cs_w', 1000));
  t.equal((await read(app, '/api/admin/payments/blocks')).length, 1);
  t.strictSame((await stripeWebhook(app, disputeClosed('evt_won', 'cs_w', 'won'))).json(), { status: true, data: { result: 'reinstated' } });
  t.equal(await balanceOf(app, 'alex'), 10);
  t.match(await read(app, '/api/admin/payments/disputes'), [{ paymentID, status: 'won' }]);
  t.same(await read(app, '/api/admin/payments/blocks'), [], 'the block is lifted');
  t.match(await read(app, '/api/admin/payments/blocks?all=true'), [{ liftedBy: 'dispute won' }]);
});

/** A completed PayPal top-up of 10.00 whose capture is `CAP-<n>`. */
async function paypalPaid(app: Parameters<typeof call>[0], username: string, n: number): Promise<string> {
  mockPayPalToken();
  nock(PAYPAL_API)
    .post('/v2/checkout/orders')
    .reply(201, { id: `ORDER-${n}`, links: [{ rel: 'payer-action', href: `https://www.sandbox.paypal.com/checkoutnow?token=ORDER-${n}` }] });
  const res = await call(app, '/api/payments/checkout', { body: { username, amount: '10.00', gateway: 'paypal', ...URLS } });
  const { paymentID } = res.json().data;
  mockPayPalVerify('SUCCESS');
  const captured = {
    id: `WH-PAID-${n}`,
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: { id: `CAP-${n}`, status: 'COMPLETED', custom_id: paymentID, amount: { currency_code: 'USD', value: '10.00' } },
  };
  const paid = await paypalWebhook(app, captured);
  if (paid.json().data?.result !== 'completed') throw new Error(paid.body);
  return paymentID;
}

const paypalDispute = (eventId: string, type: string, n: number, outcome?: string) => ({
  id: eventId,
  event_type: type,
  resource: {
    dispute_id: `PP-D-${n}`,
    reason: 'UNAUTHORISED',
    dispute_amount: { currency_code: 'USD', value: '10.00' },
    disputed_transactions: [{ seller_transaction_id: `CAP-${n}` }],
    ...(outcome ? { dispute_outcome: { outcome_code: outcome } } : {}),
  },
});

t.test('PayPal disputes: opened blocks once, resolved for the buyer is lost, for the seller is won', async (t) => {
  const app = await buildShop(t);
  await newUser(app, 'steve');
  await newUser(app, 'alex');
  const lost = await paypalPaid(app, 'steve', 1);
  const won = await paypalPaid(app, 'alex', 2);

  mockPayPalVerify('SUCCESS');
  t.strictSame((await paypalWebhook(app, paypalDispute('WH-D1', 'CUSTOMER.DISPUTE.CREATED', 1))).json(), { status: true, data: { result: 'disputed' } });
  mockPayPalVerify('SUCCESS');
  t.strictSame((await paypalWebhook(app, paypalDispute('WH-D1', 'CUSTOMER.DISPUTE.CREATED', 1))).json(), { status: true, data: { result: 'duplicate' } });
  mockPayPalVerify('SUCCESS');
  t.strictSame((await paypalWebhook(app, paypalDispute('WH-D2', 'CUSTOMER.DISPUTE.CREATED', 2))).json(), { status: true, data: { result: 'disputed' } });
  t.equal(await balanceOf(app, 'steve'), 0);
  t.match(await read(app, '/api/admin/payments/blocks'), [{ name: 'alex' }, { name: 'steve' }]);

  mockPayPalVerify('SUCCESS');
  const buyerWon = paypalDispute('WH-R1', 'CUSTOMER.DISPUTE.RESOLVED', 1, 'RESOLVED_BUYER_FAVOUR');
  t.strictSame((await paypalWebhook(app, buyerWon)).json(), { status: true, data: { result: 'lost' } });
  mockPayPalVerify('SUCCESS');
  const sellerWon = paypalDispute('WH-R2', 'CUSTOMER.DISPUTE.RESOLVED', 2, 'RESOLVED_SELLER_FAVOUR');
  t.strictSame((await paypalWebhook(app, sellerWon)).json(), { status: true, data: { result: 'reinstated' } });
  t.equal(await balanceOf(app, 'alex'), 10);
  const disputes = await read(app, '/api/admin/payments/disputes');
  t.match(
    [won, lost].map((id) => disputes.find((d: { paymentID: string }) => d.paymentID === id)),
    [
      { disputeRef: 'PP-D-2', reason: 'UNAUTHORISED', status: 'won' },
      { disputeRef: 'PP-D-1', status: 'lost' },
    ],
  );
  t.match(await read(app, '/api/admin/payments/blocks'), [{ name: 'steve' }], "only the lost dispute's block stands");

  const refused = await call(app, '/api/payments/checkout', { body: { gateway: 'paypal', username: 'steve', amount: '5.00', ...URLS } });
  t.equal(refused.json().error, 'PURCHASES_BLOCKED');

  t.match(
    await read(app, `/api/admin/payments/disputes/${lost}/evidence`),
    { submittable: false, evidence: { customerName: 'steve', productDescription: /10\.00 store credits/ } },
    "PayPal's evidence is shown ready to send by hand",
  );
  const bySelf = await call(app, `/api/admin/payments/disputes/${lost}/evidence`, { method: 'POST' });
  t.equal(bySelf.statusCode, 400);
  t.equal(bySelf.json().error, 'EVIDENCE_NOT_SUPPORTED');
});
