/**
 * Promotions on the direct gateway path: a coupon and a gift card priced when the purchase starts,
 * taken for good when the verified webhook completes it; taken by someone else meanwhile, the paid
 * purchase is credited instead; a gateway refund gives the coupon's use and the card's amount back.
 */
import t from 'tap';
import { STRIPE_ENV, mockStripeSession, offline, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { apiKey, call, onMysql } from '../../../test/helper.ts';
import { balanceOf, buy, coupon, giftCard, makeUser, read, shop } from './fixtures.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';
const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };
const FEATURES = ['users', 'credits', 'store', 'donations', 'payments', 'promotions'];

offline(t);

const chargeRefunded = (eventId: string, sessionId: string, amount: number) => ({
  id: eventId,
  type: 'charge.refunded',
  data: {
    object: { id: `ch_${sessionId}`, object: 'charge', amount, amount_refunded: amount, refunded: true, payment_intent: `pi_${sessionId}`, metadata: {} },
  },
});

async function purchase(app: Parameters<typeof read>[0], body: Record<string, unknown>, session: string) {
  let asked = '';
  mockStripeSession(session, (b) => {
    asked = b;
  });
  const res = await call(app, '/api/payments/purchase', {
    body: { gateway: 'stripe', ...URLS, ...body },
    as: 'json',
    key: await apiKey(app, `shop-${session}`),
  });
  return { res, asked };
}

t.test(`a coupon and a gift card lower what the gateway charges; the webhook takes them; a refund gives them back (${db})`, async (t) => {
  const { app, vip, sword } = await shop(t, { features: FEATURES, env: STRIPE_ENV });
  const steve = await makeUser(app, 'steve');
  await coupon(app, { code: 'HALF', kind: 'percent', value: 50, maxUses: 1 });
  const card = await giftCard(app, '3.00');
  const { res, asked } = await purchase(
    app,
    { userID: steve, lines: [{ productID: vip }, { productID: sword }], coupon: 'half', giftCard: card.code },
    'cs_promo',
  );
  t.equal(res.statusCode, 200, res.body);
  t.equal(res.json().data.amount, '4.00', '14.00, half off, 3.00 from the card');
  t.match(asked, /unit_amount%5D=400/, 'Stripe is asked for 4.00');
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '0' }], 'nothing taken before the money arrives');

  const done = await stripeWebhook(app, sessionCompleted('evt_promo', res.json().data.paymentID, 'cs_promo', 400));
  t.match(done.json(), { data: { result: 'completed' } }, done.body);
  t.match(await read(app, `/api/users/${steve}/orders`), [
    { type: 'payment', subtotal: '14.00', discount: '7.00', total: '4.00', earnings: '4.00', coupon: 'HALF' },
  ]);
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '1' }]);
  t.match(await read(app, `/api/admin/promotions/gift-cards/${card.id}`), { balance: '0.00' });

  const refund = await stripeWebhook(app, chargeRefunded('evt_promo_refund', 'cs_promo', 400));
  t.match(refund.json(), { data: { result: 'refunded' } }, refund.body);
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '0', orders: '0' }], "the coupon's use is back");
  const shown = await read(app, `/api/admin/promotions/gift-cards/${card.id}`);
  t.equal(shown.balance, '3.00', "the card's 3.00 is back");
  t.match(
    shown.ledger.map((l: { reason: string }) => l.reason),
    ['issue', 'spend', 'refund'],
  );
});

t.test(`the coupon's last use taken by a balance buy while the player paid: the money goes to the balance (${db})`, async (t) => {
  const { app, sword } = await shop(t, { features: FEATURES, env: STRIPE_ENV });
  const steve = await makeUser(app, 'steve');
  const alex = await makeUser(app, 'alex', 1000);
  await coupon(app, { code: 'LAST', kind: 'fixed', value: '1.00', maxUses: 1 });
  const { res } = await purchase(app, { userID: steve, lines: [{ productID: sword }], coupon: 'LAST' }, 'cs_last');
  t.equal(res.json().data.amount, '3.00');
  t.equal((await buy(app, alex, [sword], { coupon: 'LAST' })).statusCode, 200, 'alex takes the one use');
  const done = await stripeWebhook(app, sessionCompleted('evt_last', res.json().data.paymentID, 'cs_last', 300));
  t.match(done.json(), { data: { result: 'credited' } }, done.body);
  t.equal(await balanceOf(app, steve), 300, "steve's 3.00 is on his balance");
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '1', orders: '1' }]);
});

t.test(`a code that does not apply refuses the purchase before the gateway is asked (${db})`, async (t) => {
  const { app, sword } = await shop(t, { features: FEATURES, env: STRIPE_ENV });
  const steve = await makeUser(app, 'steve');
  const res = await call(app, '/api/payments/purchase', {
    body: { gateway: 'stripe', ...URLS, userID: steve, lines: [{ productID: sword }], coupon: 'NOPE' },
    as: 'json',
    key: await apiKey(app, 'shop'),
  });
  t.equal(res.statusCode, 400);
  t.match(res.json(), { error: 'PROMOTION_INVALID' });
  const card = await giftCard(app, '50.00');
  const free = await call(app, '/api/payments/purchase', {
    body: { gateway: 'stripe', ...URLS, userID: steve, lines: [{ productID: sword }], giftCard: card.code },
    as: 'json',
    key: await apiKey(app, 'shop2'),
  });
  t.match(free.json(), { error: 'INVALID_AMOUNT' }, 'a card that pays everything leaves nothing for a gateway');
});
