import t from 'tap';
import { TestClock } from '../../../core/clock.ts';
import { subscriptionsRef } from '../contract.ts';
import { DAY, makeUser, subscribe, subscriptionsApp, sweep, vipPlan } from './fixtures.ts';

t.test("the dashboard's figures: monthly recurring revenue of the paid subscriptions that renew, churn over 30 days", async (t) => {
  const clock = new TestClock();
  const app = await subscriptionsApp(t, { clock });
  const metrics = () => app.services.get(subscriptionsRef).metrics();
  const monthly = await vipPlan(app);
  const players: number[] = [];
  for (const name of ['a', 'b', 'c', 'd']) players.push(await makeUser(app, name, 100_000));
  const started = [];
  for (const id of players) started.push((await subscribe(app, id, monthly.productId)).json());
  t.match(await metrics(), { active: 4, pastDue: 0, mrr: 2_000, churn: 0, churned: 0 });

  await app.services.get(subscriptionsRef).cancel(Number(started[0].id), { userId: players[0]! }, 'period_end');
  t.match(await metrics(), { active: 4, mrr: 1_500 }, 'a cancelled one no longer recurs');

  clock.advance(31 * DAY);
  await sweep(app);
  // Four ran at the window's start (31 days ago they had just started, before the window), one ended in it.
  t.match(await metrics(), { active: 3, mrr: 1_500, churned: 1, churn: 0.25 });
});
