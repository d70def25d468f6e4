/**
 * A dispute's evidence: gathered from what the store holds (the commands handed to the game server
 * and acknowledged, the account's sign-ins and addresses) and sent to Stripe's dispute API exactly
 * once, a refused send undone so staff can click again.
 */
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import t from 'tap';
import { created, makeCategory, makeProduct, newUser, read } from '../../../test/fixtures.ts';
import { build, call } from '../../../test/helper.ts';
import { authRef } from '../../auth/contract.ts';
import { disputeCreated, mockStripeSession, offline, PAYPAL_API, PAYPAL_ENV, sessionCompleted, STRIPE_ENV, stripeWebhook } from './fixtures.ts';

offline(t);

const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };

async function shop(t: Parameters<typeof build>[0]): Promise<{ app: FastifyInstance; paymentID: string; token: string }> {
  const app = await build(t, {
    features: ['users', 'auth', 'credits', 'store', 'donations', 'payments', 'delivery'],
    env: { ...STRIPE_ENV, ...PAYPAL_ENV },
    config: { plugins: { payments: { paypalApiBase: PAYPAL_API } } },
  });
  const steve = await newUser(app, 'steve', { email: 'steve@example.com', creationIP: '198.51.100.4' });
  await app.services.get(authRef).createSession(steve.id, { ip: '203.0.113.9', useragent: 'Firefox/140' });
  const id = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Items' }), name: 'Diamonds', price: '5.00' });
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Survival' }, 'json');
  await created(app, `/api/admin/store/products/${id}/commands`, { serverID: server.id, trigger: 'purchase', command: 'give {username} diamond' }, 'json');
  mockStripeSession('cs_buy');
  const bought = await call(app, '/api/payments/purchase', {
    body: { gateway: 'stripe', userID: String(steve.id), lines: [{ productID: String(id) }], ...URLS },
  });
  const { paymentID } = bought.json().data;
  await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_buy', 500));
  const [row] = (await call(app, '/api/delivery/claim', { body: { token: server.token }, as: 'urlencoded' })).json().commands;
  await call(app, '/api/delivery/ack', { body: { token: server.token, ids: [row.id], result: 'done' }, as: 'urlencoded' });
  return { app, paymentID, token: server.token };
}

t.test("a Stripe dispute's evidence is gathered, and sent once on staff's click", async (t) => {
  const { app, paymentID } = await shop(t);
  t.equal((await call(app, `/api/admin/payments/disputes/${paymentID}/evidence`)).json().error, 'DISPUTE_NOT_FOUND', 'no dispute yet');
  const opened = disputeCreated('evt_dispute', 'cs_buy', 500);
  Object.assign(opened.data.object, { reason: 'product_not_received', currency: 'usd' });
  await stripeWebhook(app, opened);

  const gathered = await read(app, `/api/admin/payments/disputes/${paymentID}/evidence`);
  t.match(gathered, {
    dispute: { paymentID, disputeRef: 'dp_cs_buy', status: 'open', evidenceDate: null },
    submittable: true,
    evidence: {
      customerName: 'steve',
      customerEmail: 'steve@example.com',
      productDescription: /1 × Diamonds/,
      accessActivityLog: /created .* from 198\.51\.100\.4[\s\S]*Signed in .* from 203\.0\.113\.9 \(Firefox\/140\)/,
      deliveryLog: /queued for server \d+: give steve diamond \(purchase\) — done, acknowledged \d{4}-/,
    },
  });

  await t.test('a send Stripe refuses is undone: the click can be made again', async (t) => {
    nock('https://api.stripe.com')
      .post('/v1/disputes/dp_cs_buy')
      .reply(400, { error: { type: 'invalid_request_error', message: 'no' } });
    const refused = await call(app, `/api/admin/payments/disputes/${paymentID}/evidence`, { method: 'POST' });
    t.equal(refused.statusCode, 502);
    t.equal(refused.json().error, 'GATEWAY_ERROR');
    t.match(await read(app, `/api/admin/payments/disputes/${paymentID}/evidence`), { dispute: { evidenceDate: null } });
  });

  let sent: Record<string, string> = {};
  nock('https://api.stripe.com')
    .matchHeader('idempotency-key', `evidence-${paymentID}`)
    .post('/v1/disputes/dp_cs_buy', (body: Record<string, string>) => {
      sent = body;
      return true;
    })
    .reply(200, { id: 'dp_cs_buy', object: 'dispute', status: 'under_review' });
  const res = await call(app, `/api/admin/payments/disputes/${paymentID}/evidence`, { method: 'POST' });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), { paymentID, evidenceDate: /^\d{4}-/ });
  t.match(sent, {
    submit: 'true',
    'evidence[customer_email_address]': 'steve@example.com',
    'evidence[access_activity_log]': /203\.0\.113\.9/,
    'evidence[uncategorized_text]': /give steve diamond/,
  });

  const again = await call(app, `/api/admin/payments/disputes/${paymentID}/evidence`, { method: 'POST' });
  t.equal(again.statusCode, 409, 'a second click sends nothing (no Stripe call is mocked for it)');
  t.equal(again.json().error, 'EVIDENCE_ALREADY_SUBMITTED');
  t.match(await read(app, '/api/admin/audit?action=payments.dispute.evidence'), [{ action: 'payments.dispute.evidence' }]);
  t.equal((await call(app, '/api/admin/payments/disputes/nothex/evidence')).statusCode, 400, 'a malformed id is a validation error');
});
