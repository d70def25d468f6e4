/**
 * Payments → Tax in a real browser: the tax collected per country over a period and its OSS CSV,
 * split by state where a state's rate was charged (with a CSV by state),
 * and the rate table set and deleted through its form (a bad rate is refused beside its field),
 * audited under the staff member; the page passes axe.
 */
import t from 'tap';
import { now } from '../../../core/format.ts';
import { axeViolations } from '../../../test/browser.ts';
import { STRIPE_ENV, mockStripeSession, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { call } from '../../../test/helper.ts';
import { PaymentsTax } from '../../payments/entities.ts';
import { hasChromium, notice, register, signIn, skipReason, staffBrowser } from './browser.ts';

const URLS = { returnURL: 'https://play.example.com/', cancelURL: 'https://play.example.com/' };

t.test('staff read the tax report, download its CSV and keep the rate table', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base, page } = await staffBrowser(t, STRIPE_ENV);
  await register(app, 'Steve');
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { currency: 'EUR', taxMode: 'exclusive' }, as: 'json' });
  mockStripeSession('cs_tax');
  const paymentID = (await call(app, '/api/payments/checkout', { body: { gateway: 'stripe', username: 'Steve', amount: '10.00', ...URLS } })).json().data
    .paymentID;
  const paid = sessionCompleted('evt_tax', paymentID, 'cs_tax', 1190, 'eur');
  Object.assign(paid.data.object, {
    amount_subtotal: 1000,
    automatic_tax: { enabled: true, status: 'complete' },
    total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 190 },
    customer_details: { address: { country: 'DE' } },
  });
  t.equal((await stripeWebhook(app, paid)).json().data.result, 'completed');

  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
  await page.goto(`${base}/console/payments`);
  await page.getByRole('link', { name: 'Tax collected and tax rates' }).click();
  const day = new Date().toISOString().slice(0, 10);
  await page.getByRole('textbox', { name: 'From' }).fill(day);
  await page.getByRole('textbox', { name: 'To', exact: true }).fill(day);
  await page.getByRole('button', { name: 'Show' }).click();
  t.match(await page.getByRole('table', { name: `Tax collected from ${day} to ${day}` }).textContent(), /DE\s*EUR\s*1\s*1\.90/);
  t.same(await axeViolations(page), [], 'the tax page passes axe');

  /** The file behind the page's link named `name`. */
  const download = async (name: string) => page.request.get(`${base}${await page.getByRole('link', { name }).getAttribute('href')}`);
  const csv = await download('Download the OSS CSV');
  t.equal(csv.headers()['content-disposition'], `attachment; filename="tax-${day}-${day}.csv"`);
  t.equal(await csv.text(), 'country,currency,payments,tax\nDE,EUR,1,1.90\n');
  t.equal(await page.getByRole('link', { name: 'Download the CSV by state or province' }).count(), 0, 'no state charged: no state column, no CSV by state');

  // A state's tax, as a checkout at a gateway charging the rate table records it (plugins/payments/test/tax-rates.test.ts).
  const taxed = { paymentId: 'p'.repeat(32), country: 'US', region: 'CA', amount: 73, currency: 'EUR', inclusive: false, ipCountry: 'US', rate: 7250 };
  await PaymentsTax.insert(app.db, { ...taxed, creationDate: now() });
  await page.goto(`${base}/console/payments/tax?from=${day}&to=${day}`);
  const byState = await page.getByRole('table', { name: `Tax collected from ${day} to ${day}` }).textContent();
  t.match(byState, /Country\s*State or province\s*Currency/);
  t.match(byState, /DE\s*—\s*EUR\s*1\s*1\.90\s*US\s*CA\s*EUR\s*1\s*0\.73/, "each state on a line of its own, the country's rate on one with none");
  t.same(await axeViolations(page), [], 'the report by state passes axe');
  const byRegion = await download('Download the CSV by state or province');
  t.equal(byRegion.headers()['content-disposition'], `attachment; filename="tax-${day}-${day}-by-region.csv"`);
  t.equal(await byRegion.text(), 'country,region,currency,payments,tax\nDE,,EUR,1,1.90\nUS,CA,EUR,1,0.73\n');

  await page.locator('#tax-rate-country').fill('DE');
  await page.locator('#tax-rate-rate').fill('75');
  await page.getByRole('button', { name: 'Save rate' }).click();
  t.match(await page.locator('#tax-rate-rate-error').textContent(), /rate must be a percentage from 0 to 50/, 'an absurd rate is refused beside its field');
  t.same(await axeViolations(page), [], 'the refused form passes axe');

  await page.locator('#tax-rate-rate').fill('19');
  await page.getByRole('button', { name: 'Save rate' }).click();
  await notice(page, /Rate of DE set to 19 %/);
  const rates = page.getByRole('table', { name: 'Tax rates (gateways other than Stripe)' });
  t.match(await rates.textContent(), /DE\s*19 %/);
  await rates.getByRole('button', { name: 'Delete the rate of DE' }).click();
  await notice(page, /Rate of DE deleted/);
  t.match(await page.getByRole('table', { name: 'Tax rates (gateways other than Stripe)' }).textContent(), /No rate/);
  const audit = (await call(app, '/api/admin/audit?action=payments.tax-rate.')).json();
  t.match(audit, [
    { actor: 'Alice', action: 'payments.tax-rate.delete' },
    { actor: 'Alice', action: 'payments.tax-rate.create' },
  ]);
});
