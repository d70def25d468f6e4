/**
 * A guest's receipt in Chromium (issue 49, item 5): the link in the mail opens the order in a
 * browser that never saw the checkout, on a phone and on a desktop; axe-core on the page.
 */
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import t from 'tap';
import { axeViolations, browse, hasChromium, skipReason } from '../../../test/browser.ts';
import { makeCategory, makeProduct } from '../../../test/fixtures.ts';
import { mockStripeSession, STRIPE_ENV, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { apiKey, build, call } from '../../../test/helper.ts';
import { TestSmtp } from '../../../test/smtp.ts';

const skip = hasChromium ? false : skipReason;
const SITE = 'http://shop.example.org';

t.test("a guest's mailed link shows the order in any browser", { skip }, async (t) => {
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
  t.teardown(() => {
    nock.cleanAll();
    nock.enableNetConnect();
  });
  const smtp = await new TestSmtp().start(t);
  const app = await build(t, { config: { plugins: { email: smtp.config(), storefront: { publicUrl: SITE } } }, env: STRIPE_ENV });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const categoryID = await makeCategory(app, { name: 'Items', slug: 'items' });
  const product = await makeProduct(app, { categoryID, name: 'Diamonds', price: '5.00' });

  mockStripeSession('cs_guest');
  const started = await call(app, '/api/payments/purchase', {
    body: {
      gateway: 'stripe',
      guestName: 'Herobrine',
      guestEmail: 'hero@example.org',
      lines: [{ productID: product, quantity: 2 }],
      returnURL: `${SITE}/ok`,
      cancelURL: `${SITE}/no`,
    },
    as: 'json',
    key: await apiKey(app, 'web-shop'),
  });
  t.equal(started.statusCode, 200, started.body);
  t.equal((await stripeWebhook(app, sessionCompleted('evt_guest', started.json().data.paymentID, 'cs_guest', 1000))).statusCode, 200);
  const receipt = await smtp.waitFor((m) => /order/i.test(m.subject));
  const path = new RegExp(`${SITE}(/order/[0-9a-f]{64})`).exec(receipt.text)![1]!;

  for (const viewport of [
    { width: 390, height: 844 },
    { width: 1280, height: 860 },
  ]) {
    const context = await browse(t, { viewport });
    const page = await context.newPage();
    await page.goto(`${base}${path}`);
    await page.getByRole('heading', { level: 1, name: /Order #\d+/ }).waitFor();
    t.match(await page.locator('main').textContent(), /2 × Diamonds/, `${viewport.width}: the order`);
    t.match(await page.locator('main').textContent(), /Herobrine/, 'for the name typed');
    t.same(await axeViolations(page), [], `${viewport.width}px: no serious or critical axe-core violation`);
    await context.close();
  }
});
