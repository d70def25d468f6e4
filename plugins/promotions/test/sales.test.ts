/** Sales in the listing's computed fields and at checkout (the lower price wins), with coupons; the community goal. */
import t from 'tap';
import { call, onMysql } from '../../../test/helper.ts';
import { buy, coupon, created, makeProduct, makeUser, read, shop } from './fixtures.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';
const listed = async (app: Parameters<typeof read>[0]) => {
  const { categories } = await read(app, '/api/store/listing');
  return new Map<string, Record<string, unknown>>(
    categories.flatMap((c: { products: Record<string, unknown>[] }) => c.products).map((p: Record<string, unknown>) => [p.name as string, p]),
  );
};

t.test(`a sale on a category shows in the listing and is charged; the lower of it and a product's own discount wins (${db})`, async (t) => {
  const { app, ranks, vip, sword } = await shop(t);
  const mvp = await makeProduct(app, { categoryID: ranks, name: 'MVP', price: '20.00', discountedPrice: '12.00' });
  const sale = await created(
    app,
    '/api/admin/promotions/sales',
    { name: 'Rank week', percent: 25, categoryIDs: [ranks], startDate: '2020-01-01 00:00', endDate: '2999-01-01 00:00' },
    'json',
  );
  t.match(sale, { running: true, percent: '25' });
  const products = await listed(app);
  t.match(products.get('VIP'), { total: 7.5, originalPrice: 10, discount: 2.5, discountPercent: 25, totalFormatted: '7.50 USD' }, 'the sale price');
  t.match(products.get('MVP'), { total: 12, discount: 8, discountPercent: 40 }, "its own 12.00 is below the sale's 15.00");
  t.match(products.get('Sword'), { total: 4, discount: 0, discountPercent: 0 }, 'another category is not on sale');

  const steve = await makeUser(app, 'steve', 10_000);
  const res = await buy(app, steve, [vip, mvp, sword]);
  t.match(res.json(), { subtotal: '34.00', total: '23.50', discount: '10.50' });
  t.match(await read(app, '/api/admin/promotions/sales'), [{ orders: '1', discountGiven: '2.50', revenue: '7.50' }], 'what the sale itself took off');

  t.equal((await call(app, `/api/admin/promotions/sales/${sale.id}`, { method: 'PATCH', body: { isActive: false }, as: 'json' })).statusCode, 200);
  t.match((await listed(app)).get('VIP'), { total: 10, discountPercent: 0 }, 'paused: the list price again');
});

t.test(`a coupon that does not stack leaves lines on sale alone; one that stacks lowers the sale price (${db})`, async (t) => {
  const { app, vip, sword } = await shop(t);
  await created(app, '/api/admin/promotions/sales', { name: 'Everything', percent: 10, startDate: '2020-01-01 00:00', endDate: '2999-01-01 00:00' }, 'json');
  await coupon(app, { code: 'PLAIN', kind: 'percent', value: 50, stacksWithSale: false });
  await coupon(app, { code: 'STACK', kind: 'percent', value: 50, stacksWithSale: true });
  const steve = await makeUser(app, 'steve', 10_000);
  t.match((await buy(app, steve, [vip], { coupon: 'PLAIN' })).json(), { error: 'PROMOTION_INVALID', message: /not apply to products on sale/ });
  t.match((await buy(app, steve, [vip, sword], { coupon: 'STACK' })).json(), { subtotal: '14.00', total: '6.30', discount: '7.70' }, '12.60 on sale, half off');
});

t.test(`a sale that has not started or has ended charges the list price; bad sales are refused (${db})`, async (t) => {
  const { app, vip } = await shop(t);
  await created(app, '/api/admin/promotions/sales', { name: 'Later', percent: 50, startDate: '2999-01-01 00:00', endDate: '2999-02-01 00:00' }, 'json');
  await created(app, '/api/admin/promotions/sales', { name: 'Past', percent: 50, startDate: '2000-01-01 00:00', endDate: '2000-02-01 00:00' }, 'json');
  t.match((await listed(app)).get('VIP'), { total: 10 });
  const steve = await makeUser(app, 'steve', 10_000);
  t.match((await buy(app, steve, [vip])).json(), { total: '10.00' });
  for (const body of [
    { name: 'Zero', percent: 0, startDate: '2020-01-01 00:00', endDate: '2030-01-01 00:00' },
    { name: 'Back', percent: 10, startDate: '2030-01-01 00:00', endDate: '2020-01-01 00:00' },
    { name: 'Bad', percent: 10, startDate: 'soon', endDate: '2030-01-01 00:00' },
  ])
    t.equal((await call(app, '/api/admin/promotions/sales', { body, as: 'json' })).json().error, 'VALIDATION_ERROR', body.name);
  t.equal((await call(app, '/api/admin/promotions/sales/99', { method: 'DELETE' })).json().error, 'SALE_NOT_FOUND');
});

t.test(`the community goal counts real money received in its period, as LeaderOS clients read it (${db})`, async (t) => {
  const { app } = await shop(t);
  await makeUser(app, 'steve');
  t.match(await read(app, '/api/store/community-goal'), { is_active: false, goal_amount: 0, total_raised: 0, percentage_achieved: 0, currency: 'USD' });
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { promotionsGoalAmount: 200 }, as: 'json' })).statusCode, 200);
  await created(app, '/api/admin/payments', { username: 'steve', amount: '50.00', paymentAPI: 'stripe', paymentID: 'pi_1' }, 'json');
  t.match(await read(app, '/api/store/community-goal'), { is_active: true, goal_amount: 200, total_raised: 50, percentage_achieved: 25 });
  t.equal(
    (await call(app, '/api/admin/settings', { method: 'PATCH', body: { promotionsGoalStart: '2020-01-01', promotionsGoalEnd: '2020-01-31' }, as: 'json' }))
      .statusCode,
    200,
  );
  t.match(
    await read(app, '/api/store/community-goal'),
    { is_active: false, total_raised: 0, start_date: '2020-01-01 00:00:00', end_date: '2020-02-01 00:00:00' },
    'a past period',
  );
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { promotionsGoalStart: 'January' }, as: 'json' })).json().error, 'VALIDATION_ERROR');
});
