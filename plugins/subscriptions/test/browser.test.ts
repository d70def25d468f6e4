/** Subscriptions in Chromium: a player subscribes on the storefront, sees it in their account and cancels; staff see it in the console. */
import t from 'tap';
import { axeViolations, browse, consoleSignIn, grant, hasChromium, PASSWORD, register, role, serve, skipReason } from '../../../test/browser.ts';
import { call } from '../../../test/helper.ts';
import { vipPlan } from './fixtures.ts';

t.test(
  'a player subscribes on the storefront, sees it in their account and cancels; staff see it in the console',
  { skip: hasChromium ? false : skipReason },
  async (t) => {
    const { app, base } = await serve(t, { plugins: { subscriptions: { sweepMs: 3_600_000 } } });
    const { productId } = await vipPlan(app);
    await register(app, 'Steve');
    await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '20' } });
    await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
    const context = await browse(t);
    const page = await context.newPage();

    await page.goto(`${base}/login`);
    await page.getByLabel('Username').fill('Steve');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/account/);
    await page.goto(`${base}/product/${productId}`);
    t.match(await page.locator('.subscribe').textContent(), /Renews every month at \$5\.00/, 'the page says it renews, at what price and how often');
    t.same(await axeViolations(page), [], 'the product page is axe-clean');
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /You subscribed to VIP/ })
      .waitFor();

    await page.goto(`${base}/account`);
    await page.getByRole('heading', { name: 'My subscriptions' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'VIP' }).first();
    t.match(await row.textContent(), /Active[\s\S]*\d{4}-\d{2}-\d{2}[\s\S]*\$5\.00/, 'the next payment date and amount');
    t.same(await axeViolations(page), [], 'the account page is axe-clean');
    await page.getByRole('button', { name: 'Cancel: VIP' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /nothing more is charged/ })
      .waitFor();
    t.match(await page.getByRole('row').filter({ hasText: 'VIP' }).first().textContent(), /Ends \d{4}-/);

    const staff = await context.newPage();
    await consoleSignIn(staff, base, 'Alice');
    await staff.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    await staff.goto(`${base}/console/subscriptions`);
    const listed = staff.getByRole('row').filter({ hasText: 'Steve' });
    t.match(await listed.textContent(), /VIP[\s\S]*Ends/, 'staff see the subscription and that it ends');
    t.same(await axeViolations(staff), [], 'the console section is axe-clean');
  },
);
