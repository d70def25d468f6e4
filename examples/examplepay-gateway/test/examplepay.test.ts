/**
 * The gateway through the host with the payments feature, as it is installed (see the test kit's
 * pluginPackage): a checkout, a signed completion crediting the player, a forged one refused.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { usersRef } from '@community-platform/sdk';
import { pluginPackage, startTestHost, type TestHost } from '@community-platform/sdk/testing';

const SECRET = 'examplepay-test-secret';
const plugins = { examplepay: { enabled: true, package: pluginPackage(import.meta.url), payURL: 'https://pay.example.com/go' } };
const features = ['users', 'credits', 'store', 'donations', 'payments'];

const webhook = (host: TestHost, event: Record<string, unknown>, secret = SECRET) => {
  const payload = JSON.stringify(event);
  return host.app.inject({
    method: 'POST',
    url: '/api/payments/webhooks/examplepay',
    payload,
    headers: { 'content-type': 'application/json', 'x-examplepay-signature': createHmac('sha256', secret).update(payload).digest('hex') },
  });
};

test('registers its gateway: checkout, signed completion, refusal of a forged one', async (t) => {
  const host = await startTestHost(t, { features, plugins, env: { EXAMPLEPAY_SECRET: SECRET } });
  await host.app.services.get(usersRef).createAccount({ username: 'steve', email: 'steve@example.com', creationIP: '10.0.0.1' });
  const res = await host.call('/api/payments/checkout', {
    body: { username: 'steve', amount: '7.00', gateway: 'examplepay', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no' },
  });
  assert.equal(res.statusCode, 200, res.body);
  const { paymentID, checkoutURL } = res.json().data;
  assert.match(checkoutURL, new RegExp(`^https://pay\\.example\\.com/go\\?payment=${paymentID}&amount=700&currency=USD`));

  const forged = await webhook(host, { id: 'ep_evt_1', type: 'payment.succeeded', paymentID, amount: 700, currency: 'USD' }, 'wrong');
  assert.equal(forged.statusCode, 400);
  assert.equal(forged.json().error, 'INVALID_SIGNATURE');
  const paid = await webhook(host, { id: 'ep_evt_1', type: 'payment.succeeded', paymentID, amount: 700, currency: 'USD' });
  assert.deepEqual(paid.json(), { status: true, data: { result: 'completed' } }, paid.body);
  assert.equal((await host.call('/api/credits?username=steve')).json().raw_credits, 7);
});

test('without its secret the gateway stays out', async (t) => {
  const host = await startTestHost(t, { features, plugins });
  const res = await host.call('/api/payments/checkout', {
    body: { userID: '1', amount: '7.00', gateway: 'examplepay', returnURL: 'https://a.example/', cancelURL: 'https://a.example/' },
  });
  assert.equal(res.json().error, 'GATEWAY_UNAVAILABLE');
});
