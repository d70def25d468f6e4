/**
 * Every admin change is in the audit log (issue 49): the test walks every route of the OpenAPI
 * document under /api/admin that is not a GET, calls it with a valid body, and asserts an entry
 * was written by that request. A new admin route without an entry here, or without an audit
 * entry in its service, fails the test; routes kept out on purpose are listed with their reason.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { CoreAuditLog } from '../core/audit.ts';
import { rootDir } from '../core/config.ts';
import { sql } from '../core/sql.ts';
import { build, call } from './helper.ts';
import { failedDelivery, steveBlocked } from './audit-seeds.ts';
import { RECEIVERS } from './receiver.ts';

const FEATURES = [
  'users',
  'auth',
  'credits',
  'store',
  'promotions',
  'notifications',
  'console',
  'storefront',
  'support',
  'delivery',
  'donations',
  'bazaar',
  'votes',
  'chat-integration',
  'payments',
  'email',
  'subscriptions',
  'imports',
];

/** Routes that change nothing staff made, so record nothing, each with why. */
const NOT_AUDITED: Record<string, string> = {
  'POST /api/admin/email/smtp/test': 'sends a test message through the SMTP server and changes nothing',
  'POST /api/admin/payments/gateways/stripe/check': 'asks Stripe whether the credentials are taken and changes nothing',
  'POST /api/admin/payments/gateways/paypal/check': 'asks PayPal whether the credentials are taken and changes nothing',
};

/** Routes whose entry their feature's own test asserts (they call an outside service this walk has no double for): the test and the action. */
const AUDITED_ELSEWHERE: Record<string, { test: string; action: string }> = {
  'POST /api/admin/payments/disputes/{paymentID}/evidence': { test: 'plugins/payments/test/evidence.test.ts', action: 'payments.dispute.evidence' },
};

type Ids = Record<string, string>;
type Method = 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Step = { method: Method; route: string; url: (ids: Ids) => string; body?: (ids: Ids) => Record<string, unknown>; keep?: (json: any, ids: Ids) => void };

/**
 * A call of `path`, its parameters named for what they hold (`{couponId}`); `route` is the path as
 * the OpenAPI document names it (every `{…Id}` of a record is `{id}` there, but for users, roles
 * and product commands).
 */
const DOC_NAMES = new Set(['userId', 'roleId', 'platform', 'event', 'commandId']);
const step = (method: Method, path: string, body?: Step['body'], keep?: Step['keep']): Step => ({
  method,
  route: path.replace(/\{(\w+)\}/g, (m, name: string) => (DOC_NAMES.has(name) ? m : '{id}')),
  url: (ids) => path.replace(/\{(\w+)\}/g, (_m, name: string) => ids[name] ?? `{${name}}`),
  body,
  keep,
});

/** In order: each creates what later ones change and then delete. Path parameters are read from `ids`. */
const STEPS: Step[] = [
  step('PATCH', '/api/admin/settings', () => ({ storefrontTitle: 'Audited' })),
  step('PATCH', '/api/admin/payments/gateways/stripe/settings', () => ({ secretKey: 'sk_test_audited_key' })),
  step('PATCH', '/api/admin/payments/gateways/paypal/settings', () => ({ webhookId: 'WH-AUDITED' })),
  step('PATCH', '/api/admin/email/smtp', () => ({ host: 'smtp.example.org', from: 'Store <store@example.org>', password: 'audited-secret' })),
  step(
    'POST',
    '/api/admin/roles',
    () => ({ name: 'Helper' }),
    (j, ids) => (ids.roleId = j.id),
  ),
  step('PATCH', '/api/admin/roles/{roleId}', () => ({ name: 'Helpers' })),
  step('DELETE', '/api/admin/roles/{roleId}'),
  step('PATCH', '/api/admin/users/{userId}', () => ({ isVerified: true })),
  step('PUT', '/api/admin/users/{userId}/linked-accounts/{platform}', () => ({ externalID: '1234' })),
  step('DELETE', '/api/admin/users/{userId}/linked-accounts/{platform}'),
  step('POST', '/api/admin/auth/tfa/disable', (ids) => ({ userID: ids.userId })),
  step(
    'POST',
    '/api/admin/bazaar/servers',
    () => ({ name: 'Survival' }),
    (j, ids) => (ids.bazaarId = j.id),
  ),
  step('PATCH', '/api/admin/bazaar/servers/{bazaarId}', () => ({ name: 'Survival 2' })),
  step('DELETE', '/api/admin/bazaar/servers/{bazaarId}'),
  step('PATCH', '/api/admin/integrations/chat/settings', () => ({ ticketStatus: true })),
  step(
    'POST',
    '/api/admin/store/categories',
    () => ({ name: 'Ranks' }),
    (j, ids) => (ids.categoryId = j.id),
  ),
  step('POST', '/api/admin/store/categories/reorder', (ids) => ({ ids: [ids.categoryId] })),
  step('PATCH', '/api/admin/store/categories/{categoryId}', () => ({ name: 'Ranks 2' })),
  step(
    'POST',
    '/api/admin/store/products',
    (ids) => ({ categoryID: ids.categoryId, name: 'VIP', price: '5.00' }),
    (j, ids) => (ids.productId = j.id),
  ),
  step('POST', '/api/admin/store/products/reorder', (ids) => ({ ids: [ids.productId] })),
  step('PATCH', '/api/admin/store/products/{productId}', () => ({ name: 'VIP 2' })),
  step('PATCH', '/api/admin/store/products/{productId}/rules', () => ({ requireLinkedAccount: true })),
  step('PATCH', '/api/admin/store/products/{productId}/rules', () => ({ requireLinkedAccount: false })),
  step('POST', '/api/admin/payments', () => ({ username: 'steve', amount: '5.00' })),
  step(
    'POST',
    '/api/admin/delivery/servers',
    () => ({ name: 'Lobby' }),
    (j, ids) => (ids.serverId = j.id),
  ),
  step('PATCH', '/api/admin/delivery/servers/{serverId}', () => ({ name: 'Lobby 2' })),
  step('POST', '/api/admin/delivery/servers/{serverId}/token'),
  step(
    'POST',
    '/api/admin/store/products/{productId}/commands',
    (ids) => ({ serverID: ids.serverId, command: 'say {username}', trigger: 'purchase' }),
    (j, ids) => (ids.commandId = j.id),
  ),
  step('PATCH', '/api/admin/store/products/{productId}/commands/{commandId}', () => ({ command: 'say hi {username}' })),
  step(
    'POST',
    '/api/admin/delivery/chargeback-commands',
    (ids) => ({ serverID: ids.serverId, command: 'ban {username}' }),
    (j, ids) => (ids.chargebackId = j.id),
  ),
  step('DELETE', '/api/admin/delivery/chargeback-commands/{chargebackId}'),
  // The buy below queues the product's command: cancelled, then queued again.
  step('POST', '/api/admin/delivery/queue/{queueId}/cancel'),
  step('POST', '/api/admin/delivery/queue/{queueId}/redeliver'),
  step('POST', '/api/admin/store/orders/{orderId}/refund'),
  step(
    'POST',
    '/api/admin/subscription-plans',
    (ids) => ({ productID: ids.productId, intervalUnit: 'months', price: '5.00' }),
    (j, ids) => (ids.planId = j.id),
  ),
  step('PATCH', '/api/admin/subscription-plans/{planId}', () => ({ price: '6.00' })),
  // Steve's subscription (see prepare): changed to its own plan (which drops a pending change), cancelled at the period end, then refunded.
  step('POST', '/api/admin/subscriptions/{subscriptionId}/change', (ids) => ({ planID: Number(ids.planId) })),
  step('POST', '/api/admin/subscriptions/{subscriptionId}/cancel', () => ({})),
  step('POST', '/api/admin/subscriptions/{subscriptionId}/refund'),
  step('DELETE', '/api/admin/store/products/{productId}/commands/{commandId}'),
  step(
    'POST',
    '/api/admin/notifications/endpoints',
    () => ({ name: 'Hook', url: 'http://127.0.0.1:9/hook' }),
    (j, ids) => (ids.endpointId = j.id),
  ),
  step('PATCH', '/api/admin/notifications/endpoints/{endpointId}', () => ({ active: false })),
  step('POST', '/api/admin/notifications/endpoints/{endpointId}/test'),
  step('POST', '/api/admin/notifications/deliveries/{deliveryId}/redeliver'),
  step('PUT', '/api/admin/notifications/templates/{event}', () => ({ title: 'New order', body: 'An order' })),
  step('DELETE', '/api/admin/notifications/endpoints/{endpointId}'),
  step(
    'POST',
    '/api/admin/payments/packages',
    () => ({ name: 'Pack', price: '5.00', credits: '500' }),
    (j, ids) => (ids.packageId = j.id),
  ),
  step('PATCH', '/api/admin/payments/packages/{packageId}', () => ({ name: 'Pack 2' })),
  step('DELETE', '/api/admin/payments/packages/{packageId}'),
  step('POST', '/api/admin/payments/blocks/{blockId}/lift'),
  step('DELETE', '/api/admin/payments/test-orders'),
  step(
    'PUT',
    '/api/admin/payments/tax-rates',
    () => ({ country: 'DE', rate: '19' }),
    (j, ids) => (ids.taxId = j.id),
  ),
  step('DELETE', '/api/admin/payments/tax-rates/{taxId}'),
  step(
    'POST',
    '/api/admin/promotions/coupons',
    () => ({ code: 'SPRING', kind: 'percent', value: '10' }),
    (j, ids) => (ids.couponId = j.id),
  ),
  step('PATCH', '/api/admin/promotions/coupons/{couponId}', () => ({ isActive: false })),
  step('DELETE', '/api/admin/promotions/coupons/{couponId}'),
  step(
    'POST',
    '/api/admin/promotions/gift-cards',
    () => ({ amount: '5.00' }),
    (j, ids) => (ids.cardId = j.id),
  ),
  step('PATCH', '/api/admin/promotions/gift-cards/{cardId}', () => ({ note: 'for steve' })),
  step('DELETE', '/api/admin/promotions/gift-cards/{cardId}'),
  step('POST', '/api/admin/promotions/gift-card-products', (ids) => ({ productID: ids.productId, amount: '5.00' })),
  step('DELETE', '/api/admin/promotions/gift-card-products/{productId}'),
  step(
    'POST',
    '/api/admin/promotions/sales',
    () => ({ name: 'Summer', percent: '10', startDate: '2020-01-01 00:00', endDate: '2999-01-01 00:00' }),
    (j, ids) => (ids.saleId = j.id),
  ),
  step('PATCH', '/api/admin/promotions/sales/{saleId}', () => ({ isActive: false })),
  step('DELETE', '/api/admin/promotions/sales/{saleId}'),
  step(
    'POST',
    '/api/admin/support/categories',
    () => ({ name: 'Questions' }),
    (j, ids) => (ids.ticketCategoryId = j.id),
  ),
  step('PATCH', '/api/admin/support/categories/{ticketCategoryId}', () => ({ name: 'Help' })),
  step('DELETE', '/api/admin/support/categories/{ticketCategoryId}'),
  step(
    'POST',
    '/api/admin/support/answers',
    () => ({ title: 'Hello', content: 'Hi there' }),
    (j, ids) => (ids.answerId = j.id),
  ),
  step('PATCH', '/api/admin/support/answers/{answerId}', () => ({ title: 'Hello 2' })),
  step('DELETE', '/api/admin/support/answers/{answerId}'),
  step(
    'POST',
    '/api/admin/vote-links',
    () => ({ name: 'Top list', link: 'https://example.org/vote/{username}' }),
    (j, ids) => (ids.voteId = j.id),
  ),
  step('PATCH', '/api/admin/vote-links/{voteId}', () => ({ name: 'Top list 2' })),
  step('DELETE', '/api/admin/vote-links/{voteId}'),
  step('DELETE', '/api/admin/store/products/{productId}'),
  step('DELETE', '/api/admin/store/categories/{categoryId}'),
  step('DELETE', '/api/admin/delivery/servers/{serverId}'),
];

/** What some steps need made first, outside the admin API (a player's buy, a notification's delivery, a block a dispute placed). */
async function prepare(app: Awaited<ReturnType<typeof build>>, s: Step, ids: Ids): Promise<void> {
  if (s.route === '/api/admin/delivery/queue/{id}/cancel') {
    await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '20.00' } });
    const bought = await call(app, '/api/store/buy', { body: { userID: ids.userId, products: [ids.productId] } });
    ids.orderId = String(bought.json().orderID ?? bought.json().id);
    ids.queueId = String((await call(app, '/api/admin/delivery/queue')).json()[0].id);
  }
  // Steve subscribes before the first subscription step this app has (a step whose route is absent is skipped).
  if (s.route === '/api/admin/subscriptions/{id}/change' || (s.route === '/api/admin/subscriptions/{id}/cancel' && !ids.subscriptionId)) {
    const subscribed = await call(app, '/api/subscriptions', { body: { userID: ids.userId, productID: ids.productId }, as: 'json' });
    ids.subscriptionId = String(subscribed.json().id);
  }
  if (s.route === '/api/admin/notifications/deliveries/{id}/redeliver') ids.deliveryId = await failedDelivery(app, ids.endpointId!);
  if (s.route === '/api/admin/payments/blocks/{id}/lift') ids.blockId = await steveBlocked(app, ids.userId!);
}

t.test('every admin route that changes something writes an audit entry with its change', async (t) => {
  const app = await build(t, { features: FEATURES, config: { outbound: RECEIVERS } });
  const doc = (await app.inject('/docs/json')).json() as { paths: Record<string, Record<string, unknown>> };
  const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
    path.startsWith('/api/admin/') ? Object.keys(ops).flatMap((m) => (['get', 'head', 'options'].includes(m) ? [] : [`${m.toUpperCase()} ${path}`])) : [],
  );
  const walked = new Set(STEPS.map((s) => `${s.method} ${s.route}`));
  t.same(
    routes.filter((r) => !walked.has(r) && !NOT_AUDITED[r] && !AUDITED_ELSEWHERE[r]),
    [],
    'every admin route is walked here or listed as not audited, with why',
  );
  for (const [route, { test, action }] of Object.entries(AUDITED_ELSEWHERE)) {
    t.match(readFileSync(join(rootDir, test), 'utf8'), action, `${route}: ${test} asserts its ${action} entry`);
  }

  const steve = await call(app, '/api/auth/register', {
    body: { username: 'steve', password: 'correct horse 1', email: 's@example.org', ip: '10.0.0.1', useragent: 't' },
  });
  const userId = steve.json().userID ?? (await call(app, '/api/users?username=steve')).json().id;
  const ids: Ids = { userId: String(userId), platform: 'discord', event: 'store.order.completed' };
  const newest = async () => (await CoreAuditLog.select(app.db, sql`order by ${CoreAuditLog.c.id} desc limit 1`))[0]?.id ?? 0;
  for (const s of STEPS) {
    const name = `${s.method} ${s.route}`;
    if (!routes.includes(name)) continue;
    await prepare(app, s, ids);
    const before = await newest();
    const res = await call(app, s.url(ids), { method: s.method, body: s.body?.(ids), headers: { 'x-request-id': `walk-${STEPS.indexOf(s)}` } });
    t.ok(res.statusCode < 300, `${name} answers ${res.statusCode} ${res.statusCode < 300 ? '' : res.body}`);
    if (res.statusCode < 300 && res.body) s.keep?.(res.json(), ids);
    const entries = await CoreAuditLog.select(app.db, sql`where ${CoreAuditLog.c.id} > ${before}`);
    t.ok(
      entries.some((e) => e.requestId === `walk-${STEPS.indexOf(s)}`),
      `${name}: an audit entry (${entries.map((e) => e.action).join(', ') || 'none'})`,
    );
  }
});
