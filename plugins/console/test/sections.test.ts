/**
 * The sections of the remaining features and of the host in a real browser: an API key created
 * (shown once) and revoked, a top-up package, site settings, a vote link, a bazaar server and the
 * chat settings; each checked on the page and through the API. Support staff see none of them,
 * nor the roles, ticket categories and quick answers (records.test.ts).
 */
import t from 'tap';
import { call } from '../../../test/helper.ts';
import { hasChromium, notice, signIn, skipReason, staffBrowser } from './browser.ts';

const ADMIN_SECTIONS = ['Roles', 'Payments', 'Donations', 'Bazaar servers', 'Vote links', 'Chat settings', 'Site settings', 'API keys'];

t.test('the other sections in chromium', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base, page, menu } = await staffBrowser(t);

  await t.test('support staff see no admin section, and cannot open one by its address', async (t) => {
    await signIn(page, base, 'Bob');
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    const titles = await menu.getByRole('link').allTextContents();
    for (const title of ADMIN_SECTIONS) t.notOk(titles.includes(title), `no ${title} in the menu`);
    t.ok(titles.includes('Support desk'), 'the support desk is there');
    for (const path of [
      'api-keys',
      'settings',
      'payments/packages',
      'vote-links',
      'bazaar',
      'chat',
      'donations',
      'roles',
      'roles/1',
      'support/categories',
      'support/answers',
    ]) {
      const res = await page.goto(`${base}/console/${path}`);
      t.equal(res?.status(), 403, `/console/${path} is refused`);
    }
    await page.goto(`${base}/console/support`);
    t.equal(await page.getByRole('link', { name: 'Ticket categories' }).count(), 0, 'the inbox links to no admin page');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
  });

  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

  await t.test('an API key is created, shown once, works, then is revoked', async (t) => {
    await menu.getByRole('link', { name: 'API keys' }).click();
    const form = page.locator('#new-api-key');
    await form.getByLabel('Name').fill('lobby server');
    await form.getByLabel('Scopes').fill('credits:read');
    await form.getByRole('button', { name: 'Create API key' }).click();
    await page.locator('#new-api-key-name-error').waitFor();
    t.match(await page.locator('#new-api-key-name-error').textContent(), /name: 1-64 characters/, 'the error beside the name');
    t.same(
      (await app.apiKeys.list()).map((k) => k.name),
      [],
      'nothing was created',
    );

    await page.locator('#new-api-key-name').fill('lobby-server');
    await page.locator('#new-api-key').getByRole('button', { name: 'Create API key' }).click();
    const text = await notice(page, /shown only now/);
    const key = /(ck_[0-9a-f]{48})/.exec(text)?.[1];
    t.ok(key, 'the key is on the page');
    const table = page.getByRole('table', { name: 'API keys' });
    t.ok(await table.getByRole('cell', { name: 'lobby-server', exact: true }).isVisible());
    t.ok(await table.getByRole('cell', { name: 'never' }).isVisible(), 'not used yet');
    t.equal((await call(app, '/api/credits?username=Alice', { key })).statusCode, 200, 'the key reads credits through the API');
    t.equal((await call(app, '/api/credits/add', { key, body: { target_username: 'Alice', amount: '1' } })).statusCode, 403, 'and only what its scope allows');

    await page.reload();
    t.notOk(await page.getByText(key!).count(), 'shown once: not on the page again');
    t.notOk(await table.getByRole('cell', { name: 'never' }).count(), 'its last use is shown');

    await table.getByRole('button', { name: 'Revoke lobby-server' }).click();
    t.match(await notice(page, /revoked/), /API key lobby-server revoked/);
    t.match(await table.getByRole('row', { name: /lobby-server/ }).textContent(), /revoked \d{4}-/);
    t.equal((await call(app, '/api/credits?username=Alice', { key })).statusCode, 401, 'the API refuses the revoked key');
  });

  await t.test('a top-up package is created and changed', async (t) => {
    await menu.getByRole('link', { name: 'Payments' }).click();
    await page.getByRole('heading', { name: 'Payments', level: 1 }).waitFor();
    t.match(await page.getByRole('table', { name: 'Gateways' }).textContent(), /stripe.*off: STRIPE_SECRET_KEY/s, 'why a gateway is off');
    await page.getByRole('link', { name: 'Packages players buy credits with' }).click();
    const form = page.locator('#new-package');
    await form.getByLabel('Name').fill('Starter');
    await page.locator('#new-package-price').fill('4.99');
    await page.locator('#new-package-credits').fill('-5');
    await form.getByRole('button', { name: 'Create package' }).click();
    await page.locator('#new-package-credits-error').waitFor();
    t.match(await page.locator('#new-package-credits-error').textContent(), /credits must be/);
    t.same((await call(app, '/api/admin/payments/packages')).json(), [], 'nothing was created');

    await page.locator('#new-package-credits').fill('500');
    await page.locator('#new-package-bonus').fill('50');
    await page.locator('#new-package').getByRole('button', { name: 'Create package' }).click();
    t.match(await notice(page, /created/), /Package Starter created: 4\.99 USD for 550\.00 credits/);
    t.ok(await page.getByRole('table', { name: 'Packages' }).getByRole('link', { name: 'Starter' }).isVisible());
    t.match(
      (await call(app, '/api/admin/payments/packages')).json(),
      [{ name: 'Starter', price: '4.99', currency: 'USD', credits: '500.00', bonus: '50.00' }],
      'through the API',
    );

    await page.getByRole('link', { name: 'Starter' }).click();
    await page.locator('#edit-package-price').fill('3.99');
    await page.getByRole('button', { name: 'Save package' }).click();
    await notice(page, /saved/);
    t.match((await call(app, '/api/admin/payments/packages')).json(), [{ name: 'Starter', price: '3.99' }], 'the change through the API');
  });

  await t.test('site settings are changed', async (t) => {
    await menu.getByRole('link', { name: 'Site settings' }).click();
    const form = page.locator('#site-settings');
    await form.getByLabel('Time zone').fill('Mars/Olympus');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.locator('#site-settings-timezone-error').waitFor();
    t.match(await page.locator('#site-settings-timezone-error').textContent(), /timezone: unknown time zone/);
    t.equal((await call(app, '/api/admin/settings')).json().data.timezone, 'UTC', 'unchanged through the API');

    await page.locator('#site-settings-timezone').fill('Europe/Berlin');
    await page.locator('#site-settings-currency').fill('EUR');
    await page.locator('#site-settings-twoFactorEnabled').uncheck();
    await page.locator('#site-settings').getByRole('button', { name: 'Save settings' }).click();
    await notice(page, /Site settings saved/);
    t.equal(await page.locator('#site-settings-currency').inputValue(), 'EUR', 'on the page');
    t.notOk(await page.locator('#site-settings-twoFactorEnabled').isChecked());
    t.match((await call(app, '/api/admin/settings')).json().data, { currency: 'EUR', timezone: 'Europe/Berlin', twoFactorEnabled: false }, 'through the API');
  });

  await t.test('a vote link and a bazaar server are added', async (t) => {
    await menu.getByRole('link', { name: 'Vote links' }).click();
    const votes = page.locator('#new-vote-link');
    await votes.getByLabel('Name').fill('TopServers');
    await votes.getByLabel('Link').fill('javascript:alert(1)');
    await votes.getByRole('button', { name: 'Add vote link' }).click();
    await page.locator('#new-vote-link-link-error').waitFor();
    await page.locator('#new-vote-link-link').fill('https://topservers.example/vote?user={username}');
    await page.locator('#new-vote-link').getByRole('button', { name: 'Add vote link' }).click();
    await notice(page, /added/);
    t.match(
      (await call(app, '/api/vote-links?username=Steve')).json(),
      [{ name: 'TopServers', link: 'https://topservers.example/vote?user=Steve' }],
      'through the API',
    );

    await menu.getByRole('link', { name: 'Bazaar servers' }).click();
    await page.locator('#new-bazaar-server').getByLabel('Name').fill('Survival');
    await page.locator('#new-bazaar-server').getByRole('button', { name: 'Create server' }).click();
    await notice(page, /Bazaar server Survival created/);
    await page.getByRole('link', { name: 'Survival' }).click();
    await page.locator('#edit-bazaar-server-isActive').uncheck();
    await page.getByRole('button', { name: 'Save server' }).click();
    await notice(page, /saved/);
    t.match((await call(app, '/api/admin/bazaar/servers')).json(), [{ name: 'Survival', slug: 'survival', isActive: '0' }], 'through the API');
  });

  await t.test('chat settings are saved, an emptied field clears its setting', async (t) => {
    await call(app, '/api/admin/integrations/chat/settings', { method: 'PATCH', body: { syncedRoleID: '42' }, as: 'json' });
    await menu.getByRole('link', { name: 'Chat settings' }).click();
    const form = page.locator('#chat-settings');
    t.equal(await form.getByLabel('Synced role ID').inputValue(), '42');
    await form.getByLabel('Synced role ID').fill('');
    await form.getByLabel('Guild ID').fill('9001');
    await form.getByLabel('Ticket staff role IDs').fill('11, 12 bad!id');
    await form.getByRole('button', { name: 'Save chat settings' }).click();
    await page.locator('#chat-settings-ticketStaffRoleIDs-error').waitFor();
    await page.locator('#chat-settings-ticketStaffRoleIDs').fill('11, 12');
    await page.locator('#chat-settings-ticketStatus').check();
    await page.locator('#chat-settings').getByRole('button', { name: 'Save chat settings' }).click();
    await notice(page, /Chat settings saved/);
    t.match(
      (await call(app, '/api/admin/integrations/chat/settings')).json().data,
      {
        guildID: '9001',
        syncedRoleID: '',
        ticketStatus: true,
        ticketStaffRoleIDs: ['11', '12'],
      },
      'through the API',
    );
  });
});
