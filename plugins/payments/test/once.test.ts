/**
 * One click, one checkout: a checkout form posted twice (the browser posts again after a stalled
 * answer) or a purchase request sent twice, in a row or at once, on one instance or two, starts
 * one gateway session and answers the same payment and checkout address; a changed basket, or a
 * repeat after the payment expired, starts another.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import nock from 'nock';
import t from 'tap';
import { makeCategory, makeProduct, newUser, rowCount } from '../../../test/fixtures.ts';
import { apiKey, build, call, onMysql, sharedDatabaseUrl } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { paymentsRef } from '../contract.ts';
import type { DbPaymentsService } from '../service.ts';
import { offline, STRIPE_ENV } from './fixtures.ts';
import { sql } from '../../../core/sql.ts';
import { PaymentsCheckout, PaymentsPayment } from '../entities.ts';

offline(t);

const DB = onMysql ? 'MariaDB' : 'SQLite';
const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };

/**
 * Stripe's Checkout Session create, its calls counted: the first is answered with `sessionId` once
 * `release` settles (or a second call comes), and a second one fails, as a second session would.
 */
function stripeOnce(sessionId: string, release?: Promise<unknown>): { count: number } {
  const asked = { count: 0 };
  let again!: () => void;
  const second = new Promise<void>((r) => {
    again = r;
  });
  // The previous mock's unused second answer goes: this one counts the calls from now on.
  nock.cleanAll();
  nock('https://api.stripe.com')
    .post('/v1/checkout/sessions')
    .times(2)
    .reply(async () => {
      if (++asked.count > 1) {
        again();
        return [500, { error: { type: 'api_error', message: 'a second session for one basket' } }];
      }
      await Promise.race([release, second]);
      return [200, { id: sessionId, object: 'checkout.session', url: `https://checkout.stripe.com/c/pay/${sessionId}` }];
    });
  return asked;
}

/** The gateway address a storefront answer sends the browser on to. */
const onward = (res: LightMyRequestResponse) => /https:\/\/checkout\.stripe\.com\/c\/pay\/(cs_\w+)/.exec(res.body)?.[0];

async function shop(app: FastifyInstance) {
  const categoryID = await makeCategory(app, { name: 'Ranks' });
  return { vip: await makeProduct(app, { categoryID, name: 'VIP', price: '5.00' }), mvp: await makeProduct(app, { categoryID, name: 'MVP', price: '9.00' }) };
}

/** A second browser tab's view of the same cookies: what a browser posting the form again sends. */
function sameBrowser(app: FastifyInstance, v: Visitor): Visitor {
  const copy = new Visitor(app);
  for (const [k, value] of v.cookies) copy.cookies.set(k, value);
  return copy;
}

/** Resolves when a claim of a checkout already claimed is refused on `app`: a copy of a request found the first at its gateway. */
function claimRefused(app: FastifyInstance): Promise<void> {
  const run = app.db.run.bind(app.db);
  return new Promise((resolve) => {
    app.db.run = (statement) =>
      run(statement).catch((err: unknown) => {
        if (/insert into `?payments_checkouts/.test(statement.text)) resolve();
        throw err;
      });
  });
}

const C = PaymentsCheckout.c;
const payments = (app: FastifyInstance) => app.services.get(paymentsRef) as DbPaymentsService;

t.test(`the storefront's gateway checkout posted twice in a row: one Stripe session, the same payment and address (${DB})`, async (t) => {
  const app = await build(t, { env: STRIPE_ENV });
  const { vip, mvp } = await shop(app);
  const v = new Visitor(app);
  await v.post('/basket/add', { product: String(vip), quantity: '2' });
  const [again, late] = [sameBrowser(app, v), sameBrowser(app, v)];
  const first = stripeOnce('cs_first');
  const answers = [
    await v.post('/checkout/gateway', { gateway: 'stripe', guestName: 'Notch' }),
    await again.post('/checkout/gateway', { gateway: 'stripe', guestName: 'Notch' }),
  ];
  t.same(
    answers.map((a) => a.statusCode),
    [200, 200],
    'both sent on',
  );
  t.equal(first.count, 1, 'Stripe asked once');
  t.same(answers.map(onward), ['https://checkout.stripe.com/c/pay/cs_first', 'https://checkout.stripe.com/c/pay/cs_first'], 'both sent on to the same session');
  t.equal(v.cookies.get('storefront_payments'), again.cookies.get('storefront_payments'), 'the same payment followed');
  t.equal(await rowCount(app, 'payments_payments'), 1, 'one pending payment');

  // The same browser with another basket: another checkout.
  const changed = sameBrowser(app, again);
  await changed.post('/basket/add', { product: String(mvp), quantity: '1' });
  const second = stripeOnce('cs_changed');
  const other = await changed.post('/checkout/gateway', { gateway: 'stripe', guestName: 'Notch' });
  t.equal(second.count, 1, 'a changed basket asks Stripe again');
  t.equal(onward(other), 'https://checkout.stripe.com/c/pay/cs_changed');
  const sameBasket = new Visitor(app);
  await sameBasket.post('/basket/add', { product: String(vip), quantity: '2' });
  const third = stripeOnce('cs_other_guest');
  t.equal(
    onward(await sameBasket.post('/checkout/gateway', { gateway: 'stripe', guestName: 'Notch' })),
    'https://checkout.stripe.com/c/pay/cs_other_guest',
    'another browser with the same basket and name is another guest',
  );
  t.equal(third.count, 1);

  // The first payment expired unpaid: posting its basket again starts a new one.
  await app.db.run(
    sql`update ${PaymentsPayment} set ${PaymentsPayment.c.creationDate} = '2020-01-01 00:00:00' where ${PaymentsPayment.c.checkoutRef} = 'cs_first'`,
  );
  t.equal(await payments(app).expirePending(), 1);
  const renewed = stripeOnce('cs_renewed');
  t.equal(onward(await late.post('/checkout/gateway', { gateway: 'stripe', guestName: 'Notch' })), 'https://checkout.stripe.com/c/pay/cs_renewed');
  t.equal(renewed.count, 1, 'after expiry Stripe is asked again');
  t.equal(await rowCount(app, 'payments_payments'), 4);
});

t.test(`the storefront's form posted twice at once, the second while the first is at Stripe: one session (${DB})`, async (t) => {
  const app = await build(t, { env: STRIPE_ENV });
  const { vip } = await shop(app);
  const v = new Visitor(app);
  await v.post('/basket/add', { product: String(vip), quantity: '1' });
  const again = sameBrowser(app, v);
  const waiting = claimRefused(app);
  const firstPost = v.post('/checkout/gateway', { gateway: 'stripe', guestName: 'Notch' });
  const secondPost = again.post('/checkout/gateway', { gateway: 'stripe', guestName: 'Notch' });
  // Stripe answers the first once the second post has found its claim (or, without one, asked Stripe too).
  const asked = stripeOnce('cs_once', waiting);
  const answers = await Promise.all([firstPost, secondPost]);
  t.same(
    answers.map((a) => a.statusCode),
    [200, 200],
    'both sent on',
  );
  t.equal(asked.count, 1, 'Stripe asked once');
  t.same(answers.map(onward), ['https://checkout.stripe.com/c/pay/cs_once', 'https://checkout.stripe.com/c/pay/cs_once']);
  t.equal(await rowCount(app, 'payments_payments'), 1);
});

t.test(
  `POST /api/payments/purchase sent twice at once over two instances: one session, the same payment (${DB})`,
  { skip: onMysql ? false : 'two SQLite connections in one process would block each other (the storefront case above covers one instance)' },
  async (t) => {
    const url = await sharedDatabaseUrl(t);
    const apps = [await build(t, { env: STRIPE_ENV, databaseUrl: url }), await build(t, { env: STRIPE_ENV, databaseUrl: url })] as const;
    const { vip } = await shop(apps[0]);
    await newUser(apps[0], 'steve');
    const key = await apiKey(apps[0], 'shop');
    const body = { gateway: 'stripe', username: 'steve', lines: [{ productID: vip, quantity: 3 }], ...URLS };
    const send = (app: FastifyInstance) => call(app, '/api/payments/purchase', { body, as: 'json', key });
    const waiting = Promise.race(apps.map(claimRefused));
    const first = send(apps[0]);
    const second = send(apps[1]);
    const asked = stripeOnce('cs_api', waiting);
    const answers = await Promise.all([first, second]);
    t.same(
      answers.map((a) => a.statusCode),
      [200, 200],
      answers.map((a) => a.body).join('\n'),
    );
    t.equal(asked.count, 1, 'Stripe asked once');
    const [a, b] = answers.map((r) => r.json().data);
    t.same(b, a, 'the same payment, address and amount');
    t.equal(a.checkoutURL, 'https://checkout.stripe.com/c/pay/cs_api');
    t.equal(await rowCount(apps[0], 'payments_payments'), 1);
  },
);

t.test(`a repeat after the gateway refused the first tries it again; one whose instance died at the gateway takes over (${DB})`, async (t) => {
  const app = await build(t, { env: STRIPE_ENV, config: { plugins: { payments: { checkoutClaimSeconds: 30 } } } });
  const { vip } = await shop(app);
  await newUser(app, 'steve');
  const body = { gateway: 'stripe', username: 'steve', lines: [{ productID: vip }], ...URLS };
  nock('https://api.stripe.com')
    .post('/v1/checkout/sessions')
    .reply(500, { error: { type: 'api_error', message: 'down' } });
  const refused = await call(app, '/api/payments/purchase', { body, as: 'json' });
  t.equal(refused.statusCode, 502, refused.body);
  t.equal(await rowCount(app, 'payments_checkouts'), 0, 'the refused checkout let its claim go');
  const retried = stripeOnce('cs_retry');
  const ok = await call(app, '/api/payments/purchase', { body, as: 'json' });
  t.equal(ok.statusCode, 200, ok.body);
  t.equal(retried.count, 1);

  // An instance that claimed a checkout and died before its payment was stored: a repeat waits no
  // longer than checkoutClaimSeconds.
  await app.db.run(sql`update ${PaymentsCheckout} set ${C.paymentId} = '0123456789abcdef0123456789abcdef', ${C.creationDate} = '2020-01-01 00:00:00'`);
  const takeover = stripeOnce('cs_takeover');
  const after = await call(app, '/api/payments/purchase', { body, as: 'json' });
  t.equal(after.json().data.checkoutURL, 'https://checkout.stripe.com/c/pay/cs_takeover', after.body);
  t.equal(takeover.count, 1);
  await app.db.run(sql`update ${PaymentsCheckout} set ${C.creationDate} = '2020-01-01 00:00:00'`);
  t.equal(await payments(app).forgetCheckouts(), 1, 'claims past any payment they could answer are swept');
});
