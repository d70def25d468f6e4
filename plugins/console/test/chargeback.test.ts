/** Chargebacks in a real browser: the owner sets the command, a dispute runs it and flags the player, a won dispute clears the flag. */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { STRIPE_ENV, mockStripeSession, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { call } from '../../../test/helper.ts';
import { hasChromium, notice, register, signIn, skipReason, staffBrowser } from './browser.ts';

const dispute = (type: 'created' | 'closed', eventId: string, session: string) => ({
  id: eventId,
  type: `charge.dispute.${type}`,
  data: {
    object: { id: `dp_${session}`, object: 'dispute', amount: 1000, status: type === 'closed' ? 'won' : 'needs_response', payment_intent: `pi_${session}` },
  },
});

t.test("a chargeback runs the owner's command and flags the player until the dispute is won", { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base, page } = await staffBrowser(t, STRIPE_ENV);
  const steveId = await register(app, 'Steve');
  await call(app, '/api/admin/delivery/servers', { body: { name: 'Lobby' }, as: 'json' });
  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

  await page.goto(`${base}/console/delivery`);
  await page.getByRole('link', { name: /Chargeback commands/ }).click();
  await page.getByRole('heading', { name: 'Chargeback commands', level: 1 }).waitFor();
  const form = page.locator('#new-chargeback-command');
  await form.getByRole('button', { name: 'Add command' }).click();
  await page.locator('#new-chargeback-command-serverID-error').waitFor();
  await form.getByLabel('Game server').selectOption({ label: 'Lobby' });
  await form.getByLabel('Command').fill('ban {username} chargeback');
  await form.getByRole('button', { name: 'Add command' }).click();
  await notice(page, /Chargebacks now run/);
  t.ok(await page.getByRole('table', { name: 'Run on every chargeback' }).getByRole('cell', { name: 'ban {username} chargeback' }).isVisible());
  t.same(await axeViolations(page), [], 'the chargeback page passes axe');

  mockStripeSession('cs_cb');
  const checkout = await call(app, '/api/payments/checkout', {
    body: { gateway: 'stripe', username: 'Steve', amount: '10.00', returnURL: 'https://play.example.com/', cancelURL: 'https://play.example.com/' },
  });
  const paymentID = checkout.json().data.paymentID;
  t.equal((await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_cb', 1000))).statusCode, 200);
  t.equal((await stripeWebhook(app, dispute('created', 'evt_dispute', 'cs_cb'))).json().data.result, 'disputed');

  await page.goto(`${base}/console/delivery`);
  t.match(
    await page.getByRole('table', { name: 'Queued commands, newest first' }).textContent(),
    /Lobby.*Steve.*ban Steve chargeback.*waiting/,
    'the command is queued',
  );
  await page.goto(`${base}/console/players/${steveId}`);
  t.match(await page.locator('ul.stats').textContent(), /flagged/, 'the player is flagged');
  t.match(await page.getByRole('table', { name: 'Chargebacks' }).textContent(), /stripe.*disputed.*10\.00 USD/);
  t.same(await axeViolations(page), [], 'the flagged player page passes axe');

  t.equal((await stripeWebhook(app, dispute('closed', 'evt_won', 'cs_cb'))).json().data.result, 'reinstated');
  await page.reload();
  t.notMatch(await page.locator('ul.stats').textContent(), /flagged/, 'a won dispute clears the flag');
  t.equal(await page.getByRole('table', { name: 'Chargebacks' }).count(), 0);
});
