/** Chargebacks: the owner's commands queued for the player, the player flagged, and a won dispute undoing the debt and the flag. */
import t from 'tap';
import { makeCategory, makeProduct, newUser, read } from '../../../test/fixtures.ts';
import { call } from '../../../test/helper.ts';
import { balanceOf, buildShop, chargeRefunded, disputeCreated, sessionCompleted, stripeCheckout, stripeWebhook } from './fixtures.ts';

const disputeClosed = (eventId: string, sessionId: string, status: 'won' | 'lost') => ({
  id: eventId,
  type: 'charge.dispute.closed',
  data: { object: { id: `dp_${sessionId}`, object: 'dispute', status, charge: `ch_${sessionId}`, payment_intent: `pi_${sessionId}` } },
});

t.test("a chargeback queues the owner's commands, flags the player, and a won dispute undoes it", async (t) => {
  const app = await buildShop(t);
  const steve = await newUser(app, 'steve');
  const server = (await call(app, '/api/admin/delivery/servers', { body: { name: 'Lobby' }, as: 'json' })).json();

  await t.test('chargeback commands through the admin API: a bad one is refused', async (t) => {
    const bad = await call(app, '/api/admin/delivery/chargeback-commands', { as: 'json', body: { serverID: '999', command: 'ban {username}' } });
    t.equal(bad.statusCode, 404);
    t.equal(bad.json().error, 'DELIVERY_SERVER_NOT_FOUND');
    const made = await call(app, '/api/admin/delivery/chargeback-commands', {
      as: 'json',
      body: { serverID: String(server.id), command: 'ban {username} chargeback' },
    });
    t.equal(made.statusCode, 201, made.body);
    t.match(await read(app, '/api/admin/delivery/chargeback-commands'), [
      { serverID: String(server.id), command: 'ban {username} chargeback', trigger: 'chargeback' },
    ]);
  });

  const paymentID = await stripeCheckout(app, 'cs_cb', { username: 'steve', amount: '10.00' });
  t.equal((await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_cb', 1000))).statusCode, 200);
  await call(app, '/api/credits/remove', { body: { target_username: 'steve', amount: '6.00' } });

  await t.test('a dispute takes the credits back, leaves a debt and queues the ban for the player', async (t) => {
    const res = await stripeWebhook(app, disputeCreated('evt_dispute', 'cs_cb', 1000));
    t.strictSame(res.json(), { status: true, data: { result: 'disputed' } });
    t.equal(await balanceOf(app, 'steve'), 0);
    t.match(await read(app, `/api/payments/${paymentID}`), { status: 'disputed', reclaimed: '4.00', debt: '6.00' });
    const queue = await read(app, `/api/admin/delivery/queue?server=${server.id}`);
    t.match(queue, [{ command: 'ban steve chargeback', userID: String(steve.id), username: 'steve', status: 'waiting', trigger: 'chargeback' }]);
  });

  await t.test('a lost dispute is recorded and takes nothing more', async (t) => {
    const res = await stripeWebhook(app, disputeClosed('evt_lost', 'cs_cb', 'lost'));
    t.strictSame(res.json(), { status: true, data: { result: 'lost' } });
    t.match(await read(app, `/api/payments/${paymentID}`), { status: 'disputed', debt: '6.00' });
  });

  await t.test('a won dispute gives the credits back and clears the debt, once', async (t) => {
    const res = await stripeWebhook(app, disputeClosed('evt_won', 'cs_cb', 'won'));
    t.strictSame(res.json(), { status: true, data: { result: 'reinstated' } });
    t.equal(await balanceOf(app, 'steve'), 4, 'what the dispute took is back');
    t.match(await read(app, `/api/payments/${paymentID}`), { status: 'completed', reclaimed: '0.00', debt: '0.00' });
    t.same(await read(app, '/api/admin/payments/debts'), [], 'no debt left');
    t.strictSame((await stripeWebhook(app, disputeClosed('evt_won', 'cs_cb', 'won'))).json(), { status: true, data: { result: 'duplicate' } });
    t.strictSame((await stripeWebhook(app, disputeClosed('evt_won_again', 'cs_cb', 'won'))).json(), { status: true, data: { result: 'unchanged' } });
    t.equal(await balanceOf(app, 'steve'), 4, 'given back once');
  });

  await t.test('a chargeback command is deleted', async (t) => {
    const [command] = await read(app, '/api/admin/delivery/chargeback-commands');
    t.equal((await call(app, `/api/admin/delivery/chargeback-commands/${command.id}`, { method: 'DELETE' })).statusCode, 200);
    t.equal((await call(app, `/api/admin/delivery/chargeback-commands/${command.id}`, { method: 'DELETE' })).statusCode, 404);
    t.same(await read(app, '/api/admin/delivery/chargeback-commands'), []);
  });
});

t.test('with chargebackRefundsOrders, the purchases made since the top-up are refunded first and cover the debt', async (t) => {
  const app = await buildShop(t, { chargebackRefundsOrders: true });
  const steve = await newUser(app, 'steve');
  const productId = await makeProduct(app, { name: 'VIP', categoryID: String(await makeCategory(app, { name: 'Ranks' })), price: '6.00' });
  const paymentID = await stripeCheckout(app, 'cs_orders', { username: 'steve', amount: '10.00' });
  t.equal((await stripeWebhook(app, sessionCompleted('evt_paid', paymentID, 'cs_orders', 1000))).statusCode, 200);
  t.equal((await call(app, '/api/store/buy', { body: { userID: String(steve.id), products: [String(productId)] } })).statusCode, 200);
  t.equal(await balanceOf(app, 'steve'), 4);
  const res = await stripeWebhook(app, chargeRefunded('evt_refund', 'cs_orders', 1000));
  t.strictSame(res.json(), { status: true, data: { result: 'refunded' } });
  const orders = await read(app, `/api/users/${steve.id}/orders`);
  t.match(
    orders.find((o: { type: string }) => o.type === 'credit'),
    { status: 'refunded' },
    'the purchase is refunded',
  );
  t.equal(await balanceOf(app, 'steve'), 0);
  t.match(
    await read(app, `/api/payments/${paymentID}`),
    { status: 'refunded', reclaimed: '10.00', debt: '0.00' },
    'no debt: the purchase gave its credits back first',
  );
});
