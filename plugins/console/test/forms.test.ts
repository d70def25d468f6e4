/** Forms and layout in a real browser: every field's error at once in plain words, date pickers, and pages that fit a desktop and a phone. */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { makeCategory } from '../../../test/fixtures.ts';
import { call } from '../../../test/helper.ts';
import { browse, hasChromium, notice, register, role, signIn, skipReason, staffBrowser } from './browser.ts';

t.test('console forms and layout', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base, page, menu } = await staffBrowser(t);
  await makeCategory(app, { name: 'Ranks' });
  await page.setViewportSize({ width: 1280, height: 900 });
  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

  await t.test("every field's error shows at once, in plain words, and nothing is made", async (t) => {
    await page.goto(`${base}/console/catalogue`);
    const form = page.locator('#new-product');
    await form.getByLabel('Name').fill('x'.repeat(200));
    await page.locator('#new-product-price').fill('5.00');
    await page.locator('#new-product-stock').fill('lots');
    await page.locator('#new-product-discountExpiryDate').evaluate((input) => {
      (input as unknown as { type: string }).type = 'text';
    });
    await page.locator('#new-product-discountExpiryDate').fill('next friday');
    await form.getByRole('button', { name: 'Create product' }).click();
    await page.locator('#new-product-stock-error').waitFor();
    const errorOf = (name: string) => page.locator(`#new-product-${name}-error`).textContent();
    t.equal(await errorOf('name'), 'name must NOT have more than 128 characters', 'the name');
    t.equal(await errorOf('stock'), 'stock must be a number written in plain digits', 'the stock');
    t.equal(
      await errorOf('discountExpiryDate'),
      'discountExpiryDate: use the form 2026-12-31 23:59 (the date picker writes it so)',
      'a date in words, no pattern',
    );
    t.same((await call(app, '/api/admin/store/products')).json(), [], 'no product was made');
    t.same(await axeViolations(page), [], 'the form with its errors passes axe');
  });

  await t.test("a date picker sets the discount's end and a role's expiry", async (t) => {
    await page.goto(`${base}/console/catalogue`);
    const form = page.locator('#new-product');
    await form.getByLabel('Name').fill('VIP');
    await form.getByLabel('Category').selectOption({ label: 'Ranks' });
    await page.locator('#new-product-price').fill('5.00');
    t.equal(await page.locator('#new-product-discountExpiryDate').getAttribute('type'), 'datetime-local');
    await page.locator('#new-product-discountedPrice').fill('4.00');
    await page.locator('#new-product-discountExpiryDate').fill('2030-12-31T23:59');
    await form.getByRole('button', { name: 'Create product' }).click();
    await notice(page, /Product VIP created/);
    t.equal(await page.locator('#edit-product-discountExpiryDate').inputValue(), '2030-12-31T23:59', 'the picker shows it again');
    const [product] = (await call(app, '/api/admin/store/products')).json();
    t.equal(product.discountExpiryDate, '2030-12-31 23:59:00', 'through the API');

    const steveId = await register(app, 'Steve', `steve.with.a.very.long.address.that.goes.on.and.on.${'x'.repeat(40)}@example.org`);
    await role(app, 'VIP');
    await page.goto(`${base}/console/players/${steveId}`);
    await page.locator('#grant-role').getByLabel('Role').selectOption({ label: 'VIP' });
    await page.locator('#grant-role-expiryDate').fill('2031-01-15T12:30');
    await page.locator('#grant-role').getByRole('button', { name: 'Grant role' }).click();
    await notice(page, /holds VIP until 2031-01-15 12:30:00/);
    const [held] = (await call(app, `/api/users/${steveId}/roles`)).json();
    t.match(held, { name: 'VIP', expiryDate: '2031-01-15 12:30:00' }, 'through the API');

    type Sized = { scrollWidth: number; clientWidth: number };
    const overflowing = await page
      .locator('ul.stats .value')
      .evaluateAll((values) => values.filter((v) => (v as unknown as Sized).scrollWidth > (v as unknown as Sized).clientWidth).length);
    t.equal(overflowing, 0, 'a long email stays inside its card');
    t.same(await axeViolations(page), [], 'the player page passes axe');
  });

  await t.test("a checkbox's long label stays beside its box", async (t) => {
    const [product] = (await call(app, '/api/admin/store/products')).json();
    await page.goto(`${base}/console/catalogue/products/${product.id}`);
    const box = (await page.locator('#product-rules-preventDowngrade').boundingBox())!;
    const label = (await page.locator('label[for="product-rules-preventDowngrade"]').boundingBox())!;
    t.ok(label.y < box.y + box.height && label.x > box.x, 'on the same line, after the box');
  });

  await t.test('the menu is one column at 1280 px and one row on a phone', async (t) => {
    const links = menu.getByRole('link');
    const boxes = async () => Promise.all((await links.all()).map(async (l) => (await l.boundingBox())!));
    const wide = await boxes();
    t.ok(wide.length > 10);
    t.equal(new Set(wide.map((b) => Math.round(b.x))).size, 1, 'every link in one column at 1280 px');
    const phone = await (await browse(t, { viewport: { width: 375, height: 740 } })).newPage();
    await signIn(phone, base, 'Alice');
    await phone.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    const rows = await Promise.all(
      (await phone.getByRole('navigation', { name: 'Sections' }).getByRole('link').all()).map(async (l) => Math.round((await l.boundingBox())!.y)),
    );
    t.equal(new Set(rows).size, 1, 'one row on a phone, scrolled sideways');
    t.same(await axeViolations(phone), [], 'the phone dashboard passes axe');
  });
});
