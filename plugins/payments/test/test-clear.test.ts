/**
 * Clearing test orders (issue 49) takes what other features keep of them too: their queued
 * delivery commands (none is handed to a game server later) and their coupon uses (the coupon's
 * and the player's counts given back), while a real order's stay.
 */
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { grant, register, role, signInByForm } from '../../../test/browser.ts';
import { created, makeCategory, makeProduct, read, rowCount } from '../../../test/fixtures.ts';
import { build, call } from '../../../test/helper.ts';

const URLS = { returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/basket' };

/** A product whose purchase queues a command on a game server. */
async function vip(app: FastifyInstance): Promise<string> {
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Lobby' }, 'json');
  const productId = await makeProduct(app, { name: 'VIP', categoryID: String(await makeCategory(app, { name: 'Ranks' })), price: '5.00' });
  await created(
    app,
    `/api/admin/store/products/${productId}/commands`,
    { serverID: String(server.id), command: 'say thanks {username}', trigger: 'purchase' },
    'json',
  );
  return String(productId);
}

async function payAsStaff(app: FastifyInstance, paymentID: string): Promise<void> {
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).split(';')[0]!;
  const page = await app.inject({ url: `/console/payments/test-checkout/${paymentID}`, headers: { cookie } });
  const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec(page.body)![1]!;
  const paid = await app.inject({
    method: 'POST',
    url: `/console/payments/test-checkout/${paymentID}/pay`,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: `_csrf=${csrf}`,
  });
  if (paid.statusCode !== 303) throw new Error(`pay: ${paid.statusCode} ${paid.body}`);
}

t.test("clearing test orders deletes their queued commands and gives their coupon uses back; a real order's stay", async (t) => {
  const app = await build(t);
  const product = await vip(app);
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  await created(app, '/api/admin/promotions/coupons', { code: 'TRY', kind: 'percent', value: 10, maxUses: 5, perPlayer: 2 }, 'json');

  // A real order with the coupon: bought from the balance.
  await call(app, '/api/credits/add', { body: { target_username: 'Alice', amount: '20.00' } });
  const aliceId = String((await read(app, '/api/users?username=Alice')).id);
  const real = await call(app, '/api/store/buy', { body: { userID: aliceId, products: [product], coupon: 'TRY' }, as: 'json' });
  t.equal(real.statusCode, 200, real.body);

  // Two test orders with it, paid at the test gateway.
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { testMode: true }, as: 'json' });
  const steveId = String(await register(app, 'Steve'));
  for (let i = 0; i < 2; i++) {
    const started = await call(app, '/api/payments/purchase', {
      body: { gateway: 'test', ...URLS, userID: steveId, coupon: 'TRY', lines: [{ productID: product }] },
      as: 'json',
    });
    t.equal(started.statusCode, 200, started.body);
    await payAsStaff(app, started.json().data.paymentID);
  }
  t.equal(await rowCount(app, 'delivery_queue'), 3, 'three orders, a command each');
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '3' }]);
  t.equal(await rowCount(app, 'promotions_coupon_uses'), 3);

  const cleared = await call(app, '/api/admin/payments/test-orders', { method: 'DELETE' });
  t.match(cleared.json(), { status: true, data: { orders: 2 } }, cleared.body);
  const realOrder = (await call(app, `/api/users/${aliceId}/orders`)).json()[0];
  t.match((await call(app, '/api/admin/delivery/queue')).json(), [{ orderID: String(realOrder.id) }], "only the real order's command is left");
  t.equal(await rowCount(app, 'delivery_queue'), 1);
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '1' }], 'the test uses are given back');
  t.equal(await rowCount(app, 'promotions_coupon_uses'), 1);

  // Steve's per-player count was given back too: two more uses are allowed.
  for (let i = 0; i < 2; i++) {
    const again = await call(app, '/api/payments/purchase', {
      body: { gateway: 'test', ...URLS, userID: steveId, coupon: 'TRY', lines: [{ productID: product }] },
      as: 'json',
    });
    t.equal(again.statusCode, 200, again.body);
    await payAsStaff(app, again.json().data.paymentID);
  }
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '3' }]);
});
