/** Players and the support desk in a real browser: credits and a role given, a ticket answered with a quick answer and closed;
 * each checked through the API too. */
import t from 'tap';
import { call } from '../../../test/helper.ts';
import { browse, grant, hasChromium, notice, register, role, screenshot, serve, signIn, skipReason } from './browser.ts';

t.test('players and the support desk in chromium', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base } = await serve(t);
  const adminId = await register(app, 'Alice');
  const helperId = await register(app, 'Bob');
  const steveId = await register(app, 'Steve', 'steve.miner@example.org');
  await grant(app, adminId, await role(app, 'Admin'));
  await grant(app, helperId, await role(app, 'Support'));
  await role(app, 'VIP');
  const context = await browse(t);
  const page = await context.newPage();
  page.on('dialog', (dialog) => {
    void dialog.accept();
  });

  await t.test('an admin finds a player by email and gives credits with a reason', async (t) => {
    await signIn(page, base, 'Alice');
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Players' }).click();
    await page.getByLabel('Name, email or chat ID').fill('steve.m');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'Steve', exact: true }).click();
    await page.getByRole('heading', { name: 'Steve', level: 1 }).waitFor();

    const form = page.locator('#adjust-credits');
    await form.getByLabel('Amount').fill('12.505');
    await form.getByLabel('Reason').fill('event prize');
    await form.getByRole('button', { name: 'Adjust credits' }).click();
    await page.locator('#adjust-credits-amount-error').waitFor();
    t.match(await page.locator('#adjust-credits-amount-error').textContent(), /amount/, 'the API error beside the amount');
    t.match((await call(app, '/api/credits?username=Steve')).json(), { status: true }, 'the API answers');
    t.notMatch(JSON.stringify((await call(app, '/api/credits?username=Steve')).json()), /12\.5/, 'nothing was added');

    await page.locator('#adjust-credits-amount').fill('12.50');
    await page.locator('#adjust-credits').getByRole('button', { name: 'Adjust credits' }).click();
    await page.getByRole('status').waitFor();
    t.match(await page.getByRole('status').textContent(), /Added 12\.50: Steve now has 12\.50/);
    const ledger = page.getByRole('table', { name: 'Ledger, newest first' });
    t.ok(await ledger.getByRole('cell', { name: 'event prize' }).isVisible(), 'the ledger shows the reason');
    t.ok(await ledger.getByRole('cell', { name: 'console:Alice' }).isVisible(), 'and who made the change');
    t.match(JSON.stringify((await call(app, '/api/credits?username=Steve')).json()), /12\.50/, 'the API shows the balance');
  });

  await t.test('an admin grants a role', async (t) => {
    const form = page.locator('#grant-role');
    await form.getByLabel('Role').selectOption({ label: 'VIP' });
    await form.getByRole('button', { name: 'Grant role' }).click();
    t.match(await notice(page, /holds VIP/), /Steve holds VIP/);
    t.ok(await page.getByRole('table', { name: 'Roles held' }).getByRole('cell', { name: 'VIP', exact: true }).isVisible());
    const roles = (await call(app, `/api/users/${steveId}/roles`)).json();
    t.same(
      roles.map((r: { name: string }) => r.name),
      ['VIP'],
      'through the API',
    );
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
  });

  const categoryId = (await call(app, '/api/admin/support/categories', { body: { name: 'Payments' } })).json().id;
  await call(app, '/api/admin/support/answers', { body: { title: 'Refund on its way', content: 'Your refund is on its way: allow three days.' } });
  const ticketId = (
    await call(app, '/api/support/tickets', {
      body: { accountID: String(steveId), categoryID: categoryId, title: 'Charged twice', message: 'I paid twice for VIP.' },
    })
  ).json().data.id;

  await t.test('support staff look a player up but cannot change credits', async (t) => {
    await signIn(page, base, 'Bob');
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    await page.goto(`${base}/console/players/${steveId}`);
    await page.getByRole('heading', { name: 'Steve', level: 1 }).waitFor();
    t.equal(await page.locator('#adjust-credits').count(), 0, 'no credits form');
    t.equal(await page.locator('#grant-role').count(), 0, 'no role form');
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    const res = await page.evaluate(
      async ([url, token]) => {
        const r = await fetch(url!, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `_csrf=${token}&direction=add&amount=100&reason=x`,
        });
        return r.status;
      },
      [`/console/players/${steveId}/credits`, csrf],
    );
    t.equal(res, 403, 'a support role cannot post a credits change');
    t.match(JSON.stringify((await call(app, '/api/credits?username=Steve')).json()), /12\.50/, 'the balance did not move');
  });

  await t.test('support answers a ticket with a quick answer and closes it', async (t) => {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Support desk' }).click();
    await page.getByLabel('Status').selectOption({ label: 'open' });
    await page.getByRole('button', { name: 'Show tickets' }).click();
    await page.getByRole('link', { name: 'Charged twice' }).click();
    await page.getByRole('heading', { name: 'Charged twice', level: 1 }).waitFor();
    await page.getByLabel('Quick answer').selectOption({ label: 'Refund on its way' });
    await page.getByRole('button', { name: 'Send reply' }).click();
    await page.getByRole('status').waitFor();
    t.match(await page.getByRole('status').textContent(), /Reply sent/);
    t.ok(await page.locator('.thread li.staff').getByText('Your refund is on its way: allow three days.').isVisible(), 'the reply is in the thread as staff');
    await screenshot(page, 'support-desk');
    let ticket = (await call(app, `/api/support/tickets/${ticketId}`)).json();
    t.equal(ticket.statusID, '2', 'answered, through the API');
    t.match(ticket.messages[1], { accountID: String(helperId), writeLocation: '2', message: 'Your refund is on its way: allow three days.' });

    await page.getByRole('button', { name: 'Close ticket' }).click();
    t.match(await notice(page, /closed/), new RegExp(`Ticket ${ticketId} closed`));
    t.ok(await page.getByText('This ticket is closed.').isVisible());
    ticket = (await call(app, `/api/support/tickets/${ticketId}`)).json();
    t.equal(ticket.statusID, '4', 'closed, through the API');
  });

  await t.test("a player's profile links to their tickets, and for admins to their orders", async (t) => {
    await call(app, '/api/support/tickets', { body: { accountID: String(adminId), categoryID: categoryId, title: 'Not Steve', message: 'Another player.' } });
    await page.goto(`${base}/console/players/${steveId}`);
    t.equal(await page.getByRole('link', { name: 'Orders of Steve' }).count(), 0, 'support staff get no orders link');
    await page.getByRole('link', { name: 'Tickets of Steve' }).click();
    const table = page.getByRole('table', { name: 'Tickets of Steve, newest first' });
    await table.waitFor();
    t.same(await table.locator('tbody td[data-label=Title]').allTextContents(), ['Charged twice'], "only Steve's ticket");
    await page.getByRole('button', { name: 'Sign out' }).click();

    const category = (await call(app, '/api/admin/store/categories', { body: { name: 'Ranks' } })).json();
    const product = (await call(app, '/api/admin/store/products', { body: { name: 'Tag', categoryID: category.id, price: '1.00' } })).json();
    t.equal((await call(app, '/api/store/buy', { body: { userID: String(steveId), products: [String(product.id)] } })).statusCode, 200);
    t.equal(
      (await call(app, '/api/store/buy', { body: { userID: String(adminId), products: [String(product.id)] } })).statusCode,
      400,
      'Alice has no credits: no order of hers',
    );
    const orderId = (await call(app, `/api/users/${steveId}/orders`)).json()[0].id;
    await signIn(page, base, 'Alice');
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    await page.goto(`${base}/console/players/${steveId}`);
    await page.getByRole('link', { name: 'Orders of Steve' }).click();
    await page.getByRole('link', { name: `#${orderId}` }).waitFor();
    t.equal(await page.locator('#order-filter-username').inputValue(), 'Steve', 'the orders page is filtered by the player');
  });
});
