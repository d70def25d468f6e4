/**
 * Importing from LeaderOS against recorded answers in the shape of its public API (docs/spec: every
 * value a string, USER_NOT_FOUND for an id with no user): a dry run, a run, a second run that
 * brings nothing twice, and a run interrupted half way then run again.
 */
import t from 'tap';
import nock from 'nock';
import type { FastifyInstance } from 'fastify';
import { sql } from '../../../core/sql.ts';
import { CreditsLedgerEntry } from '../../credits/entities.ts';
import { creditsRef } from '../../credits/contract.ts';
import { usersRef } from '../../users/contract.ts';
import { catalogueRef, ordersRef } from '../../store/contract.ts';
import { donationsRef } from '../../donations/contract.ts';
import { supportRef } from '../../support/contract.ts';
import { votesRef } from '../../votes/contract.ts';
import { build } from '../../../test/helper.ts';
import { newUser, rowCount } from '../../../test/fixtures.ts';
import { importsRef } from '../contract.ts';

const SITE = 'https://shop.example';
const KEY = 'leaderos-owner-key';
const source = { url: SITE, apiKey: KEY };
const FEATURES = ['users', 'credits', 'votes', 'support', 'store', 'donations', 'imports'];

const USERS = [
  {
    id: '1',
    username: 'Steve',
    email: 'steve@example.com',
    credit: '12.50',
    isVerified: '1',
    authStatus: '1',
    creationIP: '203.0.113.5',
    creationDate: '2024-01-02 10:00:00',
    linkedAccounts: { chat: '81234567890' },
  },
  {
    id: '2',
    username: 'Alex',
    email: 'alex@example.com',
    credit: '0.00',
    isVerified: '0',
    authStatus: '1',
    creationIP: '203.0.113.6',
    creationDate: '2024-02-03 11:00:00',
    linkedAccounts: [],
  },
  // Id 3 was deleted on the site: a gap the scan goes past.
  {
    id: '4',
    username: 'Notch',
    email: 'notch@example.com',
    credit: '3.00',
    isVerified: '1',
    authStatus: '1',
    creationIP: '203.0.113.7',
    creationDate: '2024-03-04 12:00:00',
    linkedAccounts: [],
  },
];

const ROLES: Record<string, object[]> = {
  '1': [
    { id: '7', chatRoleID: '', name: 'VIP', slug: 'vip', priority: '10', expiryDate: '2099-01-01 00:00:00' },
    { id: '8', chatRoleID: '', name: 'Supporter', slug: 'supporter', priority: '5', expiryDate: '1000-01-01 00:00:00' },
    { id: '9', chatRoleID: '', name: 'Event', slug: 'event', priority: '1', expiryDate: '2020-01-01 00:00:00' },
  ],
  '2': [{ id: '7', chatRoleID: '', name: 'VIP', slug: 'vip', priority: '10', expiryDate: '1000-01-01 00:00:00' }],
  '4': [],
};

function order(id: string, total: string, type: string, status: string, creationDate: string) {
  const money = type === 'payment' ? total : '0.00';
  return {
    id,
    accountID: '',
    coupon: null,
    total,
    discount: '0.00',
    subtotal: total,
    earnings: money,
    cashback: '0.00',
    credit: '0.00',
    type,
    status,
    paymentAPI: type === 'payment' ? 'paypal' : 'credits',
    paymentID: '',
    creationDate,
  };
}

/** Orders as the API lists them, without their lines: one paid with money, one from the balance, one refunded. */
const ORDERS: Record<string, object[]> = {
  '1': [order('301', '9.99', 'payment', 'completed', '2024-04-01 10:00:00'), order('302', '5.00', 'credit', 'completed', '2024-04-02 10:00:00')],
  '2': [order('303', '3.00', 'payment', 'refunded', '2024-04-03 10:00:00')],
  '4': [],
};

const VOTE_LINKS = [
  { id: '1', name: 'Server List', link: 'https://servers.example/vote/1?username={username}' },
  { id: '2', name: 'Top Sites', link: 'https://top.example/vote' },
];

const TICKETS = [
  {
    id: '31',
    accountID: '1',
    categoryID: '2',
    categoryName: 'Payments',
    title: 'My rank did not arrive',
    statusID: '4',
    readStatus: '1',
    updateDate: '2024-05-01 10:00:00',
    creationDate: '2024-05-01 09:00:00',
    messages: [
      { id: '100', accountID: '1', message: 'I bought VIP an hour ago.', writeLocation: '0', creationDate: '2024-05-01 09:00:00' },
      { id: '101', accountID: '4', message: 'Fixed, sorry for the wait.', writeLocation: '1', creationDate: '2024-05-01 10:00:00' },
    ],
  },
  // By a user the site no longer has: reported.
  { id: '32', accountID: '3', categoryID: '2', categoryName: 'Payments', title: 'Refund', statusID: '1', readStatus: '0', messages: [] },
];

const LISTING = {
  categories: [
    {
      id: '5',
      parentID: '0',
      name: 'Ranks',
      slug: 'ranks',
      imageID: '',
      imageType: '',
      priority: '1',
      gameStatus: '0',
      gameTitle: '',
      gameDescription: '',
      gameItem: '',
      isActive: '1',
      products: [
        {
          id: '11',
          categoryID: '5',
          giveRoleID: '7',
          name: 'VIP (30 days)',
          imageID: 'a1b2c3',
          imageType: 'png',
          details: '<p>All VIP perks</p>',
          price: '9.99',
          discountedPrice: '0.00',
          discountExpiryDate: '1000-01-01 00:00:00',
          duration: '30',
          stock: '-1',
          priority: '1',
          isFeaturedProduct: '1',
          gameStatus: '0',
          gameTitle: '',
          gameDescription: '',
          gameItem: '',
          isActive: '1',
          creationDate: '2024-01-01 00:00:00',
        },
      ],
      subcategories: [
        {
          id: '6',
          parentID: '5',
          name: 'Lifetime',
          slug: 'lifetime',
          imageID: '',
          imageType: '',
          priority: '2',
          gameStatus: '0',
          gameTitle: '',
          gameDescription: '',
          gameItem: '',
          isActive: '1',
          subcategories: [],
          products: [
            {
              id: '12',
              categoryID: '6',
              giveRoleID: '0',
              name: 'Lifetime Fly',
              imageID: '',
              imageType: '',
              details: '',
              price: '25',
              discountedPrice: '0.00',
              discountExpiryDate: '1000-01-01 00:00:00',
              duration: '0',
              stock: '10',
              priority: '1',
              isFeaturedProduct: '0',
              gameStatus: '0',
              gameTitle: '',
              gameDescription: '',
              gameItem: '',
              isActive: '1',
              creationDate: '2024-01-01 00:00:00',
            },
          ],
        },
      ],
    },
  ],
};

/** The site's answers; `breakAt`: the site goes down at that user's roles, and answers nothing after. */
function site(opts: { breakAt?: string } = {}): nock.Scope {
  const scope = nock(SITE, { reqheaders: { 'x-api-key': KEY } });
  const lastId = Number(USERS.at(-1)!.id);
  for (let id = 1; id <= lastId + 2; id++) {
    const user = USERS.find((u) => u.id === String(id));
    const answer = scope.get('/api/users/').query({ userID: String(id) });
    if (user) answer.reply(200, user);
    else answer.reply(404, { status: false, error: 'USER_NOT_FOUND', message: 'User not found.' });
    if (!user) continue;
    if (opts.breakAt === user.id) {
      scope.get(`/api/users/${user.id}/roles`).reply(503, 'Service Unavailable');
      return scope;
    }
    scope.get(`/api/users/${user.id}/roles`).reply(200, ROLES[user.id]);
    scope.get(`/api/users/${user.id}/orders`).reply(200, ORDERS[user.id]);
  }
  scope.get('/api/vote-links').reply(200, VOTE_LINKS);
  scope.get('/api/support/tickets').reply(200, TICKETS);
  scope.get('/api/store/listing').reply(200, LISTING);
  return scope;
}

nock.disableNetConnect();
t.afterEach(() => nock.cleanAll());
t.teardown(() => nock.enableNetConnect());

async function ledgerOf(app: FastifyInstance, userId: number) {
  return CreditsLedgerEntry.select(app.db, sql`where ${CreditsLedgerEntry.c.userId} = ${userId} order by ${CreditsLedgerEntry.c.id}`);
}

t.test('a dry run reports what it would bring and writes nothing', async (t) => {
  const app = await build(t, { features: FEATURES });
  site();
  const report = await app.services.get(importsRef).fromLeaderOs(source, { dryRun: true, maxMissing: 2 });
  t.same(report.created, { user: 3, order: 3, 'vote-link': 2, ticket: 1, category: 2, product: 2 });
  t.equal(report.dryRun, true);
  t.ok(
    report.notBrought.some((line) => /^Passwords/.test(line)),
    'the report says passwords stay behind',
  );
  t.equal(await rowCount(app, 'users_accounts'), 0);
  t.equal(await rowCount(app, 'imports_links'), 0);
});

t.test('users, opening balances, roles with their expiries and vote links come in once, however often it runs', async (t) => {
  const app = await build(t, { features: FEATURES });
  const imports = app.services.get(importsRef);
  const users = app.services.get(usersRef);
  site();
  const first = await imports.fromLeaderOs(source, { maxMissing: 2 });
  t.same(first.created, { user: 3, role: 2, order: 3, 'vote-link': 2, ticket: 1, 'support-category': 1, category: 2, product: 2 });
  t.match(first.notBrought, [/Ticket 32 \(Refund\): its author, user 3, was not brought/, /date of the import/, /1 product images/, /Passwords/]);
  const tree = await app.services.get(catalogueRef).tree({ activeOnly: false });
  const vipRole = (await users.findRoleBySlug('vip'))!;
  t.match(
    tree,
    [
      {
        name: 'Ranks',
        products: [{ name: 'VIP (30 days)', price: 999, duration: 30, isFeatured: true, giveRoleId: vipRole.id }],
        subcategories: [{ name: 'Lifetime', products: [{ name: 'Lifetime Fly', price: 2500, stock: 10, giveRoleId: 0 }] }],
      },
    ],
    'categories nested as they were, products with their prices in cents and the role the users brought',
  );

  const steve = (await users.findByUsername('Steve'))!;
  t.equal(steve.email, 'steve@example.com');
  t.equal(await app.services.get(creditsRef).balance(steve.id), 1250, 'the credit is an opening balance');
  t.match(await ledgerOf(app, steve.id), [{ delta: 1250, balance: 1250, reason: 'import' }], 'one ledger row');
  t.equal((await users.findByLinkedAccount('chat', '81234567890'))?.id, steve.id, 'the chat account stays linked');
  const held = Object.fromEntries((await users.rolesOf(steve.id)).map((r) => [r.slug, r.expiryDate]));
  t.same(held, { vip: '2099-01-01 00:00:00', supporter: '1000-01-01 00:00:00' }, 'roles with their expiries; the expired one stays behind');
  t.match(
    (await app.services.get(ordersRef).ordersOf(steve.id)).map((o) => [o.type, o.status, o.total, o.paymentAPI, o.paymentID, o.creationDate]),
    [
      ['credit', 'completed', '5.00', 'leaderos', 'shop.example:302', /^2024-04-02/],
      ['payment', 'completed', '9.99', 'leaderos', 'shop.example:301', /^2024-04-01/],
    ],
    'the order history at its dates',
  );
  t.same(
    (await app.services.get(donationsRef).board('top-alltime', 10, 'UTC')).map((d) => [d.username, d.amount]),
    [['Steve', 999]],
    'the board counts the order paid with money, not the one from the balance nor the refunded one',
  );
  const alex = (await users.findByUsername('Alex'))!;
  t.same(
    (await users.rolesOf(alex.id)).map((r) => r.slug),
    ['vip'],
    'a role two users hold is made once',
  );
  t.same(
    (await app.services.get(votesRef).list()).map((l) => l.name),
    ['Server List', 'Top Sites'],
  );

  const [ticket] = await app.services.get(supportRef).listTickets({});
  t.match(ticket, { title: 'My rank did not arrive', accountID: String(steve.id), categoryName: 'Payments', statusID: '4' });
  t.match(
    ticket!.messages.map((m) => m.message),
    ['I bought VIP an hour ago.', 'Fixed, sorry for the wait.'],
    'the ticket with its messages, closed as it was',
  );

  site();
  const again = await imports.fromLeaderOs(source, { maxMissing: 2 });
  t.same(again.created, {}, 'a second run brings nothing');
  t.same(again.skipped, { user: 3, order: 3, 'vote-link': 2, ticket: 1, category: 2, product: 2 });
  t.equal(await rowCount(app, 'store_orders'), 3, 'the orders are not doubled');
  t.equal(await rowCount(app, 'support_tickets'), 1);
  t.equal(await rowCount(app, 'users_accounts'), 3);
  t.equal(await app.services.get(creditsRef).balance(steve.id), 1250, 'the balance is not doubled');
  t.equal(await rowCount(app, 'votes_links'), 2);
});

t.test('a run cut off half way, run again, brings the rest and nothing twice', async (t) => {
  const app = await build(t, { features: FEATURES });
  const imports = app.services.get(importsRef);
  site({ breakAt: '2' });
  const cut = await imports.fromLeaderOs(source, { maxMissing: 2 }).catch((err: Error) => err);
  t.match(cut, { message: /answered 503/ }, 'the run stops where the site went down');
  t.equal(await rowCount(app, 'users_accounts'), 1, 'the first user came in; the second did not start');

  site();
  const resumed = await imports.fromLeaderOs(source, { maxMissing: 2 });
  t.same(resumed.created, { user: 2, order: 1, 'vote-link': 2, ticket: 1, 'support-category': 1, category: 2, product: 2 }, 'the rest comes in');
  t.same(resumed.skipped, { user: 1, order: 2, role: 1 }, 'what the cut run brought is met, not made again (the VIP role Steve brought, his orders)');
  t.equal(await rowCount(app, 'users_accounts'), 3);
  t.equal(await rowCount(app, 'users_roles'), 2, 'each role once');
  t.equal(await rowCount(app, 'credits_ledger'), 2, 'one opening balance each for the two with credit');
});

t.test('a name taken here is reported, not merged', async (t) => {
  const app = await build(t, { features: FEATURES });
  await newUser(app, 'Alex');
  site();
  const report = await app.services.get(importsRef).fromLeaderOs(source, { maxMissing: 2 });
  t.same(report.created, { user: 2, role: 2, order: 2, 'vote-link': 2, ticket: 1, 'support-category': 1, category: 2, product: 2 });
  t.match(report.notBrought, [/User 2 \(Alex\): an account of that name is here already/]);
});
