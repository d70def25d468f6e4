/**
 * The owner's tax at the test gateway (test mode): a guest's purchase from a country with a rate is
 * charged it, staff's pay in the console completes it for the price and its tax, and the tax is
 * recorded as a real gateway's is.
 */
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { sql } from '../../../core/sql.ts';
import { grant, register, role, signInByForm } from '../../../test/browser.ts';
import { makeCategory, makeProduct } from '../../../test/fixtures.ts';
import { build, call } from '../../../test/helper.ts';
import { PaymentsTax } from '../entities.ts';

const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };

t.test("a test purchase is charged the owner's tax, paid with it, and recorded", async (t) => {
  const app: FastifyInstance = await build(t);
  const productID = await makeProduct(app, { name: 'VIP', categoryID: String(await makeCategory(app, { name: 'Ranks' })), price: '5.00' });
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { testMode: true, taxMode: 'exclusive', currency: 'EUR' }, as: 'json' });
  await call(app, '/api/admin/payments/tax-rates', { method: 'PUT', body: { country: 'AT', rate: '20' }, as: 'json' });
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec((await app.inject({ url: '/console/payments', headers: { cookie } })).body)![1]!;

  const started = await call(app, '/api/payments/purchase', {
    body: { gateway: 'test', ...URLS, guestName: 'Notch_1', billingCountry: 'at', lines: [{ productID: String(productID) }] },
    as: 'json',
  });
  t.equal(started.statusCode, 200, started.body);
  const { paymentID, amount, tax: charged, total } = started.json().data;
  t.same([amount, charged, total], ['5.00', '1.00', '6.00'], "the basket's price, the tax added at checkout and what the gateway is asked");

  const paid = await app.inject({
    method: 'POST',
    url: `/console/payments/test-checkout/${paymentID}/pay`,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: `_csrf=${csrf}`,
  });
  t.equal(paid.statusCode, 303, paid.body);
  t.match((await call(app, `/api/payments/${paymentID}`)).json(), { status: 'completed', amount: '5.00' });
  const [tax] = await PaymentsTax.select(app.db, sql`where ${PaymentsTax.c.paymentId} = ${paymentID}`);
  t.match(tax, { country: 'AT', amount: 100, currency: 'EUR', inclusive: false, rate: 20000 }, 'the tax recorded with its rate');
});
