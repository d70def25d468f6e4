/** Small things an owner notices on the first day: the dashboard's counts read as English, and the browser's icon is served. */
import t from 'tap';
import { build, call } from '../../../test/helper.ts';
import { grant, register, role, signInByForm } from './browser.ts';

t.test('the dashboard says "1 order", not "1 orders"', async (t) => {
  const app = await build(t);
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const category = (await call(app, '/api/admin/store/categories', { body: { name: 'Ranks', isActive: 'true' } })).json().id;
  const product = (await call(app, '/api/admin/store/products', { body: { categoryID: category, name: 'VIP', price: '5', isActive: 'true' } })).json().id;
  const buyer = await register(app, 'Steve');
  await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '20.00' } });
  const bought = await call(app, '/api/store/buy', { body: { userID: String(buyer), products: [String(product)] } });
  t.equal(bought.statusCode, 200, bought.body);
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const dashboard = await app.inject({ url: '/console', headers: { cookie } });
  t.match(dashboard.body, /credit sales today \(1 order\)/);
  t.notMatch(dashboard.body, /\(1 orders\)/);
});

t.test('/favicon.ico is an icon with cache headers, and the pages link it', async (t) => {
  const app = await build(t);
  const res = await app.inject('/favicon.ico');
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^image\/svg\+xml/);
  t.match(res.headers['cache-control'], /max-age=\d+/);
  t.match(res.body, /^<svg /);
  t.match((await app.inject('/console/login')).body, /<link rel="icon" href="\/favicon.ico"/);
});
