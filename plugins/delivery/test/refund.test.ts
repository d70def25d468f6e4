import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { expectErrors, read } from '../../../test/fixtures.ts';
import { build, call } from '../../../test/helper.ts';
import { fields, sql, typed } from '../../../core/sql.ts';
import { DeliveryQueue } from '../entities.ts';
import { CreditsLedgerEntry } from '../../credits/entities.ts';
import { StoreOrder, StoreProduct } from '../../store/entities.ts';

const Q = DeliveryQueue.c;
const stock = (app: FastifyInstance) =>
  app.db.query(sql`select ${fields({ id: StoreProduct.c.id, stock: StoreProduct.c.stock })} from ${StoreProduct} order by ${StoreProduct.c.id}`);
const ledger = (app: FastifyInstance) => CreditsLedgerEntry.select(app.db, sql`order by ${CreditsLedgerEntry.c.id}`);
const queuedFor = (app: FastifyInstance, runOn: string) =>
  app.db.query(sql`select ${fields({ command: Q.command, run_on: Q.runOn })} from ${DeliveryQueue} where ${Q.runOn} = ${runOn}`);
import { usersRef } from '../../users/contract.ts';
import type { DbUsersService } from '../../users/service.ts';
import { DELIVERY_FEATURES, addCommand, balanceOf, buy, makeCategory, makeProduct, makeRole, makeServer, makeUser, pollQueue, validate } from './fixtures.ts';

t.test('a refund undoes the purchase and queues the refund commands, once', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  await app.settings.update({ cashbackPercent: 10 });
  const server = await makeServer(app);
  const category = await makeCategory(app, { name: 'Ranks' });
  const vip = await makeRole(app, 'VIP');
  const king = await makeRole(app, 'King');
  const rank = await makeProduct(app, { categoryID: category, name: 'VIP', price: '10', giveRoleID: vip, duration: 30, stock: 5 });
  const crown = await makeProduct(app, { categoryID: category, name: 'Crown', price: '5', giveRoleID: king, duration: 0 });
  await addCommand(app, rank, { serverID: server.id, trigger: 'refund', command: 'lp user {username} parent remove vip #{orderID}' });
  const steve = await makeUser(app, 'steve', 10_000);
  const users = app.services.get(usersRef);
  const lastOrder = async () =>
    Number((await app.db.query(sql`select ${fields({ id: typed<number>(sql`max(${StoreOrder.c.id})`) })} from ${StoreOrder}`))[0]!.id);

  // An earlier VIP purchase stays: the refund takes back only the second one's 60 days.
  t.ok([200, 201].includes((await buy(app, { userID: steve, products: [rank] })).statusCode));
  const before = {
    balance: await balanceOf(app, steve),
    roles: await users.rolesOf(steve),
    stock: await stock(app),
    ledger: await ledger(app),
  };
  let res = await buy(app, { userID: steve, products: [{ id: rank, quantity: 2 }, crown] });
  t.ok([200, 201].includes(res.statusCode), res.body);
  const orderId = await lastOrder();
  t.equal(await balanceOf(app, steve), before.balance - 2500 + 250);

  res = await call(app, `/api/admin/store/orders/${orderId}/refund`, { method: 'POST' });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), { id: String(orderId), status: 'refunded', total: '25.00', cashback: '2.50' });
  t.equal(await balanceOf(app, steve), before.balance, 'price back, cashback taken back');
  t.same(await users.rolesOf(steve), before.roles, 'the timed role shortened by what it added, the permanent one revoked');
  t.same(await stock(app), before.stock, 'stock restored');
  const after = await ledger(app);
  t.same(after.slice(0, before.ledger.length), before.ledger, 'earlier ledger rows untouched');
  t.same(
    after.slice(-2).map((r) => [Number(r.delta), r.reason]),
    [
      [2500, 'refund'],
      [-250, 'refund'],
    ],
    'plus the refund rows',
  );
  const queued = await queuedFor(app, 'refund');
  t.same(queued, [{ command: `lp user steve parent remove vip #${orderId}`, run_on: 'refund' }], 'the refund commands queued');

  const snapshot = await ledger(app);
  await expectErrors(t, app, [
    { url: `/api/admin/store/orders/${orderId}/refund`, method: 'POST', status: 409, error: 'CONFLICT', message: /refunded/ },
    { url: '/api/admin/store/orders/999/refund', method: 'POST', status: 404, error: 'ORDER_NOT_FOUND' },
    { url: '/api/admin/store/orders/abc/refund', method: 'POST', status: 404, error: 'ORDER_NOT_FOUND' },
  ]);
  t.same(await ledger(app), snapshot, 'a second refund changes nothing');
  t.equal((await queuedFor(app, 'refund')).length, 1);

  // Two refunds at once: exactly one happens.
  res = await buy(app, { userID: steve, products: [rank] });
  const again = await lastOrder();
  const both = await Promise.all([1, 2].map(() => call(app, `/api/admin/store/orders/${again}/refund`, { method: 'POST' })));
  t.same(both.map((r) => r.statusCode).sort(), [200, 409]);
  t.equal(await balanceOf(app, steve), before.balance);

  const payment = await call(app, '/api/admin/payments', { body: { username: 'steve', amount: '5.00' } });
  t.equal(payment.statusCode, 201, payment.body);
  await expectErrors(t, app, [
    { url: `/api/admin/store/orders/${payment.json().id}/refund`, method: 'POST', status: 400, error: 'VALIDATION_ERROR', message: /payment/ },
  ]);
  t.equal(await balanceOf(app, steve), before.balance + 500, 'a payment order is not refunded here');
});

t.test("a purchased role that expires queues the product's expiry commands once", async (t) => {
  // The test runs the sweeps itself: the background one waits an hour.
  const app = await build(t, { features: DELIVERY_FEATURES, config: { plugins: { users: { sweepSeconds: 3600 } } } });
  const server = await makeServer(app);
  const category = await makeCategory(app, { name: 'Ranks' });
  const vip = await makeRole(app, 'VIP');
  const other = await makeRole(app, 'Other');
  const rank = await makeProduct(app, { categoryID: category, name: 'VIP', price: '1', giveRoleID: vip, duration: 30 });
  await addCommand(app, rank, { serverID: server.id, trigger: 'expiry', command: 'lp user {username} parent remove vip {quantity}' });
  const steve = await makeUser(app, 'steve', 1000);
  const users = app.services.get(usersRef);
  t.ok([200, 201].includes((await buy(app, { userID: steve, products: [{ id: rank, quantity: 2 }] })).statusCode));
  t.equal((await queuedFor(app, 'expiry')).length, 0, 'nothing before it expires');

  const past = '2020-01-01 00:00:00';
  await users.grantRole(steve, vip, past);
  await users.grantRole(steve, other, past);
  const sweep = () => (users as DbUsersService).sweepExpired();
  t.equal(await sweep(), 2, 'both roles expire');
  const rows = await app.db.query(sql`select ${fields({ command: Q.command })} from ${DeliveryQueue} where ${Q.runOn} = 'expiry'`);
  t.same(rows, [{ command: 'lp user steve parent remove vip 2' }], "only the purchased role's product, once");
  t.equal(await sweep(), 0);
  t.equal((await queuedFor(app, 'expiry')).length, 1, 'the next sweep adds nothing');
});

t.test('a refund cancels the purchase commands no game server has taken, decided row by row against concurrent hand-outs', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const server = await makeServer(app);
  const category = await makeCategory(app, { name: 'Ranks' });
  const rank = await makeProduct(app, { categoryID: category, name: 'VIP', price: '1' });
  await addCommand(app, rank, { serverID: server.id, trigger: 'purchase', command: 'say {username} bought VIP #{orderID}' });
  await addCommand(app, rank, { serverID: server.id, trigger: 'refund', command: 'lp user {username} parent remove vip #{orderID}' });
  const steve = await makeUser(app, 'steve', 100_000);
  const order = async () => {
    t.ok([200, 201].includes((await buy(app, { userID: steve, products: [rank] })).statusCode));
    const [row] = await app.db.query(sql`select ${fields({ id: Q.id, order_id: Q.orderId })} from ${DeliveryQueue}
      where ${Q.runOn} = 'purchase' order by ${Q.id} desc limit 1`);
    return { id: String(row!.id), order: Number(row!.order_id) };
  };
  const refund = (orderId: number) => call(app, `/api/admin/store/orders/${orderId}/refund`, { method: 'POST' });
  const statusOf = async (id: string) =>
    (
      await app.db.query(sql`select ${fields({ status: DeliveryQueue.c.status })} from ${DeliveryQueue}
      where ${DeliveryQueue.c.id} = ${Number(id)}`)
    )[0]!.status;

  // Refunded before the server polled: the purchase command never goes out, the refund command does.
  const early = await order();
  t.equal((await refund(early.order)).statusCode, 200);
  t.equal(await statusOf(early.id), 'cancelled');
  t.same((await validate(app, server.token, [early.id])).json(), { commands: [] }, 'the plugin is not handed the purchase');
  const listed = (await pollQueue(app, server.token)).json().map((r: { id: string }) => r.id);
  t.notOk(listed.includes(early.id), 'nor is it listed');
  const handed = (await validate(app, server.token, listed)).json().commands;
  t.same(handed, [{ command: `lp user steve parent remove vip #${early.order}`, username: 'steve' }], 'only the refund command runs');
  t.match(await read(app, `/api/admin/delivery/queue?order=${early.order}`), [
    { trigger: 'refund', status: 'done' },
    { id: early.id, trigger: 'purchase', status: 'cancelled', lastError: /refunded/ },
  ]);

  // Taken before the refund: it stays delivered, and the refund command undoes it.
  const late = await order();
  t.equal((await validate(app, server.token, [late.id])).json().commands.length, 1);
  t.equal((await refund(late.order)).statusCode, 200);
  t.equal(await statusOf(late.id), 'done');

  // Refunds racing hand-outs: each purchase row is either handed out or cancelled, never both.
  const raced: { id: string; order: number }[] = [];
  for (let i = 0; i < 6; i++) raced.push(await order());
  const [, ...outs] = await Promise.all([Promise.all(raced.map((r) => refund(r.order))), ...raced.map((r) => validate(app, server.token, [r.id]))]);
  const out = new Set(outs.flatMap((res, i) => (res.json().commands.length ? [raced[i]!.id] : [])));
  for (const r of raced) t.equal(await statusOf(r.id), out.has(r.id) ? 'done' : 'cancelled', `row ${r.id}: handed out XOR cancelled`);
  t.same(
    (
      await validate(
        app,
        server.token,
        raced.map((r) => r.id),
      )
    ).json(),
    { commands: [] },
    'nothing of a refunded order goes out afterwards',
  );
});
