import t from 'tap';
import { TestClock } from '../../../core/clock.ts';
import { call, overBoth, sharedDatabaseUrl } from '../../../test/helper.ts';
import { count, fields, sql } from '../../../core/sql.ts';
import { DeliveryQueue } from '../../delivery/entities.ts';
import { SubscriptionsPeriod, SubscriptionsSubscription } from '../entities.ts';
import { balanceOf, DAY, ledger, makeUser, subscribe, subscriptionsApp, sweep, until, vipPlan } from './fixtures.ts';

const PLAYERS = 6;

t.test("two instances' sweeps at once renew each subscription once: one payment, one period, one set of commands", async (t) => {
  const clock = new TestClock();
  const url = await sharedDatabaseUrl(t);
  const a = await subscriptionsApp(t, { clock, databaseUrl: url });
  const b = await subscriptionsApp(t, { clock, databaseUrl: url });
  const { productId } = await vipPlan(a);
  const players: number[] = [];
  for (let i = 0; i < PLAYERS; i++) players.push(await makeUser(a, `player${i}`, 1_000));
  // The last player can pay the first period only: their renewal fails, once.
  const short = await makeUser(a, 'short', 500);
  for (const id of [...players, short]) t.equal((await subscribe(a, id, productId)).statusCode, 201);
  const failed: number[] = [];
  for (const app of [a, b]) app.events.on('subscriptions.payment_failed', (e) => void failed.push(e.userId));

  clock.advance(32 * DAY);
  const results = await overBoth([a, b], 4, (app) => sweep(app));
  t.equal(
    results.reduce((n, r) => n + r.renewed, 0),
    PLAYERS,
    'each renewal done by one sweep',
  );
  t.equal(
    results.reduce((n, r) => n + r.failed, 0),
    1,
    'the failure told by one sweep',
  );
  for (const id of players) {
    t.same(await ledger(a, id, 'subscription'), [-500, -500], 'paid twice in all: the start and one renewal');
    t.equal(await balanceOf(a, id), 0);
  }
  const [periods] = await a.db.query(sql`select ${fields({ n: count() })} from ${SubscriptionsPeriod} where ${SubscriptionsPeriod.c.status} = 'paid'`);
  t.equal(Number(periods!.n), PLAYERS * 2 + 1);
  const [renewals] = await a.db.query(sql`select ${fields({ n: count() })} from ${DeliveryQueue} where ${DeliveryQueue.c.command} like 'say % renewed VIP'`);
  t.equal(Number(renewals!.n), PLAYERS, 'one renewal command per player');
  await until(() => failed.length > 0);
  t.same(failed, [short], 'payment_failed emitted once');
});

t.test('racing subscribes of one player on two instances: one subscription, one payment', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const a = await subscriptionsApp(t, { databaseUrl: url });
  const b = await subscriptionsApp(t, { databaseUrl: url });
  const { productId } = await vipPlan(a);
  const steve = await makeUser(a, 'steve', 10_000);
  const answers = await overBoth([a, b], 8, (app) => subscribe(app, steve, productId));
  t.same(answers.map((r) => r.statusCode).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
  for (const r of answers.filter((r) => r.statusCode === 409)) t.equal(r.json().error, 'SUBSCRIPTION_EXISTS');
  t.equal(await balanceOf(a, steve), 9_500);
});

t.test('racing refunds and cancels of one subscription: one refund, one end', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const a = await subscriptionsApp(t, { databaseUrl: url });
  const b = await subscriptionsApp(t, { databaseUrl: url });
  const { productId } = await vipPlan(a);
  const steve = await makeUser(a, 'steve', 1_000);
  const sub = (await subscribe(a, steve, productId)).json();
  const ended: string[] = [];
  for (const app of [a, b]) app.events.on('subscriptions.ended', (e) => void ended.push(e.reason));
  const answers = await overBoth([a, b], 6, (app, i) =>
    i % 3 === 2
      ? call(app, `/api/admin/subscriptions/${sub.id}/cancel`, { body: { when: 'now' }, as: 'json' })
      : call(app, `/api/admin/subscriptions/${sub.id}/refund`, { method: 'POST' }),
  );
  for (const r of answers) t.ok([200, 409].includes(r.statusCode), r.body);
  t.ok((await balanceOf(a, steve)) <= 1_000, 'never refunded twice');
  t.same(await ledger(a, steve, 'subscription refund').then((r) => r.length <= 1), true);
  const [row] = await a.db.query(sql`select ${fields({ n: count() })} from ${SubscriptionsSubscription} where ${SubscriptionsSubscription.c.status} = 'ended'`);
  t.equal(Number(row!.n), 1);
  await until(() => ended.length > 0);
  t.same(ended, ['refunded'].includes(ended[0]!) ? ['refunded'] : ['staff'], 'ended once');
});
