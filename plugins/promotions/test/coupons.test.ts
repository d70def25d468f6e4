/** Coupons at the balance checkout through the HTTP API: every rule, the order's record, refusals that change nothing, and a refund. */
import t from 'tap';
import { call, onMysql } from '../../../test/helper.ts';
import { balanceOf, buy, coupon, makeUser, read, shop, snapshot, TABLES } from './fixtures.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';

t.test(`a percent coupon, typed in any case, lowers the basket; the order records it (${db})`, async (t) => {
  const { app, vip, sword } = await shop(t);
  const steve = await makeUser(app, 'steve', 5000);
  await coupon(app, { code: 'Summer10', kind: 'percent', value: 10 });
  const res = await buy(app, steve, [vip, sword], { coupon: 'sUMMER10' });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), { subtotal: '14.00', discount: '1.40', total: '12.60' });
  t.equal(await balanceOf(app, steve), 5000 - 1260);
  const orders = await read(app, `/api/users/${steve}/orders`);
  t.equal(orders[0].coupon, 'Summer10', 'the order names its coupon');
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ code: 'Summer10', uses: '1', orders: '1', discountGiven: '1.40', revenue: '12.60' }]);
});

t.test(`a fixed coupon limited to a category takes off at most what those lines cost (${db})`, async (t) => {
  const { app, vip, sword, items } = await shop(t);
  const steve = await makeUser(app, 'steve', 5000);
  await coupon(app, { code: 'ITEMS5', kind: 'fixed', value: '5.00', categoryIDs: [items] });
  const res = await buy(app, steve, [vip, sword], { coupon: 'items5' });
  t.match(res.json(), { subtotal: '14.00', discount: '4.00', total: '10.00' }, 'the sword (4.00) is all it lowers');
  const onlyRank = await buy(app, steve, [vip], { coupon: 'items5' });
  t.match(onlyRank.json(), { error: 'PROMOTION_INVALID', message: /applies to nothing/ });
});

t.test(`a coupon limited to products, a minimum basket, dates, pause (${db})`, async (t) => {
  const { app, vip, sword } = await shop(t);
  const steve = await makeUser(app, 'steve', 10_000);
  await coupon(app, { code: 'VIPONLY', kind: 'percent', value: 50, productIDs: [vip], minBasket: '12.00' });
  t.match((await buy(app, steve, [vip], { coupon: 'VIPONLY' })).json(), { error: 'PROMOTION_INVALID', message: /at least 12.00/ });
  t.match((await buy(app, steve, [vip, sword], { coupon: 'VIPONLY' })).json(), { total: '9.00', discount: '5.00' });

  await coupon(app, { code: 'LATER', kind: 'percent', value: 10, startDate: '2999-01-01 00:00' });
  await coupon(app, { code: 'GONE', kind: 'percent', value: 10, endDate: '2000-01-01 00:00' });
  const paused = await coupon(app, { code: 'PAUSED', kind: 'percent', value: 10 });
  t.equal((await call(app, `/api/admin/promotions/coupons/${paused.id}`, { method: 'PATCH', body: { isActive: false }, as: 'json' })).statusCode, 200);
  const before = await snapshot(app, TABLES);
  for (const code of ['LATER', 'GONE', 'PAUSED', 'NOSUCH']) {
    const res = await buy(app, steve, [sword], { coupon: code });
    t.equal(res.statusCode, 400, `${code}: ${res.body}`);
    t.match(res.json(), { status: false, error: 'PROMOTION_INVALID', message: new RegExp(`no coupon ${code} running`) });
  }
  t.strictSame(await snapshot(app, TABLES), before, 'refused buys change nothing');
});

t.test(`total uses and uses per player (${db})`, async (t) => {
  const { app, sword } = await shop(t);
  const steve = await makeUser(app, 'steve', 10_000);
  const alex = await makeUser(app, 'alex', 10_000);
  await coupon(app, { code: 'ONCE', kind: 'fixed', value: '1.00', perPlayer: 1, maxUses: 2 });
  t.equal((await buy(app, steve, [sword], { coupon: 'ONCE' })).statusCode, 200);
  t.match((await buy(app, steve, [sword], { coupon: 'once' })).json(), { error: 'PROMOTION_INVALID', message: /used the coupon ONCE 1 times/ });
  t.equal((await buy(app, alex, [sword], { coupon: 'ONCE' })).statusCode, 200);
  const third = await makeUser(app, 'third', 10_000);
  const res = await buy(app, third, [sword], { coupon: 'ONCE' });
  t.equal(res.statusCode, 409);
  t.match(res.json(), { error: 'PROMOTION_USED_UP' });
});

t.test(`a refund gives back what was paid after the coupon and returns its use (${db})`, async (t) => {
  const { app, vip } = await shop(t);
  const steve = await makeUser(app, 'steve', 1000);
  await coupon(app, { code: 'ONLYONE', kind: 'percent', value: 25, maxUses: 1, perPlayer: 1 });
  const bought = (await buy(app, steve, [vip], { coupon: 'ONLYONE' })).json();
  t.equal(await balanceOf(app, steve), 250);
  const refund = await call(app, `/api/admin/store/orders/${bought.orderID}/refund`, { method: 'POST', body: {}, as: 'json' });
  t.equal(refund.statusCode, 200, refund.body);
  t.match(refund.json(), { status: 'refunded', total: '7.50', coupon: 'ONLYONE' });
  t.equal(await balanceOf(app, steve), 1000, 'the 7.50 paid, not the list price');
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '0', orders: '0' }], 'its use is back');
  t.equal((await buy(app, steve, [vip], { coupon: 'ONLYONE' })).statusCode, 200, 'the same player may use it again');
});

t.test(`admin coupon API refusals (${db})`, async (t) => {
  const { app } = await shop(t);
  await coupon(app, { code: 'DUP', kind: 'percent', value: 10 });
  const cases: [Record<string, unknown>, number, string][] = [
    [{ code: 'dup', kind: 'percent', value: 5 }, 409, 'CONFLICT'],
    [{ code: 'X', kind: 'percent', value: 5 }, 400, 'VALIDATION_ERROR'],
    [{ code: 'BIG', kind: 'percent', value: 101 }, 400, 'VALIDATION_ERROR'],
    [{ code: 'NEG', kind: 'fixed', value: '-1' }, 400, 'VALIDATION_ERROR'],
    [{ code: 'WHEN', kind: 'fixed', value: '1', startDate: 'tomorrow' }, 400, 'VALIDATION_ERROR'],
    [{ code: 'BACK', kind: 'fixed', value: '1', startDate: '2030-01-02 00:00', endDate: '2030-01-01 00:00' }, 400, 'VALIDATION_ERROR'],
    [{ code: 'KIND', kind: 'half', value: '1' }, 400, 'VALIDATION_ERROR'],
  ];
  for (const [body, status, error] of cases) {
    const res = await call(app, '/api/admin/promotions/coupons', { body, as: 'json' });
    t.equal(res.statusCode, status, `${JSON.stringify(body)}: ${res.body}`);
    t.equal(res.json().error, error);
  }
  t.equal((await call(app, '/api/admin/promotions/coupons/999', { method: 'GET' })).json().error, 'COUPON_NOT_FOUND');
  t.equal((await read(app, '/api/admin/promotions/coupons')).length, 1, 'nothing else was made');
});
