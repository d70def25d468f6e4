/**
 * The tax line where the buyer reads it: an order that carries tax shows it and the seller's tax
 * number on its mailed receipt and on the storefront's order page; an order without tax shows neither.
 */
import nock from 'nock';
import t from 'tap';
import { PASSWORD } from '../../../test/browser.ts';
import { makeCategory, makeProduct, newUser } from '../../../test/fixtures.ts';
import { build, call } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { authRef } from '../../auth/contract.ts';
import { TestSmtp } from '../../../test/smtp.ts';
import { mockStripeSession, STRIPE_ENV, stripeWebhook, taxedSession } from './fixtures.ts';

const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/shop' };

t.test("an order with tax shows the tax line and the seller's tax number on its receipt and its page; one without shows neither", async (t) => {
  nock.disableNetConnect();
  t.teardown(() => {
    nock.cleanAll();
    nock.enableNetConnect();
  });
  const smtp = await new TestSmtp().start(t);
  const app = await build(t, { config: { plugins: { email: smtp.config(), storefront: { publicUrl: 'http://shop.example.org' } } }, env: STRIPE_ENV });
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { currency: 'EUR', taxMode: 'exclusive', sellerTaxNumber: 'DE123456789' }, as: 'json' });
  const hans = await newUser(app, 'Hans', { cents: 5000 });
  await app.services.get(authRef).setPassword(hans.id, PASSWORD);
  const sword = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Items' }), name: 'Sword', price: '10.00' });

  mockStripeSession('cs_taxed');
  const bought = await call(app, '/api/payments/purchase', {
    body: { gateway: 'stripe', userID: String(hans.id), lines: [{ productID: String(sword) }], ...URLS },
  });
  t.equal(bought.statusCode, 200, bought.body);
  const { paymentID } = bought.json().data;
  t.equal((await stripeWebhook(app, taxedSession('evt_taxed', paymentID, 'cs_taxed', 1000, 190, false, 'DE'))).json().data.result, 'completed');
  const receipt = await smtp.waitFor((m) => /order/i.test(m.subject));
  t.match(receipt.text, /Total: €10\.00\nTax DE added: €1\.90, paid in all: €11\.90\nSeller's tax number: DE123456789/);
  t.match(receipt.html, /Tax DE added: €1\.90, paid in all: €11\.90/);
  const orderId = /#(\d+)/.exec(receipt.subject)![1]!;

  const visitor = new Visitor(app);
  t.equal((await visitor.post('/login', { username: 'Hans', password: PASSWORD })).statusCode, 303);
  const page = await visitor.get(`/account/orders/${orderId}`);
  t.equal(page.statusCode, 200);
  t.match(page.body, /<dt>Tax DE<\/dt><dd class="tax">€1\.90, added at checkout: €11\.90 paid<\/dd>/);
  t.match(page.body, /<dt>Seller&#39;s tax number<\/dt><dd>DE123456789<\/dd>/);

  const plain = await call(app, '/api/store/buy', { body: { userID: hans.id, products: [{ id: sword, quantity: 1 }] }, as: 'json' });
  t.equal(plain.statusCode, 200, plain.body);
  const credits = await smtp.waitFor((m) => /order/i.test(m.subject) && m !== receipt);
  t.notMatch(credits.text, /Tax|tax number/, 'an order paid in credits carries no tax');
  const other = await visitor.get(`/account/orders/${/#(\d+)/.exec(credits.subject)![1]}`);
  t.equal(other.statusCode, 200);
  t.notMatch(other.body, /Tax|tax number/);
});
