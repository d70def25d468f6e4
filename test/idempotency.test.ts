/**
 * Idempotency-Key (core/idempotency.ts) on every route that moves money, credits or items: a
 * repeat replays the first answer and moves nothing twice, another request with the key is 422,
 * concurrent repeats over two instances move once, an expired key may be used again.
 */
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import type { FastifyInstance } from 'fastify';
import { IdempotencyStore } from '../core/idempotency.ts';
import { creditsRef } from '../plugins/credits/contract.ts';
import { sql } from '../core/sql.ts';
import { CoreIdempotencyKey } from '../core/idempotency.ts';
import { BazaarItem } from '../plugins/bazaar/entities.ts';
import { StoreProduct } from '../plugins/store/entities.ts';
import { balanceOf, created, makeCategory, makeProduct, makeUser } from './fixtures.ts';
import { STRIPE_ENV, mockStripeSession, offline } from './gateways.ts';
import { apiKey, build, call, onMysql, overBoth, sharedDatabaseUrl, type CallOptions } from './helper.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';
const FEATURES = ['users', 'credits', 'store', 'donations', 'payments', 'promotions', 'bazaar'];
const REPLAYED = 'idempotent-replayed';

offline(t);

const app = (t: Parameters<typeof build>[0], databaseUrl?: string) => build(t, { features: FEATURES, env: STRIPE_ENV, databaseUrl });

/** A call carrying `key` as its Idempotency-Key. */
const keyed = (a: FastifyInstance, url: string, key: string, opts: CallOptions = {}) =>
  call(a, url, { ...opts, headers: { ...opts.headers, 'idempotency-key': key } });

const K = CoreIdempotencyKey.c;

async function count(a: FastifyInstance, table: string): Promise<number> {
  const [row] = await a.db.unchecked.query<{ n: number | string }>(`select count(*) as n from ${table}`);
  return Number(row!.n);
}

/** The first answer and its repeat: same status, body and type; only the repeat says it is one. */
async function replays(t: Test, first: Awaited<ReturnType<typeof call>>, again: Awaited<ReturnType<typeof call>>, what: string): Promise<void> {
  t.equal(again.statusCode, first.statusCode, `${what}: the same status`);
  t.equal(again.body, first.body, `${what}: the same body`);
  t.equal(again.headers['content-type'], first.headers['content-type'], `${what}: the same content type`);
  t.equal(first.headers[REPLAYED], undefined, `${what}: the first answer is no replay`);
  t.equal(again.headers[REPLAYED], 'true', `${what}: the repeat says it is a replay`);
}

t.test(`credits add, remove, send and set: a repeat replays the first answer and moves nothing again (${db})`, async (t) => {
  const a = await app(t);
  const steve = await makeUser(a, 'steve', 10_000);
  const alex = await makeUser(a, 'alex');
  const cases: [string, Record<string, unknown>][] = [
    ['/api/credits/add', { target_username: 'steve', amount: '5.00' }],
    ['/api/credits/remove', { target_username: 'steve', amount: '2.00' }],
    ['/api/credits/send', { sender_username: 'steve', target_username: 'alex', amount: '3.00' }],
    ['/api/credits/steve/send', { target_username: 'alex', amount: '1.00' }],
    ['/api/credits/set', { target_username: 'alex', amount: '50.00' }],
    ['/api/credits/alex/add', { amount: '1.50' }],
  ];
  for (const [url, body] of cases) {
    const key = randomUUID();
    const first = await keyed(a, url, key, { body });
    t.equal(first.statusCode, 200, `${url}: ${first.body}`);
    const ledger = await count(a, 'credits_ledger');
    const balances = [await balanceOf(a, steve), await balanceOf(a, alex)];
    // Sent in another encoding: the parsed body is what the key is bound to.
    const again = await keyed(a, url, key, { body, as: 'json' });
    await replays(t, first, again, url);
    t.equal(await count(a, 'credits_ledger'), ledger, `${url}: no ledger row added`);
    t.strictSame([await balanceOf(a, steve), await balanceOf(a, alex)], balances, `${url}: no balance moved`);
  }
  t.equal(await balanceOf(a, steve), 10_000 + 500 - 200 - 300 - 100);
  t.equal(await balanceOf(a, alex), 5150);

  const plain = async () => (await call(a, '/api/credits/add', { body: { target_username: 'steve', amount: '1.00' } })).statusCode;
  t.strictSame([await plain(), await plain()], [200, 200], 'without the header each call runs');
  t.equal(await balanceOf(a, steve), 10_000 + 500 - 200 - 300 - 100 + 200);
});

t.test(`the same key with another request answers 422 IDEMPOTENCY_KEY_REUSED and moves nothing (${db})`, async (t) => {
  const a = await app(t);
  await makeUser(a, 'steve', 10_000);
  await makeUser(a, 'alex');
  const key = randomUUID();
  const body = { sender_username: 'steve', target_username: 'alex', amount: '3.00' };
  t.equal((await keyed(a, '/api/credits/send', key, { body })).statusCode, 200);
  const ledger = await count(a, 'credits_ledger');
  for (const [what, url, other] of [
    ['another amount', '/api/credits/send', { ...body, amount: '4.00' }],
    ['another route', '/api/credits/add', { target_username: 'alex', amount: '3.00' }],
    ['the older path form', '/api/credits/steve/send', { target_username: 'alex', amount: '3.00' }],
  ] as const) {
    const res = await keyed(a, url, key, { body: other });
    t.equal(res.statusCode, 422, what);
    t.match(res.json(), { status: false, error: 'IDEMPOTENCY_KEY_REUSED', message: /another request/ }, what);
  }
  t.equal(await count(a, 'credits_ledger'), ledger, 'nothing moved');

  // Keys belong to the API key that sent them: another caller's same key is its own.
  const other = await a.apiKeys.create('bot', ['admin']);
  const res = await keyed(a, '/api/credits/send', key, { body, key: other });
  t.equal(res.statusCode, 200);
  t.equal(res.headers[REPLAYED], undefined, 'another API key does not see the first answer');
  t.equal(await count(a, 'credits_ledger'), ledger + 2);
});

t.test(`the header is 1–255 printable ASCII characters, else 400 naming it, nothing moved (${db})`, async (t) => {
  const a = await app(t);
  await makeUser(a, 'steve');
  for (const [what, key] of [
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['a tab', 'a\tb'],
    ['beyond ASCII', 'clé'],
  ] as const) {
    const res = await keyed(a, '/api/credits/add', key, { body: { target_username: 'steve', amount: '1.00' } });
    t.equal(res.statusCode, 400, what);
    t.match(res.json(), { error: 'VALIDATION_ERROR', message: /idempotency-key/ }, what);
  }
  t.equal(
    (await keyed(a, '/api/credits/add', `${'k'.repeat(253)} ~`, { body: { target_username: 'steve', amount: '1.00' } })).statusCode,
    200,
    '255 printable characters pass',
  );
  t.equal(await count(a, 'credits_ledger'), 1);
});

t.test(`a 4xx the route raised is replayed too; a key still running answers 409 with Retry-After (${db})`, async (t) => {
  const a = await app(t);
  const steve = await makeUser(a, 'steve', 100);
  await makeUser(a, 'alex');
  const key = randomUUID();
  const body = { sender_username: 'steve', target_username: 'alex', amount: '5.00' };
  const first = await keyed(a, '/api/credits/send', key, { body });
  t.match(first.json(), { error: 'NOT_ENOUGH_CREDITS' });
  await a.services.get(creditsRef).change(steve, 1000, { reason: 'test' });
  await replays(t, first, await keyed(a, '/api/credits/send', key, { body }), 'a refusal');
  t.equal(await balanceOf(a, steve), 1100, 'the repeat of a refusal moves nothing, even once it could');

  // A key whose first request still runs (here: made to look so) answers 409; once that request's lease has passed (it
  // died before its commit, so nothing of it happened) a repeat takes the key over and runs.
  const other = randomUUID();
  t.equal((await keyed(a, '/api/credits/send', other, { body })).statusCode, 200);
  const [row] = await CoreIdempotencyKey.select(a.db, sql`where ${K.status} = 200`);
  await a.db.run(sql`update ${CoreIdempotencyKey} set ${K.status} = 0, ${K.leaseUntil} = ${Date.now() + 60_000} where ${K.id} = ${row!.id}`);
  const running = await keyed(a, '/api/credits/send', other, { body });
  t.equal(running.statusCode, 409);
  t.equal(running.headers['retry-after'], '1');
  t.match(running.json(), { error: 'IDEMPOTENCY_IN_PROGRESS' });
  t.equal(await balanceOf(a, steve), 600);
  await a.db.run(sql`update ${CoreIdempotencyKey} set ${K.leaseUntil} = 0 where ${K.id} = ${row!.id}`);
  const taken = await keyed(a, '/api/credits/send', other, { body });
  t.equal(taken.statusCode, 200, 'the key of a holder that died is taken over');
  t.equal(taken.headers[REPLAYED], undefined);
  t.equal(await balanceOf(a, steve), 100);
  const store = new IdempotencyStore(a.db, { ttlHours: 24, leaseSeconds: 60 });
  t.notOk(
    await store.record({ id: row!.id, token: row!.token, settled: false }, { status: 200, contentType: 'application/json', body: '{}' }),
    'the first holder can no longer record its answer (in its transaction, that rolls its move back)',
  );
});

t.test(`concurrent repeats over two instances of one database move once (${db})`, async (t) => {
  const url = await sharedDatabaseUrl(t);
  const apps = [await app(t, url), await app(t, url)] as const;
  const steve = await makeUser(apps[0], 'steve', 10_000);
  const alex = await makeUser(apps[0], 'alex');
  const key = randomUUID();
  const body = { sender_username: 'steve', target_username: 'alex', amount: '7.00' };
  const answers = await overBoth(apps, 8, (a) => keyed(a, '/api/credits/send', key, { body }));
  const statuses = answers.map((r) => r.statusCode);
  t.ok(
    statuses.every((s) => s === 200 || s === 409),
    `each is the answer or "in progress" (${statuses})`,
  );
  t.ok(statuses.includes(200));
  t.equal(new Set(answers.filter((r) => r.statusCode === 200).map((r) => r.body)).size, 1, 'every 200 is the one answer');
  t.equal(await balanceOf(apps[0], steve), 9300, 'sent once');
  t.equal(await balanceOf(apps[1], alex), 700);
  t.equal(await count(apps[0], 'credits_ledger'), 3, 'one transfer (two rows) after the first credit');
  const after = await keyed(apps[1], '/api/credits/send', key, { body });
  t.equal(after.statusCode, 200);
  t.equal(after.headers[REPLAYED], 'true');
});

t.test(`an expired key may be used again; the sweep deletes expired keys (${db})`, async (t) => {
  const a = await app(t);
  await makeUser(a, 'steve');
  const key = randomUUID();
  t.equal((await keyed(a, '/api/credits/add', key, { body: { target_username: 'steve', amount: '1.00' } })).statusCode, 200);
  t.equal((await keyed(a, '/api/credits/add', key, { body: { target_username: 'steve', amount: '2.00' } })).statusCode, 422);
  // Its 24 hours passed.
  await a.db.run(sql`update ${CoreIdempotencyKey} set ${K.expiresAt} = ${Date.now() - 1}`);
  const again = await keyed(a, '/api/credits/add', key, { body: { target_username: 'steve', amount: '2.00' } });
  t.equal(again.statusCode, 200, 'the key is free again, for any request');
  t.equal(again.headers[REPLAYED], undefined);
  t.equal(await count(a, 'credits_ledger'), 2);
  const replay = await keyed(a, '/api/credits/add', key, { body: { target_username: 'steve', amount: '2.00' } });
  t.equal(replay.headers[REPLAYED], 'true', 'and bound to its new request');

  const store = new IdempotencyStore(a.db, { ttlHours: 24, leaseSeconds: 60 });
  await store.sweep(Date.now() + 25 * 3_600_000);
  t.equal(await count(a, 'core_idempotency_keys'), 0, 'swept once expired');
});

t.test(`the store buy: replayed with its status; stock, balance and orders once (${db})`, async (t) => {
  const a = await app(t);
  await a.settings.update({ buyResponseStatus: 201 });
  const steve = await makeUser(a, 'steve', 10_000);
  const category = await makeCategory(a, { name: 'Ranks' });
  const product = await makeProduct(a, { categoryID: category, name: 'Key', price: '2.50', stock: 10 });
  const key = randomUUID();
  const body = { userID: String(steve), products: [String(product)] };
  const first = await keyed(a, '/api/store/buy', key, { body });
  t.equal(first.statusCode, 201, first.body);
  await replays(t, first, await keyed(a, '/api/store/buy', key, { body }), 'buy');
  t.equal(await balanceOf(a, steve), 10_000 - 250);
  t.equal(await count(a, 'store_orders'), 1);
  t.equal((await StoreProduct.select(a.db))[0]!.stock, 9, 'one unit taken');

  // A refund retried: the first answer again, not the CONFLICT a second refund gets.
  const orderID = first.json().orderID as string;
  const refund = randomUUID();
  const refunded = await keyed(a, `/api/admin/store/orders/${orderID}/refund`, refund, { method: 'POST' });
  t.equal(refunded.statusCode, 200, refunded.body);
  await replays(t, refunded, await keyed(a, `/api/admin/store/orders/${orderID}/refund`, refund, { method: 'POST' }), 'refund');
  t.equal((await call(a, `/api/admin/store/orders/${orderID}/refund`, { method: 'POST' })).statusCode, 409, 'a second refund without the key');
  t.equal(await balanceOf(a, steve), 10_000, 'refunded once');
});

t.test(`a checkout start (own commit): a repeat replays without calling the gateway again (${db})`, async (t) => {
  const a = await app(t);
  await makeUser(a, 'steve');
  const key = randomUUID();
  const body = {
    gateway: 'stripe',
    username: 'steve',
    amount: '5.00',
    returnURL: 'https://play.example.com/thanks',
    cancelURL: 'https://play.example.com/shop',
  };
  mockStripeSession('cs_idem_1');
  const first = await keyed(a, '/api/payments/checkout', key, { body });
  t.equal(first.statusCode, 200, first.body);
  // No second session is mocked: a second call to the gateway would fail.
  await replays(t, first, await keyed(a, '/api/payments/checkout', key, { body }), 'checkout');
  t.equal(await count(a, 'payments_payments'), 1, 'one payment started');
  const reused = await keyed(a, '/api/payments/checkout', key, { body: { ...body, amount: '6.00' } });
  t.equal(reused.statusCode, 422);
});

t.test(`gift cards: an issue and a redeem retried happen once (${db})`, async (t) => {
  const a = await app(t);
  const steve = await makeUser(a, 'steve');
  const issue = randomUUID();
  const first = await keyed(a, '/api/admin/promotions/gift-cards', issue, { body: { amount: '12.00' } });
  t.equal(first.statusCode, 201, first.body);
  await replays(t, first, await keyed(a, '/api/admin/promotions/gift-cards', issue, { body: { amount: '12.00' } }), 'issue');
  t.equal(await count(a, 'promotions_gift_cards'), 1, 'one card, whose code the repeat carries');

  const redeem = randomUUID();
  const body = { userID: String(steve), code: first.json().code as string };
  const credited = await keyed(a, '/api/promotions/gift-cards/redeem', redeem, { body });
  t.match(credited.json(), { status: true, credited: '12.00', credits: '12.00' });
  await replays(t, credited, await keyed(a, '/api/promotions/gift-cards/redeem', redeem, { body }), 'redeem');
  t.equal(await balanceOf(a, steve), 1200, 'credited once');
  t.match((await call(a, '/api/promotions/gift-cards/redeem', { body })).json(), { error: 'PROMOTION_INVALID' }, 'without the key: the card is empty');
});

t.test(`bazaar items: an add and a delete retried happen once (${db})`, async (t) => {
  const a = await app(t);
  const steve = await makeUser(a, 'steve');
  const server = (await created(a, '/api/admin/bazaar/servers', { name: 'Survival' })).id as string;
  const item = { serverID: server, itemID: 'DIAMOND_SWORD', amount: '1', durability: '1', maxDurability: '1561', base64: 'rO0ABXNy' };
  const add = randomUUID();
  const key = await apiKey(a);
  const first = await keyed(a, `/api/bazaar/storages/${steve}/items`, add, { body: item, key });
  t.equal(first.statusCode, 200, first.body);
  await replays(t, first, await keyed(a, `/api/bazaar/storages/${steve}/items`, add, { body: item, key }), 'add');
  t.equal(await count(a, 'bazaar_items'), 1);
  const [stored] = await BazaarItem.select(a.db);
  const del = randomUUID();
  const gone = await keyed(a, `/api/bazaar/storages/${steve}/items/${stored!.id}`, del, { method: 'DELETE', key });
  t.equal(gone.statusCode, 200, gone.body);
  await replays(t, gone, await keyed(a, `/api/bazaar/storages/${steve}/items/${stored!.id}`, del, { method: 'DELETE', key }), 'delete');
  t.equal(await count(a, 'bazaar_items'), 0);
});

/** A route family's keyed call: its request, another request for the same key, and what it moved so far. */
interface Family {
  url: string;
  method?: 'POST' | 'DELETE';
  body?: Record<string, unknown>;
  other: { url: string; method?: 'POST' | 'DELETE'; body?: Record<string, unknown> };
  moved(): Promise<unknown>;
}

t.test(`every family: concurrent repeats over two instances move once, another request is 422, an expired key runs again (${db})`, async (t) => {
  const url = await sharedDatabaseUrl(t);
  const apps = [await app(t, url), await app(t, url)] as const;
  const [a] = apps;
  const steve = await makeUser(a, 'steve', 10_000);
  const category = await makeCategory(a, { name: 'Ranks' });
  const product = await makeProduct(a, { categoryID: category, name: 'Key', price: '2.50', stock: 10 });
  const bought = (await call(a, '/api/store/buy', { body: { userID: String(steve), products: [String(product)] } })).json().orderID as string;
  const card = (await created(a, '/api/admin/promotions/gift-cards', { amount: '3.00' })).code as string;
  const server = (await created(a, '/api/admin/bazaar/servers', { name: 'Survival' })).id as string;
  const item = { serverID: server, itemID: 'DIAMOND_SWORD', amount: '1', durability: '1', maxDurability: '1561', base64: 'rO0ABXNy' };
  const checkout = { gateway: 'stripe', username: 'steve', returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/shop' };
  const rows = (table: string) => async () => count(a, table);
  const families: Record<string, Family> = {
    credits: {
      url: '/api/credits/remove',
      body: { target_username: 'steve', amount: '1.00' },
      other: { url: '/api/credits/remove', body: { target_username: 'steve', amount: '2.00' } },
      moved: rows('credits_ledger'),
    },
    buy: {
      url: '/api/store/buy',
      body: { userID: String(steve), products: [String(product)] },
      other: { url: '/api/store/buy', body: { userID: String(steve), products: [String(product), String(product)] } },
      moved: rows('store_orders'),
    },
    'payments start': {
      url: '/api/payments/checkout',
      body: { ...checkout, amount: '5.00' },
      other: { url: '/api/payments/checkout', body: { ...checkout, amount: '6.00' } },
      moved: rows('payments_payments'),
    },
    refund: {
      url: `/api/admin/store/orders/${bought}/refund`,
      method: 'POST',
      other: { url: '/api/admin/store/orders/999/refund', method: 'POST' },
      moved: rows('credits_ledger'),
    },
    'gift card issue': {
      url: '/api/admin/promotions/gift-cards',
      body: { amount: '4.00' },
      other: { url: '/api/admin/promotions/gift-cards', body: { amount: '5.00' } },
      moved: rows('promotions_gift_cards'),
    },
    'gift card redeem': {
      url: '/api/promotions/gift-cards/redeem',
      body: { userID: String(steve), code: card },
      other: {
        url: '/api/promotions/gift-cards/redeem',
        body: { userID: String(steve), code: `${card}x` },
      },
      moved: rows('promotions_gift_card_ledger'),
    },
    'bazaar add': {
      url: `/api/bazaar/storages/${steve}/items`,
      body: item,
      other: { url: `/api/bazaar/storages/${steve}/items`, body: { ...item, amount: '2' } },
      moved: rows('bazaar_items'),
    },
  };
  for (const [name, f] of Object.entries(families)) {
    const key = randomUUID();
    const before = Number(await f.moved());
    // One gateway session: a second call to the gateway would fail (GATEWAY_ERROR).
    if (name === 'payments start') mockStripeSession(`cs_${key}`);
    const answers = await overBoth(apps, 4, (on) => keyed(on, f.url, key, { method: f.method, body: f.body }));
    const ran = answers.filter((r) => r.headers[REPLAYED] === undefined && r.statusCode !== 409);
    t.equal(ran.length, 1, `${name}: one of them ran (${answers.map((r) => r.statusCode)})`);
    t.ok(ran[0]!.statusCode < 300, `${name}: ${ran[0]!.body}`);
    t.ok(
      answers.every((r) => r.statusCode === 409 || r.body === ran[0]!.body),
      `${name}: the others replayed it or were told to wait`,
    );
    t.ok(Number(await f.moved()) > before, `${name}: it moved`);
    const moved = await f.moved();
    const reused = await keyed(a, f.other.url, key, { method: f.other.method, body: f.other.body });
    t.equal(reused.statusCode, 422, `${name}: another request with the key`);
    t.strictSame(await f.moved(), moved, `${name}: moved once`);
    await a.db.run(sql`update ${CoreIdempotencyKey} set ${K.expiresAt} = 0`);
    if (name === 'payments start') mockStripeSession(`cs_${key}_2`);
    const again = await keyed(a, f.other.url, key, { method: f.other.method, body: f.other.body });
    t.not(again.statusCode, 422, `${name}: once expired, the key runs another request (${again.statusCode})`);
    t.equal(again.headers[REPLAYED], undefined);
  }
});

t.test('the OpenAPI document carries the header and its errors on each route that takes it', async (t) => {
  const a = await app(t);
  const doc = (await a.inject({ method: 'GET', url: '/docs/json' })).json();
  const routes = [
    ['post', '/api/credits/add'],
    ['post', '/api/credits/{user}/remove'],
    ['post', '/api/credits/send'],
    ['post', '/api/credits/set'],
    ['post', '/api/store/buy'],
    ['post', '/api/admin/store/orders/{id}/refund'],
    ['post', '/api/admin/payments'],
    ['post', '/api/payments/checkout'],
    ['post', '/api/payments/purchase'],
    ['post', '/api/admin/promotions/gift-cards'],
    ['post', '/api/promotions/gift-cards/redeem'],
    ['post', '/api/bazaar/storages/{user_id}/items'],
    ['delete', '/api/bazaar/storages/{user_id}/items/{id}'],
  ];
  for (const [method, path] of routes) {
    const op = doc.paths[path!]?.[method!];
    t.match(
      op?.parameters?.filter((p: { in: string }) => p.in === 'header'),
      [{ name: 'idempotency-key', required: false }],
      `${method} ${path}: the header`,
    );
    t.match(op?.responses['422']?.description, /IDEMPOTENCY_KEY_REUSED/, `${method} ${path}: 422`);
    t.match(op?.responses['409']?.description, /IDEMPOTENCY_IN_PROGRESS/, `${method} ${path}: 409`);
  }
  t.notOk(
    doc.paths['/api/credits'].get.parameters.some((p: { in: string }) => p.in === 'header'),
    'a read takes no key',
  );
});
