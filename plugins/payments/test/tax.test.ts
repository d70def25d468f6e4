/**
 * Tax through Stripe Tax: off, a checkout asks nothing and records nothing; on, the session asks
 * Stripe to compute it (with the billing address collected), the completion records the tax Stripe
 * computed and the buyer's country, and the report and its OSS CSV sum it per country.
 */
import t from 'tap';
import { newUser, read, rowCount } from '../../../test/fixtures.ts';
import { call } from '../../../test/helper.ts';
import { balanceOf, buildPayments, mockStripeSession, offline, sessionCompleted, stripeWebhook, taxedSession } from './fixtures.ts';

offline(t);

const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/shop' };

async function checkout(app: Parameters<typeof call>[0], sessionId: string): Promise<{ paymentID: string; asked: URLSearchParams }> {
  let asked = new URLSearchParams();
  mockStripeSession(sessionId, (body) => {
    asked = new URLSearchParams(body);
  });
  const res = await call(app, '/api/payments/checkout', { body: { gateway: 'stripe', username: 'hans', amount: '10.00', ...URLS } });
  if (res.statusCode !== 200) throw new Error(res.body);
  return { paymentID: res.json().data.paymentID, asked };
}

t.test('tax off: the checkout asks Stripe for no tax and nothing is recorded', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'hans');
  const { paymentID, asked } = await checkout(app, 'cs_off');
  t.equal(asked.get('automatic_tax[enabled]'), null);
  t.equal(asked.get('line_items[0][price_data][tax_behavior]'), null);
  t.equal((await stripeWebhook(app, sessionCompleted('evt_off', paymentID, 'cs_off', 1000))).json().data.result, 'completed');
  t.equal(await rowCount(app, 'payments_taxes'), 0);
});

t.test('tax added at checkout: Stripe computes it, the completion records it with the country, and the report sums it', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'hans');
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { currency: 'EUR', taxMode: 'exclusive', sellerTaxNumber: 'DE123456789' }, as: 'json' });
  const { paymentID, asked } = await checkout(app, 'cs_ex');
  t.equal(asked.get('automatic_tax[enabled]'), 'true');
  t.equal(asked.get('billing_address_collection'), 'required', "the buyer's country is collected");
  t.equal(asked.get('line_items[0][price_data][tax_behavior]'), 'exclusive');

  const wrong = taxedSession('evt_wrong', paymentID, 'cs_ex', 1000, 190, false, 'DE');
  wrong.data.object.amount_total = 1300;
  t.equal((await stripeWebhook(app, wrong)).json().error, 'AMOUNT_MISMATCH', 'a total that is not the price and its tax is refused');

  const paid = await stripeWebhook(app, taxedSession('evt_ex', paymentID, 'cs_ex', 1000, 190, false, 'DE'));
  t.strictSame(paid.json(), { status: true, data: { result: 'completed' } }, 'the price plus its tax completes the payment');
  t.equal(await balanceOf(app, 'hans'), 10, 'the credits are the price before tax');

  const second = await checkout(app, 'cs_in');
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { taxMode: 'inclusive' }, as: 'json' });
  await stripeWebhook(app, taxedSession('evt_in', second.paymentID, 'cs_in', 1000, 160, true, 'FR'));

  const day = new Date().toISOString().slice(0, 10);
  t.strictSame(await read(app, `/api/admin/payments/tax?from=${day}&to=${day}`), [
    { country: 'DE', currency: 'EUR', payments: '1', tax: '1.90' },
    { country: 'FR', currency: 'EUR', payments: '1', tax: '1.60' },
  ]);
  const csv = await call(app, `/api/admin/payments/tax?from=${day}&to=${day}&format=csv`);
  t.match(csv.headers['content-type'], /^text\/csv/);
  t.equal(csv.body, 'country,currency,payments,tax\nDE,EUR,1,1.90\nFR,EUR,1,1.60\n');
  t.strictSame(await read(app, '/api/admin/payments/tax?from=2000-01-01&to=2000-01-31'), [], 'another period has none');
  const bad = await call(app, `/api/admin/payments/tax?from=${day}&to=2000-01-01`);
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().error, 'VALIDATION_ERROR');
  t.equal((await call(app, '/api/admin/payments/tax?from=2026-13-45&to=2026-13-46')).statusCode, 400);
});
