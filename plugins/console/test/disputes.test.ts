/** Disputes in a real browser: a dispute is listed with its block and the dashboard's figures, and staff lift the block. */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { STRIPE_ENV, mockStripeSession, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { call } from '../../../test/helper.ts';
import { hasChromium, notice, register, signIn, skipReason, staffBrowser } from './browser.ts';

const URLS = { returnURL: 'https://play.example.com/', cancelURL: 'https://play.example.com/' };

t.test('a dispute shows on the dashboard and in Disputes, and staff lift its block', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base, page } = await staffBrowser(t, STRIPE_ENV);
  await register(app, 'Steve');
  mockStripeSession('cs_dp');
  const paymentID = (await call(app, '/api/payments/checkout', { body: { gateway: 'stripe', username: 'Steve', amount: '10.00', ...URLS } })).json().data
    .paymentID;
  await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_dp', 1000));
  const opened = {
    id: 'evt_dispute',
    type: 'charge.dispute.created',
    data: {
      object: { id: 'dp_1', object: 'dispute', amount: 1000, currency: 'usd', reason: 'fraudulent', status: 'needs_response', payment_intent: 'pi_cs_dp' },
    },
  };
  t.equal((await stripeWebhook(app, opened)).json().data.result, 'disputed');

  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
  const stats = await page.locator('main').textContent();
  t.match(stats, /1\s*disputes open/, 'the dashboard counts the open dispute');
  t.match(stats, /100\.00%\s*dispute rate/, 'and the dispute rate');

  await page.goto(`${base}/console/disputes`);
  t.match(await page.getByRole('table', { name: 'Disputes, newest first' }).textContent(), /stripe \(dp_1\).*fraudulent.*open.*10\.00 USD/);
  const blocks = page.getByRole('table', { name: 'Players blocked from paying' });
  t.match(await blocks.textContent(), /Steve.*disputed at stripe/);
  t.same(await axeViolations(page), [], 'the disputes page passes axe');

  await blocks.getByRole('button', { name: /Lift block/ }).click();
  await notice(page, /may pay again/);
  t.match(await page.getByRole('table', { name: 'Players blocked from paying' }).textContent(), /Nobody is blocked/);
  const [entry] = (await call(app, '/api/admin/audit?action=payments.block.lifted')).json();
  t.match(entry, { actor: 'Alice', action: 'payments.block.lifted' }, 'the lift is in the audit log under who made it');
});
