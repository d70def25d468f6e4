/** The example third-party gateway (examples/examplepay-gateway) loads as a package and takes payments through the contract. */
import { createHmac } from 'node:crypto';
import t from 'tap';
import { newUser, read } from './fixtures.ts';
import { build, call } from './helper.ts';

const SECRET = 'examplepay-test-secret';
const plugins = { examplepay: { enabled: true, payURL: 'https://pay.example.com/go' } };
const features = ['users', 'credits', 'store', 'donations', 'payments'];

const webhook = (app: Awaited<ReturnType<typeof build>>, event: Record<string, unknown>, secret = SECRET) => {
  const payload = JSON.stringify(event);
  return app.inject({
    method: 'POST',
    url: '/api/payments/webhooks/examplepay',
    payload,
    headers: { 'content-type': 'application/json', 'x-examplepay-signature': createHmac('sha256', secret).update(payload).digest('hex') },
  });
};

t.test('registers its gateway: checkout, signed completion, refusal of a forged one', async (t) => {
  const app = await build(t, { features, config: { plugins }, env: { EXAMPLEPAY_SECRET: SECRET } });
  t.ok(app.features.includes('examplepay'));
  await newUser(app, 'steve');
  const res = await call(app, '/api/payments/checkout', {
    body: { username: 'steve', amount: '7.00', gateway: 'examplepay', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no' },
  });
  t.equal(res.statusCode, 200, res.body);
  const { paymentID, checkoutURL } = res.json().data;
  t.match(checkoutURL, new RegExp(`^https://pay\\.example\\.com/go\\?payment=${paymentID}&amount=700&currency=USD`));

  const forged = await webhook(app, { id: 'ep_evt_1', type: 'payment.succeeded', paymentID, amount: 700, currency: 'USD' }, 'wrong');
  t.equal(forged.statusCode, 400);
  t.equal(forged.json().error, 'INVALID_SIGNATURE');
  const paid = await webhook(app, { id: 'ep_evt_1', type: 'payment.succeeded', paymentID, amount: 700, currency: 'USD' });
  t.strictSame(paid.json(), { status: true, data: { result: 'completed' } }, paid.body);
  t.equal((await read(app, '/api/credits?username=steve')).raw_credits, 7);
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'completed', gateway: 'examplepay' });
});

t.test('without its secret it stays out, and says so once', async (t) => {
  const app = await build(t, { features, config: { plugins } });
  t.ok(app.features.includes('examplepay'), 'the feature loads');
  const res = await call(app, '/api/payments/checkout', {
    body: { userID: '1', amount: '7.00', gateway: 'examplepay', returnURL: 'https://a.example/', cancelURL: 'https://a.example/' },
  });
  t.equal(res.json().error, 'GATEWAY_UNAVAILABLE');
});
