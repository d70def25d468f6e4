/**
 * The owner's tax in Chromium: a player from a country with VAT in the rate table chooses it at the
 * basket, sees the tax line before going on to PayPal (asked the price and its tax), and finds it
 * again on the order's page once PayPal's verified webhook completed the payment.
 */
import nock from 'nock';
import t from 'tap';
import { axeViolations, browse, hasChromium, PASSWORD, register, serve, skipReason } from '../../../test/browser.ts';
import { makeCategory, makeProduct } from '../../../test/fixtures.ts';
import { GATEWAY_ENV, mockPayPalToken, mockPayPalVerify, offline, PAYPAL_API, paypalWebhook } from '../../../test/gateways.ts';
import { call } from '../../../test/helper.ts';

offline(t, true);

t.test('a player from Germany sees the VAT at checkout and on the order page', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base } = await serve(t, { plugins: { payments: { paypalApiBase: PAYPAL_API } } }, GATEWAY_ENV);
  const categoryID = await makeCategory(app, { name: 'Ranks' });
  await makeProduct(app, { categoryID, name: 'VIP', price: '5.00' });
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { taxMode: 'exclusive', sellerTaxNumber: 'DE123456789' }, as: 'json' });
  await call(app, '/api/admin/payments/tax-rates', { method: 'PUT', body: { country: 'DE', rate: '19' }, as: 'json' });
  await register(app, 'Steve');

  const page = await (await browse(t)).newPage();
  await page.route('https://www.sandbox.paypal.com/**', (route) => route.fulfill({ contentType: 'text/html', body: '<title>PayPal</title><h1>Pay here</h1>' }));
  await page.goto(`${base}/login`);
  await page.getByLabel('Username').fill('Steve');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'My account', level: 1 }).waitFor();
  await page.goto(`${base}/`);
  await page.getByRole('link', { name: 'Ranks' }).click();
  await page.getByRole('link', { name: /^VIP/ }).click();
  await page.getByRole('button', { name: 'Add to basket' }).click();
  await page.getByRole('status').filter({ hasText: 'in your basket' }).waitFor();

  await page.goto(`${base}/basket`);
  await page.getByRole('button', { name: 'Pay $5.00 with PayPal' }).click();
  t.match(await page.locator('main').textContent(), /billingCountry is required/, 'without a country the tax cannot be known');
  t.same(await axeViolations(page), [], 'the basket with its refused country passes axe');

  let order: any;
  mockPayPalToken();
  nock(PAYPAL_API)
    .post('/v2/checkout/orders', (body) => {
      order = body;
      return true;
    })
    .reply(201, { id: 'ORDER-1', links: [{ rel: 'payer-action', href: 'https://www.sandbox.paypal.com/checkoutnow?token=ORDER-1' }] });
  await page.getByLabel('Your country').fill('DE');
  await page.getByRole('button', { name: 'Pay $5.00 with PayPal' }).click();
  await page.getByRole('heading', { name: 'On to PayPal' }).waitFor();
  t.match(await page.locator('main').textContent(), /Tax DE\s*\$0\.95, added: \$5\.95 to pay/, 'the tax line at checkout');
  t.same(await axeViolations(page), [], 'the page before PayPal passes axe');
  t.match(order.purchase_units[0].amount, { value: '5.95', breakdown: { tax_total: { value: '0.95' } } }, 'PayPal is asked the price and its tax');

  await page.getByRole('link', { name: 'Continue to PayPal' }).click();
  await page.getByRole('heading', { name: 'Pay here' }).waitFor();
  const paymentID = order.purchase_units[0].custom_id as string;
  mockPayPalVerify('SUCCESS');
  const hook = await paypalWebhook(app, {
    id: 'WH-1',
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: {
      id: 'CAP-1',
      status: 'COMPLETED',
      custom_id: paymentID,
      amount: { currency_code: 'USD', value: '5.95' },
      supplementary_data: { related_ids: { order_id: 'ORDER-1' } },
    },
  });
  t.equal(hook.json().data?.result, 'completed', hook.body);

  const orderID = (await call(app, `/api/payments/${paymentID}`)).json().orderID as string;
  await page.goto(`${base}/account/orders/${orderID}`);
  const shown = await page.locator('main').textContent();
  t.match(shown, /Tax DE\s*\$0\.95, added at checkout: \$5\.95 paid/, 'the tax line on the order page');
  t.match(shown, /DE123456789/, "with the seller's tax number");
  t.same(await axeViolations(page), [], 'the order page passes axe');
});
