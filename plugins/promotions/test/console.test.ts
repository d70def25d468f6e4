/**
 * The console's Promotions section in Chromium: a coupon, a sale and a gift card created, their
 * uses and revenue shown after a buy, paused from their edit forms; each checked through the API,
 * axe-core on every page.
 */
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { axeViolations, browse, consoleSignIn, grant, hasChromium, notice, register, role, serve, skipReason } from '../../../test/browser.ts';
import { buy, makeCategory, makeProduct, makeUser, read } from './fixtures.ts';

const skip = hasChromium ? false : skipReason;

async function accessible(t: Test, page: Page, what: string): Promise<void> {
  t.same(await axeViolations(page), [], `${what}: no serious or critical axe-core violation`);
}

t.test('coupons, sales and gift cards made, watched and paused in the console', { skip }, async (t) => {
  const { app, base } = await serve(t);
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const items = await makeCategory(app, { name: 'Items' });
  const sword = await makeProduct(app, { categoryID: items, name: 'Sword', price: '4.00' });
  const page = await (await browse(t)).newPage();
  page.on('dialog', (dialog) => {
    void dialog.accept();
  });
  await consoleSignIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Promotions' }).click();
  await page.getByRole('heading', { name: 'Promotions', level: 1 }).waitFor();
  await accessible(t, page, 'promotions');

  await page.getByRole('link', { name: 'Coupons' }).first().click();
  await page.locator('#new-coupon-code').fill('Spring');
  await page.locator('#new-coupon-kind').selectOption('fixed');
  await page.locator('#new-coupon-value').fill('1.50');
  await page.locator('#new-coupon-maxUses').fill('5');
  await page.locator('#new-coupon-isActive').check();
  await page.getByRole('button', { name: 'Create coupon' }).click();
  await notice(page, /Coupon Spring created/);
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ code: 'Spring', kind: 'fixed', value: '1.50', maxUses: '5', isActive: '1' }]);

  const steve = await makeUser(app, 'steve', 1000);
  t.equal((await buy(app, steve, [sword], { coupon: 'spring' })).statusCode, 200);
  await page.reload();
  const row = await page.getByRole('row', { name: /Spring/ }).textContent();
  t.match(row, /1 of 5/, 'uses taken of the limit');
  t.match(row, /1\.50/, 'what it took off');
  t.match(row, /2\.50/, 'the revenue of its orders');
  await accessible(t, page, 'coupons');

  await page.getByRole('link', { name: 'Spring' }).click();
  await page.locator('#edit-coupon-isActive').uncheck();
  await page.getByRole('button', { name: 'Save coupon' }).click();
  await notice(page, /Coupon Spring saved/);
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ isActive: '0', value: '1.50' }], 'paused, nothing else changed');

  await page.getByRole('link', { name: 'Sales' }).first().click();
  await page.locator('#new-sale-name').fill('Weekend');
  await page.locator('#new-sale-percent').fill('20');
  await page.locator('#new-sale-startDate').fill('2020-01-01 00:00');
  await page.locator('#new-sale-endDate').fill('2999-01-01 00:00');
  await page.locator('#new-sale-isActive').check();
  await page.getByRole('button', { name: 'Create sale' }).click();
  await notice(page, /Sale Weekend created/);
  t.match((await read(app, '/api/store/listing')).categories[0].products[0], { total: 3.2, discountPercent: 20 }, 'the sale is on the listing');
  await page.locator('#new-sale-name').fill('Broken');
  await page.locator('#new-sale-percent').fill('20');
  await page.locator('#new-sale-startDate').fill('soon');
  await page.locator('#new-sale-endDate').fill('2999-01-01 00:00');
  await page.getByRole('button', { name: 'Create sale' }).click();
  await page.locator('#new-sale-startDate-error').waitFor();
  await accessible(t, page, 'sales with an error');

  await page.getByRole('link', { name: 'Gift cards' }).first().click();
  await page.locator('#new-gift-card-amount').fill('25.00');
  await page.locator('#new-gift-card-code').fill('PRIZE-1');
  await page.locator('#new-gift-card-note').fill('build contest');
  await page.getByRole('button', { name: 'Create gift card' }).click();
  await notice(page, /Gift card PRIZE-1 created/);
  await accessible(t, page, 'gift cards');
  await page.getByRole('link', { name: 'PRIZE-1' }).click();
  t.equal(await page.locator('#edit-gift-card-amount').count(), 0, 'its amount moves only through its ledger');
  await page.locator('#edit-gift-card-isActive').uncheck();
  await page.getByRole('button', { name: 'Save gift card' }).click();
  await notice(page, /Gift card PRIZE-1 saved/);
  t.match(await read(app, '/api/admin/promotions/gift-cards'), [{ code: 'PRIZE-1', balance: '25.00', isActive: '0', note: 'build contest' }]);
});
