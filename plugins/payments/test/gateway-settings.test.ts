/**
 * Stripe's and PayPal's credentials set in the console (issue 49): sealed at rest, never shown back
 * whole, checked against the gateway's API (nock), used at once by checkouts and webhooks and by a
 * second instance on the same database, audited without the secrets, and the environment winning.
 */
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import t from 'tap';
import { grant, register, role, signInByForm } from '../../../test/browser.ts';
import { newUser } from '../../../test/fixtures.ts';
import { GATEWAY_ENV, offline, PAYPAL_API, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { build, call, sharedDatabaseUrl } from '../../../test/helper.ts';
import { CoreSetting } from '../../../core/settings.ts';

/** The payments feature with auth (whose key seals the secrets) and the console; no gateway credentials unless given. */
const buildPayments = (t: Parameters<typeof build>[0], env: Record<string, string> = GATEWAY_ENV, databaseUrl?: string) =>
  build(t, {
    features: ['users', 'auth', 'credits', 'store', 'donations', 'payments', 'console'],
    env,
    databaseUrl,
    config: { plugins: { payments: { paypalApiBase: PAYPAL_API } } },
  });

offline(t);

const SECRET_KEY = 'sk_test_console_key_4f2a';
const WEBHOOK_SECRET = 'whsec_console_secret_9z9z';
const PAYPAL = { clientId: 'paypal-console-client', clientSecret: 'paypal-console-secret-77aa', webhookId: 'WH-CONSOLE' };
const SECRETS = [SECRET_KEY, WEBHOOK_SECRET, PAYPAL.clientId, PAYPAL.clientSecret];
const leaks = (text: string) => SECRETS.some((s) => text.includes(s) || text.includes(s.slice(0, 14)));

const checkout = (gateway: string) => ({
  username: 'steve',
  amount: '5.00',
  gateway,
  returnURL: 'https://play.example.com/ok',
  cancelURL: 'https://play.example.com/no',
});

/** A Stripe Checkout Session answered only for the console's secret key. */
const stripeSession = (id: string) =>
  nock('https://api.stripe.com')
    .post('/v1/checkout/sessions')
    .matchHeader('authorization', `Bearer ${SECRET_KEY}`)
    .reply(200, { id, object: 'checkout.session', url: `https://checkout.stripe.com/c/pay/${id}` });

async function staff(app: FastifyInstance) {
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).split(';')[0]!;
  const page = () => app.inject({ url: '/console/gateways', headers: { cookie } });
  const post = async (url: string, fields: Record<string, string>) => {
    const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec((await page()).body)![1]!;
    return app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    });
  };
  return { page, post };
}

t.test('Stripe and PayPal set in the console: sealed, never shown back, checked, used at once, audited', async (t) => {
  const app = await buildPayments(t, {});
  await newUser(app, 'steve');
  const answers: string[] = [];
  const off = await call(app, '/api/payments/checkout', { body: checkout('stripe') });
  t.equal(off.statusCode, 400);
  t.match(off.json(), { error: 'GATEWAY_UNAVAILABLE', message: /STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET not set/ });

  const alice = await staff(app);
  const saved = await alice.post('/console/gateways/stripe', { secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET });
  t.equal(saved.statusCode, 303, saved.body);
  const view = await call(app, '/api/admin/payments/gateways/stripe/settings');
  answers.push(view.body, (await alice.page()).body);
  t.match(view.json().data, {
    secretKey: { set: true, ending: '4f2a', source: 'console' },
    webhookSecret: { set: true, ending: '9z9z', source: 'console' },
    apiBase: { value: 'https://api.stripe.com', source: 'console' },
  });
  const [row] = (await CoreSetting.select(app.db)).filter((r) => r.key === 'payments:stripe');
  t.notOk(leaks(row!.value), 'the stored secrets are sealed');

  // The check asks Stripe with the stored key; a refusal is shown beside the form.
  nock('https://api.stripe.com').get('/v1/balance').matchHeader('authorization', `Bearer ${SECRET_KEY}`).reply(200, { object: 'balance' });
  t.equal((await alice.post('/console/gateways/stripe/check', {})).statusCode, 303);
  nock('https://api.stripe.com')
    .get('/v1/balance')
    .reply(401, { error: { message: 'Invalid API Key' } });
  const refused = await alice.post('/console/gateways/stripe/check', {});
  t.equal(refused.statusCode, 422);
  t.match(refused.body, /refused the credentials \(HTTP 401\)/);
  answers.push(refused.body);

  // Used without a restart: a checkout with the key, a webhook signed with the secret.
  stripeSession('cs_console');
  const paid = await call(app, '/api/payments/checkout', { body: checkout('stripe') });
  t.equal(paid.statusCode, 200, paid.body);
  const webhook = await stripeWebhook(app, sessionCompleted('evt_console', paid.json().data.paymentID, 'cs_console', 500), WEBHOOK_SECRET);
  t.equal(webhook.statusCode, 200, webhook.body);

  // PayPal through the admin API; bad input changes nothing.
  for (const body of [{ clientId: 'x'.repeat(600) }, { apiBase: 'ftp://paypal' }]) {
    const bad = await call(app, '/api/admin/payments/gateways/paypal/settings', { method: 'PATCH', body });
    answers.push(bad.body);
    t.equal(bad.statusCode, 400, JSON.stringify(body));
    t.equal(bad.json().error, 'VALIDATION_ERROR');
  }
  const configured = await call(app, '/api/admin/payments/gateways/paypal/settings', { method: 'PATCH', body: { ...PAYPAL, apiBase: PAYPAL_API } });
  answers.push(configured.body);
  t.equal(configured.statusCode, 400, 'the apiBase of the configuration file wins');
  t.match(configured.json().message, /^apiBase: set by the configuration file/);
  const patched = await call(app, '/api/admin/payments/gateways/paypal/settings', { method: 'PATCH', body: PAYPAL });
  answers.push(patched.body);
  t.equal(patched.statusCode, 200, patched.body);
  t.match(patched.json().data, { clientSecret: { set: true, ending: '77aa' }, webhookId: { value: 'WH-CONSOLE' }, apiBase: { source: 'config' } });
  nock(PAYPAL_API).post('/v1/oauth2/token').basicAuth({ user: PAYPAL.clientId, pass: PAYPAL.clientSecret }).reply(200, { access_token: 't', expires_in: 900 });
  t.equal((await call(app, '/api/admin/payments/gateways/paypal/check', { method: 'POST' })).statusCode, 200);

  const audit = await call(app, '/api/admin/audit?action=payments.gateway.update');
  answers.push(audit.body);
  t.match(audit.json(), [
    { actor: 'bootstrap', targetID: 'paypal', after: { clientSecret: 'changed', webhookId: 'WH-CONSOLE' } },
    { actor: 'Alice', targetID: 'stripe', after: { secretKey: 'changed', webhookSecret: 'changed' } },
  ]);
  t.equal(audit.json().length, 2, 'the refused changes wrote nothing');
  t.notOk(answers.some(leaks), 'no answer, page or audit entry holds a secret');
});

t.test('the environment wins and the console shows those fields read-only', async (t) => {
  const app = await buildPayments(t);
  const view = (await call(app, '/api/admin/payments/gateways/stripe/settings')).json().data;
  t.match(view, { secretKey: { set: true, source: 'environment' }, webhookSecret: { source: 'environment' } });
  const refused = await call(app, '/api/admin/payments/gateways/stripe/settings', { method: 'PATCH', body: { secretKey: SECRET_KEY } });
  t.equal(refused.statusCode, 400);
  t.match(refused.json().message, /^secretKey: set by the environment variable STRIPE_SECRET_KEY/);
  const alice = await staff(app);
  const page = (await alice.page()).body;
  t.match(page, /\(environment\): STRIPE_SECRET_KEY/);
  t.notMatch(page, /name="secretKey"/, 'no field for a key the environment sets');
  t.notMatch(page, /id="gateway-paypal"/, 'no PayPal field left to change (the environment and the configuration file set them all)');
});

t.test('two instances on one database: credentials set on one are used by the other', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const instance = () => buildPayments(t, {}, url);
  const first = await instance();
  const two = await instance();
  await newUser(first, 'steve');
  const set = await call(first, '/api/admin/payments/gateways/stripe/settings', {
    method: 'PATCH',
    body: { secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET },
  });
  t.equal(set.statusCode, 200, set.body);
  const end = Date.now() + 15000;
  while (!(await call(two, '/api/admin/payments/gateways/stripe/settings')).json().data.secretKey.set) {
    if (Date.now() > end) throw new Error('the other instance never read the change');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  stripeSession('cs_two');
  const paid = await call(two, '/api/payments/checkout', { body: checkout('stripe') });
  t.equal(paid.statusCode, 200, paid.body);
  t.equal(paid.json().data.checkoutURL, 'https://checkout.stripe.com/c/pay/cs_two');
});
