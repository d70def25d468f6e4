/**
 * The dashboard's sales of today and this month and its 30-day chart, read in the site's time zone
 * from one statement: a day that starts at half past a UTC hour (Asia/Kolkata) splits that hour,
 * test orders and orders from before the month stay out; and no statement runs twice for one view.
 */
import t from 'tap';
import type { Sql } from '../../../core/sql.ts';
import { build, call } from '../../../test/helper.ts';
import { StoreOrder } from '../../store/entities.ts';
import { grant, register, role, signInByForm } from './browser.ts';

const TZ = 'Asia/Kolkata';
const OFFSET_MS = 330 * 60_000;
const stored = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
const localDay = (ms: number) => new Date(ms + OFFSET_MS).toISOString().slice(0, 10);

t.test("today's and this month's sales and the chart's days, split at the site's midnight", async (t) => {
  const app = await build(t);
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { timezone: TZ } })).statusCode, 200);
  const category = (await call(app, '/api/admin/store/categories', { body: { name: 'Ranks', isActive: 'true' } })).json().id;
  const product = (await call(app, '/api/admin/store/products', { body: { categoryID: category, name: 'VIP', price: '5', isActive: 'true' } })).json().id;
  const buyer = await register(app, 'Steve');
  await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '100.00' } });
  const buy = async () => {
    const res = await call(app, '/api/store/buy', { body: { userID: String(buyer), products: [String(product)] } });
    t.equal(res.statusCode, 200, res.body);
    return Number(res.json().orderID);
  };

  // Today's midnight in Kolkata is half past a UTC hour: one order a minute after it, one a minute before.
  const today = localDay(Date.now());
  const midnight = Date.parse(`${today}T00:00:00Z`) - OFFSET_MS;
  const placed = [
    { at: midnight + 60_000, test: 0 },
    { at: midnight - 60_000, test: 0 },
    { at: midnight + 120_000, test: 1 },
    { at: midnight - 40 * 86_400_000, test: 0 },
  ];
  for (const p of placed) {
    const id = await buy();
    await StoreOrder.update(app.db, id, { creationDate: stored(p.at), test: p.test === 1 });
  }

  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const page = (await app.inject({ url: '/console', headers: { cookie } })).body;
  t.match(page, /<span class="value">5\.00<\/span> <span class="label">credit sales today \(1 order\)/, 'today: the order after midnight, not the test order');
  // The order a minute before midnight is this month's unless today is the month's first day.
  const month = today.endsWith('-01')
    ? '5.00</span> <span class="label">credit sales this month (1 order)'
    : '10.00</span> <span class="label">credit sales this month (2 orders)';
  t.ok(page.includes(month), 'this month: the orders since the month began, none from 40 days ago');
  t.ok(page.includes(`${today}: 5.00`), "the chart's bar of today has the order after midnight");
  t.ok(page.includes(`${localDay(midnight - 60_000)}: 5.00`), "the chart's bar of yesterday has the order before it, in the same UTC hour");
});

t.test('the dashboard runs each of its statements once', async (t) => {
  const app = await build(t);
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const texts: string[] = [];
  const { query, queryArrays } = app.db;
  app.db.query = <R>(statement: Sql<R>) => {
    texts.push(statement.text);
    return query.call(app.db, statement) as Promise<R[]>;
  };
  app.db.queryArrays = (statement) => {
    texts.push(statement.text);
    return queryArrays.call(app.db, statement);
  };
  t.equal((await app.inject({ url: '/console', headers: { cookie } })).statusCode, 200);
  t.ok(
    texts.some((text) => text.includes('store_orders')),
    'the sales were read',
  );
  t.same(
    texts.filter((text, i) => texts.indexOf(text) !== i),
    [],
    'no statement twice (a section whose figures and attention list need the same one shares it)',
  );
});
