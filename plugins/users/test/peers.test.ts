import t from 'tap';
import { build, call } from '../../../test/helper.ts';
import { newUser } from '../../../test/fixtures.ts';

t.test('tickets and orders are not served while their features are off', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve');
  for (const what of ['tickets', 'orders']) {
    const res = await call(app, `/api/users/${steve.id}/${what}`);
    t.equal(res.statusCode, 404, what);
    t.strictSame(res.json(), { status: false, error: 'NOT_FOUND', message: `No route GET /api/users/${steve.id}/${what}.` }, `${what}: as an unserved route`);
  }
});

t.test('tickets and orders of a user are served by the support and store features, by id or username', async (t) => {
  const app = await build(t, { features: ['users', 'credits', 'store', 'support'] });
  const steve = await newUser(app, 'Steve');
  let res = await call(app, '/api/admin/support/categories', { body: { name: 'Game' } });
  const categoryID = res.json().id ?? res.json().data?.id;
  res = await call(app, '/api/support/tickets', {
    body: { accountID: String(steve.id), categoryID: String(categoryID), title: 'Lost my sword', message: 'Help' },
  });
  t.equal(res.statusCode, 200, res.body);
  res = await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '5.00' } });
  res = await call(app, '/api/admin/store/categories', { body: { name: 'Kits' } });
  res = await call(app, '/api/admin/store/products', { body: { categoryID: String(res.json().id), name: 'Kit', price: '1.00' } });
  res = await call(app, '/api/store/buy', { body: { userID: String(steve.id), products: [{ id: res.json().id }] }, as: 'json' });
  t.equal(res.statusCode, 200, res.body);

  for (const ref of [String(steve.id), 'steve']) {
    const tickets = (await call(app, `/api/users/${ref}/tickets`)).json();
    t.match(tickets, [{ accountID: String(steve.id), title: 'Lost my sword', categoryName: 'Game' }], `tickets of ${ref}`);
    t.notOk('messages' in tickets[0], 'the list shows summaries only');
    t.match((await call(app, `/api/users/${ref}/orders`)).json(), [{ accountID: String(steve.id), total: '1.00', coupon: null }], `orders of ${ref}`);
  }
  for (const what of ['tickets', 'orders']) {
    for (const ref of ['999', 'x']) {
      res = await call(app, `/api/users/${ref}/${what}`);
      t.equal(res.statusCode, 404);
      t.equal(res.json().error, 'USER_NOT_FOUND', `${what} of unknown user ${ref}`);
    }
  }
});

t.test('with the real store, support and credits features running', async (t) => {
  const app = await build(t, { features: ['users', 'credits', 'store', 'support'] });
  const steve = await newUser(app, 'Steve');
  for (const what of ['tickets', 'orders']) {
    const res = await call(app, `/api/users/${steve.id}/${what}`);
    t.equal(res.statusCode, 200, what);
    t.strictSame(res.json(), [], `${what}: none yet`);
  }
  let res = await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '12.50' } });
  t.equal(res.statusCode, 200);
  res = await call(app, `/api/users/?userID=${steve.id}`);
  t.equal(res.json().credit, '12.50', 'credit is the balance the credits feature keeps');
});
