/**
 * Guests and coupons limited per player: uses per player count accounts. A guest's typed name
 * proves nothing, so a guest checking out under a player's name never spends that player's uses,
 * and a coupon limited per player is for accounts only (a new name each time would be unlimited).
 */
import nock from 'nock';
import t from 'tap';
import { STRIPE_ENV, mockStripeSession, offline, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { call, onMysql } from '../../../test/helper.ts';
import { TABLES, buy, coupon, makeUser, read, shop, snapshot } from './fixtures.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';
const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };
const FEATURES = ['users', 'credits', 'store', 'donations', 'payments', 'promotions'];

offline(t);

const purchase = (app: Parameters<typeof read>[0], body: Record<string, unknown>) =>
  call(app, '/api/payments/purchase', { body: { gateway: 'stripe', ...URLS, ...body }, as: 'json' });

t.test(`a guest under a player's name spends none of that player's uses of a coupon limited per player (${db})`, async (t) => {
  const { app, sword } = await shop(t, { features: FEATURES, env: STRIPE_ENV });
  const alice = await makeUser(app, 'alice', 10_000);
  await coupon(app, { code: 'ONCE', kind: 'fixed', value: '1.00', perPlayer: 1 });
  const before = await snapshot(app, [...TABLES, 'payments_payments']);

  for (const guestName of ['alice', 'ALICE', 'Bob_1', 'Bob_2']) {
    const res = await purchase(app, { guestName, lines: [{ productID: sword }], coupon: 'once' });
    t.equal(res.statusCode, 400, `${guestName}: ${res.body}`);
    t.match(res.json(), { error: 'PROMOTION_INVALID', message: /ONCE counts its uses per player: sign in/ }, `a guest named ${guestName} is refused`);
  }
  t.strictSame(await snapshot(app, [...TABLES, 'payments_payments']), before, 'nothing stored, nothing counted');

  // A limit set while a guest named alice pays: the completion refuses the coupon, the guest is refunded.
  await coupon(app, { code: 'LATER', kind: 'fixed', value: '1.00' });
  mockStripeSession('cs_guest');
  const started = await purchase(app, { guestName: 'alice', lines: [{ productID: sword }], coupon: 'later' });
  t.equal(started.statusCode, 200, started.body);
  t.equal(started.json().data.amount, '3.00', 'no limit per player yet: the guest gets it');
  const later = (await read(app, '/api/admin/promotions/coupons')).find((c: { code: string }) => c.code === 'LATER');
  t.equal((await call(app, `/api/admin/promotions/coupons/${later.id}`, { method: 'PATCH', body: { perPlayer: 1 }, as: 'json' })).statusCode, 200);
  nock('https://api.stripe.com').post('/v1/refunds').reply(200, { id: 're_1', object: 'refund', amount: 300, status: 'succeeded' });
  const hook = await stripeWebhook(app, sessionCompleted('evt_guest', started.json().data.paymentID, 'cs_guest', 300));
  t.strictSame(hook.json(), { status: true, data: { result: 'refunded' } }, hook.body);

  for (const code of ['once', 'later']) {
    const first = await buy(app, alice, [sword], { coupon: code });
    t.equal(first.statusCode, 200, `alice uses ${code}: ${first.body}`);
    t.equal(first.json().discount, '1.00');
    const again = await buy(app, alice, [sword], { coupon: code });
    t.equal(again.json().error, 'PROMOTION_INVALID', `alice's own second use of ${code} is refused`);
  }
  t.match(
    await read(app, '/api/admin/promotions/coupons'),
    [
      { code: 'LATER', uses: '1' },
      { code: 'ONCE', uses: '1' },
    ],
    "one use each: alice's",
  );
});

t.test(`a coupon without a limit per player still serves guests, each use counted in its total (${db})`, async (t) => {
  const { app, sword } = await shop(t, { features: FEATURES, env: STRIPE_ENV });
  await coupon(app, { code: 'OPEN', kind: 'fixed', value: '1.00', maxUses: 5 });
  for (const [i, guestName] of ['Notch_1', 'Notch_2'].entries()) {
    mockStripeSession(`cs_open_${i}`);
    const res = await purchase(app, { guestName, lines: [{ productID: sword }], coupon: 'open' });
    t.equal(res.statusCode, 200, res.body);
    const hook = await stripeWebhook(app, sessionCompleted(`evt_open_${i}`, res.json().data.paymentID, `cs_open_${i}`, 300));
    t.strictSame(hook.json(), { status: true, data: { result: 'completed' } }, hook.body);
  }
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ code: 'OPEN', uses: '2' }]);
});
