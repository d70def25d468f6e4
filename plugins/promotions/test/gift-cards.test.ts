/** Gift cards through the HTTP API: issued by staff or bought, spent in part or in full, redeemed onto credits, their ledger, a refund. */
import t from 'tap';
import { call, onMysql } from '../../../test/helper.ts';
import { balanceOf, buy, coupon, giftCard, makeUser, read, shop, snapshot, TABLES } from './fixtures.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';
const cardById = async (app: Parameters<typeof read>[0], id: string) => read(app, `/api/admin/promotions/gift-cards/${id}`);

t.test(`a gift card pays part of a basket, then the rest of another, never below zero (${db})`, async (t) => {
  const { app, vip, sword } = await shop(t);
  const steve = await makeUser(app, 'steve', 5000);
  const card = await giftCard(app, '12.00', 'Birthday-Steve');
  const first = await buy(app, steve, [vip], { giftCard: 'birthday-steve' });
  t.match(first.json(), { subtotal: '10.00', discount: '0.00', total: '0.00' }, 'the card paid all of it');
  t.equal(await balanceOf(app, steve), 5000, 'the balance paid nothing');
  const second = await buy(app, steve, [sword], { giftCard: 'BIRTHDAY-STEVE' });
  t.match(second.json(), { total: '2.00' }, 'the 2.00 left on the card, then the balance');
  t.equal(await balanceOf(app, steve), 4800);
  const shown = await cardById(app, card.id);
  t.match(shown, { balance: '0.00', initialAmount: '12.00', uses: '2', spent: '12.00' });
  t.match(shown.ledger, [
    { reason: 'issue', delta: '12.00', balance: '12.00' },
    { reason: 'spend', delta: '-10.00', balance: '2.00' },
    { reason: 'spend', delta: '-2.00', balance: '0.00' },
  ]);
  const before = await snapshot(app, TABLES);
  const empty = await buy(app, steve, [sword], { giftCard: 'birthday-steve' });
  t.equal(empty.statusCode, 400);
  t.match(empty.json(), { error: 'PROMOTION_INVALID', message: /no balance left/ });
  t.strictSame(await snapshot(app, TABLES), before, 'an empty card changes nothing');
  t.match(
    await read(app, `/api/users/${steve}/orders`),
    [{ total: '2.00' }, { coupon: null, total: '0.00', discount: '0.00', subtotal: '10.00' }],
    'a card pays: no discount',
  );
});

t.test(`a coupon then a gift card on one order; its refund gives back the balance paid, the card's amount and the coupon's use (${db})`, async (t) => {
  const { app, vip, sword } = await shop(t);
  const steve = await makeUser(app, 'steve', 5000);
  await coupon(app, { code: 'TEN', kind: 'percent', value: 10, maxUses: 1 });
  const card = await giftCard(app, '5.00');
  const res = await buy(app, steve, [vip, sword], { coupon: 'ten', giftCard: card.code.toLowerCase() });
  t.match(res.json(), { subtotal: '14.00', discount: '1.40', total: '7.60' }, '14.00 less 1.40 off, less 5.00 from the card');
  t.equal(await balanceOf(app, steve), 5000 - 760);
  const refund = await call(app, `/api/admin/store/orders/${res.json().orderID}/refund`, { method: 'POST', body: {}, as: 'json' });
  t.equal(refund.statusCode, 200, refund.body);
  t.equal(await balanceOf(app, steve), 5000, 'the 7.60 paid from the balance came back');
  const shown = await cardById(app, card.id);
  t.equal(shown.balance, '5.00', 'the card has its 5.00 again');
  t.match(
    shown.ledger.map((l: { reason: string }) => l.reason),
    ['issue', 'spend', 'refund'],
  );
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '0' }]);
  t.equal((await buy(app, steve, [sword], { coupon: 'TEN' })).statusCode, 200, 'its one use can be taken again');
});

t.test(`redeemed onto the credit balance once; staff pause and delete (${db})`, async (t) => {
  const { app } = await shop(t);
  const steve = await makeUser(app, 'steve', 100);
  const card = await giftCard(app, '7.50');
  const res = await call(app, '/api/promotions/gift-cards/redeem', { body: { userID: steve, code: card.code.toLowerCase() }, as: 'json' });
  t.strictSame(res.json(), { status: true, credited: '7.50', credits: '8.50' });
  const again = await call(app, '/api/promotions/gift-cards/redeem', { body: { userID: steve, code: card.code }, as: 'json' });
  t.match(again.json(), { error: 'PROMOTION_INVALID' });
  t.equal(await balanceOf(app, steve), 850);
  t.match(await read(app, `/api/promotions/gift-cards/${card.code}`), { balance: '0.00' });
  t.equal((await call(app, '/api/promotions/gift-cards/NOPE', { method: 'GET' })).json().error, 'GIFT_CARD_NOT_FOUND');
  t.equal((await call(app, '/api/promotions/gift-cards/redeem', { body: { userID: 999, code: card.code }, as: 'json' })).json().error, 'USER_NOT_FOUND');
  t.equal(
    (await call(app, `/api/admin/promotions/gift-cards/${card.id}`, { method: 'DELETE' })).json().error,
    'CONFLICT',
    'a used card is kept for its ledger',
  );

  const paused = await giftCard(app, '3.00');
  t.equal((await call(app, `/api/admin/promotions/gift-cards/${paused.id}`, { method: 'PATCH', body: { isActive: false }, as: 'json' })).statusCode, 200);
  t.match((await call(app, '/api/promotions/gift-cards/redeem', { body: { userID: steve, code: paused.code }, as: 'json' })).json(), {
    error: 'PROMOTION_INVALID',
  });
  t.equal((await call(app, `/api/admin/promotions/gift-cards/${paused.id}`, { method: 'DELETE' })).statusCode, 200, 'an unused card can go');
  t.equal((await call(app, '/api/admin/promotions/gift-cards', { body: { amount: '0' }, as: 'json' })).json().error, 'VALIDATION_ERROR');
});

t.test(`a gift card bought as a store product is the buyer's; a refund voids what is left on it (${db})`, async (t) => {
  const { app, items } = await shop(t);
  const steve = await makeUser(app, 'steve', 5000);
  const product = Number(
    (await call(app, '/api/admin/store/products', { body: { categoryID: items, name: 'Gift card 20', price: '20.00' }, as: 'json' })).json().id,
  );
  t.equal((await call(app, '/api/admin/promotions/gift-card-products', { body: { productID: product, amount: '20.00' }, as: 'json' })).statusCode, 200);
  t.equal(
    (await call(app, '/api/admin/promotions/gift-card-products', { body: { productID: 999, amount: '1' }, as: 'json' })).json().error,
    'PRODUCT_NOT_FOUND',
  );
  const bought = await buy(app, steve, [{ id: product, quantity: 2 }]);
  t.equal(bought.statusCode, 200, bought.body);
  const cards = await read(app, `/api/users/steve/gift-cards`);
  t.equal(cards.length, 2, 'one card a unit');
  t.match(cards[0], { balance: '20.00', ownerID: String(steve), orderID: bought.json().orderID });
  await call(app, `/api/admin/store/orders/${bought.json().orderID}/refund`, { method: 'POST', body: {}, as: 'json' });
  t.match(await read(app, `/api/users/steve/gift-cards`), [
    { balance: '0.00', isActive: '0' },
    { balance: '0.00', isActive: '0' },
  ]);
  t.equal(await balanceOf(app, steve), 5000);
});
