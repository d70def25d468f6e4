/**
 * Promotions in the storefront, in Chromium: a sale shown on the listing and charged; a coupon and
 * a gift card applied at the basket and paid from the balance; the same paid by a guest at Stripe
 * (nock answers Stripe, its webhook signed as Stripe signs); the community goal on the home page.
 */
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { creditsRef } from '../../credits/contract.ts';
import { axeViolations, browse, hasChromium, PASSWORD, register, serve, skipReason } from '../../../test/browser.ts';
import { GATEWAY_ENV, mockStripeSession, offline, PAYPAL_API, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { call } from '../../../test/helper.ts';
import { coupon, created, giftCard, makeCategory, makeProduct, read } from './fixtures.ts';

const skip = hasChromium ? false : skipReason;

offline(t, true);

async function shop(t: Test) {
  const { app, base } = await serve(t, { plugins: { payments: { paypalApiBase: PAYPAL_API } } }, GATEWAY_ENV);
  const ranks = await makeCategory(app, { name: 'Ranks' });
  await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '10.00' });
  await created(
    app,
    '/api/admin/promotions/sales',
    { name: 'Rank week', percent: 25, categoryIDs: [ranks], startDate: '2020-01-01 00:00', endDate: '2999-01-01 00:00' },
    'json',
  );
  return { app, base };
}

/** VIP from the listing into the basket; the listing shows the sale price beside the list price. */
async function addVip(t: Test, page: Page, base: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.getByRole('link', { name: 'Ranks' }).click();
  const card = await page.locator('main').textContent();
  t.match(card, /\$7\.50/, 'the listing shows the sale price');
  t.match(card, /\$10\.00/, 'beside the list price');
  await page.getByRole('link', { name: /^VIP/ }).click();
  await page.getByRole('button', { name: 'Add to basket' }).click();
  await page.getByRole('status').filter({ hasText: 'in your basket' }).waitFor();
}

async function applyCodes(page: Page, couponCode: string, cardCode: string): Promise<void> {
  await page.getByLabel('Coupon code').fill(couponCode);
  await page.getByLabel('Gift card code').fill(cardCode);
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.getByRole('status').filter({ hasText: 'Your codes apply' }).waitFor();
}

t.test('a sale, a coupon and a gift card at the basket, paid from the balance', { skip }, async (t) => {
  const { app, base } = await shop(t);
  await coupon(app, { code: 'SAVE2', kind: 'fixed', value: '2.00', stacksWithSale: true });
  const card = await giftCard(app, '5.00');
  await call(app, '/api/admin/settings', { method: 'PATCH', as: 'json', body: { promotionsGoalAmount: 100 } });
  const steve = await register(app, 'Steve');
  await app.services.get(creditsRef).change(steve, 2000, { reason: 'add' });
  await created(app, '/api/admin/payments', { username: 'Steve', amount: '25.00', paymentAPI: 'stripe', paymentID: 'pi_goal', credit: '0' }, 'json');

  const context = await browse(t);
  const page = await context.newPage();
  await page.goto(`${base}/login`);
  await page.getByLabel('Username').fill('Steve');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'My account', level: 1 }).waitFor();

  await page.goto(base);
  const goal = await page.getByRole('region', { name: 'Community goal' }).textContent();
  t.match(goal, /\$25\.00 of \$100\.00 raised \(25%\)/, 'the community goal on the home page');
  t.same(await axeViolations(page), [], 'the home page with the goal');

  await addVip(t, page, base);
  await applyCodes(page, 'save2', card.code.toLowerCase());
  const basket = await page.locator('table.basket').textContent();
  t.match(basket, /Coupon SAVE2\s*−\$2\.00/);
  t.match(basket, new RegExp(`Gift card ${card.code}\\s*−\\$5\\.00`));
  t.match(basket, /To pay\s*\$0\.50/);
  t.same(await axeViolations(page), [], 'the basket with codes');
  await page.getByRole('button', { name: 'Pay $0.50 from my balance' }).click();
  await page.getByRole('status').filter({ hasText: 'is paid' }).waitFor();
  t.equal(await app.services.get(creditsRef).balance(steve), 1950, '0.50 from the balance');
  t.match(await read(app, `/api/users/${steve}/orders`), [{ coupon: 'SAVE2', subtotal: '10.00', total: '0.50' }]);
  t.match(await read(app, `/api/admin/promotions/gift-cards/${card.id}`), { balance: '0.00' });

  await addVip(t, page, base);
  await page.getByLabel('Coupon code').fill('NOSUCH');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.getByRole('alert').filter({ hasText: 'This code does not apply' }).waitFor();
  t.same(await axeViolations(page), [], 'the basket with a refused code');
});

t.test('a guest pays a sale price less a coupon and a gift card at Stripe', { skip }, async (t) => {
  const { app, base } = await shop(t);
  await coupon(app, { code: 'HALF', kind: 'percent', value: 50, stacksWithSale: true, maxUses: 1 });
  const card = await giftCard(app, '1.00');
  const context = await browse(t);
  const page = await context.newPage();
  await page.route('https://checkout.stripe.com/**', (route) => route.fulfill({ contentType: 'text/html', body: '<title>Gateway</title><h1>Pay here</h1>' }));

  await addVip(t, page, base);
  await applyCodes(page, 'HALF', card.code);
  t.match(await page.locator('table.basket').textContent(), /To pay\s*\$2\.75/, '7.50, half off, 1.00 from the card');
  let asked = '';
  mockStripeSession('cs_promo', (body) => {
    asked = body;
  });
  await page.getByLabel('In-game name').fill('Jeb_');
  await page.getByRole('button', { name: 'Pay $2.75 with Stripe' }).click();
  await page.getByRole('heading', { name: 'Pay here' }).waitFor();
  t.match(asked, /unit_amount%5D=275/, 'Stripe is asked for 2.75');
  const paymentId = /client_reference_id=([0-9a-f]{32})/.exec(asked)?.[1] ?? /paymentID%5D=([0-9a-f]{32})/.exec(asked)![1]!;
  const hook = await stripeWebhook(app, sessionCompleted('evt_promo', paymentId, 'cs_promo', 275));
  t.match(hook.json(), { data: { result: 'completed' } }, hook.body);
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '1', discountGiven: '3.75', revenue: '3.75' }]);
  t.match(await read(app, `/api/admin/promotions/gift-cards/${card.id}`), { balance: '0.00' });
  await page.goto(`${base}/basket`);
  t.match(await page.locator('main').textContent(), /Your basket is empty/, 'basket and codes are cleared');
});
