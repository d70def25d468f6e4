import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { AS_JAVA, ENCODINGS, apiKey, build, call, overBoth, sharedDatabaseUrl } from '../../../test/helper.ts';
import { created, newUser, read } from '../../../test/fixtures.ts';

const FEATURES = ['users', 'bazaar'];

async function user(app: FastifyInstance, username: string): Promise<number> {
  return (await newUser(app, username)).id;
}

async function server(app: FastifyInstance, name: string, extra: Record<string, unknown> = {}): Promise<string> {
  return (await created(app, '/api/admin/bazaar/servers', { name, ...extra })).id;
}

function item(serverID: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    serverID,
    itemID: 'DIAMOND_SWORD',
    modelID: '7',
    name: '§bExcalibur',
    lore: 'Sharp\nVery sharp',
    amount: '1',
    durability: '12',
    maxDurability: '1561',
    enchantments: 'SHARPNESS:5',
    base64: 'rO0ABXNy+/9=',
    ...extra,
  };
}

function items(app: FastifyInstance, userId: number, query = ''): Promise<Record<string, unknown>[]> {
  return read(app, `/api/bazaar/storages/${userId}/items${query}`);
}

t.test('items: add in every encoding, list with every field as a string', async (t) => {
  const app = await build(t, { features: FEATURES });
  const steve = await user(app, 'steve');
  const sid = await server(app, 'Survival');
  t.same(await items(app, steve), [], 'a new user stores nothing');

  for (const as of ENCODINGS) {
    const res = await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(sid, { itemID: `ITEM_${as}` }), as });
    t.equal(res.statusCode, 200, as);
    t.same(res.json(), { success: true, status: true }, `${as}: success and status, no error key`);
  }
  const list = await items(app, steve);
  t.same(
    list.map((i) => i.itemID),
    ['ITEM_multipart', 'ITEM_urlencoded', 'ITEM_json'],
  );
  const first = list[0]!;
  t.match(first, {
    owner: String(steve),
    serverID: sid,
    modelID: '7',
    name: '§bExcalibur',
    lore: 'Sharp\nVery sharp',
    amount: '1',
    durability: '12',
    maxDurability: '1561',
    enchantments: 'SHARPNESS:5',
    base64: 'rO0ABXNy+/9=',
    description: null,
    price: '0.00',
    sold: '0',
  });
  t.match(first.id, /^\d+$/);
  t.match(first.creationDate, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  for (const [k, v] of Object.entries(first)) t.ok(typeof v === 'string' || v === null, `${k} is a string or null`);
});

t.test('items: optional fields may be left out; modelID then is null', async (t) => {
  const app = await build(t, { features: FEATURES });
  const steve = await user(app, 'steve');
  const sid = await server(app, 'Survival');
  const res = await call(app, `/api/bazaar/storages/${steve}/items`, {
    body: { serverID: sid, itemID: 'STONE', amount: 64, durability: 0, maxDurability: 0, base64: 'AAAA' },
    as: 'json',
  });
  t.equal(res.statusCode, 200);
  t.match((await items(app, steve))[0], { itemID: 'STONE', amount: '64', modelID: null, name: '', lore: null, enchantments: null });
});

t.test('items: base64 is stored byte for byte; spaces from unencoded `+` become `+` again', async (t) => {
  const app = await build(t, { features: FEATURES });
  const steve = await user(app, 'steve');
  const sid = await server(app, 'Survival');
  // A game plugin that does not percent-encode: the raw `+` arrives as a space after form decoding.
  const raw = `serverID=${sid}&itemID=DIAMOND&amount=1&durability=0&maxDurability=0&base64=ab+cd/ef+==`;
  const res = await app.inject({
    method: 'POST',
    url: `/api/bazaar/storages/${steve}/items`,
    payload: raw,
    headers: { 'x-api-key': await apiKey(app), 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(res.statusCode, 200, res.body);
  const lines = 'H4sIAAAAAAAA/+1YW2/bNhR+\r\nz9+f8Q==\n';
  t.equal((await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(sid, { base64: lines }) })).statusCode, 200);
  const big = `${'QUJD+/'.repeat(65536 / 6)}QUJD`;
  t.equal(Buffer.byteLength(big), 65536, 'exactly the 64 KiB field limit');
  t.equal((await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(sid, { base64: big }), as: 'urlencoded' })).statusCode, 200);
  t.same(
    (await items(app, steve)).map((i) => i.base64),
    ['ab+cd/ef+==', lines, big],
  );
});

t.test('items: serverID filter', async (t) => {
  const app = await build(t, { features: FEATURES });
  const steve = await user(app, 'steve');
  const [a, b] = [await server(app, 'A'), await server(app, 'B')];
  for (const sid of [a, b, b]) await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(sid) });
  t.same(
    (await items(app, steve, `?serverID=${a}`)).map((i) => i.serverID),
    [a],
  );
  t.same(
    (await items(app, steve, `?serverID=${b}`)).map((i) => i.serverID),
    [b, b],
  );
  t.same(await items(app, steve, '?serverID=999'), [], 'an unknown server holds nothing');
  t.equal((await items(app, steve)).length, 3);
  const bad = await call(app, `/api/bazaar/storages/${steve}/items?serverID=abc`, { headers: AS_JAVA });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().error, 'USER_NOT_FOUND', "the game plugin's general code");
  t.equal(bad.json().code, 'VALIDATION_ERROR');
});

t.test('items: errors name the problem and store nothing', async (t) => {
  const app = await build(t, { features: FEATURES });
  const steve = await user(app, 'steve');
  const sid = await server(app, 'Survival');
  const post = (userId: number | string, body: Record<string, unknown>) => call(app, `/api/bazaar/storages/${userId}/items`, { body, headers: AS_JAVA });

  // The game plugin reads `error` into its enum: INSERT_ERROR for what it lacks, our code in `code`.
  const cases: [string, number | string, Record<string, unknown>, number, string, string?, RegExp?][] = [
    ['unknown user', 9999, item(sid), 404, 'USER_NOT_FOUND'],
    ['unknown server', steve, item('9999'), 404, 'INSERT_ERROR', 'SERVER_NOT_FOUND'],
    ['non-numeric user id', 'steve', item(sid), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /user_id/],
    ['missing base64', steve, item(sid, { base64: undefined }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /base64/],
    ['empty base64', steve, item(sid, { base64: '' }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /base64/],
    ['not base64', steve, item(sid, { base64: 'abc<script>' }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /base64/],
    ['missing itemID', steve, item(sid, { itemID: undefined }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /itemID/],
    ['missing serverID', steve, item(sid, { serverID: undefined }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /serverID/],
    ['amount not a number', steve, item(sid, { amount: 'many' }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /amount/],
    ['amount zero', steve, item(sid, { amount: '0' }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /amount/],
    ['durability beyond 32 bits', steve, item(sid, { durability: '99999999999' }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /durability/],
    ['missing maxDurability', steve, item(sid, { maxDurability: undefined }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /maxDurability/],
    ['NUL in the name', steve, item(sid, { name: 'a\u0000b' }), 400, 'INSERT_ERROR', 'VALIDATION_ERROR', /name/],
  ];
  for (const [what, userId, body, status, error, ours, message] of cases) {
    const res = await post(userId, body);
    t.equal(res.statusCode, status, what);
    t.equal(res.json().error, error, what);
    t.equal(res.json().code, ours, `${what}: our code`);
    t.equal(res.json().status, false, what);
    if (message) t.match(res.json().message, message, what);
  }
  t.same(await items(app, steve), [], 'nothing was stored');

  const unknown = await call(app, '/api/bazaar/storages/9999/items');
  t.equal(unknown.statusCode, 404);
  t.equal(unknown.json().error, 'USER_NOT_FOUND');
});

t.test('items: the cap per user and server gives INSERT_ERROR', async (t) => {
  const app = await build(t, { features: FEATURES, config: { plugins: { bazaar: { maxItemsPerServer: 2 } } } });
  const [steve, alex] = [await user(app, 'steve'), await user(app, 'alex')];
  const [a, b] = [await server(app, 'A'), await server(app, 'B')];
  for (let i = 0; i < 2; i++) t.equal((await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(a) })).statusCode, 200);
  const full = await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(a) });
  t.equal(full.statusCode, 400);
  t.equal(full.json().error, 'INSERT_ERROR');
  t.match(full.json().message, /at most 2/);
  t.equal((await items(app, steve)).length, 2, 'the refused item was not stored');
  t.equal((await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(b) })).statusCode, 200, 'another server has room');
  t.equal((await call(app, `/api/bazaar/storages/${alex}/items`, { body: item(a) })).statusCode, 200, 'another user has room');

  const id = (await items(app, steve, `?serverID=${a}`))[0]!.id;
  await call(app, `/api/bazaar/storages/${steve}/items/${id}`, { method: 'DELETE' });
  t.equal((await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(a) })).statusCode, 200, 'a delete frees a place');
});

t.test('items: concurrent adds never overrun the cap', async (t) => {
  const app = await build(t, { features: FEATURES, config: { plugins: { bazaar: { maxItemsPerServer: 3 } } } });
  const steve = await user(app, 'steve');
  const sid = await server(app, 'A');
  const results = await Promise.all(Array.from({ length: 8 }, () => call(app, `/api/bazaar/storages/${steve}/items`, { body: item(sid), as: 'json' })));
  t.same(results.map((r) => r.statusCode).sort(), [200, 200, 200, 400, 400, 400, 400, 400]);
  t.ok(results.filter((r) => r.statusCode === 400).every((r) => r.json().error === 'INSERT_ERROR'));
  t.equal((await items(app, steve)).length, 3);
});

t.test('items: 30 adds at once over two instances on one database store exactly the cap', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const config = { plugins: { bazaar: { maxItemsPerServer: 10 } } };
  const a = await build(t, { features: FEATURES, databaseUrl: url, config });
  const b = await build(t, { features: FEATURES, databaseUrl: url, config });
  const steve = await user(a, 'steve');
  const sid = await server(a, 'A');
  const add = (app: FastifyInstance) => call(app, `/api/bazaar/storages/${steve}/items`, { body: item(sid), as: 'json' });
  const results = await overBoth([a, b], 30, add);
  t.equal(results.filter((r) => r.statusCode === 200).length, 10, 'ten stored');
  t.ok(
    results.every((r) => r.statusCode === 200 || (r.statusCode === 400 && r.json().error === 'INSERT_ERROR')),
    'the rest refused as full',
  );
  t.equal((await items(b, steve)).length, 10);

  // The deletes and adds keep the count right: two deletes at once free two places, no more.
  const [first, second] = await items(a, steve);
  const deletes = await overBoth([a, b], 4, (app, i) => call(app, `/api/bazaar/storages/${steve}/items/${(i < 2 ? first : second)!.id}`, { method: 'DELETE' }));
  t.same(deletes.map((r) => r.statusCode).sort(), [200, 200, 400, 400], 'each item is deleted once');
  const again = await overBoth([a, b], 4, add);
  t.same(again.map((r) => r.statusCode).sort(), [200, 200, 400, 400]);
  t.equal((await items(a, steve)).length, 10);
});

t.test('items: an upgrade counts the items stored before it against the cap', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const config = { plugins: { bazaar: { maxItemsPerServer: 3 } } };
  const before = await build(t, { features: FEATURES, databaseUrl: url, config });
  const [steve, alex] = [await user(before, 'steve'), await user(before, 'alex')];
  const sid = await server(before, 'A');
  for (let i = 0; i < 3; i++) await call(before, `/api/bazaar/storages/${steve}/items`, { body: item(sid) });
  await call(before, `/api/bazaar/storages/${alex}/items`, { body: item(sid) });
  // The database as it was before the counts: their table, column and migration's record gone.
  await before.db.unchecked.run('drop table bazaar_item_counts');
  await before.db.unchecked.run('alter table bazaar_servers drop column storages');
  await before.db.unchecked.run("delete from core_migrations where name like '%_bazaar_item_counts'");
  await before.close();

  const after = await build(t, { features: FEATURES, databaseUrl: url, config });
  const full = await call(after, `/api/bazaar/storages/${steve}/items`, { body: item(sid) });
  t.equal(full.statusCode, 400);
  t.equal(full.json().error, 'INSERT_ERROR', 'the three stored before count');
  for (const expected of [200, 200, 400]) t.equal((await call(after, `/api/bazaar/storages/${alex}/items`, { body: item(sid) })).statusCode, expected);
});

t.test("items: delete only the user's own existing item", async (t) => {
  const app = await build(t, { features: FEATURES });
  const [steve, alex] = [await user(app, 'steve'), await user(app, 'alex')];
  const sid = await server(app, 'Survival');
  await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(sid) });
  const id = (await items(app, steve))[0]!.id;

  const foreign = await call(app, `/api/bazaar/storages/${alex}/items/${id}`, { method: 'DELETE' });
  t.equal(foreign.statusCode, 400);
  t.equal(foreign.json().error, 'DELETE_ERROR');
  t.equal((await items(app, steve)).length, 1, "another user's delete leaves the item");

  // Clients may send a form content type with an empty body on DELETE (decisions.md §1).
  const res = await call(app, `/api/bazaar/storages/${steve}/items/${id}`, {
    method: 'DELETE',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { success: true, status: true });
  t.same(await items(app, steve), []);

  const again = await call(app, `/api/bazaar/storages/${steve}/items/${id}`, { method: 'DELETE' });
  t.equal(again.statusCode, 400);
  t.equal(again.json().error, 'DELETE_ERROR');
  const bad = await call(app, `/api/bazaar/storages/${steve}/items/abc`, { method: 'DELETE', headers: AS_JAVA });
  t.equal(bad.json().error, 'DELETE_ERROR', "the game plugin's nearest code");
  t.equal(bad.json().code, 'VALIDATION_ERROR');
});

t.test('servers: public list ordered by priority, rows of strings; an api key may read it', async (t) => {
  const app = await build(t, { features: FEATURES });
  await server(app, 'Skyblock', { priority: '5', imageID: 'abc123', imageType: 'png' });
  await server(app, 'Survival', { priority: '1', isActive: '0' });
  const res = await call(app, '/api/bazaar/servers', { key: await apiKey(app) });
  t.equal(res.statusCode, 200);
  t.match(res.json(), [
    { name: 'Survival', slug: 'survival', priority: '1', isActive: '0', imageID: '', imageType: '' },
    { name: 'Skyblock', slug: 'skyblock', priority: '5', isActive: '1', imageID: 'abc123', imageType: 'png' },
  ]);
  t.equal(res.json().length, 2);
  t.match(res.json()[0].id, /^\d+$/);
});

t.test('admin servers: create, read, change, delete', async (t) => {
  const app = await build(t, { features: FEATURES });
  const created = await call(app, '/api/admin/bazaar/servers', { body: { name: 'EU Survival #1', isActive: 'true' } });
  t.equal(created.statusCode, 201);
  t.match(created.json(), { name: 'EU Survival #1', slug: 'eu-survival-1', priority: '0', isActive: '1' });
  const id = created.json().id;

  t.same((await call(app, '/api/admin/bazaar/servers')).json(), [created.json()]);
  t.same((await call(app, `/api/admin/bazaar/servers/${id}`)).json(), created.json());

  const patched = await call(app, `/api/admin/bazaar/servers/${id}`, {
    method: 'PATCH',
    body: { priority: 3, isActive: false, imageType: 'webp' },
    as: 'json',
  });
  t.equal(patched.statusCode, 200);
  t.match(patched.json(), { id, name: 'EU Survival #1', slug: 'eu-survival-1', priority: '3', isActive: '0', imageType: 'webp' });

  const dup = await call(app, '/api/admin/bazaar/servers', { body: { name: 'Other', slug: 'eu-survival-1' } });
  t.equal(dup.statusCode, 409);
  t.equal(dup.json().error, 'CONFLICT');
  const other = (await call(app, '/api/admin/bazaar/servers', { body: { name: 'Other' } })).json().id;
  const dupPatch = await call(app, `/api/admin/bazaar/servers/${other}`, { method: 'PATCH', body: { slug: 'eu-survival-1' } });
  t.equal(dupPatch.json().error, 'CONFLICT', 'a patch cannot take a used slug');
  t.equal((await call(app, `/api/admin/bazaar/servers/${other}`)).json().slug, 'other', 'and changes nothing');

  for (const body of [{}, { name: '' }, { name: 'x', slug: 'Has Spaces' }, { name: 'x', priority: 'high' }, { name: 'x'.repeat(65) }]) {
    const res = await call(app, '/api/admin/bazaar/servers', { body, as: 'json' });
    t.equal(res.json().error, 'VALIDATION_ERROR', JSON.stringify(body));
  }

  const steve = await user(app, 'steve');
  await call(app, `/api/bazaar/storages/${steve}/items`, { body: item(id) });
  const busy = await call(app, `/api/admin/bazaar/servers/${id}`, { method: 'DELETE' });
  t.equal(busy.statusCode, 409, 'a server that stores items is kept');
  t.equal(busy.json().error, 'CONFLICT');
  t.equal((await items(app, steve)).length, 1);

  const gone = await call(app, `/api/admin/bazaar/servers/${other}`, { method: 'DELETE' });
  t.equal(gone.statusCode, 200);
  t.same(gone.json(), { status: true });
  t.equal((await call(app, '/api/bazaar/servers')).json().length, 1);

  for (const [method, body] of [
    ['GET', undefined],
    ['PATCH', { name: 'y' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await call(app, `/api/admin/bazaar/servers/${other}`, { method, body });
    t.equal(res.statusCode, 404, method);
    t.equal(res.json().error, 'SERVER_NOT_FOUND', method);
  }
});

t.test('admin servers need the admin scope', async (t) => {
  const app = await build(t, { features: FEATURES });
  const res = await call(app, '/api/admin/bazaar/servers', { body: { name: 'x' }, key: await apiKey(app) });
  t.equal(res.statusCode, 403);
  t.equal(res.json().error, 'FORBIDDEN');
  t.same((await call(app, '/api/bazaar/servers')).json(), []);
});
