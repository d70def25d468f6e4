/**
 * Changing tier: plans of one group, a wallet subscription moved to another from its next period
 * (the new price, role and commands then), the change asked once however often, refusals.
 */
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import t from 'tap';
import { STRIPE_ENV, stripeWebhook } from '../../../test/gateways.ts';
import { TestClock } from '../../../core/clock.ts';
import { created, makeCategory, makeProduct, makeRole } from '../../../test/fixtures.ts';
import { call, overBoth, sharedDatabaseUrl } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { balanceOf, commands, DAY, ledger, makeUser, roles, subscribe, subscriptionOf, subscriptionsApp, sweep, vipPlan } from './fixtures.ts';

/** An MVP product sold monthly at 8.00 with its own role and commands: a tier of `group`. */
async function mvpPlan(app: FastifyInstance, plan: Record<string, unknown> = {}): Promise<{ productId: number; roleId: number; planId: number }> {
  const roleId = await makeRole(app, 'MVP');
  const productId = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Top ranks' }), name: 'MVP', price: '12' });
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Lobby' }, 'json');
  for (const [trigger, command] of [
    ['purchase', 'lp user {username} parent add mvp'],
    ['expiry', 'lp user {username} parent remove mvp'],
  ])
    await created(app, `/api/admin/store/products/${productId}/commands`, { serverID: server.id, trigger, command }, 'json');
  const row = await created(
    app,
    '/api/admin/subscription-plans',
    { productID: productId, intervalUnit: 'months', price: '8.00', roleID: roleId, group: 'ranks', ...plan },
    'json',
  );
  return { productId, roleId, planId: Number(row.id) };
}

const change = (app: FastifyInstance, id: string, userId: number, planId: number) =>
  call(app, `/api/subscriptions/${id}/change`, { body: { userID: userId, planID: planId }, as: 'json' });

t.test('a wallet subscription changes tier from its next period: the new price, role and commands then, and nothing before', async (t) => {
  const clock = new TestClock();
  const app = await subscriptionsApp(t, { clock });
  const vip = await vipPlan(app, { group: 'ranks' });
  const mvp = await mvpPlan(app);
  t.match((await call(app, `/api/admin/subscription-plans/${vip.planId}`)).json(), { group: 'ranks' });
  const steve = await makeUser(app, 'steve', 4_000);
  const sub = (await subscribe(app, steve, vip.productId)).json();

  const res = await change(app, sub.id, steve, mvp.planId);
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), { productID: String(vip.productId), price: '5.00', nextPlanID: String(mvp.planId), nextAmount: '8.00' }, 'says the next amount');
  t.equal(await balanceOf(app, steve), 3_500, 'nothing charged now');
  t.ok((await roles(app, steve)).has(vip.roleId), 'the VIP role runs to the period paid');
  t.notOk((await roles(app, steve)).has(mvp.roleId));
  t.equal((await change(app, sub.id, steve, mvp.planId)).statusCode, 200, 'asked again: the same change');

  clock.advance(32 * DAY);
  t.same(await sweep(app), { renewed: 1, failed: 0, ended: 0 });
  t.same(await sweep(app), { renewed: 0, failed: 0, ended: 0 }, 'renewed once');
  t.match(await subscriptionOf(app, sub.id), {
    productID: String(mvp.productId),
    productName: 'MVP',
    price: '8.00',
    period: '2',
    nextPlanID: null,
    nextAmount: '8.00',
  });
  t.same(await ledger(app, steve, 'subscription'), [-500, -800], 'the next period at the new price');
  const held = await roles(app, steve);
  t.ok(held.has(mvp.roleId), 'the new tier gives its role');
  t.notOk(held.has(vip.roleId), 'the old one is taken back');
  const queued = await commands(app, steve);
  t.same(queued.slice(-2), ['lp user steve parent remove vip', 'lp user steve parent add mvp'], "the old tier's expiry, the new one's purchase");
  t.equal((await subscribe(app, steve, vip.productId)).statusCode, 201, 'the VIP product is free to subscribe to again');

  clock.advance(31 * DAY);
  t.match(await sweep(app), { failed: 0 });
  t.match(await subscriptionOf(app, sub.id), { period: '3', price: '8.00' });
  t.equal((await ledger(app, steve, 'subscription')).filter((d) => d === -800).length, 2, 'and at the new price from then on');
});

t.test('a pending change can be dropped, and tiers of another group, interval or a gateway subscription are refused', async (t) => {
  const clock = new TestClock();
  const app = await subscriptionsApp(t, { clock });
  const vip = await vipPlan(app, { group: 'ranks' });
  const mvp = await mvpPlan(app);
  const steve = await makeUser(app, 'steve', 2_000);
  const sub = (await subscribe(app, steve, vip.productId)).json();

  t.match((await change(app, sub.id, steve, mvp.planId)).json(), { nextPlanID: String(mvp.planId) });
  t.match((await change(app, sub.id, steve, vip.planId)).json(), { nextPlanID: null, nextAmount: '5.00' }, 'its own plan again drops the change');
  clock.advance(32 * DAY);
  await sweep(app);
  t.match(await subscriptionOf(app, sub.id), { productID: String(vip.productId), price: '5.00', period: '2' }, 'renewed on its own plan');

  const alex = await makeUser(app, 'alex', 0);
  t.same(
    [(await change(app, sub.id, alex, mvp.planId)).statusCode, (await change(app, sub.id, alex, mvp.planId)).json().error],
    [404, 'SUBSCRIPTION_NOT_FOUND'],
    "another player's",
  );
  const missing = await change(app, sub.id, steve, 999);
  t.same([missing.statusCode, missing.json().error], [404, 'SUBSCRIPTION_PLAN_NOT_FOUND']);
  const bad = await call(app, `/api/subscriptions/${sub.id}/change`, { body: { userID: steve, planID: 'x' }, as: 'json' });
  t.same([bad.statusCode, bad.json().error], [400, 'VALIDATION_ERROR']);
  t.match(bad.json().message, /planID/);

  await call(app, `/api/admin/subscription-plans/${mvp.planId}`, { method: 'PATCH', body: { group: 'other' }, as: 'json' });
  const other = await change(app, sub.id, steve, mvp.planId);
  t.same([other.statusCode, other.json().error], [409, 'SUBSCRIPTION_PLAN_NOT_IN_GROUP'], 'another group');
  await call(app, `/api/admin/subscription-plans/${mvp.planId}`, { method: 'PATCH', body: { group: 'ranks', intervalUnit: 'weeks' }, as: 'json' });
  t.equal((await change(app, sub.id, steve, mvp.planId)).json().error, 'SUBSCRIPTION_PLAN_NOT_IN_GROUP', 'another interval');
  await call(app, `/api/admin/subscription-plans/${mvp.planId}`, { method: 'PATCH', body: { intervalUnit: 'months' }, as: 'json' });

  t.equal((await subscribe(app, steve, mvp.productId)).statusCode, 201);
  t.equal((await change(app, sub.id, steve, mvp.planId)).json().error, 'SUBSCRIPTION_EXISTS', 'the tier runs already');

  const staff = await call(app, `/api/admin/subscriptions/${sub.id}/cancel`, { body: { when: 'period_end' }, as: 'json' });
  t.equal(staff.statusCode, 200);
  t.equal((await change(app, sub.id, steve, mvp.planId)).json().error, 'SUBSCRIPTION_ENDED', 'a cancelled subscription');
  t.equal(await balanceOf(app, steve), 2_000 - 500 - 500 - 800, 'no refusal charged anything');
});

t.test('staff change a tier; racing changes and renewals on two instances act once', async (t) => {
  const clock = new TestClock();
  const url = await sharedDatabaseUrl(t);
  const a = await subscriptionsApp(t, { clock, databaseUrl: url });
  const b = await subscriptionsApp(t, { clock, databaseUrl: url });
  const vip = await vipPlan(a, { group: 'ranks' });
  const mvp = await mvpPlan(a);
  const steve = await makeUser(a, 'steve', 2_000);
  const sub = (await subscribe(a, steve, vip.productId)).json();

  const staff = await call(a, `/api/admin/subscriptions/${sub.id}/change`, { body: { planID: mvp.planId }, as: 'json' });
  t.match(staff.json(), { nextPlanID: String(mvp.planId) });
  const changed = await overBoth([a, b], 4, (app) => change(app, sub.id, steve, mvp.planId));
  t.same(
    changed.map((r) => r.statusCode),
    [200, 200, 200, 200],
  );

  clock.advance(32 * DAY);
  const swept = await overBoth([a, b], 4, (app) => sweep(app));
  t.equal(
    swept.reduce((n, s) => n + s.renewed, 0),
    1,
    'one renewal',
  );
  t.same(await ledger(a, steve, 'subscription'), [-500, -800]);
  t.equal((await commands(a, steve)).filter((c) => c === 'lp user steve parent add mvp').length, 1, "the new tier's commands once");
  t.match(await subscriptionOf(b, sub.id), { productID: String(mvp.productId), period: '2', nextPlanID: null });
});

t.test('the account page offers the other tiers of a subscription and changes to one from the next period', async (t) => {
  const app = await subscriptionsApp(t, { features: ['auth', 'storefront'] });
  const vip = await vipPlan(app, { group: 'ranks' });
  const mvp = await mvpPlan(app);
  const v = new Visitor(app);
  await v.post('/register', { username: 'Steve', password: 'correct horse 1', email: 'steve@example.org' });
  await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '20' } });
  t.equal((await v.post('/subscribe', { product: String(vip.productId) })).statusCode, 303);
  const account = (await v.get('/account')).body;
  t.match(
    account,
    new RegExp(
      `<select id="tier-[0-9]+" name="plan"><option value="${mvp.planId}">MVP \\(\\$8\\.00\\)</option></select> <button type="submit">Change tier</button>`,
    ),
  );
  const [sub] = (await call(app, `/api/admin/subscriptions?productID=${vip.productId}`)).json();

  const done = await v.post(`/account/subscriptions/${sub.id}/change`, { plan: String(mvp.planId) });
  t.equal(done.statusCode, 303);
  const after = (await v.get(String(done.headers.location))).body;
  t.match(after, /From [0-9-]+ [0-9:]+ your subscription becomes MVP at \$8\.00; until then nothing changes\./);
  t.match(after, /<td data-label="State">Becomes MVP on [0-9-]+ [0-9:]+<\/td>/);
  t.match(after, /<td class="num" data-label="Price">\$8\.00<\/td>/, 'the next amount is the new price');
  t.match(await subscriptionOf(app, sub.id), { nextPlanID: String(mvp.planId) });

  const refused = await v.post(`/account/subscriptions/${sub.id}/change`, { plan: '999' });
  t.match((await v.get(String(refused.headers.location))).body, /No subscription plan with ID 999/, 'a refusal is said on the page');
  const alex = new Visitor(app);
  await alex.post('/register', { username: 'Alex', password: 'correct horse 1', email: 'alex@example.org' });
  const theirs = await alex.post(`/account/subscriptions/${sub.id}/change`, { plan: String(vip.planId) });
  t.match((await alex.get(String(theirs.headers.location))).body, /No subscription/, "another player's subscription is not changed");
  t.match(await subscriptionOf(app, sub.id), { nextPlanID: String(mvp.planId) });
});

t.test('a Stripe subscription changes tier at once: Stripe moves it to the new price with proration, and here it becomes the new tier', async (t) => {
  const app = await subscriptionsApp(t, { features: ['payments'], env: STRIPE_ENV });
  const vip = await vipPlan(app, { group: 'ranks' });
  const mvp = await mvpPlan(app);
  const steve = await makeUser(app, 'steve', 0);
  nock('https://api.stripe.com')
    .post('/v1/checkout/sessions')
    .reply(200, { id: 'cs_tier', object: 'checkout.session', url: 'https://checkout.stripe.com/c/pay/cs_tier' });
  const { reference } = (
    await call(app, '/api/subscriptions/checkout', {
      body: { userID: steve, productID: vip.productId, gateway: 'stripe', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no' },
      as: 'json',
    })
  ).json();
  const session = { id: 'cs_tier', object: 'checkout.session', mode: 'subscription', client_reference_id: reference, subscription: 'sub_tier' };
  const started = await stripeWebhook(app, {
    id: 'evt_tier_start',
    type: 'checkout.session.completed',
    data: { object: { ...session, payment_status: 'paid', amount_total: 500, currency: 'usd' } },
  });
  t.equal(started.json().data.result, 'started');
  const [sub] = (await call(app, `/api/subscriptions?userID=${steve}`)).json();

  let update = new URLSearchParams();
  const stripe = nock('https://api.stripe.com')
    .get('/v1/subscriptions/sub_tier')
    .reply(200, {
      id: 'sub_tier',
      object: 'subscription',
      items: { object: 'list', data: [{ id: 'si_tier', object: 'subscription_item', price: { id: 'price_vip', object: 'price', product: 'prod_vip' } }] },
    })
    .post('/v1/subscriptions/sub_tier', (body) => {
      update = new URLSearchParams(body as string);
      return true;
    })
    .reply(200, { id: 'sub_tier', object: 'subscription', status: 'active' });
  const res = await change(app, sub.id, steve, mvp.planId);
  t.equal(res.statusCode, 200, res.body);
  t.ok(stripe.isDone());
  t.equal(update.get('proration_behavior'), 'create_prorations');
  t.equal(update.get('items[0][id]'), 'si_tier');
  t.equal(update.get('items[0][price_data][unit_amount]'), '800');
  t.equal(update.get('items[0][price_data][product]'), 'prod_vip');
  t.equal(update.get('items[0][price_data][recurring][interval]'), 'month');
  t.match(res.json(), { productID: String(mvp.productId), price: '8.00', nextPlanID: null, nextAmount: '8.00' }, 'the new tier at once');
  const held = await roles(app, steve);
  t.ok(held.has(mvp.roleId));
  t.notOk(held.has(vip.roleId));
  t.same((await commands(app, steve)).slice(-2), ['lp user steve parent remove vip', 'lp user steve parent add mvp']);
  t.equal(await balanceOf(app, steve), 0, 'the wallet is not touched: Stripe charges the difference');

  nock('https://api.stripe.com')
    .get('/v1/subscriptions/sub_tier')
    .reply(500, { error: { type: 'api_error', message: 'down' } });
  const refused = await change(app, sub.id, steve, vip.planId);
  t.same([refused.statusCode, refused.json().error], [502, 'GATEWAY_ERROR']);
  t.match(await subscriptionOf(app, sub.id), { productID: String(mvp.productId), price: '8.00' }, 'a refusal at Stripe changes nothing here');
});
