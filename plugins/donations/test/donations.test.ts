import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { build, call } from '../../../test/helper.ts';
import { addSeconds, displayTimestamp, now, parseClientTimestamp } from '../../../core/format.ts';
import { created, newUser, read } from '../../../test/fixtures.ts';

const FEATURES = ['users', 'credits', 'store', 'donations'];

const pay = async (app: FastifyInstance, username: string, amount: string, currency?: string) => {
  const res = await call(app, '/api/admin/payments', { body: { username, amount, ...(currency ? { currency } : {}) }, as: 'json' });
  if (res.statusCode !== 201) throw new Error(res.body);
};

const board = (
  app: FastifyInstance,
  query: string,
): Promise<
  {
    display_name: string;
    username: string;
    total: string;
    raw_total: string;
    currency: string;
    date: string;
  }[]
> => read(app, `/api/store/donations?${query}`);

/** A past payment, through the same hook the store fires, with the date it would have had. */
const pastPayment = (app: FastifyInstance, orderId: number, userId: number, username: string, total: number, creationDate: string) =>
  app.db.transaction(() =>
    app.events.emit('store.order.completed', {
      orderId,
      userId,
      username,
      linkedAccounts: {},
      type: 'payment',
      total,
      currency: 'USD',
      creationDate,
      items: [],
    }),
  );

t.test('boards: sums ranked per user and currency, latest payments, limits', async (t) => {
  const app = await build(t, { features: FEATURES });
  const alex = (await newUser(app, 'Alex', { cents: 10_000 })).id;
  await newUser(app, 'bob');
  await newUser(app, 'cara');
  await pay(app, 'alex', '10');
  await pay(app, 'bob', '25');
  await pay(app, 'alex', '20');
  await pay(app, 'cara', '5', 'EUR');
  await pay(app, 'bob', '5.50', 'EUR');
  // A purchase from the balance is no donation.
  const category = await created(app, '/api/admin/store/categories', { name: 'C' }, 'json');
  const product = await created(app, '/api/admin/store/products', { categoryID: Number(category.id), name: 'P', price: '50' }, 'json');
  t.equal((await call(app, '/api/store/buy', { body: { userID: alex, products: [Number(product.id)] } })).statusCode, 200);

  const today = displayTimestamp(now(), 'UTC').slice(0, 10);
  for (const type of ['top-alltime', 'top-annual', 'top-monthly', 'top-daily']) {
    const lines = await board(app, `type=${type}`);
    t.same(
      lines.map((l) => [l.username, l.total]),
      [
        ['Alex', '30.00 USD'],
        ['bob', '25.00 USD'],
        ['bob', '5.50 EUR'],
        ['cara', '5.00 EUR'],
      ],
      type,
    );
    t.same(lines[0], { display_name: 'Alex', username: 'Alex', total: '30.00 USD', raw_total: '30.00', currency: 'USD', date: lines[0]!.date });
    t.ok(lines[0]!.date.startsWith(today), 'the date of the latest payment in the sum');
  }
  let lines = await board(app, 'type=latest');
  t.same(
    lines.map((l) => [l.username, l.raw_total, l.currency]),
    [
      ['bob', '5.50', 'EUR'],
      ['cara', '5.00', 'EUR'],
      ['Alex', '20.00', 'USD'],
      ['bob', '25.00', 'USD'],
      ['Alex', '10.00', 'USD'],
    ],
    'single payments, newest first',
  );

  lines = await board(app, 'type=top-alltime&limit=2');
  t.same(
    lines.map((l) => l.username),
    ['Alex', 'bob'],
  );
  lines = await board(app, 'type=latest&limit=1');
  t.equal(lines.length, 1);
  t.equal((await board(app, 'limit=100&type=latest')).length, 5);
  const res = await call(app, '/api/store/donations/?type=latest');
  t.equal(res.statusCode, 200, 'trailing slash');

  for (const [query, code] of [
    ['', 'INVALID_TYPE'],
    ['type=weekly', 'INVALID_TYPE'],
    ['type=latest&type=top-daily', 'INVALID_TYPE'],
    ['type=TOP-DAILY', 'INVALID_TYPE'],
    ['type=latest&limit=0', 'INVALID_LIMIT'],
    ['type=latest&limit=101', 'INVALID_LIMIT'],
    ['type=latest&limit=abc', 'INVALID_LIMIT'],
    ['type=latest&limit=1.5', 'INVALID_LIMIT'],
    ['type=latest&limit=-1', 'INVALID_LIMIT'],
    ['type=latest&limit=5&limit=6', 'INVALID_LIMIT'],
  ] as const) {
    const bad = await call(app, `/api/store/donations?${query}`);
    t.equal(bad.statusCode, 400, query);
    t.match(bad.json(), { status: false, error: code }, query);
  }
});

t.test('the ranked boards count the current calendar year, month and day in the site time zone', async (t) => {
  const app = await build(t, { features: FEATURES });
  const timeZone = 'Pacific/Auckland';
  await app.settings.update({ timezone: timeZone });
  const local = displayTimestamp(now(), timeZone);
  const starts = {
    'top-annual': parseClientTimestamp(`${local.slice(0, 4)}-01-01 00:00:00`, timeZone)!,
    'top-monthly': parseClientTimestamp(`${local.slice(0, 7)}-01 00:00:00`, timeZone)!,
    'top-daily': parseClientTimestamp(`${local.slice(0, 10)} 00:00:00`, timeZone)!,
  };
  // For each period, one user paid at its first second and one the second before it.
  const payments: { name: string; date: string }[] = [];
  let orderId = 1000;
  for (const [type, start] of Object.entries(starts)) {
    for (const [suffix, date] of [
      ['in', start],
      ['out', addSeconds(start, -1)],
    ] as const) {
      const name = `${type.slice(4)}_${suffix}`;
      payments.push({ name, date });
      await pastPayment(app, ++orderId, (await newUser(app, name)).id, name, 100, date);
    }
  }
  const shown = async (type: string) => (await board(app, `type=${type}&limit=100`)).map((l) => l.username).sort();
  t.same(await shown('top-alltime'), payments.map((p) => p.name).sort(), 'all time: every payment');
  for (const [type, start] of Object.entries(starts)) {
    t.same(
      await shown(type),
      payments
        .filter((p) => p.date >= start)
        .map((p) => p.name)
        .sort(),
      `${type}: the payments from ${start} UTC on`,
    );
    t.ok(
      (await shown(type)).includes(`${type.slice(4)}_in`) && !(await shown(type)).includes(`${type.slice(4)}_out`),
      `${type}: the first second counts, the one before does not`,
    );
  }
  const latest = await board(app, 'type=latest&limit=1');
  t.equal(latest[0]!.date, displayTimestamp(starts['top-daily'], timeZone), 'dates are shown in the site time zone');
  t.match(latest[0]!.date, / 00:00:00$/);
});
