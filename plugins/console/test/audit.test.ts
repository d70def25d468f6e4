/** The audit log in a real browser: a refund made in the console is listed with who made it, filtered, and the page passes axe. */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { call } from '../../../test/helper.ts';
import { hasChromium, notice, register, screenshot, signIn, skipReason, staffBrowser } from './browser.ts';

t.test('the audit log page lists a refund made in the console', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base, page, menu } = await staffBrowser(t);
  const buyerId = await register(app, 'Steve');
  const category = (await call(app, '/api/admin/store/categories', { body: { name: 'Ranks' } })).json();
  const product = (await call(app, '/api/admin/store/products', { body: { name: 'VIP', categoryID: category.id, price: '5.00' } })).json();
  await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '20.00' } });
  t.equal((await call(app, '/api/store/buy', { body: { userID: String(buyerId), products: [product.id] } })).statusCode, 200);
  const orderId = (await call(app, `/api/users/${buyerId}/orders`)).json()[0].id;

  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
  await page.goto(`${base}/console/orders/${orderId}`);
  await page.getByRole('button', { name: 'Refund order' }).click();
  await notice(page, /refunded/);

  await menu.getByRole('link', { name: 'Audit log' }).click();
  await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
  const table = page.getByRole('table', { name: 'Changes by staff' });
  const refund = table.getByRole('row').filter({ hasText: 'store.order.refund' });
  t.match(
    await refund.textContent(),
    new RegExp(`Alice.*store\\.order\\.refund.*order ${orderId}.*Refunded order ${orderId} of Steve \\(5\\.00\\).*status: completed → refunded`),
  );
  t.ok(await table.getByRole('link', { name: 'Steve' }).first().isVisible(), 'a player is named, linked to their page');
  t.same(await axeViolations(page), [], 'the audit page passes axe');
  await screenshot(page, 'audit-log');

  await page.getByLabel('Who').fill('Alice');
  await page.getByLabel('Action').fill('store.');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/actor=Alice/);
  const actions = await table.locator('tbody tr td:nth-child(3)').allTextContents();
  t.same(
    actions.map((a) => a.trim()),
    ['store.order.refund'],
    "only Alice's store changes",
  );
  t.equal(await page.getByLabel('Who').inputValue(), 'Alice', 'the filter stays in its form');

  await t.test("the log is admins' only", async (t) => {
    await page.context().clearCookies();
    await signIn(page, base, 'Bob');
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    t.equal(await menu.getByRole('link', { name: 'Audit log' }).count(), 0, "not in a support helper's menu");
    const res = await page.goto(`${base}/console/audit`);
    t.equal(res?.status(), 403);
  });
});
