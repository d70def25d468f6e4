/** What the payments feature logs: a disabled gateway once, a refused webhook with its event id, never a secret. */
import t from 'tap';
import { buildApp } from '../../../core/app.ts';
import { builtinNames } from '../../../core/features.ts';
import { newUser } from '../../../test/fixtures.ts';
import { ADMIN_KEY, freshDatabaseUrl } from '../../../test/helper.ts';
import { offline, PAYPAL_API, sessionCompleted, STRIPE_ENV, stripeCheckout, stripeWebhook } from './fixtures.ts';

offline(t);

t.test('log lines', async (t) => {
  const lines: string[] = [];
  const enabled = new Set(['users', 'credits', 'store', 'donations', 'payments']);
  const app = await buildApp({
    env: { DATABASE_URL: await freshDatabaseUrl(t), API_KEY: ADMIN_KEY, ...STRIPE_ENV, PAYPAL_CLIENT_SECRET: 'paypal-secret-value' },
    config: {
      log: { level: 'info' },
      plugins: { ...Object.fromEntries(builtinNames().map((n) => [n, { enabled: enabled.has(n) }])), payments: { enabled: true, paypalApiBase: PAYPAL_API } },
    },
    logStream: {
      write: (line: string) => {
        lines.push(line);
      },
    },
  });
  t.teardown(() => app.close());
  await app.ready();
  const disabled = lines.filter((l) => l.includes('payment gateway'));
  t.equal(disabled.length, 1, 'one line for the disabled gateway');
  t.match(disabled[0], /paypal is off until set in the console: PAYPAL_CLIENT_ID, PAYPAL_WEBHOOK_ID not set/);

  await newUser(app, 'steve');
  const paymentID = await stripeCheckout(app, 'cs_log', { username: 'steve', amount: '5.00' });
  await stripeWebhook(app, sessionCompleted('evt_forged', paymentID, 'cs_log', 500), 'whsec_other');
  await stripeWebhook(app, sessionCompleted('evt_short', paymentID, 'cs_log', 400));
  await stripeWebhook(app, sessionCompleted('evt_good', paymentID, 'cs_log', 500));
  const refused = lines.filter((l) => l.includes('webhook refused')).map((l) => JSON.parse(l));
  t.match(refused, [
    { gateway: 'stripe', eventId: 'evt_forged', code: 'INVALID_SIGNATURE' },
    { gateway: 'stripe', eventId: 'evt_short', code: 'AMOUNT_MISMATCH' },
  ]);
  t.match(
    lines.find((l) => l.includes('webhook processed')),
    /"eventId":"evt_good".*"result":"completed"/,
  );
  const all = lines.join('\n');
  for (const secret of [STRIPE_ENV.STRIPE_SECRET_KEY, STRIPE_ENV.STRIPE_WEBHOOK_SECRET, 'paypal-secret-value']) {
    t.notOk(all.includes(secret), 'no secret in the log');
  }
});
