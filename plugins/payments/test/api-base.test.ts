import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { call } from '../../../test/helper.ts';
import { newUser, read } from '../../../test/fixtures.ts';
import { buildPayments, offline } from './fixtures.ts';

// Only the stand-in on 127.0.0.1 answers: a call that still went to Stripe's or PayPal's own address fails.
offline(t, true);

interface Seen {
  method: string;
  path: string;
  authorization: string;
  body: string;
}

/** A local stand-in for both gateways' APIs (as stripe-mock or a PayPal sandbox would be), recording what it was asked. */
async function standIn(t: Test): Promise<{ base: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    seen.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization ?? '', body });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/v1/checkout/sessions') {
      res.end(JSON.stringify({ id: 'cs_mock_1', object: 'checkout.session', url: 'http://127.0.0.1/stripe-mock/cs_mock_1' }));
    } else if (req.url === '/v1/oauth2/token') {
      res.end(JSON.stringify({ access_token: 'sandbox-token', token_type: 'Bearer', expires_in: 32400 }));
    } else if (req.url === '/v2/checkout/orders') {
      res.statusCode = 201;
      res.end(JSON.stringify({ id: 'ORDER-9', links: [{ rel: 'payer-action', href: 'http://127.0.0.1/sandbox/ORDER-9' }] }));
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const checkout = (gateway: string) => ({
  username: 'steve',
  amount: '5.00',
  gateway,
  returnURL: 'https://play.example.com/ok',
  cancelURL: 'https://play.example.com/no',
});

t.test('stripeApiBase and paypalApiBase send every gateway call to the address configured', async (t) => {
  const { base, seen } = await standIn(t);
  const app = await buildPayments(t, undefined, { stripeApiBase: base, paypalApiBase: `${base}/` });
  await newUser(app, 'steve');

  const stripe = await call(app, '/api/payments/checkout', { body: checkout('stripe') });
  t.equal(stripe.statusCode, 200, stripe.body);
  t.equal(stripe.json().data.checkoutURL, 'http://127.0.0.1/stripe-mock/cs_mock_1', "the stand-in's checkout address is the player's");
  t.match(seen[0], { method: 'POST', path: '/v1/checkout/sessions', authorization: 'Bearer sk_test_payments', body: /unit_amount\]=500/ });

  const paypal = await call(app, '/api/payments/checkout', { body: checkout('paypal') });
  t.equal(paypal.statusCode, 200, paypal.body);
  t.equal(paypal.json().data.checkoutURL, 'http://127.0.0.1/sandbox/ORDER-9');
  t.match(
    seen.slice(1).map((s) => s.path),
    ['/v1/oauth2/token', '/v2/checkout/orders'],
    'PayPal is asked at the sandbox address, its trailing slash dropped',
  );
  t.match(await read(app, `/api/payments/${paypal.json().data.paymentID}`), { status: 'pending', gateway: 'paypal' });
});

t.test('an apiBase that is not an http(s) address stops the start with the setting named', async (t) => {
  await t.rejects(buildPayments(t, undefined, { stripeApiBase: 'api.stripe.com' }), /stripeApiBase/);
});
