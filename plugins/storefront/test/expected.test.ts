/**
 * What players expect on the storefront (issue 49, item 6), through HTTP: sale prices rounded to
 * the cent, addresses by slug, "Top up" only with a top-up package.
 */
import t from 'tap';
import { STRIPE_ENV } from '../../../test/gateways.ts';
import { created, makeCategory, makeProduct } from '../../../test/fixtures.ts';
import { build, call } from '../../../test/helper.ts';
import { PASSWORD, register } from '../../../test/browser.ts';
import { Visitor } from '../../../test/visitor.ts';

t.test('a 20 % sale takes 9.99 to 8.00 everywhere: what it takes off is rounded down to the cent', async (t) => {
  const app = await build(t);
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  const vip = await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '9.99', isFeaturedProduct: '1' });
  await created(app, '/api/admin/promotions/sales', { name: 'Summer sale', percent: 20, startDate: '2020-01-01 00:00', endDate: '2999-01-01 00:00' }, 'json');
  const v = new Visitor(app);
  for (const url of ['/', `/category/${ranks}`, `/product/${vip}`]) {
    const page = await v.get(url);
    t.match(page.body, /\$8\.00/, `${url}: 8.00`);
    t.notMatch(page.body, /\$7\.99/, `${url}: never 7.99`);
  }
  await v.post('/basket/add', { product: String(vip), quantity: '3' });
  const basket = await v.get('/basket');
  t.match(basket.body, /\$24\.00/, 'three in the basket: 3 × 8.00');
  const [listed] = (await call(app, '/api/store/products')).json();
  t.match(listed, { price: '9.99' });
});

t.test('a category answers at its slug as at its id', async (t) => {
  const app = await build(t);
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '5.00' });
  await makeCategory(app, { name: 'Hidden', slug: 'hidden', isActive: '0' });
  const v = new Visitor(app);
  const byId = await v.get(`/category/${ranks}`);
  const bySlug = await v.get('/category/ranks');
  t.equal(bySlug.statusCode, 200, '/category/ranks');
  t.match(bySlug.body, /<h1[^>]*>Ranks<\/h1>/);
  t.match(bySlug.body, />VIP</);
  t.match(bySlug.body, new RegExp(`<link rel="canonical" href="[^"]*/category/${ranks}">`), 'one canonical address');
  t.equal(byId.statusCode, 200);
  t.equal((await v.get('/category/RANKS')).statusCode, 200, 'any case');
  t.equal((await v.get('/category/hidden')).statusCode, 404, 'a hidden category stays hidden');
  t.equal((await v.get('/category/nothing')).statusCode, 404);
});

t.test('"Top up" is offered only when a top-up package exists', async (t) => {
  const app = await build(t, { env: STRIPE_ENV });
  await register(app, 'Steve');
  const v = new Visitor(app);
  await v.get('/login');
  t.equal((await v.post('/login', { username: 'Steve', password: PASSWORD })).statusCode, 303);
  t.notMatch((await v.get('/account')).body, /Top up my balance/, 'a gateway but no package: no link');
  await call(app, '/api/admin/payments/packages', { body: { name: 'Gold', price: '10.00', credits: '10.00' } });
  t.match((await v.get('/account')).body, /Top up my balance/, 'with a package: the link');
});
