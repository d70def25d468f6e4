/** Limits against card fraud: a new account's daily spending at the gateways, and 3-D Secure asked of every Stripe payment. */
import t from 'tap';
import { newUser } from '../../../test/fixtures.ts';
import { call } from '../../../test/helper.ts';
import { sql } from '../../../core/sql.ts';
import { UsersAccount } from '../../users/entities.ts';
import { buildPayments, mockStripeSession, offline, sessionCompleted, stripeWebhook } from './fixtures.ts';

offline(t);

const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/shop' };

const topUp = (app: Parameters<typeof call>[0], username: string, amount: string) =>
  call(app, '/api/payments/checkout', { body: { gateway: 'stripe', username, amount, ...URLS } });

t.test('a new account may pay at most the daily limit in 24 hours; an older one is not held to it', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'fresh');
  await newUser(app, 'veteran');
  await app.db.run(sql`update ${UsersAccount} set ${UsersAccount.c.creationDate} = '2020-01-01 00:00:00' where ${UsersAccount.c.username} = 'veteran'`);
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { newAccountDailyLimit: 15 }, as: 'json' });

  mockStripeSession('cs_1');
  const first = await topUp(app, 'fresh', '10.00');
  t.equal(first.statusCode, 200, first.body);
  await stripeWebhook(app, sessionCompleted('evt_1', first.json().data.paymentID, 'cs_1', 1000));

  const over = await topUp(app, 'fresh', '10.00');
  t.equal(over.statusCode, 403);
  t.match(over.json(), { status: false, error: 'SPENDING_LIMIT', message: /at most 15\.00 USD in 24 hours \(5\.00 left\)/ });

  mockStripeSession('cs_2');
  t.equal((await topUp(app, 'fresh', '5.00')).statusCode, 200, 'what is left may still be paid');
  mockStripeSession('cs_3');
  t.equal((await topUp(app, 'veteran', '100.00')).statusCode, 200, 'an older account has no daily limit');
});

t.test('3-D Secure is asked of every Stripe payment only when the owner turns it on', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  let asked = new URLSearchParams();
  mockStripeSession('cs_off', (body) => {
    asked = new URLSearchParams(body);
  });
  await topUp(app, 'steve', '5.00');
  t.equal(asked.get('payment_method_options[card][request_three_d_secure]'), null);
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { stripeThreeDSecure: true }, as: 'json' });
  mockStripeSession('cs_on', (body) => {
    asked = new URLSearchParams(body);
  });
  await topUp(app, 'steve', '6.00');
  t.equal(asked.get('payment_method_options[card][request_three_d_secure]'), 'any');
});
