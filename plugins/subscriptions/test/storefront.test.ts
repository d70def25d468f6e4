import t from 'tap';
import { makeCategory, makeProduct } from '../../../test/fixtures.ts';
import { call, sharedDatabaseUrl } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { subscriptionsRef } from '../contract.ts';
import type { DbSubscriptionsService } from '../service.ts';
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

  const account = (await v.get('/account')).body;
  t.match(account, /My subscriptions/);
  const row =
    /<tr><td data-label="Subscription">VIP<\/td><td data-label="State">Active<\/td><td data-label="Next payment">([0-9: -]+)<\/td><td class="num" data-label="Price">\$5\.00<\/td>/.exec(
      account,
    );
  t.ok(row, 'the account lists the subscription with its next payment and amount');
  const [sub] = (await call(app, `/api/subscriptions?userID=${steve}`)).json();
  t.equal(row?.[1], sub.nextPaymentDate);
  const cancelled = await v.post(`/account/subscriptions/${sub.id}/cancel`, {});
  t.equal(cancelled.statusCode, 303);
  t.match((await v.get(String(cancelled.headers.location))).body, /Your subscription to VIP ends [0-9-]+ [0-9:]+; nothing more is charged\./);
  t.match((await call(app, `/api/subscriptions?userID=${steve}`)).json()[0], { cancelAtPeriodEnd: '1', nextPaymentDate: null });
  const after = (await v.get('/account')).body;
  t.match(after, /Ends [0-9-]+/);
  t.notMatch(after, /subscriptions\/[0-9]+\/cancel/, 'no cancel button once cancelled');
  const alex = new Visitor(app);
  await alex.post('/register', { username: 'Alex', password: PASSWORD, email: 'alex@example.org' });
  const theirs = await alex.post(`/account/subscriptions/${sub.id}/cancel`, {});
  t.match((await alex.get(String(theirs.headers.location))).body, /No subscription/, "another player's subscription cannot be cancelled");

  const stranger = new Visitor(app);
  await stranger.get('/');
  const plain = await stranger.post('/subscribe', { product: String(productId) });
  t.equal(plain.statusCode, 303, 'a visitor not signed in is sent to sign in');
  t.match(String(plain.headers.location), /\/login/);
  const german = await new Visitor(app, { 'accept-language': 'de' }).get(`/product/${productId}`);
  t.match(german.body, /Verlängert sich alle 3 Monate/);
});

t.test('the basket says which of its products renew, at what price and how often', async (t) => {
  const app = await subscriptionsApp(t, { features: ['auth', 'storefront'] });
  const { productId } = await vipPlan(app, { intervalUnit: 'weeks', intervalCount: 2 });
  const v = new Visitor(app);
  await v.get(`/product/${productId}`);
  t.equal((await v.post('/basket/add', { product: String(productId), quantity: '1' })).statusCode, 303);
  const basket = (await v.get('/basket')).body;
  t.match(basket, /<p class="renews">Renews every 2 weeks at \$5\.00<\/p>/);
});

t.test('which products have a plan is held in memory: a product without one costs no statement, and another instance learns of a new plan', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const a = await subscriptionsApp(t, { databaseUrl: url });
  const b = await subscriptionsApp(t, { databaseUrl: url });
  const plain = await makeProduct(a, { categoryID: await makeCategory(a, { name: 'Items' }), name: 'Sword', price: '2' });
  const subsB = b.services.get(subscriptionsRef) as DbSubscriptionsService;
  await subsB.refreshPlans();
  const { productId } = await vipPlan(a);

  const statements = async (fn: () => Promise<unknown>) => {
    const before = b.db.statements;
    await fn();
    return b.db.statements - before;
  };
  t.equal(await statements(() => subsB.planOfProduct(plain)), 0, 'a product without a plan: no statement');
  t.equal(await subsB.planOfProduct(productId), undefined, 'B has not read the plan A made yet');
  await subsB.refreshPlans();
  t.match(await subsB.planOfProduct(productId), { productID: String(productId), price: '5.00' }, 'its next round does');
  t.match(await a.services.get(subscriptionsRef).planOfProduct(productId), { productID: String(productId) }, 'A knew at once');

  await call(a, `/api/admin/subscription-plans/${(await subsB.planOfProduct(productId))!.id}`, { method: 'PATCH', body: { isActive: 0 }, as: 'json' });
  t.equal(await subsB.planOfProduct(productId), undefined, 'a plan taken off sale is read, so B never offers it');
});

t.test('before its first round an instance reads which products have a plan once, not each product page its plan', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const a = await subscriptionsApp(t, { databaseUrl: url });
  const plain = await makeProduct(a, { categoryID: await makeCategory(a, { name: 'Items' }), name: 'Sword', price: '2' });
  const { productId } = await vipPlan(a);
  const b = await subscriptionsApp(t, { databaseUrl: url });
  const subsB = b.services.get(subscriptionsRef);
  const before = b.db.statements;
  const first = await Promise.all([1, 2, 3].map(() => subsB.planOfProduct(plain)));
  t.same(first, [undefined, undefined, undefined], 'no plan for the plain product');
  t.equal(b.db.statements - before, 1, 'three pages at once: one read of the list');
  const after = b.db.statements;
  t.equal(await subsB.planOfProduct(plain), undefined);
  t.equal(b.db.statements - after, 0, 'the next page: no statement');
  t.match(await subsB.planOfProduct(productId), { productID: String(productId) }, 'a product with a plan still gets it');
});
