import t from 'tap';
import { apiKey, call } from '../../../test/helper.ts';
import { settle } from '../../../test/fixtures.ts';
import { balanceOf, makeUser, storeApp } from './fixtures.ts';

t.test('admin payments: a payment order, its credits, once per gateway id', async (t) => {
  const app = await storeApp(t);
  const steve = await makeUser(app, 'Steve', 500);
  const events: unknown[] = [];
  app.events.on('store.order.completed', (e) => {
    events.push(e);
  });

  let res = await call(app, '/api/admin/payments', { body: { username: 'steve', amount: '25', paymentAPI: 'paypal', paymentID: 'PAY-1' } });
  t.equal(res.statusCode, 201, res.body);
  t.same(res.json(), {
    id: res.json().id,
    accountID: String(steve),
    coupon: null,
    total: '25.00',
    discount: '0.00',
    subtotal: '25.00',
    earnings: '25.00',
    cashback: '0.00',
    credit: '25.00',
    type: 'payment',
    status: 'completed',
    paymentAPI: 'paypal',
    paymentID: 'PAY-1',
    test: false,
    guestName: null,
    creationDate: res.json().creationDate,
  });
  t.equal(await balanceOf(app, steve), 3000, 'credit defaults to the amount');

  res = await call(app, '/api/admin/payments', { body: { username: 'steve', amount: '10.50', credit: '12', currency: 'eur' }, as: 'json' });
  t.match(res.json(), { earnings: '10.50', credit: '12.00', paymentAPI: 'manual', paymentID: '' });
  res = await call(app, '/api/admin/payments', { body: { username: 'steve', amount: '5', credit: '0' }, as: 'urlencoded' });
  t.match(res.json(), { earnings: '5.00', credit: '0.00' }, 'a donation that buys no credits');
  t.equal(await balanceOf(app, steve), 4200);
  await settle();
  t.match(events, [{ userId: steve, username: 'Steve', type: 'payment', total: 2500, currency: 'USD' }, { total: 1050, currency: 'EUR' }, { total: 500 }]);

  const cases: [Record<string, unknown>, number, string, RegExp][] = [
    [{ username: 'steve', amount: '25', paymentAPI: 'paypal', paymentID: 'PAY-1' }, 409, 'CONFLICT', /PAY-1/],
    [{ username: 'nobody', amount: '1' }, 404, 'USER_NOT_FOUND', /nobody/],
    [{ username: 'steve', amount: '0' }, 400, 'INVALID_AMOUNT', /0\.01/],
    [{ username: 'steve', amount: 'abc' }, 400, 'INVALID_AMOUNT', /amount/],
    [{ username: 'steve', amount: '-5' }, 400, 'INVALID_AMOUNT', /amount/],
    [{ username: 'steve', amount: '1.005' }, 400, 'INVALID_AMOUNT', /amount/],
    [{ username: 'steve', amount: '1', credit: 'x' }, 400, 'INVALID_AMOUNT', /credit/],
    [{ username: 'steve', amount: '1', currency: 'EURO' }, 400, 'VALIDATION_ERROR', /currency/],
    [{ amount: '1' }, 400, 'VALIDATION_ERROR', /username/],
  ];
  for (const [body, status, code, message] of cases) {
    res = await call(app, '/api/admin/payments', { body });
    t.equal(res.statusCode, status, JSON.stringify(body));
    t.match(res.json(), { status: false, error: code, message }, JSON.stringify(body));
  }
  t.equal(await balanceOf(app, steve), 4200, 'no refused payment credited anything');
  res = await call(app, '/api/admin/payments', { body: { username: 'steve', amount: '1' }, key: await apiKey(app) });
  t.equal(res.statusCode, 403, 'the admin scope is needed');

  res = await call(app, `/api/users/${steve}/orders`);
  t.same(
    res.json().map((o: { type: string; earnings: string }) => [o.type, o.earnings]),
    [
      ['payment', '5.00'],
      ['payment', '10.50'],
      ['payment', '25.00'],
    ],
  );
});
