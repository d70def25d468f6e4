/**
 * The owner's first day in Chromium (issue 49): from an install with nothing set, the owner sets the
 * mail server, switches test mode on and makes a category and a product, all in the console; a guest
 * then buys through the test gateway with an email, and the receipt reaches the mail server set in
 * the console. No configuration file and no API call set anything up; the owner plays the guest in
 * their own browser, as the test checkout is staff's to pay or fail.
 */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { call } from '../../../test/helper.ts';
import { TestSmtp } from '../../../test/smtp.ts';
import { hasChromium, notice, signIn, skipReason, staffBrowser } from './browser.ts';

t.test(
  'an owner sets up mail, test mode and a product in the console; a guest buys and gets the receipt',
  { skip: hasChromium ? false : skipReason },
  async (t) => {
    const smtp = await new TestSmtp().start(t);
    const { app, base, page, menu } = await staffBrowser(t);
    await signIn(page, base, 'Alice');
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

    await menu.getByRole('link', { name: 'Email' }).click();
    await page.getByRole('heading', { name: 'Email', level: 1 }).waitFor();
    await page.getByLabel('SMTP server', { exact: true }).fill('127.0.0.1');
    await page.getByLabel('Port', { exact: true }).fill(String(smtp.port));
    await page.getByLabel('Sender', { exact: true }).fill('Store <store@example.org>');
    await page.getByRole('button', { name: 'Save SMTP settings' }).click();
    await notice(page, /SMTP settings saved/);

    await menu.getByRole('link', { name: 'Site settings' }).click();
    await page.locator('#site-settings').getByLabel('Test mode').check();
    await page.locator('#site-settings').getByRole('button', { name: 'Save settings' }).click();
    await notice(page, /Site settings saved/);

    await menu.getByRole('link', { name: 'Catalogue' }).click();
    await page.getByRole('heading', { name: 'Catalogue', level: 1 }).waitFor();
    await page.locator('#new-category').getByLabel('Name').fill('Ranks');
    await page.locator('#new-category').getByRole('button', { name: 'Create category' }).click();
    await notice(page, /Category Ranks created/);
    const product = page.locator('#new-product');
    await product.getByLabel('Name').fill('VIP');
    await product.getByLabel('Category').selectOption({ label: 'Ranks' });
    await page.locator('#new-product-price').fill('5.00');
    await product.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('heading', { name: 'VIP', level: 1 }).waitFor();

    // The owner tries the store as a guest would, in the same browser: the test checkout is staff's to pay or fail.
    await page.goto(`${base}/`);
    await page.getByRole('link', { name: 'Ranks' }).first().click();
    await page.getByRole('link', { name: /^VIP/ }).click();
    await page.getByRole('button', { name: 'Add to basket' }).click();
    await page.getByRole('status').filter({ hasText: 'in your basket' }).waitFor();
    await page.getByLabel('In-game name').fill('Jeb_');
    await page.getByLabel(/^Email/).fill('jeb@example.org');
    await page.getByRole('button', { name: 'Pay $5.00 with Test payment (test mode)' }).click();
    await page.getByRole('heading', { name: 'Test checkout', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Pay (test)' }).click();
    await page.locator('#payment-status').waitFor();
    t.match(await page.locator('main').textContent(), /Test order: no money was paid\./, "the guest's page says test");
    t.same(await axeViolations(page), [], "the guest's payment page passes axe");

    const receipt = await smtp.waitFor((m) => m.to[0] === 'jeb@example.org');
    t.match(receipt.text, /VIP/, 'the receipt names what was bought');
    t.match(receipt.text, /5\.00/, 'and its price');
    const [order] = (await call(app, '/api/admin/store/orders')).json();
    t.match(order, { test: true }, 'the order is a test order');
  },
);
