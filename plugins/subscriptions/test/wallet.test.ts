import t from 'tap';
import { TestClock } from '../../../core/clock.ts';
import { call } from '../../../test/helper.ts';
import { sql } from '../../../core/sql.ts';
import { CoreAuditLog } from '../../../core/audit.ts';
import {
  balanceOf,
  commands,
  DAY,
  GRACE_HOURS,
  ledger,
  makeUser,
  roles,
  subscribe,
  subscriptionOf,
  subscriptionsApp,
  sweep,
  until,
  vipPlan,
} from './fixtures.ts';

t.test('plans: the admin API sells a product as a subscription and refuses bad terms with the field named', async (t) => {
  const app = await subscriptionsApp(t);
  const { productId, roleId } = await vipPlan(app, { intervalCount: 3, trialDays: 7 });
  const plans = (await call(app, '/api/admin/subscription-plans')).json();
  t.match(plans, [{ productID: String(productId), intervalUnit: 'months', intervalCount: '3', price: '5.00', trialDays: '7', roleID: String(roleId) }]);
  t.equal(plans[0].renews, 'Renews every 3 months at 5.00 USD');

  const post = (body: Record<string, unknown>) => call(app, '/api/admin/subscription-plans', { body, as: 'json' });
  const again = await post({ productID: productId, intervalUnit: 'months', price: '5' });
  t.equal(again.json().error, 'CONFLICT', 'one plan per product');
  const unknown = await post({ productID: 999, intervalUnit: 'days', price: '5' });
  t.same([unknown.statusCode, unknown.json().error], [404, 'PRODUCT_NOT_FOUND']);
  for (const [field, body] of [
    ['price', { productID: productId, intervalUnit: 'days', price: '1.005' }],
    ['price', { productID: productId, intervalUnit: 'days', price: 'abc' }],
    ['intervalUnit', { productID: productId, intervalUnit: 'hours', price: '1' }],
    ['intervalCount', { productID: productId, intervalUnit: 'days', intervalCount: 0, price: '1' }],
  ] as const) {
    const res = await post(body);
    t.equal(res.statusCode, 400, `${JSON.stringify(body)} refused`);
    t.equal(res.json().error, 'VALIDATION_ERROR');
    t.match(res.json().message, field);
  }
  const off = await call(app, `/api/admin/subscription-plans/${plans[0].id}`, { method: 'PATCH', body: { isActive: '0' }, as: 'json' });
  t.equal(off.json().isActive, '0');
  const steve = await makeUser(app, 'steve', 10_000);
  t.equal((await subscribe(app, steve, productId)).json().error, 'SUBSCRIPTION_PLAN_NOT_FOUND', 'a plan off sale takes no subscriber');
});

t.test(
  'a player subscribes from the wallet: the first period paid in the ledger, the role until the period ends and the grace after, the purchase commands queued',
  async (t) => {
    const app = await subscriptionsApp(t);
    const { productId, roleId } = await vipPlan(app);
    const steve = await makeUser(app, 'steve', 1_200);
    const started: number[] = [];
    app.events.on('subscriptions.started', (e) => void started.push(e.amount));

    const res = await subscribe(app, steve, productId);
    t.equal(res.statusCode, 201, res.body);
    const sub = res.json();
    t.match(sub, { status: 'active', period: '1', price: '5.00', nextAmount: '5.00', cancelAtPeriodEnd: '0', renews: 'Renews every month at 5.00 USD' });
    t.equal(sub.nextPaymentDate, sub.periodEnd);
    t.equal(await balanceOf(app, steve), 700);
    t.same(await ledger(app, steve, 'subscription'), [-500]);
    const grace = new Date(`${sub.periodEnd.replace(' ', 'T')}Z`).getTime() + GRACE_HOURS * 3_600_000;
    t.equal(new Date(`${(await roles(app, steve)).get(roleId)!.replace(' ', 'T')}Z`).getTime(), grace, 'the role lasts to the end of the grace period');
    t.same(await commands(app, steve), ['lp user steve parent add vip']);

    const twice = await subscribe(app, steve, productId);
    t.same([twice.statusCode, twice.json().error], [409, 'SUBSCRIPTION_EXISTS']);
    const alex = await makeUser(app, 'alex', 499);
    const poor = await subscribe(app, alex, productId);
    t.same([poor.statusCode, poor.json().error], [400, 'INSUFFICIENT_BALANCE']);
    t.same([await balanceOf(app, alex), (await roles(app, alex)).size, await commands(app, alex)], [499, 0, []], 'a refused subscribe changes nothing');
    t.same((await call(app, `/api/subscriptions?userID=${alex}`)).json(), []);
    t.equal((await subscribe(app, steve, 12345)).json().error, 'SUBSCRIPTION_PLAN_NOT_FOUND');
    t.same(started, [500]);
  },
);

t.test('the sweep renews at the end of each period from the balance, runs the renewal commands and extends the role', async (t) => {
  const clock = new TestClock();
  const app = await subscriptionsApp(t, { clock, sweepMs: 20 });
  const { productId, roleId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve', 1_000);
  const sub = (await subscribe(app, steve, productId)).json();
  const renewed: number[] = [];
  app.events.on('subscriptions.renewed', (e) => void renewed.push(e.period));

  clock.advance(32 * DAY);
  await until(() => renewed.length === 1);
  const after = await subscriptionOf(app, sub.id);
  t.match(after, { status: 'active', period: '2' });
  t.ok(after.periodEnd > sub.periodEnd, 'the next period ends a month later');
  t.equal(await balanceOf(app, steve), 0);
  t.same(await ledger(app, steve, 'subscription'), [-500, -500], 'each period in the ledger');
  t.same(await commands(app, steve), ['lp user steve parent add vip', 'say steve renewed VIP']);
  t.ok((await roles(app, steve)).get(roleId)! > after.periodEnd, 'the role outlasts the new period');
  t.same(await sweep(app), { renewed: 0, failed: 0, ended: 0 }, 'a second sweep of the same moment does nothing');
});

t.test(
  'a short balance fails clearly and starts the grace period; when it runs out the expiry commands run and the role ends; a lapsed subscription starts again',
  async (t) => {
    const clock = new TestClock();
    const app = await subscriptionsApp(t, { clock });
    const { productId, roleId } = await vipPlan(app);
    const steve = await makeUser(app, 'steve', 700);
    const sub = (await subscribe(app, steve, productId)).json();
    const failed: string[] = [];
    const ended: string[] = [];
    app.events.on('subscriptions.payment_failed', (e) => void failed.push(e.graceUntil));
    app.events.on('subscriptions.ended', (e) => void ended.push(e.reason));

    clock.advance(32 * DAY);
    t.same(await sweep(app), { renewed: 0, failed: 1, ended: 0 });
    t.same(await sweep(app), { renewed: 0, failed: 0, ended: 0 }, 'the failure is told once');
    const due = await subscriptionOf(app, sub.id);
    t.match(due, { status: 'past_due', period: '1' });
    t.ok(due.graceUntil, 'the grace period is shown');
    t.equal(await balanceOf(app, steve), 200, 'nothing taken');
    t.ok((await roles(app, steve)).has(roleId), 'the role holds through the grace period');
    await until(() => failed.length === 1);

    clock.advance(GRACE_HOURS * 3_600_000 + 1000);
    t.same(await sweep(app), { renewed: 0, failed: 0, ended: 1 });
    t.match(await subscriptionOf(app, sub.id), { status: 'ended', endReason: 'unpaid', nextPaymentDate: null });
    t.notOk((await roles(app, steve)).has(roleId), 'the role ended');
    t.same((await commands(app, steve)).at(-1), 'lp user steve parent remove vip');
    await until(() => ended.length === 1);
    t.same(ended, ['unpaid']);

    await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '10' } });
    const again = await subscribe(app, steve, productId);
    t.equal(again.statusCode, 201, 'a lapsed subscription can be started again');
    t.not(again.json().id, sub.id);
    t.ok((await roles(app, steve)).has(roleId));
  },
);

t.test('a payment in the grace period renews from where the period ended', async (t) => {
  const clock = new TestClock();
  const app = await subscriptionsApp(t, { clock });
  const { productId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve', 700);
  const sub = (await subscribe(app, steve, productId)).json();
  clock.advance(32 * DAY);
  await sweep(app);
  await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '3' } });
  t.same(await sweep(app), { renewed: 1, failed: 0, ended: 0 });
  const renewed = await subscriptionOf(app, sub.id);
  t.match(renewed, { status: 'active', period: '2', graceUntil: null });
  t.equal(await balanceOf(app, steve), 0);
});

t.test('the player cancels at the period end: no more payments, the end at the period end; staff cancel now or refund', async (t) => {
  const clock = new TestClock();
  const app = await subscriptionsApp(t, { clock });
  const { productId, roleId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve', 2_000);
  const alex = await makeUser(app, 'alex', 2_000);
  const sub = (await subscribe(app, steve, productId)).json();
  const cancelled: string[] = [];
  app.events.on('subscriptions.cancelled', (e) => void cancelled.push(e.by));

  const other = await call(app, `/api/subscriptions/${sub.id}/cancel`, { body: { userID: alex }, as: 'json' });
  t.same([other.statusCode, other.json().error], [404, 'SUBSCRIPTION_NOT_FOUND'], "another player's subscription is not theirs to cancel");
  const res = await call(app, `/api/subscriptions/${sub.id}/cancel`, { body: { userID: steve }, as: 'json' });
  t.match(res.json(), { status: 'active', cancelAtPeriodEnd: '1', nextPaymentDate: null, nextAmount: null });
  const listed = (await call(app, `/api/subscriptions?userID=${steve}`)).json();
  t.equal(listed.length, 1);
  clock.advance(32 * DAY);
  t.same(await sweep(app), { renewed: 0, failed: 0, ended: 1 });
  t.match(await subscriptionOf(app, sub.id), { status: 'ended', endReason: 'cancelled' });
  t.equal(await balanceOf(app, steve), 1_500, 'nothing charged after the cancel');
  t.notOk((await roles(app, steve)).has(roleId));
  const late = await call(app, `/api/subscriptions/${sub.id}/cancel`, { body: { userID: steve }, as: 'json' });
  t.same([late.statusCode, late.json().error], [409, 'SUBSCRIPTION_ENDED']);

  const now = (await subscribe(app, alex, productId)).json();
  const ended = await call(app, `/api/admin/subscriptions/${now.id}/cancel`, { body: { when: 'now' }, as: 'json' });
  t.match(ended.json(), { status: 'ended', endReason: 'staff' });
  t.notOk((await roles(app, alex)).has(roleId), 'staff cancel now: the role ends at once');
  t.same((await commands(app, alex)).at(-1), 'lp user alex parent remove vip');

  const refunded = (await subscribe(app, alex, productId)).json();
  t.equal(await balanceOf(app, alex), 1_000);
  const refund = await call(app, `/api/admin/subscriptions/${refunded.id}/refund`, { method: 'POST' });
  t.match(refund.json(), { status: 'ended', endReason: 'refunded' });
  t.equal(await balanceOf(app, alex), 1_500, 'the period paid back to the wallet');
  t.same(await ledger(app, alex, 'subscription refund'), [500]);
  const twice = await call(app, `/api/admin/subscriptions/${refunded.id}/refund`, { method: 'POST' });
  t.same([twice.statusCode, twice.json().error], [409, 'SUBSCRIPTION_NOT_REFUNDABLE']);
  t.equal(await balanceOf(app, alex), 1_500, 'refunded once');
  const byState = (await call(app, `/api/admin/subscriptions?productID=${productId}&status=ended`)).json();
  t.equal(byState.length, 3);
  await until(() => cancelled.length === 2);
  t.same(cancelled, ['player', 'staff']);
  const audited = await CoreAuditLog.select(app.db, sql`where ${CoreAuditLog.c.action} like 'subscriptions.%' order by ${CoreAuditLog.c.id}`);
  t.same(
    audited.map((r) => r.action),
    ['subscriptions.plan.create', 'subscriptions.cancel', 'subscriptions.refund'],
    "staff's changes are in the audit log, the player's cancel is not",
  );
});

t.test('a free trial for a first subscription: no charge until it ends, then the first period', async (t) => {
  const clock = new TestClock();
  const app = await subscriptionsApp(t, { clock });
  const { productId } = await vipPlan(app, { trialDays: 7 });
  const steve = await makeUser(app, 'steve', 1_000);
  const sub = (await subscribe(app, steve, productId)).json();
  t.match(sub, { period: '0', nextAmount: '5.00' });
  t.equal(await balanceOf(app, steve), 1_000);
  clock.advance(8 * DAY);
  t.same(await sweep(app), { renewed: 1, failed: 0, ended: 0 });
  t.match(await subscriptionOf(app, sub.id), { period: '1', status: 'active' });
  t.equal(await balanceOf(app, steve), 500);
  await call(app, `/api/admin/subscriptions/${sub.id}/cancel`, { body: { when: 'now' }, as: 'json' });
  t.equal((await subscribe(app, steve, productId)).json().period, '1', 'no second trial');
});

t.test('bad input is a clear error that changes nothing', async (t) => {
  const app = await subscriptionsApp(t);
  for (const [url, body, code] of [
    ['/api/subscriptions', { userID: 'x', productID: 1 }, 'VALIDATION_ERROR'],
    ['/api/subscriptions', { productID: 1 }, 'VALIDATION_ERROR'],
    ['/api/subscriptions', { userID: 999, productID: 1 }, 'SUBSCRIPTION_PLAN_NOT_FOUND'],
    ['/api/subscriptions/77/cancel', { userID: 1 }, 'SUBSCRIPTION_NOT_FOUND'],
    ['/api/admin/subscriptions/77/cancel', { when: 'later' }, 'VALIDATION_ERROR'],
    ['/api/admin/subscriptions/77/refund', {}, 'SUBSCRIPTION_NOT_FOUND'],
  ] as const) {
    const res = await call(app, url, { body, as: 'json' });
    t.equal(res.json().error, code, `${url} ${JSON.stringify(body)}`);
    t.ok(res.statusCode >= 400 && res.statusCode < 500);
  }
});
