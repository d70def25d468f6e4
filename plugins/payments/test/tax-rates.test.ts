/**
 * The owner's tax rate table, at a gateway that computes no tax (PayPal): set and checked through
 * the admin API (audited; bad input changes nothing), charged at checkout on top of the price or
 * within it, by country or by state, in integer cents rounded half up, with the buyer's billing
 * country and the proxy's IP country recorded beside the tax when the payment completes.
 */
import nock from 'nock';
import t from 'tap';
import { sql } from '../../../core/sql.ts';
import { expectErrors, makeCategory, makeProduct, makeUser, newUser, read, rowCount } from '../../../test/fixtures.ts';
import { call } from '../../../test/helper.ts';
import { PaymentsTax } from '../entities.ts';
import { balanceOf, buildPayments, mockPayPalToken, mockPayPalVerify, offline, PAYPAL_API, paypalWebhook } from './fixtures.ts';

offline(t);

type App = Awaited<ReturnType<typeof buildPayments>>;

const build = (t: Parameters<typeof buildPayments>[0]) => buildPayments(t, undefined, { ipCountryHeader: 'CF-IPCountry' });

const setRate = (app: App, body: Record<string, unknown>) => call(app, '/api/admin/payments/tax-rates', { method: 'PUT', body, as: 'json' });

async function taxOn(app: App, taxMode: 'inclusive' | 'exclusive'): Promise<void> {
  const res = await call(app, '/api/admin/settings', { method: 'PATCH', body: { currency: 'EUR', taxMode }, as: 'json' });
  if (res.statusCode !== 200) throw new Error(res.body);
}

/** A PayPal top-up of 10.00 for `username` from `place`; returns the payment and the order PayPal was asked for. */
async function paypalTopUp(app: App, username: string, place: Record<string, string>, ipCountry?: string) {
  mockPayPalToken();
  let order: any;
  nock(PAYPAL_API)
    .post('/v2/checkout/orders', (body) => {
      order = body;
      return true;
    })
    .reply(201, { id: `ORDER-${username}`, links: [{ rel: 'payer-action', href: 'https://www.sandbox.paypal.com/checkoutnow?token=1' }] });
  const res = await call(app, '/api/payments/checkout', {
    body: { username, amount: '10.00', gateway: 'paypal', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no', ...place },
    headers: ipCountry ? { 'cf-ipcountry': ipCountry } : {},
  });
  return { res, paymentID: res.statusCode === 200 ? (res.json().data.paymentID as string) : '', amount: order?.purchase_units[0].amount };
}

/** PayPal's capture of `value` for the order, through its verified webhook. */
async function capture(app: App, username: string, paymentID: string, value: string) {
  mockPayPalVerify('SUCCESS');
  return paypalWebhook(app, {
    id: `WH-${username}`,
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    resource: {
      id: `CAP-${username}`,
      status: 'COMPLETED',
      custom_id: paymentID,
      amount: { currency_code: 'EUR', value },
      supplementary_data: { related_ids: { order_id: `ORDER-${username}` } },
    },
  });
}

const taxRow = async (app: App, paymentID: string) =>
  (await PaymentsTax.select(app.db, sql`where ${PaymentsTax.c.paymentId} = ${paymentID}`)).map(({ paymentId: _, creationDate: __, ...r }) => r);

t.test('the rate table: set, replaced, listed, deleted, audited; bad input changes nothing', async (t) => {
  const app = await build(t);
  t.match((await setRate(app, { country: 'de', rate: '19' })).json(), { country: 'DE', region: '', rate: '19' });
  t.match((await setRate(app, { country: 'US', region: 'ca', rate: 7.25 })).json(), { country: 'US', region: 'CA', rate: '7.25' });
  const replaced = (await setRate(app, { country: 'DE', region: '', rate: '7.125' })).json();
  t.match(replaced, { country: 'DE', rate: '7.125' }, 'a country set again is replaced');
  const before = await read(app, '/api/admin/payments/tax-rates');
  t.match(before, [
    { country: 'DE', region: '', rate: '7.125' },
    { country: 'US', region: 'CA', rate: '7.25' },
  ]);
  await expectErrors(t, app, [
    { url: '/api/admin/payments/tax-rates', method: 'PUT', body: { country: 'XX', rate: '10' }, status: 400, error: 'VALIDATION_ERROR', message: /country/ },
    { url: '/api/admin/payments/tax-rates', method: 'PUT', body: { country: 'DEU', rate: '10' }, status: 400, error: 'VALIDATION_ERROR', message: /country/ },
    { url: '/api/admin/payments/tax-rates', method: 'PUT', body: { country: 'DE', rate: '-5' }, status: 400, error: 'VALIDATION_ERROR', message: /rate/ },
    { url: '/api/admin/payments/tax-rates', method: 'PUT', body: { country: 'DE', rate: '190' }, status: 400, error: 'VALIDATION_ERROR', message: /rate/ },
    { url: '/api/admin/payments/tax-rates', method: 'PUT', body: { country: 'DE', rate: '19.0001' }, status: 400, error: 'VALIDATION_ERROR', message: /rate/ },
    { url: '/api/admin/payments/tax-rates', method: 'PUT', body: { country: 'DE', rate: 'lots' }, status: 400, error: 'VALIDATION_ERROR', message: /rate/ },
    {
      url: '/api/admin/payments/tax-rates',
      method: 'PUT',
      body: { country: 'US', region: 'C-A', rate: '5' },
      status: 400,
      error: 'VALIDATION_ERROR',
      message: /region/,
    },
    { url: '/api/admin/payments/tax-rates', method: 'PUT', body: { rate: '5' }, status: 400, error: 'VALIDATION_ERROR', message: /country/ },
    { url: '/api/admin/payments/tax-rates/999', method: 'DELETE', status: 404, error: 'TAX_RATE_NOT_FOUND' },
  ]);
  t.strictSame(await read(app, '/api/admin/payments/tax-rates'), before, 'the refused changes changed nothing');
  t.equal((await call(app, `/api/admin/payments/tax-rates/${replaced.id}`, { method: 'DELETE' })).statusCode, 200);
  t.match(await read(app, '/api/admin/payments/tax-rates'), [{ country: 'US', region: 'CA' }]);
  const audit = await read(app, '/api/admin/audit?action=payments.tax-rate.');
  t.strictSame(audit.map((e: { action: string }) => e.action).sort(), [
    'payments.tax-rate.create',
    'payments.tax-rate.create',
    'payments.tax-rate.delete',
    'payments.tax-rate.update',
  ]);
});

t.test('tax added at checkout: PayPal is asked the price and its tax, and the completion records both countries', async (t) => {
  const app = await build(t);
  await taxOn(app, 'exclusive');
  await setRate(app, { country: 'DE', rate: '19' });
  await newUser(app, 'hans');
  const { paymentID, amount } = await paypalTopUp(app, 'hans', { billingCountry: 'de' }, 'FR');
  t.strictSame(amount, {
    currency_code: 'EUR',
    value: '11.90',
    breakdown: { item_total: { currency_code: 'EUR', value: '10.00' }, tax_total: { currency_code: 'EUR', value: '1.90' } },
  });
  t.equal((await capture(app, 'hans', paymentID, '10.00')).json().error, 'AMOUNT_MISMATCH', 'the price without its tax is not what was asked');
  t.equal((await capture(app, 'hans', paymentID, '11.90')).json().data.result, 'completed');
  t.equal(await balanceOf(app, 'hans'), 10, 'the credits are the price before tax');
  t.strictSame(await taxRow(app, paymentID), [{ country: 'DE', amount: 190, currency: 'EUR', inclusive: false, region: '', ipCountry: 'FR', rate: 19000 }]);
  const day = new Date().toISOString().slice(0, 10);
  t.strictSame(await read(app, `/api/admin/payments/tax?from=${day}&to=${day}`), [{ country: 'DE', currency: 'EUR', payments: '1', tax: '1.90' }]);
});

t.test('tax included: the price is what PayPal is asked, the tax within it', async (t) => {
  const app = await build(t);
  await taxOn(app, 'inclusive');
  await setRate(app, { country: 'DE', rate: '19' });
  await newUser(app, 'lena');
  const { paymentID, amount } = await paypalTopUp(app, 'lena', { billingCountry: 'DE' });
  t.strictSame(amount, {
    currency_code: 'EUR',
    value: '10.00',
    breakdown: { item_total: { currency_code: 'EUR', value: '8.40' }, tax_total: { currency_code: 'EUR', value: '1.60' } },
  });
  t.equal((await capture(app, 'lena', paymentID, '10.00')).json().data.result, 'completed');
  t.equal(await balanceOf(app, 'lena'), 10);
  t.strictSame(await taxRow(app, paymentID), [{ country: 'DE', amount: 160, currency: 'EUR', inclusive: true, region: '', ipCountry: '', rate: 19000 }]);
});

t.test("a state's rate before its country's, rounded half up on the cent; a country without a rate pays none", async (t) => {
  const app = await build(t);
  await taxOn(app, 'exclusive');
  await setRate(app, { country: 'US', rate: '0' });
  await setRate(app, { country: 'US', region: 'CA', rate: '7.25' });
  await newUser(app, 'cali');
  await newUser(app, 'taro');
  const cali = await paypalTopUp(app, 'cali', { billingCountry: 'US', billingRegion: 'ca' }, 'US');
  t.match(cali.amount, { value: '10.73', breakdown: { tax_total: { value: '0.73' } } }, '72.5 cents of tax round up to 73');
  t.equal((await capture(app, 'cali', cali.paymentID, '10.73')).json().data.result, 'completed');
  t.strictSame(await taxRow(app, cali.paymentID), [
    { country: 'US', amount: 73, currency: 'EUR', inclusive: false, region: 'CA', ipCountry: 'US', rate: 7250 },
  ]);

  const taro = await paypalTopUp(app, 'taro', {}, 'JP');
  t.strictSame(taro.amount, { currency_code: 'EUR', value: '10.00' }, 'no rate for the country of the address: no tax');
  t.equal((await capture(app, 'taro', taro.paymentID, '10.00')).json().data.result, 'completed');
  t.strictSame(await taxRow(app, taro.paymentID), [{ country: 'JP', amount: 0, currency: 'EUR', inclusive: false, region: '', ipCountry: 'JP', rate: 0 }]);
});

t.test("the report by state: each state's tax on a line of its own, the country's rate on one with no region", async (t) => {
  const app = await build(t);
  await taxOn(app, 'exclusive');
  await setRate(app, { country: 'US', rate: '5' });
  await setRate(app, { country: 'US', region: 'CA', rate: '7.25' });
  await setRate(app, { country: 'US', region: 'NY', rate: '4' });
  await setRate(app, { country: 'DE', rate: '19' });
  for (const [name, country, region] of [
    ['cali', 'US', 'CA'],
    ['cala', 'US', 'ca'],
    ['newy', 'US', 'NY'],
    ['texa', 'US', 'TX'],
    ['hans', 'DE', ''],
  ] as const) {
    await newUser(app, name);
    const topUp = await paypalTopUp(app, name, { billingCountry: country, ...(region ? { billingRegion: region } : {}) }, country);
    t.equal((await capture(app, name, topUp.paymentID, topUp.amount.value)).json().data.result, 'completed', `${name} paid`);
  }
  const day = new Date().toISOString().slice(0, 10);
  const report = `/api/admin/payments/tax?from=${day}&to=${day}`;
  t.strictSame(await read(app, `${report}&by=region`), [
    { country: 'DE', region: '', currency: 'EUR', payments: '1', tax: '1.90' },
    { country: 'US', region: '', currency: 'EUR', payments: '1', tax: '0.50' },
    { country: 'US', region: 'CA', currency: 'EUR', payments: '2', tax: '1.46' },
    { country: 'US', region: 'NY', currency: 'EUR', payments: '1', tax: '0.40' },
  ]);
  t.strictSame(
    await read(app, report),
    [
      { country: 'DE', currency: 'EUR', payments: '1', tax: '1.90' },
      { country: 'US', currency: 'EUR', payments: '4', tax: '2.36' },
    ],
    'by country, the default: one line a country, as before',
  );
  t.strictSame(await read(app, `${report}&by=country`), await read(app, report));
  const csv = await call(app, `${report}&format=csv&by=region`);
  t.equal(csv.headers['content-disposition'], `attachment; filename="tax-${day}-${day}-by-region.csv"`);
  t.equal(csv.body, 'country,region,currency,payments,tax\nDE,,EUR,1,1.90\nUS,,EUR,1,0.50\nUS,CA,EUR,2,1.46\nUS,NY,EUR,1,0.40\n');
  t.equal((await call(app, `${report}&format=csv`)).body, 'country,currency,payments,tax\nDE,EUR,1,1.90\nUS,EUR,4,2.36\n', 'the OSS CSV as before');
  const bad = await call(app, `${report}&by=state`);
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().error, 'VALIDATION_ERROR');
});

t.test('while tax is on, a checkout without a known country is refused and stores nothing', async (t) => {
  const app = await build(t);
  await taxOn(app, 'exclusive');
  await newUser(app, 'anon');
  for (const [place, ip, field] of [
    [{}, undefined, /billingCountry/],
    [{}, 'XX', /billingCountry/],
    [{ billingCountry: 'ZZ' }, 'DE', /billingCountry/],
    [{ billingCountry: 'DE', billingRegion: 'NRW!' }, undefined, /billingRegion/],
  ] as const) {
    nock.cleanAll();
    const { res } = await paypalTopUp(app, 'anon', place, ip);
    t.equal(res.statusCode, 400, JSON.stringify(place));
    t.match(res.json(), { error: 'VALIDATION_ERROR', message: field });
  }
  t.equal(await rowCount(app, 'payments_payments'), 0);
  t.equal(await rowCount(app, 'payments_checkouts'), 0);
});

t.test('tax off: PayPal is asked the price alone, whatever the table holds, and nothing is recorded', async (t) => {
  const app = await build(t);
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { currency: 'EUR' }, as: 'json' });
  await setRate(app, { country: 'DE', rate: '19' });
  await newUser(app, 'otto');
  const { paymentID, amount } = await paypalTopUp(app, 'otto', { billingCountry: 'DE' }, 'DE');
  t.strictSame(amount, { currency_code: 'EUR', value: '10.00' });
  t.equal((await capture(app, 'otto', paymentID, '10.00')).json().data.result, 'completed');
  t.equal(await rowCount(app, 'payments_taxes'), 0);
});

t.test('tax costs no statement while it is off: a checkout runs one more only when tax is on, a credit buy none', async (t) => {
  const app = await build(t);
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { currency: 'EUR' }, as: 'json' });
  await setRate(app, { country: 'DE', rate: '19' });
  await newUser(app, 'kim');
  await newUser(app, 'kai');
  const steve = await makeUser(app, 'steve', 10_000);
  const product = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Items' }), name: 'Plain', price: '1' });
  const counted = async (run: () => Promise<unknown>) => {
    const before = app.db.statements;
    await run();
    return app.db.statements - before;
  };
  const checkout = (username: string) =>
    counted(async () => {
      const { res } = await paypalTopUp(app, username, { billingCountry: 'DE' });
      if (res.statusCode !== 200) throw new Error(res.body);
    });
  const creditBuy = () =>
    counted(async () => {
      const res = await call(app, '/api/store/buy', { body: { userID: steve, products: [{ id: product }] }, as: 'json' });
      if (res.statusCode !== 200) throw new Error(res.body);
    });
  const off = { checkout: await checkout('kim'), buy: await creditBuy() };
  await taxOn(app, 'exclusive');
  t.equal(await checkout('kai'), off.checkout + 1, "tax on: the rate's lookup is the one statement more");
  t.equal(await creditBuy(), off.buy, 'a buy with credits pays no tax: the same statements on or off');
});
