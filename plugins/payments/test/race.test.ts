/** Racing webhooks: whatever arrives together, the database lets one completion and one reversal through. */
import t from 'tap';
import { call, onMysql } from '../../../test/helper.ts';
import { newUser, read, rowCount } from '../../../test/fixtures.ts';
import { sql } from '../../../core/sql.ts';
import { CreditsLedgerEntry } from '../../credits/entities.ts';
import { balanceOf, buildPayments, chargeRefunded, offline, sessionCompleted, stripeCheckout, stripeWebhook } from './fixtures.ts';

offline(t);

t.test(`racing completions and refunds credit once (${onMysql ? 'MySQL/MariaDB: real concurrency' : 'SQLite: serialised writers'})`, async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  const paymentID = await stripeCheckout(app, 'cs_race', { username: 'steve', amount: '10.00' });
  // The same event redelivered while the first delivery runs, and distinct events that all mean "paid".
  const deliveries = [
    ...Array.from({ length: 4 }, () => sessionCompleted('evt_same', paymentID, 'cs_race', 1000)),
    ...Array.from({ length: 4 }, (_, i) => sessionCompleted(`evt_other_${i}`, paymentID, 'cs_race', 1000)),
  ];
  const answers = await Promise.all(deliveries.map((event) => stripeWebhook(app, event)));
  t.strictSame(
    answers.map((a) => a.statusCode),
    deliveries.map(() => 200),
    answers.map((a) => a.body).join('\n'),
  );
  const results = answers.map((a) => a.json().data.result as string);
  t.equal(results.filter((r) => r === 'completed').length, 1, `one completion: ${results.join(', ')}`);
  t.equal(await balanceOf(app, 'steve'), 10);
  t.equal(await rowCount(app, 'store_orders'), 1);
  t.equal(await rowCount(app, 'donations_entries'), 1);
  t.equal(await rowCount(app, 'payments_events'), 5, 'one row per distinct event');

  const refunds = await Promise.all(Array.from({ length: 4 }, (_, i) => stripeWebhook(app, chargeRefunded(`evt_refund_${i % 2}`, 'cs_race', 1000))));
  const refundResults = refunds.map((a) => a.json().data?.result as string);
  t.equal(refundResults.filter((r) => r === 'refunded').length, 1, `one reversal: ${refundResults.join(', ')}`);
  t.equal(await balanceOf(app, 'steve'), 0);
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'refunded', reclaimed: '10.00', debt: '0.00' });
  const refundRows = await CreditsLedgerEntry.select(app.db, sql`where ${CreditsLedgerEntry.c.reason} = 'refund'`);
  t.equal(refundRows.length, 1, 'one ledger row takes the credits back');
});

t.test('a refund racing a purchase from the same balance: never negative, the debt is what the purchase spent', async (t) => {
  const app = await buildPayments(t);
  await newUser(app, 'steve');
  const paymentID = await stripeCheckout(app, 'cs_spend', { username: 'steve', amount: '10.00' });
  await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_spend', 1000));
  const [refund, spend] = await Promise.all([
    stripeWebhook(app, chargeRefunded('evt_refund', 'cs_spend', 1000)),
    call(app, '/api/credits/remove', { body: { target_username: 'steve', amount: '6.00' } }),
  ]);
  t.strictSame(refund.json(), { status: true, data: { result: 'refunded' } }, refund.body);
  t.equal(await balanceOf(app, 'steve'), 0);
  const payment = await read(app, `/api/payments/${paymentID}`);
  t.equal(payment.debt, spend.statusCode === 200 ? '6.00' : '0.00', `the purchase ${spend.statusCode === 200 ? 'won' : 'lost'} the race`);
  t.equal(Number(payment.reclaimed) + Number(payment.debt), 10);
});
