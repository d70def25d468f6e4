/**
 * The product page's choice of how to pay a subscription: the balance, or Stripe or PayPal when the
 * payments feature has them on, the gateway's choice sending the player on to its checkout (nock).
 */
import nock from 'nock';
import t from 'tap';
import { GATEWAY_ENV, mockPayPalToken, offline, PAYPAL_API, stripeWebhook } from '../../../test/gateways.ts';
import { call } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { balanceOf, subscriptionsApp, vipPlan } from './fixtures.ts';

offline(t);

const PASSWORD = 'correct horse 1';

const gatewaysApp = (t: Parameters<typeof subscriptionsApp>[0]) =>
  subscriptionsApp(t, { features: ['auth', 'storefront', 'payments'], env: GATEWAY_ENV, config: { payments: { paypalApiBase: PAYPAL_API } } });

async function player(app: Parameters<typeof call>[0], name: string): Promise<{ v: Visitor; id: number }> {
  const v = new Visitor(app);
  await v.post('/register', { username: name, password: PASSWORD, email: `${name.toLowerCase()}@example.org` });
  return { v, id: Number((await call(app, `/api/users?username=${name}`)).json().id) };
}

/** The checkout link of the page that sends the browser on to the gateway. */
const onward = (body: string) => /<meta http-equiv="refresh" content="0;url=([^"]+)"/.exec(body)?.[1] ?? /<a class="button" href="([^"]+)"/.exec(body)?.[1];

t.test('with Stripe and PayPal on, the product page offers the balance or either gateway, and a gateway goes on to its checkout', async (t) => {
  const app = await gatewaysApp(t);
  const { productId } = await vipPlan(app);
  const page = (await new Visitor(app).get(`/product/${productId}`)).body;
  t.match(page, /<button type="submit" name="gateway" value="credits">Pay from my balance<\/button>/);
  t.match(page, /<button type="submit" name="gateway" value="stripe">Pay with Stripe<\/button>/);
  t.match(page, /<button type="submit" name="gateway" value="paypal">Pay with PayPal<\/button>/);
  const german = (await new Visitor(app, { 'accept-language': 'de' }).get(`/product/${productId}`)).body;
  t.match(german, /Mit Stripe bezahlen/);

  // Stripe: a Checkout Session in subscription mode, returning to the account page; nothing starts before its webhook.
  const steve = await player(app, 'Steve');
  let form = new URLSearchParams();
  const session = nock('https://api.stripe.com')
    .post('/v1/checkout/sessions', (body) => {
      form = new URLSearchParams(body as string);
      return true;
    })
    .reply(200, { id: 'cs_page', object: 'checkout.session', url: 'https://checkout.stripe.com/c/pay/cs_page' });
  const toStripe = await steve.v.post('/subscribe', { product: String(productId), gateway: 'stripe' });
  t.equal(toStripe.statusCode, 200, 'the page that sends the browser on');
  t.equal(onward(toStripe.body), 'https://checkout.stripe.com/c/pay/cs_page');
  t.ok(session.isDone());
  t.equal(form.get('mode'), 'subscription');
  t.match(form.get('success_url'), /\/account$/);
  t.match(form.get('cancel_url'), new RegExp(`/product/${productId}$`));
  t.same((await call(app, `/api/subscriptions?userID=${steve.id}`)).json(), [], 'not started before the webhook');
  t.equal(await balanceOf(app, steve.id), 0, 'nothing taken from the balance');

  const reference = String(form.get('client_reference_id'));
  const done = await stripeWebhook(app, {
    id: 'evt_page_start',
    type: 'checkout.session.completed',
    data: {
      object: {
        id: 'cs_page',
        object: 'checkout.session',
        mode: 'subscription',
        client_reference_id: reference,
        subscription: 'sub_page',
        payment_status: 'paid',
        amount_total: 500,
        currency: 'usd',
      },
    },
  });
  t.equal(done.json().data.result, 'started');
  t.match((await steve.v.get('/account')).body, /<td data-label="Subscription">VIP<\/td><td data-label="State">Active<\/td>/, 'the account lists it');

  // PayPal: the subscription's approve link.
  const alex = await player(app, 'Alex');
  mockPayPalToken();
  const api = nock(PAYPAL_API);
  api.post('/v1/catalogs/products').reply(201, { id: 'PROD-1' });
  api.post('/v1/billing/plans').reply(201, { id: 'P-1', status: 'ACTIVE' });
  api.post('/v1/billing/subscriptions').reply(201, {
    id: 'I-PAGE',
    status: 'APPROVAL_PENDING',
    links: [{ rel: 'approve', href: 'https://www.sandbox.paypal.com/webapps/billing/subscriptions?ba_token=I-PAGE' }],
  });
  const toPayPal = await alex.v.post('/subscribe', { product: String(productId), gateway: 'paypal' });
  t.equal(toPayPal.statusCode, 200);
  t.equal(onward(toPayPal.body), 'https://www.sandbox.paypal.com/webapps/billing/subscriptions?ba_token=I-PAGE');
  t.ok(api.isDone());
  t.same((await call(app, `/api/subscriptions?userID=${alex.id}`)).json(), []);

  // The balance, chosen on the same page.
  const sam = await player(app, 'Sam');
  await call(app, '/api/credits/add', { body: { target_username: 'Sam', amount: '20' } });
  const wallet = await sam.v.post('/subscribe', { product: String(productId), gateway: 'credits' });
  t.equal(wallet.statusCode, 303);
  t.match((await sam.v.get(String(wallet.headers.location))).body, /You subscribed to VIP/);
  t.equal(await balanceOf(app, sam.id), 1_500);
  t.match((await call(app, `/api/subscriptions?userID=${sam.id}`)).json(), [{ gateway: 'credits', status: 'active' }]);
});

t.test('a gateway that is off or fails is refused on the product page, and nothing is paid or started', async (t) => {
  const app = await gatewaysApp(t);
  const { productId } = await vipPlan(app);
  const steve = await player(app, 'Steve');
  await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '20' } });

  const unknown = await steve.v.post('/subscribe', { product: String(productId), gateway: 'test' });
  t.equal(unknown.statusCode, 303, 'a gateway that sells no subscriptions goes back to the product page');
  t.match((await steve.v.get(String(unknown.headers.location))).body, /This way of paying is not available/);

  nock('https://api.stripe.com')
    .post('/v1/checkout/sessions')
    .reply(500, { error: { type: 'api_error', message: 'down' } });
  const failed = await steve.v.post('/subscribe', { product: String(productId), gateway: 'stripe' });
  t.equal(failed.statusCode, 303);
  t.match((await steve.v.get(String(failed.headers.location))).body, /The payment provider did not answer/);

  t.same((await call(app, `/api/subscriptions?userID=${steve.id}`)).json(), [], 'no subscription');
  t.equal(await balanceOf(app, steve.id), 2_000, 'the balance untouched');
});

t.test('without the payments feature the page offers the balance only', async (t) => {
  const app = await subscriptionsApp(t, { features: ['auth', 'storefront'] });
  const { productId } = await vipPlan(app);
  const page = (await new Visitor(app).get(`/product/${productId}`)).body;
  t.match(page, /<button type="submit">Subscribe<\/button>/);
  t.notMatch(page, /name="gateway"/);
});
