import t from 'tap';
import { grant, register, role, signInByForm } from '../../../test/browser.ts';
import { call } from '../../../test/helper.ts';
import { balanceOf, makeUser, roles, subscribe, subscriptionsApp, vipPlan } from './fixtures.ts';

t.test('the console lists subscriptions by product, player and state; staff cancel and refund from a subscription page', async (t) => {
  const app = await subscriptionsApp(t, { features: ['auth', 'console'] });
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const get = (url: string) => app.inject({ url, headers: { cookie } });
  const post = async (url: string, from: string) => {
    const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec((await get(from)).body)![1]!;
    return app.inject({ method: 'POST', url, headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: `_csrf=${csrf}` });
  };

  const { productId, roleId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve', 2_000);
  const alex = await makeUser(app, 'alex', 2_000);
  const first = (await subscribe(app, steve, productId)).json();
  const second = (await subscribe(app, alex, productId)).json();

  const list = (await get('/console/subscriptions')).body;
  t.match(list, /steve/);
  t.match(list, /alex/);
  t.match(list, /5\.00 USD/);
  const dashboard = (await get('/console')).body;
  t.match(dashboard, /subscriptions running/);
  t.match(dashboard, /monthly recurring revenue/);
  t.match(dashboard, /10\.00 USD/, 'two monthly subscriptions at 5.00');
  t.match(dashboard, /churn \(30 days\)/);
  const mine = (await get(`/console/subscriptions?userID=${steve}`)).body;
  t.notMatch(mine, />alex</, "a player's subscriptions only");
  t.match((await get('/console/subscriptions?status=ended')).body, /No subscription\./);

  const page = `/console/subscriptions/${first.id}`;
  const cancelled = await post(`${page}/cancel`, page);
  t.equal(cancelled.statusCode, 303);
  t.match((await call(app, `/api/admin/subscriptions/${first.id}`)).json(), { status: 'active', cancelAtPeriodEnd: '1' });
  const refunded = await post(`/console/subscriptions/${second.id}/refund`, `/console/subscriptions/${second.id}`);
  t.equal(refunded.statusCode, 303);
  t.equal(await balanceOf(app, alex), 2_000, 'the period paid back');
  t.notOk((await roles(app, alex)).has(roleId), 'the role ended');
  const ended = await post(`${page}/cancel-now`, page);
  t.equal(ended.statusCode, 303);
  t.match((await call(app, `/api/admin/subscriptions/${first.id}`)).json(), { status: 'ended', endReason: 'staff' });
  t.match((await get(page)).body, /It has ended\./, 'no action left on an ended subscription');
  t.equal((await get('/console/subscriptions/999')).statusCode, 404);
});
