/**
 * Every route the official game plugin calls, sent as its request classes send them (urlencoded,
 * `key=value` joined by `&`, values not percent-encoded, a DELETE with an empty form body) and read
 * as its `Request` reads them: HTTP 200/201/202 is a success, and `error`, when present, goes through
 * `getEnum(Error.class, "error")`, which throws on a code its enum lacks; the response is then null
 * and the caller crashes. Each route's failures must carry one of its 18 codes, ours in `code`.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { created, newUser } from './fixtures.ts';
import { ADMIN_KEY, build, JAVA_AGENT, type TestLike } from './helper.ts';

/** The plugin's `Error` enum, as docs/clients.md lists it ("Error codes a Java client can read"). */
const PLUGIN_ERRORS = new Set([
  'USER_NOT_FOUND',
  'INVALID_QUANTITY',
  'INSUFFICIENT_BALANCE',
  'OUT_OF_STOCK',
  'PRODUCT_NOT_FOUND',
  'REQUIRED_PRODUCT',
  'REQUIRED_LINKED_ACCOUNT',
  'DOWNGRADE_NOT_ALLOWED',
  'INVALID_VARIABLE',
  'INVALID_LIMIT',
  'INVALID_TYPE',
  'INSERT_ERROR',
  'DELETE_ERROR',
  'TICKET_NOT_FOUND',
  'INVALID_AMOUNT',
  'NOT_ENOUGH_CREDITS',
  'INVALID_TARGET',
  'TARGET_USER_NOT_FOUND',
]);

interface PluginResponse {
  responseCode: number;
  status: boolean;
  /** The body as the plugin holds it (an array arrives as `{array: [...]}`). */
  body: Record<string, any>;
  error: string | null;
  /** Not read by the plugin: our precise code, checked by the tests. */
  code: string | undefined;
}

/** The plugin's `Request`: what it sends and how it reads the answer; throws where the plugin's response would be null. */
async function pluginRequest(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'DELETE',
  api: string,
  form?: Record<string, string>,
  key = ADMIN_KEY,
): Promise<PluginResponse> {
  const res = await app.inject({
    method,
    url: `/api/${api}`,
    headers: { 'x-api-key': key, 'content-type': 'application/x-www-form-urlencoded', 'user-agent': JAVA_AGENT },
    ...(form
      ? {
          payload: Object.entries(form)
            .map(([k, v]) => `${k}=${v}`)
            .join('&'),
        }
      : {}),
  });
  const status = [200, 201, 202].includes(res.statusCode);
  const parsed = JSON.parse(res.body) as unknown;
  const body = (Array.isArray(parsed) ? { array: parsed } : parsed) as Record<string, any>;
  let error: string | null = null;
  if ('error' in body) {
    if (!PLUGIN_ERRORS.has(body.error))
      throw new Error(`getEnum fails on ${JSON.stringify(body.error)}: the plugin's response is null (${method} ${api}: ` + `${res.body})`);
    error = body.error;
  }
  return { responseCode: res.statusCode, status, body, error, code: body.code };
}

/** A Java double as `String.valueOf` writes it. */
const javaDouble = (n: number) => (Number.isInteger(n) ? `${n}.0` : String(n));

interface Setup {
  app: FastifyInstance;
  steve: number;
  product: number;
  serverID: string;
  token: string;
}

async function setup(t: TestLike): Promise<Setup> {
  const app = await build(t);
  const steve = (await newUser(app, 'Steve', { cents: 5000 })).id;
  await newUser(app, 'Alex');
  const category = (await created(app, '/api/admin/store/categories', { name: 'Ranks', slug: 'ranks' }, 'json')).id;
  const product = Number((await created(app, '/api/admin/store/products', { categoryID: category, name: 'Kit', price: '10' }, 'json')).id);
  const serverID = String((await created(app, '/api/admin/bazaar/servers', { name: 'Survival' }, 'json')).id);
  const token = String((await created(app, '/api/admin/delivery/servers', { name: 'Survival' }, 'json')).token);
  return { app, steve, product, serverID, token };
}

/** The plugin's AddBazaarItemRequest body for one item. */
function bazaarItem(serverId: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    name: 'Diamond Sword',
    amount: '1',
    maxDurability: '1561',
    durability: '1561',
    base64: 'rO0ABXNyABpvcmcuYnVra2l0',
    price: javaDouble(0),
    creationDate: '2026-01-01 10:00:00',
    serverID: serverId,
    itemID: 'DIAMOND_SWORD',
    ...extra,
  };
}

t.test("each route answers the plugin's checks when it succeeds", async (t) => {
  const { app, steve, product, serverID, token } = await setup(t);

  // cache/LoginListener: GetUserRequest, then getString("id"), Double.parseDouble(getString("credit")), ...
  let res = await pluginRequest(app, 'GET', 'users?username=Steve');
  t.ok(res.status && res.error === null);
  t.equal(res.body.id, String(steve));
  t.equal(Number.parseFloat(res.body.credit), 50);
  for (const field of ['realname', 'email', 'creationIP', 'creationDate']) t.type(res.body[field], 'string', field);

  res = await pluginRequest(app, 'GET', 'credits?username=Steve');
  t.ok(res.status);
  t.equal(res.body.raw_credits, 50);

  res = await pluginRequest(app, 'POST', 'credits/add', { target_username: 'Steve', amount: javaDouble(5) });
  t.ok(res.status, 'add: "5.0", as String.valueOf(double) writes it');
  res = await pluginRequest(app, 'POST', 'credits/remove', { target_username: 'Steve', amount: javaDouble(2.5) });
  t.ok(res.status);
  res = await pluginRequest(app, 'POST', 'credits/send', { sender_username: 'Steve', target_username: 'Alex', amount: javaDouble(1) });
  t.ok(res.status);
  res = await pluginRequest(app, 'POST', 'credits/set', { target_username: 'Alex', amount: javaDouble(3) });
  t.ok(res.status);

  res = await pluginRequest(app, 'GET', 'store/listing?username=Steve');
  t.ok(res.status);
  t.equal(res.body.categories[0].products[0].id, String(product));

  // WebStoreHelper: only HTTP 200 is a bought product; then data.credits as a double.
  res = await pluginRequest(app, 'POST', 'store/buy', { userID: String(steve), 'products[0][id]': String(product), 'products[0][quantity]': '1' });
  t.equal(res.responseCode, 200);
  t.type(res.body.data.credits, 'number');

  res = await pluginRequest(app, 'GET', 'store/donations/?type=latest&limit=10');
  t.ok(res.status);
  t.ok(Array.isArray(res.body.array));

  res = await pluginRequest(app, 'POST', `bazaar/storages/${steve}/items`, bazaarItem(serverID));
  t.ok(res.status);
  res = await pluginRequest(app, 'GET', `bazaar/storages/${steve}/items?serverID=${serverID}`);
  t.equal(res.body.array.length, 1);
  res = await pluginRequest(app, 'DELETE', `bazaar/storages/${steve}/items/${res.body.array[0].id}`, {});
  t.ok(res.status && res.error === null);

  res = await pluginRequest(app, 'GET', `command-logs/${token}/queue`);
  t.ok(res.status);
  res = await pluginRequest(app, 'POST', 'command-logs/validate', { token, 'commands[0]': '1' });
  t.ok(res.status);
});

t.test("every failure carries a code of the plugin's enum, ours beside it when they differ", async (t) => {
  const { app, steve, product, serverID, token } = await setup(t);
  const buyForm = (fields: Record<string, string>) => ({ userID: String(steve), 'products[0][id]': String(product), 'products[0][quantity]': '1', ...fields });
  // [what, method, api, form, error the plugin reads, our code (undefined: the same)]
  const cases: [string, 'GET' | 'POST' | 'DELETE', string, Record<string, string> | undefined, string, string?][] = [
    ['profile of nobody', 'GET', 'users?username=Nobody', undefined, 'USER_NOT_FOUND'],
    ['profile with an empty name', 'GET', 'users?username=', undefined, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['balance of nobody', 'GET', 'credits?username=Nobody', undefined, 'USER_NOT_FOUND'],
    ['balance with an empty name', 'GET', 'credits?username=', undefined, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['add to nobody', 'POST', 'credits/add', { target_username: 'Nobody', amount: '1.0' }, 'USER_NOT_FOUND'],
    ['add no amount', 'POST', 'credits/add', { target_username: 'Steve' }, 'INVALID_AMOUNT', 'VALIDATION_ERROR'],
    ['add a negative amount', 'POST', 'credits/add', { target_username: 'Steve', amount: '-1.0' }, 'INVALID_AMOUNT'],
    ['add with no target', 'POST', 'credits/add', { amount: '1.0' }, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['remove more than held', 'POST', 'credits/remove', { target_username: 'Alex', amount: '1.0' }, 'NOT_ENOUGH_CREDITS'],
    ['send to oneself', 'POST', 'credits/send', { sender_username: 'Steve', target_username: 'steve', amount: '1.0' }, 'INVALID_TARGET'],
    ['send to nobody', 'POST', 'credits/send', { sender_username: 'Steve', target_username: 'Nobody', amount: '1.0' }, 'TARGET_USER_NOT_FOUND'],
    ['send with no target', 'POST', 'credits/send', { sender_username: 'Steve', amount: '1.0' }, 'TARGET_USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['send with no sender', 'POST', 'credits/send', { target_username: 'Alex', amount: '1.0' }, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    [
      'send a list of amounts',
      'POST',
      'credits/send',
      { sender_username: 'Steve', target_username: 'Alex', 'amount[0]': '1.0' },
      'INVALID_AMOUNT',
      'VALIDATION_ERROR',
    ],
    ['set with no amount', 'POST', 'credits/set', { target_username: 'Steve' }, 'INVALID_AMOUNT', 'VALIDATION_ERROR'],
    ['set for nobody', 'POST', 'credits/set', { target_username: 'Nobody', amount: '1.0' }, 'USER_NOT_FOUND'],
    ['buy for nobody', 'POST', 'store/buy', buyForm({ userID: '999999' }), 'USER_NOT_FOUND'],
    ['buy for a malformed user', 'POST', 'store/buy', buyForm({ userID: 'steve' }), 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['buy an unknown product', 'POST', 'store/buy', buyForm({ 'products[0][id]': '999999' }), 'PRODUCT_NOT_FOUND'],
    ['buy a product without an id', 'POST', 'store/buy', { userID: String(steve), 'products[0][quantity]': '1' }, 'PRODUCT_NOT_FOUND', 'VALIDATION_ERROR'],
    ['buy no quantity', 'POST', 'store/buy', buyForm({ 'products[0][quantity]': '0' }), 'INVALID_QUANTITY'],
    ['donations of an unknown board', 'GET', 'store/donations/?type=top-weekly&limit=10', undefined, 'INVALID_TYPE'],
    ['donations beyond the limit', 'GET', 'store/donations/?type=latest&limit=1000', undefined, 'INVALID_LIMIT'],
    ['bazaar items of nobody', 'GET', `bazaar/storages/999999/items?serverID=${serverID}`, undefined, 'USER_NOT_FOUND'],
    ['bazaar items of a malformed server', 'GET', `bazaar/storages/${steve}/items?serverID=abc`, undefined, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['bazaar add on an unknown server', 'POST', `bazaar/storages/${steve}/items`, bazaarItem('999999'), 'INSERT_ERROR', 'SERVER_NOT_FOUND'],
    ['bazaar add without base64', 'POST', `bazaar/storages/${steve}/items`, bazaarItem(serverID, { base64: '' }), 'INSERT_ERROR', 'VALIDATION_ERROR'],
    ['bazaar add for nobody', 'POST', 'bazaar/storages/999999/items', bazaarItem(serverID), 'USER_NOT_FOUND'],
    ['bazaar delete of an unknown item', 'DELETE', `bazaar/storages/${steve}/items/999999`, {}, 'DELETE_ERROR'],
    ['bazaar delete of a malformed id', 'DELETE', `bazaar/storages/${steve}/items/abc`, {}, 'DELETE_ERROR', 'VALIDATION_ERROR'],
    ['queue of an unknown server token', 'GET', `command-logs/${'x'.repeat(43)}/queue`, undefined, 'USER_NOT_FOUND', 'DELIVERY_SERVER_NOT_FOUND'],
    ['validate with an unknown token', 'POST', 'command-logs/validate', { token: 'nope', 'commands[0]': '1' }, 'USER_NOT_FOUND', 'DELIVERY_SERVER_NOT_FOUND'],
    ['validate a malformed id', 'POST', 'command-logs/validate', { token, 'commands[0]': 'abc' }, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
  ];
  for (const [what, method, api, form, error, ours] of cases) {
    const res = await pluginRequest(app, method, api, form);
    t.notOk(res.status, `${what}: a failure (${res.responseCode})`);
    t.equal(res.error, error, what);
    t.equal(res.code, ours, `${what}: our code`);
  }
});

t.test('a wrong API key on every route the plugin calls: its general code, INVALID_API_KEY beside it', async (t) => {
  const { app, steve } = await setup(t);
  const routes: ['GET' | 'POST' | 'DELETE', string, Record<string, string>?][] = [
    ['GET', 'users?username=Steve'],
    ['GET', 'credits?username=Steve'],
    ['POST', 'credits/add', { target_username: 'Steve', amount: '1.0' }],
    ['POST', 'credits/remove', { target_username: 'Steve', amount: '1.0' }],
    ['POST', 'credits/send', { sender_username: 'Steve', target_username: 'Alex', amount: '1.0' }],
    ['POST', 'credits/set', { target_username: 'Steve', amount: '1.0' }],
    ['GET', 'store/listing?username=Steve'],
    ['POST', 'store/buy', { userID: String(steve), 'products[0][id]': '1', 'products[0][quantity]': '1' }],
    ['GET', 'store/donations/?type=latest&limit=10'],
    ['GET', `bazaar/storages/${steve}/items?serverID=1`],
    ['POST', `bazaar/storages/${steve}/items`, bazaarItem('1')],
    ['DELETE', `bazaar/storages/${steve}/items/1`, {}],
    ['GET', 'command-logs/token/queue'],
    ['POST', 'command-logs/validate', { token: 'token', 'commands[0]': '1' }],
  ];
  const nearest: Record<string, string> = {
    [`POST bazaar/storages/${steve}/items`]: 'INSERT_ERROR',
    [`DELETE bazaar/storages/${steve}/items/1`]: 'DELETE_ERROR',
  };
  for (const [method, api, form] of routes) {
    const res = await pluginRequest(app, method, api, form, 'wrong-key');
    t.equal(res.responseCode, 401, `${method} ${api}`);
    t.equal(res.error, nearest[`${method} ${api}`] ?? 'USER_NOT_FOUND', `${method} ${api}`);
    t.equal(res.code, 'INVALID_API_KEY', `${method} ${api}: our code`);
  }
});

t.test('routes the plugin does not call keep our codes', async (t) => {
  const { app, steve } = await setup(t);
  const res = await app.inject({ method: 'GET', url: `/api/users/${steve}/roles?x=1`, headers: { 'x-api-key': 'wrong-key' } });
  t.strictSame(Object.keys(res.json()), ['status', 'error', 'message']);
  t.equal(res.json().error, 'INVALID_API_KEY');
});

t.test("the OpenAPI document lists each mapped route's domain codes and says whose codes `error` carries", async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ url: '/docs/json' })).json();
  const buy = doc.paths['/api/store/buy'].post;
  t.match(buy.description, /called by the game plugin, which reads only its own codes/);
  t.match(buy.responses['400'].description, /OUT_OF_STOCK/);
  t.match(buy.responses['400'].description, /INSUFFICIENT_BALANCE/);
  t.match(buy.responses['404'].description, /PRODUCT_NOT_FOUND/);
  const add = doc.paths['/api/bazaar/storages/{user_id}/items'].post;
  t.match(add.responses['404'].description, /SERVER_NOT_FOUND/);
  t.match(add.responses['400'].description, /INSERT_ERROR/);
  const login = doc.paths['/api/auth/login'].post;
  t.match(login.description, /called by the game auth plugin/);
  t.match(login.responses['401'].description, /WRONG_PASSWORD/);
  t.match(login.responses['429'].description, /RATE_LIMITED/);
  t.notMatch(doc.paths['/api/users/{userId}/roles'].get.description ?? '', /called by/, 'a route no Java client calls says nothing of it');
});
