/** The dashboard in a real browser: what needs attention (a failed delivery, a debt, a dispute, a ticket) and the 30-day charts. */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { STRIPE_ENV, mockStripeSession, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { call } from '../../../test/helper.ts';
import { browse, grant, hasChromium, purchaseWithCommand, register, role, screenshot, serve, signIn, skipReason } from './browser.ts';

const charge = (type: string, eventId: string, sessionId: string, amount: number) => ({
  id: eventId,
  type,
  data: {
    object:
      type === 'charge.refunded'
        ? { id: `ch_${sessionId}`, object: 'charge', amount, amount_refunded: amount, refunded: true, payment_intent: `pi_${sessionId}`, metadata: {} }
        : { id: `dp_${sessionId}`, object: 'dispute', amount, charge: `ch_${sessionId}`, payment_intent: `pi_${sessionId}` },
  },
});

t.test('the dashboard lists what needs attention and charts the last 30 days', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base } = await serve(t, { plugins: { delivery: { maxTries: 1 } } }, STRIPE_ENV);
  const adminId = await register(app, 'Alice');
  await grant(app, adminId, await role(app, 'Admin'));
  const page = await (await browse(t)).newPage();
  await signIn(page, base, 'Alice');
  const attention = page.locator('section.attention');
  await attention.waitFor();
  t.match(await attention.textContent(), /Nothing needs attention/, 'a fresh shop has nothing to act on');

  // A purchase whose command fails for good on the game server.
  const { server, steveId } = await purchaseWithCommand(app, 'lp user {username} parent add vip');
  const claimed = (await call(app, '/api/delivery/claim', { as: 'json', body: { token: server.token } })).json().commands;
  t.equal(claimed.length, 1);
  t.equal(
    (await call(app, '/api/delivery/ack', { as: 'json', body: { token: server.token, ids: [claimed[0].id], result: 'failed', message: 'no such group' } }))
      .statusCode,
    200,
  );

  // A top-up refunded at the gateway after 6.00 of it was spent: a debt; another disputed.
  const topUp = async (session: string, amount: string) => {
    mockStripeSession(session);
    const res = await call(app, '/api/payments/checkout', {
      body: { gateway: 'stripe', username: 'Steve', amount, returnURL: 'https://play.example.com/', cancelURL: 'https://play.example.com/' },
    });
    const paymentID = res.json().data.paymentID;
    t.equal((await stripeWebhook(app, sessionCompleted(`evt_${session}`, paymentID, session, Number(amount) * 100))).statusCode, 200);
  };
  await topUp('cs_debt', '10.00');
  await call(app, '/api/credits/remove', { body: { target_username: 'Steve', amount: '6.00' } });
  t.equal((await stripeWebhook(app, charge('charge.refunded', 'evt_refund', 'cs_debt', 1000))).statusCode, 200);
  // Kept before the dispute: a dispute puts the buyer on the block list, which refuses further top-ups.
  await topUp('cs_kept', '2.00');
  await topUp('cs_dispute', '3.00');
  t.equal((await stripeWebhook(app, charge('charge.dispute.created', 'evt_dispute', 'cs_dispute', 300))).statusCode, 200);

  // A ticket nobody answered.
  const category = (await call(app, '/api/admin/support/categories', { body: { name: 'Payments' } })).json().id;
  t.equal(
    (await call(app, '/api/support/tickets', { body: { accountID: String(steveId), categoryID: category, title: 'Refund?', message: 'Where is my VIP?' } }))
      .statusCode,
    200,
  );

  await page.goto(`${base}/console`);
  const items = (await attention.getByRole('listitem').allTextContents()).map((s) => s.trim());
  t.match(
    items,
    [/^1 ticket waiting for an answer$/, /^1 command failed for good/, /^1 payment disputed/, /^1 player owing 6\.00 in credits/],
    'each trouble, in the order of the menu',
  );
  t.notOk(
    items.some((i) => /game server not seen/.test(i)),
    'the server claimed just now was seen',
  );

  const credit = page.getByRole('img', { name: /Credit sales, last 30 days/ });
  t.match(await credit.getAttribute('aria-labelledby'), /heading .*summary/);
  t.match(
    await page.locator('figcaption').first().textContent(),
    /^30 days, 5\.00 in all; the most on \d{4}-\d{2}-\d{2} \(5\.00\)\.$/,
    'the chart says what it shows',
  );
  t.equal(await credit.locator('rect.bar').count(), 30, 'one bar a day');
  const received = page.locator('figcaption').nth(1);
  t.match(await received.textContent(), /^30 days, 2\.00 in all/, 'top-ups: the one kept; the refunded and the disputed ones are not money in hand');
  await screenshot(page, 'dashboard');
  await page.getByText('Figures by day').first().click();
  t.ok(await page.getByRole('table', { name: 'Credit sales, last 30 days, by day' }).isVisible(), 'the figures as a table');
  t.same(await axeViolations(page), [], 'the dashboard passes axe');

  await attention.getByRole('link', { name: /failed for good/ }).click();
  await page.getByRole('heading', { name: 'Delivery', level: 1 }).waitFor();
  t.match(
    await page.getByRole('table', { name: 'Queued commands, newest first' }).textContent(),
    /lp user Steve parent add vip.*failed/,
    'the link leads to the failed command',
  );
});
