/** The catalogue and orders in a real browser: a category, a product with a command per server, a refund; each checked through the API too. */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { call, scratchDir } from '../../../test/helper.ts';
import { PNG } from '../../../test/fixtures.ts';
import { browse, grant, hasChromium, notice, register, role, screenshot, serve, signIn, skipReason } from './browser.ts';

t.test('catalogue, delivery commands and a refund in chromium', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base } = await serve(t, { plugins: { store: { images: { folder: scratchDir(t) } } } });
  const adminId = await register(app, 'Alice');
  await grant(app, adminId, await role(app, 'Admin'));
  const context = await browse(t);
  const page = await context.newPage();
  page.on('dialog', (dialog) => {
    void dialog.accept();
  });
  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

  await t.test('a category is created', async (t) => {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Catalogue' }).click();
    await page.getByRole('heading', { name: 'Catalogue', level: 1 }).waitFor();
    const form = page.locator('#new-category');
    await form.getByLabel('Name').fill('Ranks');
    await form.getByRole('button', { name: 'Create category' }).click();
    await page.getByRole('status').waitFor();
    t.match(await page.getByRole('status').textContent(), /Category Ranks created/);
    t.ok(await page.getByRole('table', { name: 'Categories' }).getByRole('cell', { name: 'Ranks', exact: true }).isVisible());
    const api = (await call(app, '/api/admin/store/categories')).json();
    t.same(
      api.map((c: { name: string; slug: string }) => [c.name, c.slug]),
      [['Ranks', 'ranks']],
    );
  });

  await t.test('the API error shows beside the field it names, and nothing is created', async (t) => {
    const form = page.locator('#new-product');
    await form.getByLabel('Name').fill('VIP');
    await form.getByLabel('Category').selectOption({ label: 'Ranks' });
    await page.locator('#new-product-price').fill('five');
    await form.getByRole('button', { name: 'Create product' }).click();
    const error = page.locator('#new-product-price-error');
    await error.waitFor();
    t.match(await error.textContent(), /price/);
    t.equal(await page.locator('#new-product-price').getAttribute('aria-invalid'), 'true');
    t.equal(await page.locator('#new-product-price').getAttribute('aria-describedby'), 'new-product-price-hint new-product-price-error');
    t.equal(await page.locator('#new-product-name').inputValue(), 'VIP', 'what was typed is kept');
    t.same((await call(app, '/api/admin/store/products')).json(), [], 'no product was made');
  });

  let productId = '';
  await t.test('a product is created', async (t) => {
    await page.locator('#new-product-price').fill('5.00');
    await page.locator('#new-product').getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('heading', { name: 'VIP', level: 1 }).waitFor();
    t.match(await page.getByRole('status').textContent(), /Product VIP created/);
    productId = new URL(page.url()).pathname.split('/').pop()!;
    const product = (await call(app, `/api/admin/store/products/${productId}`)).json();
    t.match(product, { name: 'VIP', price: '5.00', isActive: '1' });
  });

  await t.test('an image is uploaded on the product page and shown on the storefront', async (t) => {
    const form = page.locator('#product-image');
    await form.getByRole('button', { name: 'Upload image' }).click();
    await page.locator('#product-image-image-error').waitFor();
    t.match(await page.locator('#product-image-image-error').textContent(), /Choose an image file/, 'no file: the error beside the field');
    await form.getByLabel('Image file').setInputFiles({ name: 'vip.png', mimeType: 'image/png', buffer: PNG });
    await form.getByRole('button', { name: 'Upload image' }).click();
    t.match(await notice(page, /Image of VIP saved/), /Image of VIP saved/);
    t.same(await axeViolations(page), [], 'the product page with its upload form passes axe');
    const { imageID, imageType } = (await call(app, `/api/admin/store/products/${productId}`)).json();
    t.match({ imageID, imageType }, { imageID: /^[0-9a-f]{64}$/, imageType: 'png' });
    const shop = await context.newPage();
    await shop.goto(`${base}/product/${productId}`);
    const img = shop.locator(`img[src="/images/${imageID}.png"]`);
    await img.waitFor();
    t.equal(
      await img.evaluate((i) => {
        const el = i as unknown as { complete: boolean; naturalWidth: number };
        return el.complete ? el.naturalWidth : 0;
      }),
      1,
      'the storefront shows the uploaded image',
    );
    await shop.close();
  });

  await t.test('a game server and a command of the product on it', async (t) => {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Delivery' }).click();
    await page.locator('#new-server').getByLabel('Name').fill('Lobby');
    await page.locator('#new-server').getByRole('button', { name: 'Create server' }).click();
    await page.getByRole('status').waitFor();
    t.match(await page.getByRole('status').textContent(), /Server Lobby created .*token, shown only now: [A-Za-z0-9_-]{20,}/);
    await page.goto(`${base}/console/catalogue/products/${productId}`);
    await page.getByRole('link', { name: /Commands run on game servers/ }).click();
    const form = page.locator('#new-command');
    await form.getByLabel('Game server').selectOption({ label: 'Lobby' });
    await form.getByLabel('Command').fill('lp user {username} parent add vip');
    await form.getByLabel('Only while the player is online').check();
    await form.getByRole('button', { name: 'Add command' }).click();
    await page.getByRole('status').waitFor();
    t.ok(await page.getByRole('cell', { name: 'lp user {username} parent add vip' }).isVisible(), 'on the page');
    const commands = (await call(app, `/api/admin/store/products/${productId}/commands`)).json();
    t.match(commands, [{ command: 'lp user {username} parent add vip', trigger: 'purchase', requireOnline: true, perUnit: false }], 'through the API');
    await page.goto(`${base}/console/catalogue`);
    await screenshot(page, 'catalogue');
  });

  await t.test('an order is refunded', async (t) => {
    const buyerId = await register(app, 'Steve');
    await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '20.00' } });
    const bought = await call(app, '/api/store/buy', { body: { userID: String(buyerId), products: [productId] } });
    t.equal(bought.statusCode, 200, bought.body);
    const orderId = (await call(app, `/api/users/${buyerId}/orders`)).json()[0].id;
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Orders' }).click();
    await page.getByRole('link', { name: `#${orderId}` }).click();
    await page.getByRole('heading', { name: `Order #${orderId}` }).waitFor();
    await page.getByRole('button', { name: 'Refund order' }).click();
    await page.getByRole('status').waitFor();
    t.match(await page.getByRole('status').textContent(), new RegExp(`Order #${orderId} refunded`));
    t.ok(await page.getByText('refunded', { exact: true }).isVisible(), 'the page shows the new status');
    t.notOk(await page.getByRole('button', { name: 'Refund order' }).count(), 'no second refund offered');
    const orders = (await call(app, `/api/users/${buyerId}/orders`)).json();
    t.equal(orders[0].status, 'refunded', 'through the API');
    const balance = (await call(app, `/api/credits?username=Steve`)).json();
    t.match(JSON.stringify(balance), /20\.00/, 'the price is back on the balance');
  });

  await t.test('categories are edited and reordered, and a product gets purchase rules', async (t) => {
    for (const name of ['Kits', 'Boosts']) t.equal((await call(app, '/api/admin/store/categories', { body: { name } })).statusCode, 201);
    const byName = async () =>
      new Map<string, { id: string; parentID: string; priority: string }>(
        (await call(app, '/api/admin/store/categories')).json().map((c: { name: string }) => [c.name, c]),
      );
    await page.goto(`${base}/console/catalogue`);
    const categories = page.getByRole('table', { name: 'Categories' });
    const names = async () => (await categories.locator('tbody tr td:first-child').allTextContents()).map((n) => n.trim());
    t.same(await names(), ['Ranks', 'Kits', 'Boosts']);
    t.equal(await categories.getByRole('button', { name: 'Move Ranks up' }).count(), 0, 'the first cannot move up');
    await categories.getByRole('button', { name: 'Move Boosts up' }).click();
    t.match(await notice(page, /moved up/), /Boosts moved up/);
    t.same(await names(), ['Ranks', 'Boosts', 'Kits'], 'on the page');
    let api = await byName();
    t.ok(Number(api.get('Boosts')!.priority) < Number(api.get('Kits')!.priority), 'through the API: Boosts before Kits');

    await categories.getByRole('link', { name: 'Kits' }).click();
    await page.getByRole('heading', { name: 'Kits', level: 1 }).waitFor();
    t.notOk(await page.locator('#edit-category-parentID option', { hasText: 'Kits' }).count(), 'a category cannot be its own parent');
    await page.locator('#edit-category-slug').fill('bad slug!');
    await page.getByRole('button', { name: 'Save category' }).click();
    await page.locator('#edit-category-slug-error').waitFor();
    t.match(await page.locator('#edit-category-slug-error').textContent(), /slug/);
    t.equal((await byName()).get('Kits')!.parentID, '0', 'nothing changed');
    await page.locator('#edit-category-slug').fill('starter-kits');
    await page.locator('#edit-category-name').fill('Starter kits');
    await page.locator('#edit-category-parentID').selectOption({ label: 'Ranks' });
    await page.getByRole('button', { name: 'Save category' }).click();
    t.match(await notice(page, /saved/), /Category Starter kits saved/);
    t.same(await names(), ['Ranks', '— Starter kits', 'Boosts'], 'shown under its parent');
    api = await byName();
    t.match(api.get('Starter kits'), { parentID: api.get('Ranks')!.id }, 'through the API');

    const starter = (await call(app, '/api/admin/store/products', { body: { name: 'Starter', categoryID: api.get('Ranks')!.id, price: '1.00' } })).json();
    await page.goto(`${base}/console/catalogue/products/${productId}`);
    const rules = page.locator('#product-rules');
    await rules.getByLabel('Requires having bought').selectOption({ label: 'Starter' });
    await rules.getByLabel('Requires a linked chat account').check();
    await rules.getByRole('button', { name: 'Save rules' }).click();
    t.match(await notice(page, /Purchase rules/), /Purchase rules of VIP saved/);
    t.equal(await page.locator('#product-rules-requiredProductID').inputValue(), String(starter.id), 'on the page');
    t.ok(await page.locator('#product-rules-requireLinkedAccount').isChecked());
    t.same(
      (await call(app, `/api/admin/store/products/${productId}/rules`)).json(),
      {
        requiredProductID: String(starter.id),
        requireLinkedAccount: true,
        preventDowngrade: false,
      },
      'through the API',
    );
  });

  await t.test('a product edited while it sells keeps the stock the buys left; a stock typed in is set', async (t) => {
    const ranks = (await call(app, '/api/admin/store/categories')).json().find((c: { name: string }) => c.name === 'Ranks');
    const kit = (await call(app, '/api/admin/store/products', { body: { name: 'Kit', categoryID: ranks.id, price: '1.00', stock: '10' } })).json();
    await page.goto(`${base}/console/catalogue/products/${kit.id}`);
    t.equal(await page.locator('#edit-product-stock').inputValue(), '10', 'the form shows the stock as it was');
    const buyer = (await call(app, '/api/users?username=Steve')).json().id;
    for (let i = 0; i < 3; i++) t.equal((await call(app, '/api/store/buy', { body: { userID: buyer, products: [kit.id] } })).statusCode, 200);
    await page.locator('#edit-product-name').fill('Kit deluxe');
    await page.getByRole('button', { name: 'Save product' }).click();
    t.match(await notice(page, /saved/), /Product Kit deluxe saved/);
    t.match((await call(app, `/api/admin/store/products/${kit.id}`)).json(), { name: 'Kit deluxe', stock: '7' }, 'the three sold stay sold');
    t.equal(await page.locator('#edit-product-stock').inputValue(), '7', 'the page shows the stock now');
    await page.locator('#edit-product-name').fill('Kit max');
    await page.locator('#edit-product-stock').fill('50');
    await page.getByRole('button', { name: 'Save product' }).click();
    await notice(page, /Kit max saved/);
    t.match((await call(app, `/api/admin/store/products/${kit.id}`)).json(), { name: 'Kit max', stock: '50' }, 'a stock typed in is what the product gets');
  });

  await t.test('the dashboard shows the figures of each section', async (t) => {
    await page.goto(`${base}/console`);
    for (const heading of ['Orders', 'Delivery']) t.ok(await page.getByRole('heading', { name: heading, level: 2 }).isVisible(), heading);
    t.ok(await page.getByText('commands waiting to be delivered').isVisible());
  });
});
