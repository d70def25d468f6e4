/**
 * The storefront in Chromium: browse → basket → pay from the balance → the order page turns
 * "delivered" when the game server acks; the same without JavaScript; a ticket answered by staff;
 * sign-in with two-factor; a phone-sized screen; axe-core on every page.
 */
import type { FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { TestClock } from '../../../core/clock.ts';
import { creditsRef } from '../../credits/contract.ts';
import { axeViolations, browse, hasChromium, PASSWORD, register, screenshot, serve, skipReason } from '../../../test/browser.ts';
import { created, makeCategory, makeProduct, totp } from '../../../test/fixtures.ts';
import { call } from '../../../test/helper.ts';

const skip = hasChromium ? false : skipReason;
const CONFIG = { plugins: { storefront: { pollSeconds: 1 } } };

/** A shop with one rank sold on one game server, a product whose rule needs it, and what the game server needs to ack. */
async function shop(app: FastifyInstance) {
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  const vip = await makeProduct(app, {
    categoryID: ranks,
    name: 'VIP',
    price: '5.00',
    discountedPrice: '4.00',
    discountExpiryDate: '2999-12-31 23:59:59',
    stock: 10,
    isFeaturedProduct: '1',
    details: '<p>A <b>coloured</b> name and /fly.</p>',
    variables: [{ name: 'server', required: '1', values: ['eu', 'us'] }],
  });
  const kit = await makeProduct(app, { categoryID: ranks, name: 'VIP Kit', price: '1.00' });
  await call(app, `/api/admin/store/products/${kit}/rules`, {
    method: 'PATCH',
    as: 'json',
    body: { requiredProductID: String(vip), requireLinkedAccount: '1' },
  });
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Survival' }, 'json');
  await created(
    app,
    `/api/admin/store/products/${vip}/commands`,
    { serverID: server.id, command: 'lp user {username} parent add vip', trigger: 'purchase', requireOnline: false, perUnit: false },
    'json',
  );
  return { vip, kit, token: server.token as string };
}

/** The game server claims what is waiting and acks it done, as the official plugin does. */
async function gameServerAcks(t: Test, app: FastifyInstance, token: string): Promise<void> {
  const claimed = (await call(app, '/api/delivery/claim', { body: { token }, as: 'json' })).json().commands as { id: string; command: string }[];
  t.ok(claimed.length > 0, "the game server got the purchase's command");
  const res = await call(app, '/api/delivery/ack', { body: { token, ids: claimed.map((c) => c.id), result: 'done' }, as: 'json' });
  t.equal(res.statusCode, 200);
}

async function accessible(t: Test, page: Page, what: string): Promise<void> {
  t.same(await axeViolations(page), [], `${what}: no serious or critical axe-core violation`);
}

async function signUp(page: Page, base: string, username: string): Promise<void> {
  await page.goto(`${base}/register`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Email').fill(`${username.toLowerCase()}@example.org`);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('heading', { name: 'My account', level: 1 }).waitFor();
}

t.test('browse, basket, pay from the balance, follow the order to delivered', { skip }, async (t) => {
  const { app, base } = await serve(t, CONFIG);
  const { token } = await shop(app);
  const context = await browse(t);
  const page = await context.newPage();

  await page.goto(`${base}/register`);
  await accessible(t, page, 'register');
  await signUp(page, base, 'Steve');
  const steve = Number((await call(app, '/api/users?username=Steve')).json().id);
  await app.services.get(creditsRef).change(steve, 2000, { reason: 'add' });
  const session = (await context.cookies(base)).find((c) => c.name === 'storefront_session');
  t.ok(session?.httpOnly, 'the session cookie is HttpOnly');
  t.equal(session?.sameSite, 'Lax');

  await call(app, '/api/admin/settings', { method: 'PATCH', as: 'json', body: { storefrontFooterLinks: 'Rules=/rules | Discord=https://discord.gg/example' } });
  await page.goto(base);
  await accessible(t, page, 'home');
  await screenshot(page, 'storefront-desktop');
  await page.getByRole('link', { name: 'Ranks' }).first().click();
  await page.getByRole('heading', { name: 'Ranks', level: 1 }).waitFor();
  await accessible(t, page, 'category');
  await page.getByRole('link', { name: 'VIP Kit' }).click();
  await page.getByRole('heading', { name: 'VIP Kit', level: 1 }).waitFor();
  const rules = await page.getByRole('region', { name: 'Before you buy' }).textContent();
  t.match(rules, /You must have bought VIP first/, 'the rules are explained before the player tries');
  t.match(rules, /linked chat account/);
  await page.getByRole('link', { name: 'Ranks' }).click();
  await page.getByRole('link', { name: /^VIP/ }).first().click();
  await page.getByRole('heading', { name: 'VIP', level: 1 }).waitFor();
  await accessible(t, page, 'product');
  await screenshot(page, 'storefront-product');
  const buy = await page.locator('.buy').textContent();
  t.match(buy, /\$4\.00/, 'the discounted price');
  t.match(buy, /was \$5\.00/);
  t.match(buy, /Offer ends 2999-12-31/, 'and when the offer ends');
  t.match(buy, /10 left/, 'the stock left');
  t.match(await page.locator('.prose').innerHTML(), /<b>coloured<\/b>/, "the description's formatting");

  await page.getByLabel('server').selectOption('eu');
  await page.getByLabel('Quantity').fill('2');
  await page.getByRole('button', { name: 'Add to basket' }).click();
  await page.getByRole('status').filter({ hasText: 'VIP is in your basket' }).waitFor();
  await accessible(t, page, 'basket');
  t.match(await page.locator('table.basket').textContent(), /server: eu[\s\S]*\$8\.00/, 'two at the discounted price, with the variable');
  await page.getByLabel('Quantity: VIP').fill('1');
  await page.getByRole('button', { name: 'Update' }).click();
  await page.getByRole('status').filter({ hasText: 'updated' }).waitFor();
  t.match(await page.locator('tfoot').textContent(), /\$4\.00/, 'the quantity changed');
  await page.getByRole('button', { name: /Pay \$4\.00 from my balance/ }).click();

  await page.getByRole('heading', { name: /Order #\d+/, level: 1 }).waitFor();
  t.match(await page.locator('#order-status').textContent(), /waiting for the game server/);
  await accessible(t, page, 'order');
  t.equal(await app.services.get(creditsRef).balance(steve), 1600, "the buy charged the catalogue's price");
  await gameServerAcks(t, app, token);
  await page.locator('#order-status').filter({ hasText: 'Delivered to Survival' }).waitFor();
  t.pass('the order page turned delivered without a reload');

  await page.goto(`${base}/account`);
  t.match(await page.locator('#orders').textContent(), /Delivered to Survival/, 'the account lists the order delivered');
  t.match(await page.locator('main').textContent(), /\$16\.00/, 'the balance');
  await accessible(t, page, 'account');
  await page.goto(`${base}/search?q=kit`);
  await accessible(t, page, 'search');
  await page.goto(`${base}/login`);
  await accessible(t, page, 'sign-in');
});

t.test('without JavaScript: browse, basket and checkout still work', { skip }, async (t) => {
  const { app, base } = await serve(t, CONFIG);
  const { token } = await shop(app);
  const context = await browse(t, { javaScriptEnabled: false });
  const page = await context.newPage();
  await signUp(page, base, 'Alex');
  await app.services.get(creditsRef).change(Number((await call(app, '/api/users?username=Alex')).json().id), 1000, { reason: 'add' });
  await page.goto(base);
  await page
    .getByRole('link', { name: /^VIP\b/ })
    .first()
    .click();
  await page.getByLabel('server').selectOption('us');
  await page.getByRole('button', { name: 'Add to basket' }).click();
  await page.getByRole('button', { name: /from my balance/ }).click();
  await page.getByRole('heading', { name: /Order #\d+/, level: 1 }).waitFor();
  t.match(await page.locator('#order-status').textContent(), /waiting/);
  await gameServerAcks(t, app, token);
  await page.reload();
  t.match(await page.locator('#order-status').textContent(), /Delivered to Survival/, 'a reload shows it delivered');
});

t.test('a ticket opened by the player, answered by staff, the reply seen by the player', { skip }, async (t) => {
  const { app, base } = await serve(t, CONFIG);
  await created(app, '/api/admin/support/categories', { name: 'Store' }, 'json');
  const context = await browse(t);
  const page = await context.newPage();
  await signUp(page, base, 'Steve');
  await page.getByRole('link', { name: 'Support tickets' }).click();
  await accessible(t, page, 'tickets');
  await page.getByLabel('Category').selectOption({ label: 'Store' });
  await page.getByLabel('Subject').fill('My rank is missing');
  await page.getByLabel('Message').fill('I bought VIP but have no rank.');
  await page.getByRole('button', { name: 'Open ticket' }).click();
  await page.getByRole('heading', { name: 'My rank is missing', level: 1 }).waitFor();
  await accessible(t, page, 'ticket');
  const ticketId = /\/account\/tickets\/(\d+)/.exec(page.url())![1];
  const staff = await register(app, 'Helper');
  const res = await call(app, `/api/support/tickets/${ticketId}/messages`, {
    body: { userID: String(staff), message: 'Rejoin the server, please.', isAdmin: 'true' },
    as: 'json',
  });
  t.equal(res.statusCode, 200, res.body);
  await page.reload();
  t.match(await page.locator('.thread').textContent(), /Staff[\s\S]*Rejoin the server, please\./, 'the staff reply is there');
  await page.getByLabel('Message').fill('Thanks, it works.');
  await page.getByRole('button', { name: 'Send answer' }).click();
  await page.getByRole('status').filter({ hasText: 'answer was sent' }).waitFor();
  await page.getByRole('button', { name: 'Close ticket' }).click();
  await page.getByRole('status').filter({ hasText: 'closed' }).waitFor();
  t.equal((await call(app, `/api/support/tickets/${ticketId}`)).json().statusID, '4', "closed through the API's eyes");
});

t.test('sign-in with two-factor, and a phone-sized screen', { skip }, async (t) => {
  // A frozen clock: the enrolment's code (the step before) and the sign-in's (this step) differ by a step and
  // stay valid however slow the machine.
  const { app, base } = await serve(t, CONFIG, {}, new TestClock({ frozen: true }));
  await shop(app);
  const id = await register(app, 'Steve');
  const { secret } = (await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
  t.equal((await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret, -30) } })).statusCode, 200);

  const context = await browse(t, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  await page.goto(`${base}/login`);
  await page.getByLabel('Username').fill('Steve');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#f-code-error').waitFor();
  t.match(await page.locator('#f-code-error').textContent(), /two-factor/, 'the code is asked for');
  await accessible(t, page, 'sign-in asking for the code');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByLabel('Two-factor code').fill(totp(secret));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'My account', level: 1 }).waitFor();
  t.match(await page.locator('.stats').textContent(), /Two-factor sign-in\s*On/);

  for (const path of ['/', '/product/1', '/basket', '/account']) {
    await page.goto(`${base}${path}`);
    const [scroll, width] = (await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]')) as [number, number];
    t.ok(scroll <= width, `${path}: nothing wider than the phone (${scroll} <= ${width})`);
    await accessible(t, page, `${path} on a phone`);
  }
  await page.goto(base);
  await screenshot(page, 'storefront-phone');
});
