/**
 * Test mode through HTTP: the test gateway is offered only while the site setting is on, staff pay
 * or fail its checkout in the console, a paid test order completes and queues its commands like a
 * real one but is marked test and left out of revenue, the goal and the donation boards, and
 * clearing removes test orders and payments only.
 */
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { grant, register, role, signInByForm } from '../../../test/browser.ts';
import { created, makeCategory, makeProduct, read, rowCount } from '../../../test/fixtures.ts';
import { build, call } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { TestSmtp } from '../../../test/smtp.ts';

const SITE = 'http://shop.example.org';
const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };

/** Alice (an admin) signed in to the console: her cookie, and a page's CSRF token to post forms with. */
async function staff(app: FastifyInstance): Promise<{ cookie: string; csrf: string }> {
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const page = await app.inject({ url: '/console/payments', headers: { cookie } });
  return { cookie, csrf: /name="_csrf" value="([0-9a-f]+)"/.exec(page.body)![1]! };
}

const post = (app: FastifyInstance, url: string, { cookie, csrf }: { cookie: string; csrf: string }) =>
  app.inject({ method: 'POST', url, headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: `_csrf=${csrf}` });

/** VIP for 5.00, running `say thanks {username}` on Lobby at purchase; its id. */
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

const purchase = (app: FastifyInstance, product: string, buyer: Record<string, string> = { guestName: 'Notch_1' }) =>
  call(app, '/api/payments/purchase', { body: { gateway: 'test', ...URLS, ...buyer, lines: [{ productID: product }] }, as: 'json' });

t.test('test mode: offered only when on; staff pay in the console; a delivered test order outside revenue, goal and boards; cleared', async (t) => {
  const app = await build(t);
  const product = await vip(app);
  const alice = await staff(app);

  const off = await purchase(app, product);
  t.equal(off.statusCode, 400, off.body);
  t.match(off.json(), { status: false, error: 'GATEWAY_UNAVAILABLE', message: /test mode is off/ }, 'no test gateway while test mode is off');
  t.equal(await rowCount(app, 'payments_payments'), 0);

  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { testMode: true }, as: 'json' })).statusCode, 200);
  const topUp = await call(app, '/api/payments/checkout', { body: { gateway: 'test', username: 'Alice', amount: '5.00', ...URLS }, as: 'json' });
  t.match(topUp.json(), { error: 'GATEWAY_UNAVAILABLE', message: /store purchases only/ }, 'no credits from a test top-up');

  const started = await purchase(app, product);
  t.equal(started.statusCode, 200, started.body);
  const { paymentID, checkoutURL } = started.json().data;
  t.match(checkoutURL, new RegExp(`^/console/payments/test-checkout/${paymentID}\\?`), "the checkout page is the console's");

  t.equal((await app.inject(checkoutURL)).statusCode, 303, 'a visitor who is not staff is sent to sign in');
  const page = await app.inject({ url: checkoutURL, headers: { cookie: alice.cookie } });
  t.equal(page.statusCode, 200);
  t.match(page.body, /5\.00 USD/);
  t.match(page.body, /guest Notch_1/);

  const failed = await post(app, `/console/payments/test-checkout/${paymentID}/fail`, alice);
  t.equal(failed.headers.location, URLS.cancelURL, 'a failed payment goes back to the basket');
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'pending', orderID: null });

  const paid = await post(app, `/console/payments/test-checkout/${paymentID}/pay`, alice);
  t.equal(paid.statusCode, 303, paid.body);
  t.equal(paid.headers.location, URLS.returnURL, 'paid: back to the return address');
  const payment = await read(app, `/api/payments/${paymentID}`);
  t.match(payment, { status: 'completed', gateway: 'test' });
  t.equal((await post(app, `/console/payments/test-checkout/${paymentID}/pay`, alice)).statusCode, 303, 'paying again changes nothing');
  t.equal(await rowCount(app, 'store_orders'), 1, 'one order');

  const [order] = (await call(app, '/api/admin/store/orders')).json();
  t.match(order, { id: payment.orderID, type: 'payment', status: 'completed', paymentAPI: 'test', test: true }, 'a test order');
  t.match((await call(app, `/api/admin/delivery/queue?order=${payment.orderID}`)).json(), [{ command: 'say thanks Notch_1' }], 'its command is queued');

  t.same(await read(app, '/api/store/donations?type=latest'), [], 'not on the donation boards');
  t.equal(await rowCount(app, 'donations_entries'), 0);
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { promotionsGoalAmount: 100 }, as: 'json' });
  t.match(await read(app, '/api/store/community-goal'), { is_active: true, total_raised: 0 }, 'nothing raised toward the goal');

  const settings = (await call(app, '/api/admin/settings', { method: 'PATCH', body: { testMode: false }, as: 'json' })).json();
  t.equal(settings.data.testMode, false);
  t.equal((await app.inject({ url: checkoutURL, headers: { cookie: alice.cookie } })).statusCode, 200, 'the page still shows the payment');

  const cleared = await call(app, '/api/admin/payments/test-orders', { method: 'DELETE' });
  t.strictSame(cleared.json(), { status: true, data: { orders: 1, payments: 1 } }, cleared.body);
  t.equal(await rowCount(app, 'store_orders'), 0);
  t.equal(await rowCount(app, 'store_order_items'), 0);
  t.equal(await rowCount(app, 'payments_payments'), 0);
});

t.test('clearing leaves real orders alone, and the console button clears as the API does', async (t) => {
  const app = await build(t);
  const product = await vip(app);
  const alice = await staff(app);
  await call(app, '/api/credits/add', { body: { target_username: 'Alice', amount: '5.00' } });
  const aliceId = (await read(app, '/api/users?username=Alice')).id;
  t.equal((await call(app, '/api/store/buy', { body: { userID: String(aliceId), products: [product] } })).statusCode, 200, 'a real order');
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { testMode: true }, as: 'json' });
  const { paymentID } = (await purchase(app, product, { userID: String(aliceId) })).json().data;
  await post(app, `/console/payments/test-checkout/${paymentID}/pay`, alice);
  t.equal(await rowCount(app, 'store_orders'), 2);

  const res = await post(app, '/console/payments/test-orders/clear', alice);
  t.equal(res.statusCode, 303, res.body);
  t.equal(await rowCount(app, 'store_orders'), 1, 'the real order stays');
  t.match((await call(app, `/api/users/${aliceId}/orders`)).json(), [{ paymentAPI: 'credits', test: false }]);
  t.equal(await rowCount(app, 'payments_payments'), 0);
});

t.test('a test payment of a purchase no longer possible is refunded, never credited', async (t) => {
  const app = await build(t);
  const product = await vip(app);
  const alice = await staff(app);
  const aliceId = (await read(app, '/api/users?username=Alice')).id;
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { testMode: true }, as: 'json' });
  const { paymentID } = (await purchase(app, product, { userID: String(aliceId) })).json().data;
  await call(app, `/api/admin/store/products/${product}`, { method: 'DELETE' });
  await post(app, `/console/payments/test-checkout/${paymentID}/pay`, alice);
  t.match(await read(app, `/api/payments/${paymentID}`), { status: 'refunded' });
  t.equal((await read(app, `/api/credits?username=Alice`)).raw_credits, 0, 'no credits for money never paid');
});

t.test('the test gateway takes no webhooks, and its page shows no other payment', async (t) => {
  const app = await build(t);
  const alice = await staff(app);
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { testMode: true }, as: 'json' });
  const hook = await app.inject({ method: 'POST', url: '/api/payments/webhooks/test', payload: { id: 'x' } });
  t.equal(hook.statusCode, 400);
  t.match(hook.json(), { status: false, error: 'INVALID_SIGNATURE' });
  t.equal((await app.inject({ url: '/console/payments/test-checkout/0123456789abcdef0123456789abcdef', headers: { cookie: alice.cookie } })).statusCode, 404);
});

t.test("a guest's test purchase at the storefront: the pay page, the receipt, the order's page and the webhook payload say test", async (t) => {
  const smtp = await new TestSmtp().start(t);
  const app = await build(t, { config: { plugins: { email: smtp.config(), storefront: { publicUrl: SITE } } } });
  const product = await vip(app);
  const alice = await staff(app);
  const completed: { test?: boolean }[] = [];
  app.events.on('store.order.completed', (order) => {
    completed.push(order);
  });
  const guest = new Visitor(app);
  await guest.post('/basket/add', { product, quantity: '1' });
  t.notMatch((await guest.get('/basket')).body, /Test payment/, 'not offered while test mode is off');

  await call(app, '/api/admin/settings', { method: 'PATCH', body: { testMode: true }, as: 'json' });
  t.match((await guest.get('/basket')).body, /Test payment \(test mode\)/, 'offered once it is on');
  const pay = await guest.post('/checkout/gateway', { gateway: 'test', guestName: 'Notch_1', guestEmail: 'notch@example.org' });
  t.equal(pay.statusCode, 200, pay.body);
  const checkoutURL = /href="(\/console\/payments\/test-checkout\/[0-9a-f]{32})[^"]*"/.exec(pay.body)?.[1];
  t.ok(checkoutURL, 'the pay page sends the browser to the test checkout');
  const paymentID = checkoutURL!.split('/').at(-1)!;
  t.equal((await post(app, `${checkoutURL}/pay`, alice)).headers.location, `${SITE}/payment/return`);

  t.match(completed, [{ test: true }], "the order's event, which webhooks carry, says test");
  t.match((await guest.get(`/payment/${paymentID}`)).body, /Test order: no money was paid\./, "the guest's payment page");
  const receipt = await smtp.waitFor((m) => /order/i.test(m.subject));
  t.match(receipt.text, /This is a test order: no money was paid\./, 'the receipt');
  const link = new RegExp(`${SITE}(/order/[0-9a-f]{64})`).exec(receipt.text)?.[1];
  t.match((await new Visitor(app).get(link!)).body, /Test order: no money was paid\./, "the order's page");
  const list = await app.inject({ url: '/console/orders', headers: { cookie: alice.cookie } });
  t.match(list.body, /payment \(test\)/, "the console's order list");
});
