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

t.test('a running sale has a banner with its name and end; none once it ends', async (t) => {
  const app = await build(t);
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '5.00', isFeaturedProduct: '1' });
  const v = new Visitor(app);
  t.notMatch((await v.get('/')).body, /class="sale-banner"/, 'no sale: no banner');
  await created(app, '/api/admin/promotions/sales', { name: 'Old sale', percent: 50, startDate: '2020-01-01 00:00', endDate: '2020-02-01 00:00' }, 'json');
  t.notMatch((await v.get('/')).body, /class="sale-banner"/, 'an ended sale: no banner');
  await created(app, '/api/admin/promotions/sales', { name: 'Winter sale', percent: 25, startDate: '2020-01-01 00:00', endDate: '2999-01-31 18:00' }, 'json');
  for (const url of ['/', '/category/ranks']) {
    const body = (await v.get(url)).body;
    t.match(body, /<p class="sale-banner"><strong>Winter sale: 25% off until 2999-01-31 18:00<\/strong><\/p>/, `${url}: name, percent and end`);
  }
  t.match((await v.get('/?lang=de')).body, /Winter sale: 25 % Rabatt bis 2999-01-31 18:00/, 'in German too');
});

t.test('a visible language switch: the choice sticks over the browser language', async (t) => {
  const app = await build(t);
  const v = new Visitor(app, { 'accept-language': 'en-US,en;q=0.9' });
  const home = await v.get('/');
  t.match(home.body, /<html lang="en">/);
  t.match(home.body, /<nav aria-label="Language" class="langs">/, 'the switch');
  t.match(home.body, /<a href="\/\?lang=de" lang="de" hreflang="de">Deutsch<\/a>/);
  t.match(home.body, /<a href="\/\?lang=en" lang="en" hreflang="en" aria-current="true">English<\/a>/);
  const german = await v.get('/basket?lang=de');
  t.match(german.body, /<html lang="de">/);
  t.match(german.body, /<h1>Warenkorb<\/h1>/);
  t.match(german.body, /<a href="\/basket\?lang=en"/, 'the switch keeps the page');
  t.match((await v.get('/')).body, /<html lang="de">/, 'the choice is kept (a cookie) over Accept-Language');
  t.match((await v.get('/?lang=en')).body, /<html lang="en">/, 'and switched back');
  t.match((await v.get('/?lang=xx')).body, /<html lang="en">/, 'an unknown language changes nothing');
});

t.test('add to basket from a listing; a product with a required choice links to its page instead', async (t) => {
  const app = await build(t);
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  const kits = await makeCategory(app, { name: 'Kits', slug: 'kits' });
  const vip = await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '5.00' });
  const chosen = await makeProduct(app, {
    categoryID: ranks,
    name: 'Server rank',
    price: '3.00',
    variables: [{ name: 'server', required: '1', values: ['eu', 'us'] }],
  });
  const v = new Visitor(app);
  const listing = await v.get('/category/ranks');
  t.match(listing.body, new RegExp(`<input type="hidden" name="product" value="${vip}">`), 'a form on the card');
  t.match(listing.body, /aria-label="Add to basket: VIP"/);
  t.notMatch(listing.body, new RegExp(`name="product" value="${chosen}"`), 'a required choice: no quick add');
  t.match(listing.body, /<nav aria-label="Categories" class="side">/, 'the categories beside the products');
  t.match(listing.body, new RegExp(`<a href="/category/${ranks}" aria-current="page">Ranks</a>`));
  t.match(listing.body, new RegExp(`<a href="/category/${kits}">Kits</a>`));
  t.equal((await v.post('/basket/add', { product: String(vip), quantity: '1' })).statusCode, 303);
  t.match((await v.get('/basket')).body, /<a href="\/product\/\d+">VIP<\/a>/, 'in the basket');
});
