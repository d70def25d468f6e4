/** The audit log through the admin API: who changed what, written with the change or not at all, filtered and paged. */
import t from 'tap';
import { auditRef } from '../core/audit.ts';
import { usersRef } from '../plugins/users/contract.ts';
import { apiKey, build, call } from './helper.ts';

type Entry = {
  id: number;
  actorKind: string;
  actor: string;
  action: string;
  targetType: string;
  targetID: string;
  summary: string;
  before: unknown;
  after: unknown;
  requestID: string | null;
};

t.test('the audit log records staff changes, with the change, and reads them back filtered', async (t) => {
  const app = await build(t, { features: ['users', 'auth', 'credits', 'store'] });
  const log = async (query = ''): Promise<Entry[]> => {
    const res = await call(app, `/api/admin/audit${query}`);
    t.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const userId =
    (
      await call(app, '/api/auth/register', {
        body: { username: 'steve', password: 'correct horse 1', email: 's@example.org', ip: '10.0.0.1', useragent: 't' },
      })
    ).json().userID ?? (await call(app, '/api/users?username=steve')).json().id;
  const category = (await call(app, '/api/admin/store/categories', { body: { name: 'Ranks' } })).json();
  const product = (await call(app, '/api/admin/store/products', { body: { name: 'VIP', categoryID: category.id, price: '5.00' } })).json();
  await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '20.00' } });
  const game = await apiKey(app, 'lobby');

  await t.test("a player's purchase is no staff change: nothing is recorded", async (t) => {
    const before = (await log()).length;
    const bought = await call(app, '/api/store/buy', { key: game, body: { userID: String(userId), products: [product.id] } });
    t.equal(bought.statusCode, 200, bought.body);
    t.equal((await log()).length, before);
  });

  const orderId = (await call(app, `/api/users/${userId}/orders`)).json()[0].id;

  await t.test('a refund by an API key: who, what, which order, before and after, the request', async (t) => {
    const res = await call(app, `/api/admin/store/orders/${orderId}/refund`, { method: 'POST', headers: { 'x-request-id': 'refund-1' } });
    t.equal(res.statusCode, 200, res.body);
    const [entry] = await log(`?action=store.order.refund`);
    t.match(entry, {
      actorKind: 'key',
      actor: 'bootstrap',
      action: 'store.order.refund',
      targetType: 'order',
      targetID: String(orderId),
      summary: `Refunded order ${orderId} of steve (5.00)`,
      before: { status: 'completed' },
      after: { status: 'refunded' },
      requestID: 'refund-1',
    });
  });

  await t.test('a refused change records nothing', async (t) => {
    const count = (await log()).length;
    t.equal((await call(app, `/api/admin/store/orders/${orderId}/refund`, { method: 'POST' })).statusCode, 409);
    t.equal((await log()).length, count);
  });

  await t.test("the entry is written in the change's transaction: a change rolled back leaves no entry", async (t) => {
    const role = (await call(app, '/api/admin/roles', { body: { name: 'Helper', slug: 'helper' } })).json();
    const audit = app.services.get(auditRef);
    const users = app.services.get(usersRef);
    const grant = (fail: boolean) =>
      audit.as({ kind: 'cli', name: 'ops' }, () =>
        app.db.transaction(async () => {
          await users.grantRole(Number(userId), Number(role.id));
          if (fail) throw new Error('a later step failed');
        }),
      );
    await t.rejects(grant(true), /a later step failed/);
    t.same(await log('?action=users.role.grant'), [], 'no entry');
    t.same(await users.rolesOf(Number(userId)), [], 'and no role');
    await grant(false);
    t.match(
      await log('?action=users.role.grant'),
      [{ actorKind: 'cli', actor: 'ops', targetID: String(userId), summary: 'Granted Helper to steve (permanent)' }],
      'committed: both',
    );
  });

  await t.test('products, credits and settings changes carry their values', async (t) => {
    t.equal((await call(app, `/api/admin/store/products/${product.id}`, { method: 'PATCH', as: 'json', body: { price: '4.50' } })).statusCode, 200);
    const [changed] = await log(`?targetType=product&targetID=${product.id}&action=store.product.update`);
    t.match(changed, { summary: 'Changed product VIP', before: { price: 500 }, after: { price: 450 } });
    t.equal((await call(app, '/api/credits/set', { key: game, body: { target_username: 'steve', amount: '1.00' } })).statusCode, 200);
    const [set] = await log('?action=credits.');
    t.match(set, { actor: 'lobby', action: 'credits.set', targetType: 'user', targetID: String(userId), after: { balance: 100 } });
    t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', as: 'json', body: { currency: 'EUR' } })).statusCode, 200);
    const [settings] = await log('?targetType=settings');
    t.match(settings, { action: 'core.settings.update', before: { currency: 'USD' }, after: { currency: 'EUR' } });
  });

  await t.test('filters and pages', async (t) => {
    const all = await log();
    t.ok(all.length >= 5);
    t.same(
      all.map((e) => e.id),
      [...all.map((e) => e.id)].sort((a, b) => b - a),
      'newest first',
    );
    t.ok(
      (await log('?action=store.')).every((e) => e.action.startsWith('store.')),
      'an action prefix',
    );
    t.ok((await log('?actor=lobby')).every((e) => e.actor === 'lobby'));
    const first = await log('?limit=2');
    t.same(
      first.map((e) => e.id),
      all.slice(0, 2).map((e) => e.id),
    );
    t.same(
      (await log(`?limit=2&before=${first[1]!.id}`)).map((e) => e.id),
      all.slice(2, 4).map((e) => e.id),
      'the next page',
    );
    t.same(await log('?action=st%25'), [], 'a wildcard is a character');
  });

  await t.test('bad filters are refused, and only admin keys read the log', async (t) => {
    for (const query of ['limit=abc', 'before=-1', `actor=${'x'.repeat(65)}`]) {
      const res = await call(app, `/api/admin/audit?${query}`);
      t.equal(res.statusCode, 400, query);
      t.equal(res.json().error, 'VALIDATION_ERROR');
    }
    t.equal((await call(app, '/api/admin/audit', { key: game })).statusCode, 403);
  });
});
