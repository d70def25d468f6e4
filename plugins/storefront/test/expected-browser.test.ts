/**
 * What players expect (issue 49, item 6) in Chromium, on a phone and on a desktop: the sale's
 * banner, the game server with its players online, the language switch, the categories beside the
 * products on a wide screen only, add to basket from a card, and a guest's email field at
 * checkout; axe-core on each page.
 */
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { axeViolations, browse, hasChromium, screenshot, serve, skipReason } from '../../../test/browser.ts';
import { created, makeCategory, makeProduct } from '../../../test/fixtures.ts';
import { STRIPE_ENV } from '../../../test/gateways.ts';
import { call } from '../../../test/helper.ts';
import { FakeGameServer } from './fake-game-server.ts';

const skip = hasChromium ? false : skipReason;
const SIZES = [
  { name: 'phone', options: { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true } },
  { name: 'desktop', options: { viewport: { width: 1280, height: 860 } } },
];

async function accessible(t: Test, page: Page, what: string): Promise<void> {
  t.same(await axeViolations(page), [], `${what}: no serious or critical axe-core violation`);
}

t.test('sale banner, game server, language switch, categories beside the products, add from a card, guest email', { skip }, async (t) => {
  const game = await new FakeGameServer().start(t);
  game.players = { online: 12, max: 100 };
  const { app, base } = await serve(t, {}, STRIPE_ENV);
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  await makeCategory(app, { name: 'Kits', slug: 'kits' });
  await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '9.99', isFeaturedProduct: '1' });
  await created(app, '/api/admin/promotions/sales', { name: 'Winter sale', percent: 20, startDate: '2020-01-01 00:00', endDate: '2999-01-31 18:00' }, 'json');
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { storefrontServerAddress: `127.0.0.1:${game.port}`, guestEmail: 'required' }, as: 'json' });

  for (const size of SIZES) {
    await t.test(size.name, async (t) => {
      const context = await browse(t, size.options);
      const page = await context.newPage();
      await page.goto(`${base}/`);
      t.match(await page.locator('.sale-banner').textContent(), 'Winter sale: 20% off until 2999-01-31 18:00', 'the banner');
      const server = page.getByRole('region', { name: 'Play with us' });
      t.match(await server.textContent(), new RegExp(`127\\.0\\.0\\.1:${game.port}[\\s\\S]*12 of 100 players online`), 'the address and the players online');
      t.ok(await page.getByRole('navigation', { name: 'Language' }).getByRole('link', { name: 'Deutsch' }).isVisible(), 'the language switch shows');
      await accessible(t, page, `${size.name}: home`);
      await screenshot(page, `expected-home-${size.name}`);

      await page.goto(`${base}/category/ranks`);
      const side = page.getByRole('navigation', { name: 'Categories' });
      const products = page.getByRole('heading', { name: 'Products' });
      const sideBox = (await side.boundingBox())!;
      const productsBox = (await products.boundingBox())!;
      if (size.name === 'desktop') t.ok(sideBox.x + sideBox.width <= productsBox.x, 'wide: the categories are beside the products, on their left');
      else t.ok(sideBox.y > productsBox.y, 'phone: the categories come after the products');
      await accessible(t, page, `${size.name}: category`);
      await page.getByRole('button', { name: 'Add to basket: VIP' }).click();
      await page.getByRole('heading', { name: 'Basket', level: 1 }).waitFor();
      t.ok(await page.getByRole('link', { name: 'VIP', exact: true }).isVisible(), 'added from the listing');
      const email = page.getByLabel('Email');
      t.equal(await email.getAttribute('type'), 'email', "a guest's email field");
      t.equal(await email.getAttribute('required'), '', 'required as the setting asks');
      await accessible(t, page, `${size.name}: basket with the guest's fields`);

      await page.getByRole('navigation', { name: 'Language' }).getByRole('link', { name: 'Deutsch' }).click();
      await page.getByRole('heading', { name: 'Warenkorb', level: 1 }).waitFor();
      await page.goto(`${base}/`);
      t.equal(await page.locator('html').getAttribute('lang'), 'de', 'the choice stays');
      t.match(await page.locator('.sale-banner').textContent(), 'Winter sale: 20 % Rabatt bis');
      await accessible(t, page, `${size.name}: home in German`);
    });
  }
});
