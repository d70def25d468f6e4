/** Orders in a real browser: players by name, an order's delivery beside it, and a command redelivered; each checked through the API too. */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { ADMIN_KEY, call } from '../../../test/helper.ts';
import { hasChromium, notice, purchaseWithCommand, screenshot, signIn, skipReason, staffBrowser } from './browser.ts';

t.test('an order shows its player by name and its delivery, with redeliver', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base, page, menu } = await staffBrowser(t);
  const { server, steveId, orderId } = await purchaseWithCommand(app, 'say thanks {username}');
  // The game server takes the command through the plugin's HTTP mode: it is done.
  const queue = await app.inject({ url: `/api/command-logs/${server.token}/queue`, headers: { 'x-api-key': ADMIN_KEY } });
  const ids = queue.json().map((r: { id: string }) => r.id);
  t.equal(ids.length, 1);
  t.equal((await call(app, '/api/command-logs/validate', { body: { token: server.token, commands: ids }, as: 'urlencoded' })).statusCode, 200);

  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
  await menu.getByRole('link', { name: 'Orders' }).click();
  await page.getByRole('heading', { name: 'Orders', level: 1 }).waitFor();
  const orders = page.getByRole('table', { name: 'Orders, newest first' });
  t.ok(await orders.getByRole('link', { name: 'Steve', exact: true }).isVisible(), 'the list names the player');
  t.notOk(await orders.getByRole('columnheader', { name: 'Player ID' }).count(), 'no column of IDs');

  await orders.getByRole('link', { name: `#${orderId}` }).click();
  await page.getByRole('heading', { name: `Order #${orderId}` }).waitFor();
  t.equal(
    await page.getByRole('link', { name: 'Steve player' }).getAttribute('href'),
    `/console/players/${steveId}`,
    'the order names its player, linked to their page',
  );
  const delivery = page.getByRole('table', { name: 'Delivery' });
  const row = delivery.getByRole('row').filter({ hasText: 'say thanks Steve' });
  t.match(await row.textContent(), /Lobby.*say thanks Steve.*purchase.*done/, 'the command, its server and that it ran');
  t.same(await axeViolations(page), [], 'the order page passes axe');
  await screenshot(page, 'order');

  await row.getByRole('button', { name: /Redeliver command/ }).click();
  t.match(await notice(page, /delivered again/), /waiting to be delivered again/);
  t.match(await delivery.getByRole('row').filter({ hasText: 'say thanks Steve' }).textContent(), /waiting/, 'the page shows it waiting');
  t.equal(await delivery.getByRole('button', { name: /Redeliver command/ }).count(), 0, 'a waiting command is not offered again');
  const api = (await call(app, `/api/admin/delivery/queue?order=${orderId}`)).json();
  t.match(api, [{ status: 'waiting', tries: '0' }], 'through the API');
  const [entry] = (await call(app, '/api/admin/audit?action=delivery.')).json();
  t.match(
    entry,
    { actor: 'Alice', action: 'delivery.command.redeliver', summary: `Queued again "say thanks Steve" for Steve (order ${orderId})` },
    'and in the audit log',
  );

  await t.test('a command of another order cannot be redelivered from this one', async (t) => {
    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const other = await page.request.post(`${base}/console/orders/${Number(orderId) + 1}/deliveries/${ids[0]}/redeliver`, { form: { _csrf: csrf } });
    t.equal(other.status(), 404);
  });
});
