/**
 * Numbers that are not numbers: a number field's text is plain digits (decisions.md §8 lets
 * numbers arrive as strings), refused beside its name otherwise, by the API and by the console's
 * forms alike; and the table layer never writes NaN or an infinity, whoever hands it one.
 */
import t from 'tap';
import { StoreProduct } from '../plugins/store/entities.ts';
import { makeCategory, makeProduct, makeUser, rowCount } from './fixtures.ts';
import { ADMIN_KEY, ENCODINGS, build, call, onMysql } from './helper.ts';
import { grant, register, role, signInByForm } from './browser.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';
const PLAIN = /must be a number written in plain digits/;

t.test(`the admin API refuses a number field's text that is not a number, naming the field, and changes nothing (${db})`, async (t) => {
  const app = await build(t, { features: ['users', 'credits', 'store'] });
  const category = await makeCategory(app, { name: 'Ranks' });
  const product = await makeProduct(app, { categoryID: category, name: 'VIP', price: '5.00' });
  const steve = await makeUser(app, 'steve', 1000);
  const cases: ['POST' | 'PATCH', string, Record<string, unknown>, string][] = [
    ['POST', '/api/admin/store/products', { categoryID: category, name: 'Kit', price: 'abc' }, 'price'],
    ['POST', '/api/admin/store/products', { categoryID: category, name: 'Kit', price: '5', discountedPrice: '1e2' }, 'discountedPrice'],
    ['PATCH', `/api/admin/store/products/${product}`, { price: 'NaN' }, 'price'],
    ['PATCH', `/api/admin/store/products/${product}`, { price: '5,00' }, 'price'],
    ['POST', '/api/store/buy', { userID: 'abc', products: [product] }, 'userID'],
    ['POST', '/api/store/buy', { userID: `${steve}.5`, products: [product] }, 'userID'],
  ];
  for (const as of ENCODINGS) {
    for (const [method, url, body, field] of cases) {
      const res = await call(app, url, { method, body, as });
      t.equal(res.statusCode, 400, `${method} ${url} ${JSON.stringify(body)} as ${as}: ${res.body}`);
      t.match(res.json(), { error: 'VALIDATION_ERROR', message: new RegExp(`^${field} `) }, `names ${field}`);
      t.match(res.json().message, PLAIN, 'says how a number is written');
    }
  }
  t.equal(await rowCount(app, 'store_products'), 1, 'no product made');
  t.match((await call(app, `/api/admin/store/products/${product}`)).json(), { price: '5.00' }, 'nothing changed');
  t.equal(await rowCount(app, 'store_orders'), 0, 'nothing bought');
  const good = await call(app, '/api/admin/store/products', { body: { categoryID: category, name: 'Kit', price: '4.50', discountedPrice: 3 }, as: 'json' });
  t.equal(good.statusCode, 201, `a decimal as text and a JSON number are numbers: ${good.body}`);
  t.equal((await call(app, '/api/store/buy', { body: { userID: String(steve), products: [product] } })).statusCode, 200, "a form's id as text");
});

t.test(`a list of ids that also takes text (\`1,2\`) holds each id to plain digits, given alone or in a list (${db})`, async (t) => {
  const app = await build(t, { features: ['users', 'credits', 'store', 'promotions'] });
  for (const productIDs of ['1e2', ['1e2'], ['5', '0x10']]) {
    const res = await call(app, '/api/admin/promotions/coupons', { body: { code: 'SUMMER', kind: 'percent', value: '10', productIDs }, as: 'json' });
    t.equal(res.statusCode, 400, `${JSON.stringify(productIDs)}: ${res.body}`);
    t.match(res.json(), { error: 'VALIDATION_ERROR', message: /^productIDs(\.\d)? must be a number written in plain digits/ });
  }
  const raw = await app.inject({
    method: 'POST',
    url: '/api/admin/promotions/coupons',
    headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' },
    payload: '{"code":"SUMMER","kind":"percent","value":"10","productIDs":1e2}',
  });
  t.equal(raw.statusCode, 400, `a JSON number in exponent notation: ${raw.body}`);
  t.equal(await rowCount(app, 'promotions_coupons'), 0, 'no coupon made');
  for (const [i, productIDs] of (['1, 2', ['1', '2'], 7] as const).entries()) {
    const res = await call(app, '/api/admin/promotions/coupons', { body: { code: `CODE${i}`, kind: 'percent', value: '10', productIDs }, as: 'json' });
    t.equal(res.statusCode, 201, `${JSON.stringify(productIDs)} is a list of ids: ${res.body}`);
  }
});

t.test(`a console form with a number field that is not a number shows the error beside it, every field at once (${db})`, async (t) => {
  const app = await build(t);
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const category = await makeCategory(app, { name: 'Ranks' });
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const page = await app.inject({ url: '/console/catalogue', headers: { cookie } });
  const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec(page.body)![1]!;
  const res = await app.inject({
    method: 'POST',
    url: '/console/catalogue/products',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: csrf, name: 'Kit', categoryID: String(category), price: 'abc', discountedPrice: 'Infinity' }).toString(),
  });
  t.equal(res.statusCode, 422, 'the form again, not a fault');
  t.match(res.body, /id="new-product-price-error"[^>]*>price must be a number written in plain digits</, 'beside the price');
  t.match(res.body, /id="new-product-discountedPrice-error"[^>]*>discountedPrice must be a number written in plain digits</, 'and beside the discount');
  t.equal(await rowCount(app, 'store_products'), 0, 'no product made');
});

t.test(`the table layer refuses NaN and infinities with VALIDATION_ERROR naming the column, writing nothing (${db})`, async (t) => {
  const app = await build(t, { features: ['users', 'credits', 'store'] });
  const category = await makeCategory(app, { name: 'Ranks' });
  const product = await makeProduct(app, { categoryID: category, name: 'VIP', price: '5.00' });
  const base = { categoryId: category, name: 'Kit', price: 100, creationDate: '2026-11-28 00:00:00' };
  for (const [property, value] of [
    ['price', Number.NaN],
    ['stock', Number.POSITIVE_INFINITY],
    ['priority', Number.NEGATIVE_INFINITY],
  ] as const) {
    const message = new RegExp(`^${property} must be a finite number \\(store_products\\.${property} cannot hold`);
    await t.rejects(StoreProduct.insert(app.db, { ...base, [property]: value }), { code: 'VALIDATION_ERROR', message }, `insert ${property}`);
  }
  await t.rejects(StoreProduct.update(app.db, product, { price: Number.NaN }), { code: 'VALIDATION_ERROR', message: /^price / }, 'an update too');
  t.equal(await rowCount(app, 'store_products'), 1, 'nothing written');
  t.match((await call(app, `/api/admin/store/products/${product}`)).json(), { price: '5.00' });
});
