/**
 * Every console form that changes something is in the audit log (issue 49), as
 * test/audit-routes.test.ts asserts for the admin API: the test lists the console's POST routes
 * as registered, signs in as an admin through the sign-in form, posts each form with the session's
 * CSRF token and a valid body, and asserts an entry by that admin was written by that request. A
 * new form without an entry here fails the test; forms that change nothing are listed with why.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { CoreAuditLog } from '../core/audit.ts';
import { sql } from '../core/sql.ts';
import { importsRef } from '../plugins/imports/contract.ts';
import { grant, register, role, signInByForm } from './browser.ts';
import { PNG, until } from './fixtures.ts';
import { build, call, scratchDir } from './helper.ts';
import { failedDelivery, steveBlocked } from './audit-seeds.ts';
import { RECEIVERS } from './receiver.ts';

/** Forms that change nothing staff made, so record nothing, each with why. */
const NOT_AUDITED: Record<string, string> = {
  'POST /console/login': 'signs staff in: a session, not a change',
  'POST /console/logout': 'signs staff out: a session, not a change',
  'POST /console/email/smtp/test': 'sends a test message through the SMTP server and changes nothing',
  'POST /console/gateways/stripe/check': 'asks Stripe whether the credentials are taken and changes nothing',
  'POST /console/gateways/paypal/check': 'asks PayPal whether the credentials are taken and changes nothing',
  'POST /console/payments/test-checkout/:id/pay': "the test gateway's checkout page, where the owner plays the player paying",
  'POST /console/payments/test-checkout/:id/fail': "the test gateway's checkout page, where the owner plays the player failing to pay",
};

type Ids = Record<string, string>;
type App = FastifyInstance;
type Upload = { field: string; filename: string; type: string; data: Buffer };
type Step = {
  route: string;
  body?: (ids: Ids) => Record<string, string>;
  query?: string;
  /** Reads the id of what the form made (from the admin API), for later steps; `location` is where the form sent staff. */
  keep?: (app: App, ids: Ids, location: string) => Promise<void>;
  /** A file sent with the form (which then goes as multipart, as a browser sends it). */
  file?: Upload;
};

const step = (route: string, body?: Step['body'], keep?: Step['keep'], query?: string): Step => ({ route, body, keep, query });
const upload = (route: string, body: Record<string, string>, file: Upload, keep?: Step['keep']): Step => ({ route, body: () => body, file, keep });

/** An import's run, from the page it sent staff to, followed to its end (it runs after the form answers). */
const finished = async (app: App, _ids: Ids, location: string): Promise<void> => {
  const id = Number(/\/console\/imports\/(\d+)/.exec(location)?.[1]);
  await until(async () => (await app.services.get(importsRef).getRun(id))?.status !== 'running');
};

const CSV = 'id,inGameName,uuid,packageName,price,currency,status,createdAt\n501,Steve,,Knight,15.00,USD,PAID,2024-03-01 12:00:00\n';
const csv = (): Upload => ({ field: 'csv', filename: 'payments.csv', type: 'text/csv', data: Buffer.from(CSV) });

/** The newest record listed at `url` (the admin API's list), its id kept as `name`. */
const newest =
  (url: string, name: string) =>
  async (app: App, ids: Ids): Promise<void> => {
    const json = (
      await call(
        app,
        url.replace(/\{(\w+)\}/g, (_m, k: string) => ids[k] ?? ''),
      )
    ).json();
    const list: { id: string | number }[] = Array.isArray(json) ? json : (Object.values(json).find(Array.isArray) as { id: string }[]);
    ids[name] = String(Math.max(...list.map((r) => Number(r.id))));
  };

/** In order: each creates what later ones change and then delete. Path parameters are read from `ids`. */
const STEPS: Step[] = [
  step('/console/settings', () => ({ storefrontTitle: 'Audited' })),
  step('/console/gateways/stripe', () => ({ secretKey: 'sk_test_audited_key' })),
  step('/console/gateways/paypal', () => ({ webhookId: 'WH-AUDITED' })),
  step('/console/email/smtp', () => ({ host: 'smtp.example.org', from: 'Store <store@example.org>', password: 'audited-secret' })),
  step(
    '/console/email/test',
    () => ({ to: 'owner@example.org' }),
    async (app, ids) => {
      const [queued] = await CoreAuditLog.select(app.db, sql`where ${CoreAuditLog.c.action} = ${'email.test'} order by ${CoreAuditLog.c.id} desc limit 1`);
      ids.emailId = queued!.targetId;
    },
  ),
  step('/console/email/:id/again'),
  step('/console/imports', () => ({ url: 'http://127.0.0.1:9', apiKey: 'a-key', dryRun: 'true' }), finished),
  upload('/console/imports/tebex', { dryRun: 'true' }, csv(), finished),
  upload('/console/imports/craftingstore', { dryRun: 'true' }, csv(), finished),
  step('/console/api-keys', () => ({ name: 'audited', scope: 'api' })),
  step('/console/api-keys/revoke', undefined, undefined, 'name=audited'),
  step('/console/roles', () => ({ name: 'Helper' }), newest('/api/admin/roles', 'roleId')),
  step('/console/roles/:id', () => ({ name: 'Helpers' })),
  step('/console/players/:id/roles', (ids) => ({ roleID: ids.roleId! })),
  step('/console/players/:id/roles/:roleId/revoke'),
  step('/console/roles/:id/delete'),
  step('/console/players/:id/credits', () => ({ amount: '5.00', direction: 'add', reason: 'a test' })),
  step('/console/bazaar', () => ({ name: 'Survival' }), newest('/api/admin/bazaar/servers', 'bazaarId')),
  step('/console/bazaar/:id', () => ({ name: 'Survival 2' })),
  step('/console/bazaar/:id/delete'),
  step('/console/chat', () => ({ ticketStatus: 'true' })),
  step('/console/catalogue/categories', () => ({ name: 'Ranks', isActive: 'true' }), newest('/api/admin/store/categories', 'categoryId')),
  step('/console/catalogue/categories/:id', () => ({ name: 'Ranks 2', isActive: 'true' })),
  step('/console/catalogue/categories/:id/move', undefined, undefined, 'to=up'),
  step(
    '/console/catalogue/products',
    (ids) => ({ categoryID: ids.categoryId!, name: 'VIP', price: '5.00', isActive: 'true' }),
    newest('/api/admin/store/products', 'productId'),
  ),
  step('/console/catalogue/products/:id', () => ({ name: 'VIP 2', price: '5.00', isActive: 'true' })),
  step('/console/catalogue/products/:id/rules', () => ({ requireLinkedAccount: 'true' })),
  upload('/console/catalogue/products/:id/image', {}, { field: 'image', filename: 'vip.png', type: 'image/png', data: PNG }),
  step('/console/delivery/servers', () => ({ name: 'Lobby', isActive: 'true' }), newest('/api/admin/delivery/servers', 'serverId')),
  step(
    '/console/delivery/products/:id/commands',
    (ids) => ({ serverID: ids.serverId!, command: 'say {username}', trigger: 'purchase' }),
    newest('/api/admin/store/products/{productId}/commands', 'commandId'),
  ),
  step(
    '/console/delivery/chargeback',
    (ids) => ({ serverID: ids.serverId!, command: 'ban {username}' }),
    newest('/api/admin/delivery/chargeback-commands', 'chargebackId'),
  ),
  step('/console/delivery/chargeback/:id/delete'),
  // The buy below queues the product's command: cancelled, queued again from the order, cancelled and queued again.
  step('/console/delivery/queue/:id/cancel'),
  step('/console/orders/:id/deliveries/:queueId/redeliver'),
  step('/console/delivery/queue/:id/redeliver'),
  step('/console/orders/:id/refund'),
  step('/console/subscriptions/:id/cancel'),
  step('/console/subscriptions/:id/refund'),
  step('/console/subscriptions/:id/cancel-now'),
  step('/console/delivery/products/:id/commands/:commandId/delete'),
  step(
    '/console/notifications',
    () => ({ name: 'Hook', kind: 'webhook', url: 'http://127.0.0.1:9/hook', active: 'true' }),
    newest('/api/admin/notifications/endpoints', 'endpointId'),
  ),
  step('/console/notifications/:id', () => ({ name: 'Hook 2', kind: 'webhook', url: 'http://127.0.0.1:9/hook' })),
  step('/console/notifications/:id/test'),
  step('/console/notifications/deliveries/:id/redeliver'),
  step('/console/notifications/templates/:event', () => ({ title: 'New order', body: 'An order' })),
  step('/console/notifications/:id/delete'),
  step('/console/payments/packages', () => ({ name: 'Pack', price: '5.00', credits: '500' }), newest('/api/admin/payments/packages', 'packageId')),
  step('/console/payments/packages/:id', () => ({ name: 'Pack 2', price: '5.00', credits: '500' })),
  step('/console/payments/packages/:id/delete'),
  step('/console/payments/tax/rates', () => ({ country: 'DE', rate: '19' }), newest('/api/admin/payments/tax-rates', 'taxId')),
  step('/console/payments/tax/rates/:id/delete'),
  step('/console/payments/test-orders/clear'),
  step('/console/disputes/blocks/:id/lift'),
  step('/console/promotions/coupons', () => ({ code: 'SPRING', kind: 'percent', value: '10' }), newest('/api/admin/promotions/coupons', 'couponId')),
  step('/console/promotions/coupons/:id', () => ({ code: 'SPRING', kind: 'percent', value: '20' })),
  step('/console/promotions/coupons/:id/delete'),
  step(
    '/console/promotions/sales',
    () => ({ name: 'Summer', percent: '10', startDate: '2020-01-01 00:00', endDate: '2999-01-01 00:00' }),
    newest('/api/admin/promotions/sales', 'saleId'),
  ),
  step('/console/promotions/sales/:id', () => ({ name: 'Summer 2', percent: '10', startDate: '2020-01-01 00:00', endDate: '2999-01-01 00:00' })),
  step('/console/promotions/sales/:id/delete'),
  step('/console/promotions/gift-cards', () => ({ amount: '5.00' }), newest('/api/admin/promotions/gift-cards', 'cardId')),
  step('/console/promotions/gift-cards/:id', () => ({ note: 'for steve' })),
  step('/console/promotions/gift-cards/:id/delete'),
  step('/console/promotions/gift-card-products', (ids) => ({ productID: ids.productId!, amount: '5.00' })),
  step('/console/support/categories', () => ({ name: 'Questions' }), newest('/api/admin/support/categories', 'ticketCategoryId')),
  step('/console/support/categories/:id', () => ({ name: 'Help' })),
  step('/console/support/answers', () => ({ title: 'Hello', content: 'Hi there' }), newest('/api/admin/support/answers', 'answerId')),
  step('/console/support/answers/:id', () => ({ title: 'Hello 2', content: 'Hi there' })),
  step('/console/support/tickets/:id/reply', () => ({ message: 'We are on it' })),
  step('/console/support/tickets/:id/close'),
  step('/console/support/answers/:id/delete'),
  step('/console/support/categories/:id/delete'),
  step('/console/vote-links', () => ({ name: 'Top list', link: 'https://example.org/vote/{username}' }), newest('/api/admin/vote-links', 'voteId')),
  step('/console/vote-links/:id', () => ({ name: 'Top list 2', link: 'https://example.org/vote/{username}' })),
  step('/console/vote-links/:id/delete'),
  step('/console/catalogue/products/:id/delete'),
  step('/console/catalogue/categories/:id/delete'),
];

/** Which kept id each route's `:id` (and `:queueId`, `:roleId`, …) stands for. */
const ID_OF: [RegExp, string][] = [
  [/^\/console\/roles\//, 'roleId'],
  [/^\/console\/players\//, 'userId'],
  [/^\/console\/bazaar\//, 'bazaarId'],
  [/^\/console\/catalogue\/categories\//, 'categoryId'],
  [/^\/console\/catalogue\/products\//, 'productId'],
  [/^\/console\/delivery\/products\//, 'productId'],
  [/^\/console\/delivery\/chargeback\//, 'chargebackId'],
  [/^\/console\/delivery\/queue\//, 'queueId'],
  [/^\/console\/orders\//, 'orderId'],
  [/^\/console\/notifications\/deliveries\//, 'deliveryId'],
  [/^\/console\/notifications\//, 'endpointId'],
  [/^\/console\/payments\/packages\//, 'packageId'],
  [/^\/console\/payments\/tax\//, 'taxId'],
  [/^\/console\/disputes\//, 'blockId'],
  [/^\/console\/promotions\/coupons\//, 'couponId'],
  [/^\/console\/promotions\/sales\//, 'saleId'],
  [/^\/console\/promotions\/gift-cards\//, 'cardId'],
  [/^\/console\/support\/categories\//, 'ticketCategoryId'],
  [/^\/console\/support\/answers\//, 'answerId'],
  [/^\/console\/support\/tickets\//, 'ticketId'],
  [/^\/console\/vote-links\//, 'voteId'],
  [/^\/console\/subscriptions\//, 'subscriptionId'],
  [/^\/console\/email\//, 'emailId'],
];

const urlOf = (route: string, ids: Ids): string =>
  route.replace(/:(\w+)/g, (m, name: string) => ids[name === 'id' ? (ID_OF.find(([re]) => re.test(route))?.[1] ?? '') : name] ?? m);

/** The console's POST routes as registered (Fastify's route tree, one path segment a line under its parent). */
function consolePosts(app: App): string[] {
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false, method: 'POST' }).split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    const path = stack.join('');
    if (m[3]?.includes('POST') && path.startsWith('/console/')) out.push(`POST ${path}`);
  }
  return out;
}

/** A form with a file as a browser sends it. */
function multipart(fields: Record<string, string>, file: Upload): { payload: Buffer; type: string } {
  const boundary = `----walk${randomBytes(8).toString('hex')}`;
  const part = (head: string) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; ${head}\r\n\r\n`);
  return {
    payload: Buffer.concat([
      ...Object.entries(fields).map(([k, v]) => Buffer.concat([part(`name="${k}"`), Buffer.from(`${v}\r\n`)])),
      part(`name="${file.field}"; filename="${file.filename}"\r\nContent-Type: ${file.type}`),
      file.data,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

/** What some steps need made first, outside the console (a player's buy, a ticket, a notification's delivery, a block a dispute placed). */
async function prepare(app: App, s: Step, ids: Ids): Promise<void> {
  if (s.route === '/console/catalogue/categories/:id/move') {
    // A second category before it, so moving it up changes the order.
    await call(app, '/api/admin/store/categories/reorder', { body: { ids: [ids.categoryId] } });
    const other = (await call(app, '/api/admin/store/categories', { body: { name: 'Other' } })).json().id;
    await call(app, '/api/admin/store/categories/reorder', { body: { ids: [other, ids.categoryId] } });
  }
  if (s.route === '/console/delivery/queue/:id/cancel') {
    await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '20.00' } });
    await call(app, `/api/admin/store/products/${ids.productId}/rules`, { method: 'PATCH', body: { requireLinkedAccount: false } });
    const bought = await call(app, '/api/store/buy', { body: { userID: ids.userId, products: [ids.productId] } });
    if (bought.statusCode !== 200) throw new Error(`buy: ${bought.body}`);
    ids.orderId = String(bought.json().orderID ?? bought.json().id);
    ids.queueId = String((await call(app, '/api/admin/delivery/queue')).json()[0].id);
  }
  if (s.route === '/console/delivery/queue/:id/redeliver') {
    await call(app, `/api/admin/delivery/queue/${ids.queueId}/cancel`, { method: 'POST' });
  }
  if (s.route === '/console/notifications/deliveries/:id/redeliver') ids.deliveryId = await failedDelivery(app, ids.endpointId!);
  if (s.route === '/console/disputes/blocks/:id/lift') ids.blockId = await steveBlocked(app, ids.userId!);
  if (s.route === '/console/subscriptions/:id/cancel') {
    await call(app, '/api/admin/subscription-plans', { body: { productID: ids.productId, intervalUnit: 'months', price: '5.00' }, as: 'json' });
  }
  if (s.route === '/console/subscriptions/:id/cancel' || s.route === '/console/subscriptions/:id/cancel-now') {
    // A fresh one for the cancel now: the refund before it ended the first.
    await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '5.00' } });
    const subscribed = await call(app, '/api/subscriptions', { body: { userID: ids.userId, productID: ids.productId }, as: 'json' });
    if (subscribed.statusCode >= 300) throw new Error(`subscribe: ${subscribed.body}`);
    ids.subscriptionId = String(subscribed.json().id);
  }
  if (s.route === '/console/support/tickets/:id/reply') {
    // In a category of its own: the walk deletes its category afterwards, which a ticket would keep.
    const categoryID = (await call(app, '/api/admin/support/categories', { body: { name: 'Ranks' } })).json().id;
    const ticket = await call(app, '/api/support/tickets', { body: { userID: ids.userId, categoryID, title: 'Help', message: 'My rank is gone' } });
    if (ticket.statusCode >= 300) throw new Error(`ticket: ${ticket.body}`);
    await newest('/api/support/tickets', 'ticketId')(app, ids);
  }
}

t.test('every console form that changes something writes an audit entry by the staff who sent it', async (t) => {
  const app = await build(t, { config: { outbound: RECEIVERS, plugins: { store: { images: { folder: scratchDir(t) } } } } });
  const routes = consolePosts(app);
  t.ok(routes.includes('POST /console/catalogue/products/:id/rules'), 'the routes are read from the route tree');
  const walked = new Set(STEPS.map((s) => `POST ${s.route}`));
  t.same(
    routes.filter((r) => !walked.has(r) && !NOT_AUDITED[r]),
    [],
    'every console form is walked here or listed, with why',
  );

  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const ids: Ids = { userId: String(await register(app, 'steve')), event: 'store.order.completed' };
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec((await app.inject({ url: '/console', headers: { cookie } })).body)![1]!;
  const last = async () => (await CoreAuditLog.select(app.db, sql`order by ${CoreAuditLog.c.id} desc limit 1`))[0]?.id ?? 0;
  for (const [i, s] of STEPS.entries()) {
    const name = `POST ${s.route}`;
    if (!routes.includes(name)) continue;
    await prepare(app, s, ids);
    const before = await last();
    const fields = { _csrf: csrf, ...s.body?.(ids) };
    const form = s.file ? multipart(fields, s.file) : { payload: new URLSearchParams(fields).toString(), type: 'application/x-www-form-urlencoded' };
    const res = await app.inject({
      method: 'POST',
      url: urlOf(s.route, ids) + (s.query ? `?${s.query}` : ''),
      headers: { cookie, 'content-type': form.type, 'x-request-id': `form-${i}` },
      payload: form.payload,
    });
    const notice = decodeURIComponent(/console_notice=([^;]*)/.exec(String(res.headers['set-cookie']))?.[1] ?? '');
    t.ok([200, 303].includes(res.statusCode), `${name} answers ${res.statusCode} ${notice}`);
    await s.keep?.(app, ids, String(res.headers.location ?? ''));
    const entries = await CoreAuditLog.select(app.db, sql`where ${CoreAuditLog.c.id} > ${before}`);
    t.ok(
      entries.some((e) => e.requestId === `form-${i}` && e.actorKind === 'staff' && e.actor === 'Alice'),
      `${name}: an audit entry by Alice (${entries.map((e) => `${e.action} by ${e.actor}`).join(', ') || 'none'}) ${notice}`,
    );
  }
});
