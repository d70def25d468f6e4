import t from 'tap';
import { call } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { balanceOf, roles, subscriptionsApp, vipPlan } from './fixtures.ts';

const PASSWORD = 'correct horse 1';

t.test('the product page says the subscription renews, at what price and how often, and a signed-in player subscribes from it', async (t) => {
  const app = await subscriptionsApp(t, { features: ['auth', 'storefront'] });
  const { productId, roleId } = await vipPlan(app, { intervalCount: 3, trialDays: 0 });
  const guest = await new Visitor(app).get(`/product/${productId}`);
  t.match(guest.body, /Renews every 3 months at \$5\.00/);
  t.match(guest.body, /<button type="submit">Subscribe<\/button>/);

  const v = new Visitor(app);
  await v.post('/register', { username: 'Steve', password: PASSWORD, email: 'steve@example.org' });
  const steve = Number((await call(app, '/api/users?username=Steve')).json().id);
  const poor = await v.post('/subscribe', { product: String(productId) });
  t.equal(poor.statusCode, 303, 'a short balance goes back to the product page');
  t.match((await v.get(String(poor.headers.location))).body, /balance/i, 'saying why');
  await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '20' } });
  const ok = await v.post('/subscribe', { product: String(productId) });
  t.equal(ok.statusCode, 303);
  t.match((await v.get(String(ok.headers.location))).body, /You subscribed to VIP/);
  t.equal(await balanceOf(app, steve), 1_500);
  t.ok((await roles(app, steve)).has(roleId));

  const stranger = new Visitor(app);
  await stranger.get('/');
  const plain = await stranger.post('/subscribe', { product: String(productId) });
  t.equal(plain.statusCode, 303, 'a visitor not signed in is sent to sign in');
  t.match(String(plain.headers.location), /\/login/);
  const german = await new Visitor(app, { 'accept-language': 'de' }).get(`/product/${productId}`);
  t.match(german.body, /Verlängert sich alle 3 Monate/);
});
