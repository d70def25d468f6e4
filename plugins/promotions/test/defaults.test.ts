/**
 * Defaults that trap (issue 49): new coupons, sales and webhook endpoints start active, in the API
 * and on the console's create forms; a coupon made with the defaults works during a store-wide
 * sale; a refused code in the basket form never drops the other; players read no field names.
 */
import t from 'tap';
import { build, onMysql } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { grant, register, role, signInByForm } from '../../../test/browser.ts';
import { buy, coupon, created, giftCard, makeCategory, makeProduct, makeUser, read, shop } from './fixtures.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';
const features = ['users', 'auth', 'credits', 'store', 'promotions', 'notifications', 'console', 'storefront'];

t.test(`a coupon made with the defaults applies during a store-wide sale, and starts active (${db})`, async (t) => {
  const { app, vip } = await shop(t);
  const sale = await created(
    app,
    '/api/admin/promotions/sales',
    { name: 'Everything', percent: 10, startDate: '2020-01-01 00:00', endDate: '2999-01-01 00:00' },
    'json',
  );
  t.equal(sale.isActive, '1', 'a new sale is active');
  const made = await coupon(app, { code: 'WELCOME', kind: 'percent', value: 50 });
  t.match(made, { isActive: '1', stacksWithSale: '1' });
  const steve = await makeUser(app, 'steve', 10_000);
  t.match((await buy(app, steve, [vip], { coupon: 'WELCOME' })).json(), { subtotal: '10.00', total: '4.50' }, '9.00 on sale, half off');
});

t.test(`the console's create forms for coupons, sales and endpoints start with Active ticked (${db})`, async (t) => {
  const app = await build(t, { features });
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const page = async (url: string) => (await app.inject({ url, headers: { cookie } })).body;
  const ticked = (html: string, id: string) => new RegExp(`<input type="checkbox" id="${id}"[^>]* checked`).test(html);
  const coupons = await page('/console/promotions/coupons');
  t.ok(ticked(coupons, 'new-coupon-isActive'), 'a new coupon: Active ticked');
  t.ok(ticked(coupons, 'new-coupon-stacksWithSale'), 'a new coupon: it also lowers products on sale');
  t.ok(ticked(await page('/console/promotions/sales'), 'new-sale-isActive'), 'a new sale: Active ticked');
  t.ok(ticked(await page('/console/notifications'), 'new-endpoint-active'), 'a new endpoint: Active ticked');
  t.notOk(ticked(await page('/console/promotions/gift-cards'), 'new-gift-card-isActive'), 'no box where the form has none');
});

t.test(`in the basket form, a refused code never drops the other, and the refusal names no field (${db})`, async (t) => {
  const app = await build(t, { features });
  const vip = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Ranks' }), name: 'VIP', price: '10.00' });
  await coupon(app, { code: 'HALF', kind: 'percent', value: 50 });
  const card = await giftCard(app, '3.00');
  const basket = async () => {
    const v = new Visitor(app);
    await v.post('/basket/add', { product: String(vip), quantity: '1' });
    return v;
  };

  const a = await basket();
  const res = await a.post('/basket/codes', { coupon: 'NOPE10', giftCard: card.code });
  t.equal(res.statusCode, 422, 'the refusal is said');
  t.match(res.body, /This code does not apply: there is no coupon NOPE10 running/);
  t.notMatch(res.body, /coupon:|giftCard:/, 'no field names');
  t.match(res.body, new RegExp(`Gift card ${card.code}`), 'the gift card applies on the page');
  t.match((await a.get('/basket')).body, new RegExp(`Gift card ${card.code}`), 'and stays for the checkout');

  const b = await basket();
  const reverse = await b.post('/basket/codes', { coupon: 'HALF', giftCard: 'NOPE-NOPE' });
  t.equal(reverse.statusCode, 422);
  t.match(reverse.body, /This code does not apply: there is no gift card NOPE-NOPE in use/);
  t.notMatch(reverse.body, /coupon:|giftCard:/);
  const kept = (await b.get('/basket')).body;
  t.match(kept, /Coupon HALF/, 'the coupon applies');
  t.notMatch(kept, /Gift card NOPE-NOPE/);

  const steve = await makeUser(app, 'steve', 10_000);
  const both = await buy(app, steve, [vip], { coupon: 'NOPE10', giftCard: card.code });
  t.match(
    both.json(),
    { error: 'PROMOTION_INVALID', message: /^there is no coupon NOPE10 running/ },
    'the API refuses the buy whole, its message without a field name',
  );
  t.match(await read(app, '/api/admin/promotions/gift-cards'), [{ balance: '3.00' }], 'a refused buy takes nothing');
});
