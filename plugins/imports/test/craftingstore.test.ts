/**
 * Importing from CraftingStore against recorded answers in the shapes of its API v7 (`/packages`,
 * `/payments?page=N`, each `{success, data, meta}`, the token in its `token` header) and of a
 * payments CSV export: a dry run, a run and a second one, a run cut off half way and run again,
 * and the payments brought as history only: no command, mail or webhook of a sale made here.
 */
import t from 'tap';
import nock from 'nock';
import { donationsRef } from '../../donations/contract.ts';
import { catalogueRef, ordersRef } from '../../store/contract.ts';
import { usersRef } from '../../users/contract.ts';
import { build, call } from '../../../test/helper.ts';
import { created, rowCount } from '../../../test/fixtures.ts';
import { RECEIVERS } from '../../../test/receiver.ts';
import { TestSmtp } from '../../../test/smtp.ts';
import { importsRef } from '../contract.ts';
import { CRAFTINGSTORE_API } from '../craftingstore.ts';

const TOKEN = 'craftingstore-api-token';
const FEATURES = ['users', 'credits', 'store', 'donations', 'imports'];
const STEVE = '069a79f444e94726a5befca90e38aaf5';

const PACKAGES = [
  { id: 21, name: 'Knight', price: 15, category: { id: 3, name: 'Ranks' } },
  { id: 22, name: 'Keys x5', price: '2.50', category: { id: 4, name: 'Crates' } },
];

function payment(id: number, name: string, uuid: string | null, pkg: (typeof PACKAGES)[number], price: number, status: string, createdAt: string) {
  return {
    id,
    transactionId: `cs-${id}`,
    inGameName: name,
    uuid,
    email: `${name.toLowerCase()}@example.com`,
    price,
    currency: 'USD',
    packageId: pkg.id,
    packageName: pkg.name,
    gateway: 'paypal',
    status,
    discordId: null,
    createdAt,
  };
}

const PAGES = [
  [
    payment(501, 'Steve', STEVE, PACKAGES[0]!, 15, 'PAID', '2024-03-01T12:00:00.000Z'),
    payment(502, 'Alex', null, PACKAGES[1]!, 2.5, 'PAID', '2024-03-02T12:00:00.000Z'),
  ],
  [payment(503, 'Steve', STEVE, PACKAGES[1]!, 2.5, 'CHARGEBACK', '2024-03-03T12:00:00.000Z')],
];

function craftingStore(opts: { breakAtPage?: number } = {}): nock.Scope {
  const scope = nock(CRAFTINGSTORE_API.replace(/\/v7$/, ''), { reqheaders: { token: TOKEN } });
  scope.get('/v7/packages').reply(200, { success: true, data: PACKAGES });
  for (const [i, data] of PAGES.entries()) {
    const page = i + 1;
    const answer = scope.get('/v7/payments').query({ page: String(page) });
    if (page === opts.breakAtPage) {
      answer.reply(500, { success: false, error: 'Internal error' });
      return scope;
    }
    answer.reply(200, {
      success: true,
      data,
      meta: { pagination: { total: 3, count: data.length, per_page: 2, current_page: page, total_pages: PAGES.length } },
    });
  }
  return scope;
}

nock.disableNetConnect();
t.afterEach(() => nock.cleanAll());
t.teardown(() => nock.enableNetConnect());

const EVERYTHING = { category: 2, product: 2, player: 2, payment: 3 };

t.test('a dry run reports what it would bring and writes nothing', async (t) => {
  const app = await build(t, { features: FEATURES });
  const scope = craftingStore();
  const report = await app.services.get(importsRef).fromCraftingStore({ token: TOKEN }, { dryRun: true });
  t.same(report.created, EVERYTHING);
  t.match(report.notBrought, [/Running packages/]);
  t.ok(scope.isDone());
  t.equal(await rowCount(app, 'users_accounts'), 0);
  t.equal(await rowCount(app, 'imports_links'), 0);
});

t.test('packages, players and payments come in once; the boards count the paid ones', async (t) => {
  const app = await build(t, { features: FEATURES });
  const imports = app.services.get(importsRef);
  craftingStore();
  t.same((await imports.fromCraftingStore({ token: TOKEN })).created, EVERYTHING);
  t.match(await app.services.get(catalogueRef).tree({ activeOnly: false }), [
    { name: 'Ranks', products: [{ name: 'Knight', price: 1500 }] },
    { name: 'Crates', products: [{ name: 'Keys x5', price: 250 }] },
  ]);
  const steve = (await app.services.get(usersRef).findByLinkedAccount('minecraft', '069a79f4-44e9-4726-a5be-fca90e38aaf5'))!;
  t.match(
    (await app.services.get(ordersRef).ordersOf(steve.id)).map((o) => [o.paymentAPI, o.paymentID, o.status, o.creationDate]),
    [
      ['craftingstore', '503', 'refunded', /^2024-03-03/],
      ['craftingstore', '501', 'completed', /^2024-03-01/],
    ],
  );
  const board = await app.services.get(donationsRef).board('top-alltime', 10, 'UTC');
  t.same(
    board.map((d) => [d.username, d.amount]),
    [
      ['Steve', 1500],
      ['Alex', 250],
    ],
  );

  craftingStore();
  const again = await imports.fromCraftingStore({ token: TOKEN });
  t.same(again.created, {}, 'a second run brings nothing');
  t.equal(await rowCount(app, 'store_orders'), 3);
  t.equal(await rowCount(app, 'donations_entries'), 2);
});

t.test('a run cut off half way, run again, brings the rest and nothing twice', async (t) => {
  const app = await build(t, { features: FEATURES });
  const imports = app.services.get(importsRef);
  craftingStore({ breakAtPage: 2 });
  t.match(await imports.fromCraftingStore({ token: TOKEN }).catch((err: Error) => err), { message: /payments answered 500/ });
  t.equal(await rowCount(app, 'store_orders'), 2);
  craftingStore();
  const resumed = await imports.fromCraftingStore({ token: TOKEN });
  t.same(resumed.created, { payment: 1 });
  t.same(resumed.skipped, { category: 2, product: 2, player: 2, payment: 2 });
  t.equal(await rowCount(app, 'store_orders'), 3);
});

t.test('a payments CSV comes in once', async (t) => {
  const app = await build(t, { features: FEATURES });
  const imports = app.services.get(importsRef);
  const csv = [
    'id,inGameName,uuid,email,packageName,price,currency,status,createdAt',
    `501,Steve,${STEVE},steve@example.com,Knight,15.00,USD,PAID,2024-03-01 12:00:00`,
    '502,Alex,,alex@example.com,Keys x5,2.50,USD,PAID,2024-03-02 12:00:00',
  ].join('\n');
  const report = await imports.fromCraftingStore({ csv });
  t.same(report.created, { category: 1, product: 2, player: 2, payment: 2 });
  t.same((await imports.fromCraftingStore({ csv })).created, {});
  t.equal(await rowCount(app, 'store_orders'), 2);
});

t.test('imported payments queue no command, mail or webhook, and the board shows them', async (t) => {
  const smtp = await new TestSmtp().start(t);
  const app = await build(t, {
    features: [...FEATURES, 'auth', 'delivery', 'email', 'notifications'],
    config: { outbound: RECEIVERS, plugins: { email: smtp.config() } },
  });
  const completed: number[] = [];
  app.events.on('store.order.completed', (e) => void completed.push(e.orderId));
  const imports = app.services.get(importsRef);
  // The packages come in and the payments fail; the owner gives Knight a command before they come.
  craftingStore({ breakAtPage: 1 });
  t.match(await imports.fromCraftingStore({ token: TOKEN }).catch((err: Error) => err), { message: /payments answered 500/ });
  const [ranks] = await app.services.get(catalogueRef).tree({ activeOnly: false });
  const knight = ranks!.products[0]!;
  t.equal(knight.name, 'Knight');
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Survival' }, 'json');
  await created(
    app,
    `/api/admin/store/products/${knight.id}/commands`,
    { serverID: server.id, trigger: 'purchase', command: 'lp user {username} parent add knight' },
    'json',
  );
  const hook = await call(app, '/api/admin/notifications/endpoints', {
    body: { name: 'ERP', url: 'http://127.0.0.1:9/hooks', events: ['store.order.completed'] },
    as: 'json',
  });
  if (hook.statusCode !== 201) throw new Error(hook.body);

  craftingStore();
  t.same((await imports.fromCraftingStore({ token: TOKEN })).created, { player: 2, payment: 3 });
  t.equal(await rowCount(app, 'store_orders'), 3);
  t.same(completed, [], 'no store.order.completed');
  t.equal(await rowCount(app, 'delivery_queue'), 0, 'no game command queued');
  t.equal(await rowCount(app, 'email_outbox'), 0, 'no mail queued');
  t.equal(await rowCount(app, 'notifications_events'), 0, 'no webhook event');
  const board = await app.services.get(donationsRef).board('top-alltime', 10, 'UTC');
  t.same(
    board.map((d) => [d.username, d.amount]),
    [
      ['Steve', 1500],
      ['Alex', 250],
    ],
  );
});
