/**
 * The Webhooks section in a real browser: an endpoint made, refused and changed through its
 * forms, a test message sent and seen delivered with its attempt, a redelivery, the wording of
 * an announcement, and axe on each page.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { axeViolations, browse, consoleSignIn, grant, hasChromium, register, role, serve, skipReason } from '../../../test/browser.ts';
import { call } from '../../../test/helper.ts';
import { RECEIVERS, startReceiver, verified } from '../../../test/receiver.ts';

async function shows(page: Page, text: RegExp): Promise<void> {
  await page.getByRole('status').filter({ hasText: text }).waitFor();
}

t.test('the Webhooks section in chromium', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base } = await serve(t, { plugins: { notifications: { pollMs: 100 } }, outbound: RECEIVERS });
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const page = await (await browse(t)).newPage();
  page.on('dialog', (dialog) => {
    void dialog.accept();
  });
  await consoleSignIn(page, base, 'Alice');
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Webhooks' }).click();

  const form = page.locator('#new-endpoint');
  await page.locator('#new-endpoint-name').fill('ERP');
  await page.locator('#new-endpoint-url').fill(receiver.url);
  await page.locator('#new-endpoint-events').fill('credits.changed store.nothing');
  await form.getByRole('button', { name: 'Create endpoint' }).click();
  await page.locator('#new-endpoint-events-error').filter({ hasText: 'store.nothing' }).waitFor();
  t.same((await call(app, '/api/admin/notifications/endpoints')).json(), [], 'the refused form stored nothing');
  t.same(await axeViolations(page), [], 'the list with a refused form passes axe');

  await page.locator('#new-endpoint-events').fill('credits.changed, users.created');
  await page.locator('#new-endpoint-active').check();
  await form.getByRole('button', { name: 'Create endpoint' }).click();
  await shows(page, /Endpoint ERP created/);
  const [made] = (await call(app, '/api/admin/notifications/endpoints')).json();
  t.match(made, { name: 'ERP', kind: 'webhook', url: receiver.url, events: ['credits.changed', 'users.created'], active: true });

  await page.getByRole('link', { name: 'Deliveries of ERP' }).click();
  await page.getByText(made.secret).waitFor();
  await page.getByRole('button', { name: 'Send a test message' }).click();
  await shows(page, /A test message is on its way to ERP/);
  const [got] = await receiver.waitFor(1);
  t.equal(verified(made.secret, got!).type, 'notifications.test', 'the receiver verifies the test message');
  await page.reload();
  await page.getByRole('link', { name: 'notifications.test' }).click();
  await page.getByRole('cell', { name: '200' }).waitFor();
  t.same(await axeViolations(page), [], "a delivery's attempts pass axe");
  await page.getByRole('button', { name: 'Send again' }).click();
  await shows(page, /queued again/);
  await receiver.waitFor(2);
  t.equal(receiver.ids().size, 1, 'the redelivery carries the same webhook-id');
  t.same(await axeViolations(page), [], 'the deliveries page passes axe');

  await page.getByRole('link', { name: 'Endpoints' }).first().click();
  await page.getByRole('link', { name: 'ERP', exact: true }).click();
  await page.locator('#edit-endpoint-kind').selectOption('discord');
  await page.locator('#edit-endpoint-active').uncheck();
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await page.locator('#edit-endpoint-url-error').filter({ hasText: 'Discord webhook address' }).waitFor();
  t.match(
    (await call(app, `/api/admin/notifications/endpoints/${made.id}`)).json(),
    { kind: 'webhook', url: receiver.url },
    "a Discord announcement to an address that is not Discord's is refused, nothing changed",
  );
  const discord = 'https://discord.com/api/webhooks/123456789012345678/channel-token';
  await page.locator('#edit-endpoint-url').fill(discord);
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await shows(page, /Endpoint ERP saved/);
  t.match((await call(app, `/api/admin/notifications/endpoints/${made.id}`)).json(), {
    kind: 'discord',
    url: discord,
    active: false,
    events: ['credits.changed', 'users.created'],
  });

  await page.getByRole('link', { name: 'Announcement wording' }).click();
  await page.getByRole('link', { name: 'store.order.completed' }).click();
  t.equal(await page.locator('#template-title').inputValue(), 'New purchase', 'the built-in wording is shown');
  await page.locator('#template-title').fill('{{username}} bought something');
  await page.getByRole('button', { name: 'Save wording' }).click();
  await shows(page, /announcement of store.order.completed is saved/);
  t.match(
    (await call(app, '/api/admin/notifications/templates')).json().find((x: { event: string }) => x.event === 'store.order.completed'),
    { title: '{{username}} bought something', custom: true },
  );
  t.same(await axeViolations(page), [], 'the wording list passes axe');

  await page.getByRole('link', { name: 'Endpoints' }).first().click();
  await page.getByRole('button', { name: 'Delete ERP' }).click();
  await shows(page, /Endpoint ERP deleted/);
  t.same((await call(app, '/api/admin/notifications/endpoints')).json(), []);
});
