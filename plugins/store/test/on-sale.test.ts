/**
 * What is for sale: a product is, only while it and every category above it are active. The
 * listing, the storefront's product page and basket, the buy from the balance (API and
 * storefront), the quote of a paid purchase and its completion all apply the one rule.
 */
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { balanceOf, makeCategory, makeProduct, newUser, read, rowCount } from '../../../test/fixtures.ts';
import { GATEWAY_ENV, PAYPAL_API, mockStripeSession, offline, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { build, call, onMysql } from '../../../test/helper.ts';
import { creditsRef } from '../../credits/contract.ts';
import { shownCategoryMap } from '../contract.ts';
import { Visitor } from '../../../test/visitor.ts';

offline(t);

const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };
const db = onMysql ? 'MariaDB' : 'SQLite';

/** Ranks › Donor › Monthly › VIP (a product three categories deep) and a player with a balance. */
async function shop(t: Test) {
  const app = await build(t, { env: GATEWAY_ENV, config: { plugins: { payments: { paypalApiBase: PAYPAL_API } } } });
  const top = await makeCategory(app, { name: 'Ranks' });
  const parent = await makeCategory(app, { name: 'Donor', parentID: top });
  const leaf = await makeCategory(app, { name: 'Monthly', parentID: parent });
  const vip = await makeProduct(app, { categoryID: leaf, name: 'VIP', price: '5.00' });
  const steve = await newUser(app, 'Steve', { cents: 10_000 });
  return { app, top, parent, leaf, vip, steve };
}

const setActive = async (app: FastifyInstance, category: number, active: boolean) => {
  const res = await call(app, `/api/admin/store/categories/${category}`, { method: 'PATCH', body: { isActive: active }, as: 'json' });
  if (res.statusCode !== 200) throw new Error(res.body);
};

const buy = (app: FastifyInstance, userID: number, product: number) => call(app, '/api/store/buy', { body: { userID, products: [product] }, as: 'json' });

const purchase = (app: FastifyInstance, body: Record<string, unknown>) =>
  call(app, '/api/payments/purchase', { body: { gateway: 'stripe', ...URLS, ...body }, as: 'json' });

const listed = async (app: FastifyInstance) => JSON.stringify(await read(app, '/api/store/listing')).includes('"VIP"');

for (const level of ['parent', 'grandparent'] as const) {
  t.test(`a product under an inactive ${level} category is not for sale anywhere; active again, it is (${db})`, async (t) => {
    const { app, top, parent, vip, steve } = await shop(t);
    const hide = level === 'parent' ? parent : top;
    const player = new Visitor(app);
    await player.post('/register', { username: 'Alex', password: 'correct horse 1', email: 'alex@example.org' });
    const alex = Number((await read(app, '/api/users?username=Alex')).id);
    await app.services.get(creditsRef).change(alex, 10_000, { reason: 'test' });
    t.equal((await player.post('/basket/add', { product: String(vip) })).statusCode, 303, 'in the basket while on sale');

    await setActive(app, hide, false);
    const orders = await rowCount(app, 'store_orders');
    t.notOk(await listed(app), "not in the game plugin's listing");
    const guest = new Visitor(app);
    t.equal((await guest.get(`/product/${vip}`)).statusCode, 404, 'its page is not found');
    const add = await guest.post('/basket/add', { product: String(vip) });
    t.equal(add.statusCode, 404, 'a plain basket post is refused');
    t.notOk(guest.cookies.get('storefront_basket'), 'nothing is put in the basket');

    const refused = await buy(app, steve.id, vip);
    t.equal(refused.statusCode, 404, refused.body);
    t.equal(refused.json().error, 'PRODUCT_NOT_FOUND', 'the buy from the balance answers as for an inactive product');
    const checkout = await player.post('/checkout', {});
    t.equal(checkout.statusCode, 303, 'the storefront checkout goes back to the basket');
    t.equal(checkout.headers.location, '/basket');
    const basket = await player.get('/basket');
    t.match(basket.body, /Your basket is empty/, 'the basket dropped the line');
    for (const buyer of [{ userID: steve.id }, { guestName: 'Notch_1' }]) {
      const quote = await purchase(app, { ...buyer, lines: [{ productID: vip }] });
      t.equal(quote.statusCode, 404, quote.body);
      t.equal(quote.json().error, 'PRODUCT_NOT_FOUND', `the quote of a paid purchase (${Object.keys(buyer)[0]})`);
    }
    t.equal(await rowCount(app, 'store_orders'), orders, 'no order');
    t.equal(await rowCount(app, 'payments_payments'), 0, 'no payment started');
    t.equal(await balanceOf(app, steve.id), 10_000, 'nothing charged');
    t.equal(await balanceOf(app, alex), 10_000, 'nothing charged at the storefront');

    await setActive(app, hide, true);
    t.ok(await listed(app), 'listed again');
    t.equal((await guest.get(`/product/${vip}`)).statusCode, 200, 'its page is back');
    t.equal((await guest.post('/basket/add', { product: String(vip) })).statusCode, 303, 'the basket takes it');
    t.equal((await buy(app, steve.id, vip)).statusCode, 200, 'the buy takes it');
    await player.post('/basket/add', { product: String(vip) });
    t.match((await player.post('/checkout', {})).headers.location, /^\/account\/orders\/\d+$/, 'the storefront checkout takes it');
    mockStripeSession('cs_back');
    t.equal((await purchase(app, { userID: steve.id, lines: [{ productID: vip }] })).statusCode, 200, 'the quote takes it');
  });
}

t.test(`a buy judges a product in a top-level category by that category alone, and one nested by all above it (${db})`, async (t) => {
  const { app, top, vip, steve } = await shop(t);
  const kit = await makeProduct(app, { categoryID: top, name: 'Kit', price: '1.00' });
  const extra = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Extras' }), name: 'Extra', price: '1.00' });
  const buyAll = (products: number[]) => call(app, '/api/store/buy', { body: { userID: steve.id, products }, as: 'json' });

  await setActive(app, top, false);
  const orders = await rowCount(app, 'store_orders');
  for (const products of [[kit], [extra, kit], [vip], [extra, vip]]) {
    const refused = await buyAll(products);
    t.equal(refused.statusCode, 404, `${products}: ${refused.body}`);
    t.equal(refused.json().error, 'PRODUCT_NOT_FOUND');
  }
  t.equal(await rowCount(app, 'store_orders'), orders, 'no order');
  t.equal(await balanceOf(app, steve.id), 10_000, 'nothing charged');
  t.equal((await buyAll([extra])).statusCode, 200, 'a product of another top-level category is still for sale');

  await setActive(app, top, true);
  for (const products of [[kit], [extra, kit], [vip, kit]]) {
    const res = await buyAll(products);
    t.equal(res.statusCode, 200, `${products}: ${res.body}`);
  }
  t.equal(await balanceOf(app, steve.id), 10_000 - 100 - 100 - 200 - 600);
});

t.test(`hidden while the player paid: the completion refuses it as for a product switched off, the money goes to the balance (${db})`, async (t) => {
  const { app, top, vip, steve } = await shop(t);
  mockStripeSession('cs_hidden');
  const started = await purchase(app, { userID: steve.id, lines: [{ productID: vip }] });
  t.equal(started.statusCode, 200, started.body);
  const { paymentID } = started.json().data;
  await setActive(app, top, false);

  const hook = await stripeWebhook(app, sessionCompleted('evt_hidden', paymentID, 'cs_hidden', 500));
  t.strictSame(hook.json(), { status: true, data: { result: 'credited' } }, hook.body);
  t.equal(await balanceOf(app, steve.id), 10_500, 'the 5.00 paid is on the balance');
  t.equal(await rowCount(app, 'store_order_items'), 0, 'nothing bought');
  t.equal(await rowCount(app, 'delivery_queue'), 0, 'nothing delivered');
});

t.test('the rule itself: a loop or a missing parent hides its members, and a list is judged once', async (t) => {
  // Neither can be made through the API, but a database edited by hand or an import can hold one.
  const categories = [
    { id: 1, parentId: 2 },
    { id: 2, parentId: 1 },
    { id: 3, parentId: 0 },
    { id: 4, parentId: 3, isActive: false },
    { id: 5, parentId: 4 },
    { id: 6, parentId: 9 },
    { id: 7, parentId: 3 },
  ];
  const shown = shownCategoryMap(categories);
  t.strictSame([...shown.keys()], [3, 7]);
  t.equal(shownCategoryMap(categories), shown, 'the page and its product read share one judgement');
  t.strictSame([...shownCategoryMap([...categories, { id: 8, parentId: 7 }]).keys()], [3, 7, 8], 'another list is judged anew');
});
