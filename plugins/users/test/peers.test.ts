import t from 'tap';
import { build, call } from '../../../test/helper.ts';
import type { OrderRow, StoreService } from '../../store/contract.ts';
import { storeRef } from '../../store/contract.ts';
import type { SupportService, TicketSummaryRow } from '../../support/contract.ts';
import { supportRef } from '../../support/contract.ts';
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

t.test('tickets and orders come from the support and store features', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve');
  const asked: string[] = [];
  const ticket: TicketSummaryRow = {
    id: '7', accountID: String(steve.id), categoryID: '2', title: 'Lost my sword', statusID: '1', readStatus: '0',
    updateDate: '2026-01-02 10:00:00', creationDate: '2026-01-01 09:00:00', categoryName: 'Game',
  };
  const order: OrderRow = {
    id: '3', accountID: String(steve.id), coupon: null, total: '9.00', discount: '1.00', subtotal: '10.00', earnings: '0.00',
    cashback: '0.00', credit: '0.00', type: 'credit', status: 'completed', paymentAPI: 'credit', paymentID: '', creationDate: '2026-01-03 08:00:00',
  };
  const support: SupportService = {
    // A peer's extra fields (messages here) never reach the client: the list shows declared fields only.
    ticketsOf: async (id) => { asked.push(`tickets ${id}`); return [{ ...ticket, messages: [] } as TicketSummaryRow]; },
  };
  // The users feature asks the store for orders only.
  const store: Pick<StoreService, 'ordersOf'> = { ordersOf: async (id) => { asked.push(`orders ${id}`); return [order]; } };
  app.services.provide(supportRef, support);
  app.services.provide(storeRef, store as StoreService);

  let res = await call(app, `/api/users/${steve.id}/tickets`);
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), [ticket]);
  res = await call(app, `/api/users/${steve.id}/orders`);
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), [order], 'coupon stays null, money stays two-decimal text');

  for (const what of ['tickets', 'orders']) {
    res = await call(app, `/api/users/999/${what}`);
    t.equal(res.statusCode, 404);
    t.equal(res.json().error, 'USER_NOT_FOUND', `${what} of an unknown user`);
    // The older path form names the user by username too: a name no one has.
    res = await call(app, `/api/users/x/${what}`);
    t.equal(res.statusCode, 404);
    t.equal(res.json().error, 'USER_NOT_FOUND', `${what} of an unknown username`);
  }
  t.strictSame(asked, [`tickets ${steve.id}`, `orders ${steve.id}`], 'peers are asked only for users that exist');
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
