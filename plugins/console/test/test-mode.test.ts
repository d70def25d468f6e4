/**
 * Test mode in Chromium: the owner switches it on in Site settings, a guest pays a basket with the
 * test gateway, the owner pays it on the console's test checkout, the guest's page says test, the
 * console's orders mark it, and Payments → Clear test orders removes it.
 */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { created, makeCategory, makeProduct } from '../../../test/fixtures.ts';
import { call } from '../../../test/helper.ts';
import { hasChromium, notice, signIn, skipReason, staffBrowser } from './browser.ts';

t.test('the owner tries a purchase in test mode and clears it', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base, page, menu } = await staffBrowser(t);
  const vip = await makeProduct(app, { categoryID: String(await makeCategory(app, { name: 'Ranks' })), name: 'VIP', price: '5.00' });
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Survival' }, 'json');
  await created(
    app,
    `/api/admin/store/products/${vip}/commands`,
    { serverID: String(server.id), command: 'say thanks {username}', trigger: 'purchase' },
    'json',
  );

  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
  await menu.getByRole('link', { name: 'Site settings' }).click();
  await page.locator('#site-settings').getByLabel('Test mode').check();
  await page.locator('#site-settings').getByRole('button', { name: 'Save settings' }).click();
  await notice(page, /Site settings saved/);
  t.equal((await call(app, '/api/admin/settings')).json().data.testMode, true, 'on, through the API');

  await page.goto(`${base}/`);
  await page.getByRole('link', { name: 'Ranks' }).click();
  await page.getByRole('link', { name: /^VIP/ }).click();
  await page.getByRole('button', { name: 'Add to basket' }).click();
  await page.getByRole('status').filter({ hasText: 'in your basket' }).waitFor();
  await page.getByLabel('In-game name').fill('Jeb_');
  await page.getByRole('button', { name: 'Pay $5.00 with Test payment (test mode)' }).click();

  await page.getByRole('heading', { name: 'Test checkout', level: 1 }).waitFor();
  t.match(await page.locator('main').textContent(), /5\.00 USD[\s\S]*guest Jeb_/, 'the amount and the buyer');
  t.same(await axeViolations(page), [], 'the test checkout passes axe');
  await page.getByRole('button', { name: 'Pay (test)' }).click();

  await page.locator('#payment-status').waitFor();
  t.match(await page.locator('main').textContent(), /Test order: no money was paid\./, "the guest's payment page says test");
  t.same(await axeViolations(page), [], 'the payment page passes axe');

  await page.goto(`${base}/console/orders`);
  t.match(await page.getByRole('table', { name: 'Orders, newest first' }).textContent(), /payment \(test\)/, 'the console marks the order');
  await page.goto(`${base}/console/payments`);
  await page.getByRole('button', { name: 'Clear test orders' }).click();
  await notice(page, /Cleared 1 test order and 1 test payment\./);
  t.same((await call(app, '/api/admin/store/orders')).json(), [], 'no order left');
});
