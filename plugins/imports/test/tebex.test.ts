/**
 * Importing from Tebex against recorded answers in the shapes of its Plugin API (`/packages`,
 * `/payments?paged=N`, `/player/<uuid>/packages`, the secret in X-Tebex-Secret) and of a payments
 * CSV export: a dry run, a run, a second run that brings nothing twice, a run cut off half way and
 * run again, and the boards and history the payments feed.
 */
import t from 'tap';
import nock from 'nock';
import { addSeconds, now } from '../../../core/format.ts';
import { donationsRef } from '../../donations/contract.ts';
import { catalogueRef, ordersRef } from '../../store/contract.ts';
import { usersRef } from '../../users/contract.ts';
import { build } from '../../../test/helper.ts';
import { newUser, rowCount } from '../../../test/fixtures.ts';
import { importsRef } from '../contract.ts';
import { TEBEX_API } from '../tebex.ts';

const SECRET = 'tebex-server-secret';
const FEATURES = ['users', 'credits', 'store', 'donations', 'imports'];
const STEVE = '069a79f444e94726a5befca90e38aaf5';
const ALEX = '853c80ef3c3749fdaa49938b674adae6';
/** Steve bought VIP (a month) five days ago: it runs for 25 days more. */
const BOUGHT = addSeconds(now(), -5 * 86_400);
const iso = (stored: string) => `${stored.replace(' ', 'T')}+00:00`;

const PACKAGES = [
  {
    id: 101,
    name: 'VIP',
    order: 0,
    image: false,
    price: '9.99',
    sale: { active: false, discount: '0.00' },
    expiry_length: 1,
    expiry_period: 'month',
    type: 'single',
    category: { id: 5, name: 'Ranks' },
    global_limit: 0,
    user_limit: 0,
    servers: [{ id: 1, name: 'Survival' }],
    required_packages: [],
    disabled: false,
  },
  {
    id: 102,
    name: 'Fly',
    order: 1,
    image: false,
    price: '4.50',
    sale: { active: false, discount: '0.00' },
    expiry_length: 0,
    expiry_period: 'day',
    type: 'single',
    category: { id: 6, name: 'Perks' },
    global_limit: 0,
    user_limit: 0,
    servers: [{ id: 1, name: 'Survival' }],
    required_packages: [],
    disabled: false,
  },
];

function payment(id: number, amount: string, date: string, status: string, player: { name: string; uuid: string }, packages: [number, string, number][]) {
  return {
    id,
    amount,
    date,
    gateway: { id: 1, name: 'PayPal' },
    status,
    currency: { iso_4217: 'EUR', symbol: '€' },
    email: `${player.name.toLowerCase()}@example.com`,
    player: { id: id * 10, ...player },
    packages: packages.map(([pid, name, quantity]) => ({ quantity, id: pid, name })),
    notes: [],
    creator_code: null,
  };
}

const steve = { name: 'Steve', uuid: STEVE };
const alex = { name: 'Alex', uuid: ALEX };
const PAGES = [
  [
    payment(9001, '9.99', iso(BOUGHT), 'Complete', steve, [[101, 'VIP', 1]]),
    payment(9002, '9.00', '2024-01-10T10:00:00+00:00', 'Complete', alex, [[102, 'Fly', 2]]),
  ],
  [
    payment(9003, '4.50', '2024-02-01T09:30:00+00:00', 'Refund', steve, [[102, 'Fly', 1]]),
    payment(9004, '4.50', '2024-02-02T09:30:00+00:00', 'Pending Checkout', alex, [[102, 'Fly', 1]]),
  ],
];

/** The store's answers; `breakAtPage`: Tebex answers 503 from that page of payments on. */
function tebex(opts: { breakAtPage?: number } = {}): nock.Scope {
  const scope = nock(TEBEX_API, { reqheaders: { 'x-tebex-secret': SECRET } });
  scope.get('/packages').reply(200, PACKAGES);
  for (const [i, data] of PAGES.entries()) {
    const page = i + 1;
    if (page === opts.breakAtPage) {
      scope
        .get('/payments')
        .query({ paged: String(page) })
        .reply(503, 'Service Unavailable');
      return scope;
    }
    const body = { total: 4, per_page: 2, current_page: page, last_page: PAGES.length, from: i * 2 + 1, to: i * 2 + 2, data };
    scope
      .get('/payments')
      .query({ paged: String(page) })
      .reply(200, body);
  }
  scope.get(`/player/${STEVE}/packages`).reply(200, [{ txn_id: 'tbx-9001', date: iso(BOUGHT), quantity: 1, package: { id: 101, name: 'VIP' } }]);
  scope.get(`/player/${ALEX}/packages`).reply(200, []);
  return scope;
}

nock.disableNetConnect();
t.afterEach(() => nock.cleanAll());
t.teardown(() => nock.enableNetConnect());

const EVERYTHING = { category: 2, role: 1, product: 2, player: 2, payment: 3, 'role-held': 1 };

t.test('a dry run reports what it would bring and writes nothing', async (t) => {
  const app = await build(t, { features: FEATURES });
  const scope = tebex();
  const report = await app.services.get(importsRef).fromTebex({ secret: SECRET }, { dryRun: true });
  t.same(report.created, EVERYTHING);
  t.match(report.notBrought, [/Payment 9004: neither complete nor refunded/, /Package commands/]);
  t.ok(scope.isDone(), 'every page and every player was read');
  for (const table of ['users_accounts', 'store_products', 'store_orders', 'imports_links', 'donations_entries']) t.equal(await rowCount(app, table), 0, table);
});

t.test('packages, players, payments and running packages come in once, however often it runs', async (t) => {
  const app = await build(t, { features: FEATURES });
  const imports = app.services.get(importsRef);
  const users = app.services.get(usersRef);
  tebex();
  const first = await imports.fromTebex({ secret: SECRET });
  t.same(first.created, EVERYTHING);

  const vip = (await users.findRoleBySlug('vip'))!;
  t.match(await app.services.get(catalogueRef).tree({ activeOnly: false }), [
    { name: 'Ranks', products: [{ name: 'VIP', price: 999, duration: 30, giveRoleId: vip.id }] },
    { name: 'Perks', products: [{ name: 'Fly', price: 450, duration: -1, giveRoleId: 0 }] },
  ]);

  const s = (await users.findByLinkedAccount('minecraft', '069a79f4-44e9-4726-a5be-fca90e38aaf5'))!;
  t.match(s, { username: 'Steve', email: 'steve@example.com' }, 'the customer is a player, linked by its UUID');
  const held = await users.rolesOf(s.id);
  t.same(
    held.map((r) => [r.slug, r.expiryDate]),
    [['vip', addSeconds(BOUGHT, 30 * 86_400)]],
    'the running package is its role until its end',
  );
  const history = await app.services.get(ordersRef).ordersOf(s.id);
  t.match(
    history.map((o) => [o.paymentAPI, o.paymentID, o.total, o.status]),
    [
      ['tebex', '9003', '4.50', 'refunded'],
      ['tebex', '9001', '9.99', 'completed'],
    ],
    'the history with its refund',
  );
  const board = await app.services.get(donationsRef).board('top-alltime', 10, 'UTC');
  t.same(
    board.map((d) => [d.username, d.amount, d.currency]),
    [
      ['Steve', 999, 'EUR'],
      ['Alex', 900, 'EUR'],
    ],
    'the supporter board counts the completed payments, not the refund',
  );

  tebex();
  const again = await imports.fromTebex({ secret: SECRET });
  t.same(again.created, {}, 'a second run brings nothing');
  t.same(again.skipped, EVERYTHING);
  t.equal(await rowCount(app, 'store_orders'), 3);
  t.equal(await rowCount(app, 'donations_entries'), 2);
  t.equal(await rowCount(app, 'users_accounts'), 2);
});

t.test('a run cut off half way, run again, brings the rest and nothing twice', async (t) => {
  const app = await build(t, { features: FEATURES });
  const imports = app.services.get(importsRef);
  tebex({ breakAtPage: 2 });
  const cut = await imports.fromTebex({ secret: SECRET }).catch((err: Error) => err);
  t.match(cut, { message: /payments answered 503/ }, 'the run stops where Tebex went down');
  t.equal(await rowCount(app, 'store_orders'), 2, "the first page's payments came in");
  const [run] = await imports.runs(1);
  t.match(run, { status: 'failed', report: { created: { payment: 2 } } }, 'the run is kept, failed, with what it brought');

  tebex();
  const resumed = await imports.fromTebex({ secret: SECRET });
  t.same(resumed.created, { payment: 1, 'role-held': 1 }, 'the rest comes in');
  t.same(resumed.skipped, { category: 2, role: 1, product: 2, player: 2, payment: 2 });
  t.equal(await rowCount(app, 'store_orders'), 3);
  t.equal(await rowCount(app, 'donations_entries'), 2);
  t.equal(await rowCount(app, 'users_roles'), 1);
});

t.test('a name taken here by another player is reported, its payments stay behind', async (t) => {
  const app = await build(t, { features: FEATURES });
  await newUser(app, 'Alex');
  tebex();
  const report = await app.services.get(importsRef).fromTebex({ secret: SECRET });
  t.same(report.created, { ...EVERYTHING, player: 1, payment: 2 });
  t.match(report.notBrought, [/Player Alex: an account of that name is here already/]);
  t.equal(report.notBrought.filter((l) => l.startsWith('Player Alex')).length, 1, 'reported once, not at each payment');
});

const CSV = [
  'Transaction ID,Date,Status,Price,Currency,Username,UUID,Email,Packages',
  `tbx-1a,${BOUGHT},Complete,9.99,EUR,Steve,${STEVE},steve@example.com,VIP`,
  'tbx-2b,2024-01-10 10:00:00,Complete,9.00,EUR,Alex,,alex@example.com,Fly (x2)',
  'tbx-3c,2024-02-01 09:30:00,Complete,"14.49",EUR,Steve,069a79f4-44e9-4726-a5be-fca90e38aaf5,steve@example.com,"VIP, Fly"',
  'tbx-4d,not a date,Complete,1.00,EUR,Notch,,,Fly',
].join('\r\n');

t.test('a payments CSV: players, hidden products priced from a payment of each alone, the history', async (t) => {
  const app = await build(t, { features: FEATURES });
  const imports = app.services.get(importsRef);
  const report = await imports.fromTebex({ csv: CSV });
  t.same(report.created, { category: 1, product: 2, player: 2, payment: 3 });
  t.match(report.notBrought, [/CSV line 5: its date is not one/, /2 products made from the CSV's package names are hidden/]);
  const [category] = await app.services.get(catalogueRef).tree({ activeOnly: false });
  t.match(category, {
    name: 'Tebex',
    products: [
      { name: 'VIP', price: 999, isActive: false },
      { name: 'Fly', price: 0, isActive: false },
    ],
  });
  const alexHere = (await app.services.get(usersRef).findByUsername('Alex'))!;
  const [order] = await app.services.get(ordersRef).ordersOf(alexHere.id);
  t.match(order, { paymentID: 'tbx-2b', total: '9.00' });
  const { items } = await app.services.get(ordersRef).getOrder(Number(order!.id));
  t.match(items, [{ productName: 'Fly', quantity: 2 }], 'the line with its quantity');

  const again = await imports.fromTebex({ csv: CSV });
  t.same(again.created, {}, 'the same file again brings nothing');
  t.equal(await rowCount(app, 'store_orders'), 3);
});

t.test('a CSV without the needed columns says which', async (t) => {
  const app = await build(t, { features: FEATURES });
  const report = await app.services.get(importsRef).fromTebex({ csv: 'Date,Price\n2024-01-01,1.00\n' });
  t.same(report.created, {});
  t.match(report.notBrought, [/The CSV has no id, name, packages column/]);
});
