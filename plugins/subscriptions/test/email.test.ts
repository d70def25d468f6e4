/**
 * The subscription mails through the email feature's contract, received by a real SMTP server
 * (test/smtp.ts): a reminder before a wallet renewal (once per period), a receipt on each renewal,
 * and a mail when a renewal fails.
 */
import t from 'tap';
import { TestClock } from '../../../core/clock.ts';
import { TestSmtp } from '../../../test/smtp.ts';
import { subscriptionsRef } from '../contract.ts';
import { DAY, makeUser, subscribe, subscriptionsApp, sweep, vipPlan } from './fixtures.ts';

async function mailApp(t: Parameters<typeof subscriptionsApp>[0], reminderDays: number) {
  const smtp = await new TestSmtp().start(t);
  const clock = new TestClock();
  const app = await subscriptionsApp(t, {
    clock,
    features: ['auth', 'email'],
    config: { email: { ...smtp.config(), pollMs: 50 }, subscriptions: { reminderDays } },
  });
  return { app, smtp, clock, remind: () => app.services.get(subscriptionsRef).remind() };
}

t.test('a reminder before a wallet renewal, once per period; a receipt on the renewal; a mail on a failure', async (t) => {
  const { app, smtp, clock, remind } = await mailApp(t, 3);
  const { productId } = await vipPlan(app);
  const steve = await makeUser(app, 'steve', 1_000);
  t.equal((await subscribe(app, steve, productId)).statusCode, 201);

  t.equal(await remind(), 0, 'not yet: the period ends in a month');
  clock.advance(28 * DAY);
  t.equal(await remind(), 1);
  t.equal(await remind(), 0, 'once per period');
  const reminder = await smtp.waitFor((m) => /renews soon/.test(m.subject));
  t.same(reminder.to, ['steve@example.com']);
  t.match(reminder.subject, 'Your VIP subscription at');
  t.match(reminder.text, /renews on \d{4}-\d\d-\d\d \d\d:\d\d: \$5\.00 will be taken from your balance/);
  t.match(reminder.html, 'Hello steve');

  clock.advance(4 * DAY);
  t.same(await sweep(app), { renewed: 1, failed: 0, ended: 0 });
  const receipt = await smtp.waitFor((m) => /was renewed/.test(m.subject));
  t.match(receipt.text, /renewed: \$5\.00 paid\. It now runs to \d{4}-\d\d-\d\d/);

  clock.advance(27 * DAY);
  t.equal(await remind(), 1, 'the next period is reminded of too');
  clock.advance(4 * DAY);
  t.same(await sweep(app), { renewed: 0, failed: 1, ended: 0 }, 'the balance is empty');
  const failed = await smtp.waitFor((m) => /payment failed/.test(m.subject));
  t.match(failed.text, /\(\$5\.00\) could not be paid\. It runs on until \d{4}-\d\d-\d\d/);
  await smtp.waitFor((m) => m !== reminder && /renews soon/.test(m.subject));
  t.equal(smtp.received.length, 4, 'two reminders, a receipt, a failure: no other mail');
});

t.test('reminderDays 0 sends no reminder; a cancelled subscription is not reminded of', async (t) => {
  const off = await mailApp(t, 0);
  const { productId } = await vipPlan(off.app);
  const steve = await makeUser(off.app, 'steve', 1_000);
  await subscribe(off.app, steve, productId);
  off.clock.advance(29 * DAY);
  t.equal(await off.remind(), 0);

  const on = await mailApp(t, 3);
  const plan = await vipPlan(on.app);
  const alex = await makeUser(on.app, 'alex', 1_000);
  const sub = (await subscribe(on.app, alex, plan.productId)).json();
  await on.app.services.get(subscriptionsRef).cancel(Number(sub.id), { userId: alex }, 'period_end');
  on.clock.advance(29 * DAY);
  t.equal(await on.remind(), 0, 'it will not renew');
});
