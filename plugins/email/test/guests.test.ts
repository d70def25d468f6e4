/**
 * Guests (issue 49, item 5): the site setting guestEmail asks a guest's checkout for an email
 * (required, optional, off); a guest who gives one gets the receipt and a link that shows the
 * order; staff find the order by the in-game name or the email, through the admin API and the
 * console, which names the guest instead of `#0` and shows the payment id and the codes used.
 */
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import t, { type Test } from 'tap';
import { mockStripeSession, STRIPE_ENV, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { created, makeCategory, makeProduct, rowCount } from '../../../test/fixtures.ts';
import { apiKey, build, call } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { grant, register, role, signInByForm } from '../../../test/browser.ts';
import { TestSmtp } from '../../../test/smtp.ts';

const SITE = 'http://shop.example.org';
const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };

t.beforeEach(() => nock.disableNetConnect());
t.afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

async function guestShop(t: Test, smtp: TestSmtp): Promise<{ app: FastifyInstance; product: number; key: string }> {
  const app = await build(t, { config: { plugins: { email: smtp.config(), storefront: { publicUrl: SITE } } }, env: STRIPE_ENV });
  const categoryID = await makeCategory(app, { name: 'Items', slug: 'items' });
  const product = await makeProduct(app, { categoryID, name: 'Diamonds', price: '5.00' });
  return { app, product, key: await apiKey(app, 'web-shop') };
}

const purchase = (app: FastifyInstance, key: string, body: Record<string, unknown>) =>
  call(app, '/api/payments/purchase', { body: { gateway: 'stripe', ...URLS, ...body }, as: 'json', key });

const setGuestEmail = async (t: Test, app: FastifyInstance, value: string) =>
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { guestEmail: value }, as: 'json' })).statusCode, 200, `guestEmail ${value}`);

t.test('the guestEmail setting: required refuses none or a bad one, optional takes none, off ignores it', async (t) => {
  const smtp = await new TestSmtp().start(t);
  const { app, product, key } = await guestShop(t, smtp);
  const lines = [{ productID: product }];

  await setGuestEmail(t, app, 'required');
  for (const [guestEmail, why] of [
    [undefined, 'none'],
    ['', 'blank'],
    ['not an email', 'no @'],
    ['a@b', 'no dot in the domain'],
  ] as const) {
    const res = await purchase(app, key, { guestName: 'Herobrine', lines, ...(guestEmail === undefined ? {} : { guestEmail }) });
    t.equal(res.statusCode, 400, `${why}: ${res.body}`);
    t.equal(res.json().error, 'INVALID_GUEST_EMAIL', why);
  }
  t.equal(await rowCount(app, 'payments_payments'), 0, 'nothing stored for a refused checkout');
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { guestEmail: 'sometimes' }, as: 'json' })).json().error, 'VALIDATION_ERROR');

  mockStripeSession('cs_req');
  const taken = await purchase(app, key, { guestName: 'Herobrine', guestEmail: ' hero@example.org ', lines });
  t.equal(taken.statusCode, 200, taken.body);
  t.match((await call(app, `/api/payments/${taken.json().data.paymentID}`)).json(), { guestName: 'Herobrine', guestEmail: 'hero@example.org' });

  await setGuestEmail(t, app, 'optional');
  mockStripeSession('cs_opt');
  const none = await purchase(app, key, { guestName: 'Notch', lines });
  t.equal(none.statusCode, 200, none.body);
  t.match((await call(app, `/api/payments/${none.json().data.paymentID}`)).json(), { guestEmail: null });
  t.equal(
    (await purchase(app, key, { guestName: 'Notch', guestEmail: 'nope', lines })).json().error,
    'INVALID_GUEST_EMAIL',
    'optional, but checked when given',
  );

  await setGuestEmail(t, app, 'off');
  mockStripeSession('cs_off');
  const off = await purchase(app, key, { guestName: 'Jeb_', guestEmail: 'nope', lines });
  t.equal(off.statusCode, 200, off.body);
  t.match((await call(app, `/api/payments/${off.json().data.paymentID}`)).json(), { guestEmail: null }, 'off: not asked, not kept');
});

t.test("a guest's receipt goes to the email typed, with a link that shows the order; staff find it by name or email", async (t) => {
  const smtp = await new TestSmtp().start(t);
  const { app, product, key } = await guestShop(t, smtp);
  await created(app, '/api/admin/promotions/coupons', { code: 'TENOFF', kind: 'percent', value: 10 }, 'json');

  mockStripeSession('cs_guest');
  const started = await purchase(app, key, {
    guestName: 'Herobrine',
    guestEmail: 'Hero@Example.org',
    coupon: 'TENOFF',
    lines: [{ productID: product, quantity: 2 }],
  });
  t.equal(started.statusCode, 200, started.body);
  const { paymentID } = started.json().data;
  t.equal((await stripeWebhook(app, sessionCompleted('evt_guest', paymentID, 'cs_guest', 900))).statusCode, 200);

  const receipt = await smtp.waitFor((m) => /order/i.test(m.subject));
  t.same(
    receipt.to.map((to) => to.toLowerCase()),
    ['hero@example.org'],
    'to the email the guest typed',
  );
  t.match(receipt.text, /Hello Herobrine,/);
  t.match(receipt.text, /2 × Diamonds/);
  t.match(receipt.text, /Total: \$9\.00/);
  const link = new RegExp(`${SITE}(/order/[0-9a-f]{64})`).exec(receipt.text)?.[1];
  t.ok(link, `a link to follow the order: ${receipt.text}`);
  t.match(receipt.html, `<a href="${SITE}${link}">`);

  const page = await new Visitor(app).get(link!);
  t.equal(page.statusCode, 200, 'the link opens in any browser, signed in or not');
  t.match(page.body, /2 × Diamonds/);
  t.match(page.body, /Herobrine/);
  t.equal((await new Visitor(app).get(`/order/${'0'.repeat(64)}`)).statusCode, 404, 'a made-up token shows nothing');
  t.equal((await new Visitor(app).get('/order/x')).statusCode, 404);

  const [order] = (await call(app, '/api/admin/store/orders?search=herobrine')).json();
  t.match(
    order,
    { accountID: '0', guestName: 'Herobrine', guestEmail: 'Hero@Example.org', paymentAPI: 'stripe', paymentID, coupon: 'TENOFF' },
    'by in-game name',
  );
  t.match((await call(app, '/api/admin/store/orders?search=HERO%40example.org')).json(), [{ id: order.id }], 'by email, any case');
  t.same((await call(app, '/api/admin/store/orders?search=nobody')).json(), [], 'no match: none');
  t.equal((await call(app, '/api/admin/store/orders?status=lost')).json().error, 'VALIDATION_ERROR');

  // The console: the guest named, found by name, the payment id and the coupon on the order.
  await grant(app, await register(app, 'Fay'), await role(app, 'Admin'));
  const signedIn = await signInByForm(app, 'Fay');
  const cookie = [signedIn.headers['set-cookie']]
    .flat()
    .map((c) => String(c).split(';')[0])
    .join('; ');
  const list = await app.inject({ url: '/console/orders?search=hero%40example.org', headers: { cookie } });
  t.equal(list.statusCode, 200);
  t.match(list.body, /guest Herobrine/, 'the list names the guest');
  t.notMatch(list.body, />#0</, 'not #0');
  const one = await app.inject({ url: `/console/orders/${order.id}`, headers: { cookie } });
  t.match(one.body, paymentID, 'the payment id');
  t.match(one.body, /TENOFF/, 'the coupon used');
  t.match(one.body, /Hero@Example\.org/, 'the email given');
  const paid = await app.inject({ url: '/console/payments', headers: { cookie } });
  t.equal(paid.statusCode, 200);
  t.match(paid.body, `>${paymentID}</a>`, 'the payments list shows the payment id, linked to its order');
  t.match(paid.body, /coupon TENOFF/, 'and the codes used');
});
