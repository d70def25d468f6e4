import t from 'tap';
import { displayTimestamp } from '../../../core/format.ts';
import { count, fields, sql } from '../../../core/sql.ts';
import { DeliveryQueue } from '../entities.ts';
import { StoreOrder } from '../../store/entities.ts';

const Q = DeliveryQueue.c;
import { read, rowCount } from '../../../test/fixtures.ts';
import { build, call } from '../../../test/helper.ts';
import { usersRef } from '../../users/contract.ts';
import { DELIVERY_FEATURES, addCommand, buy, makeCategory, makeProduct, makeServer, makeUser, pollQueue, validate } from './fixtures.ts';

t.test('a buy queues its rendered purchase commands; a failed buy queues nothing', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const server = await makeServer(app);
  const other = await makeServer(app, 'Creative');
  const category = await makeCategory(app, { name: 'Items' });
  const sword = await makeProduct(app, {
    categoryID: category,
    name: 'Sword',
    price: '1',
    stock: 5,
    variables: [{ name: 'color', required: true, values: ['red', 'blue'] }],
  });
  await addCommand(app, sword, {
    serverID: server.id,
    trigger: 'purchase',
    command: 'give {username} sword {quantity} {var:color} #{orderID} p{productID} {productName} u{userID} c{chatUserID}',
  });
  await addCommand(app, sword, { serverID: other.id, trigger: 'purchase', command: 'say {username} x{quantity}', perUnit: true });
  await addCommand(app, sword, { serverID: server.id, trigger: 'refund', command: 'take {username} sword' });
  const steve = await makeUser(app, 'steve', 1000);
  await app.services.get(usersRef).linkAccount(steve, 'chat', '4242');

  let res = await buy(app, { userID: steve, products: [{ id: sword, quantity: 3, variables: { color: 'red' } }] });
  t.ok([200, 201].includes(res.statusCode), res.body);
  const orderId = res.json().orderID ?? (await StoreOrder.select(app.db))[0]!.id;
  const rows = await app.db.query(
    sql`select ${fields({ server_id: Q.serverId, command: Q.command, status: Q.status, order_id: Q.orderId })} from ${DeliveryQueue} order by ${Q.id}`,
  );
  t.same(
    rows.map((r) => [String(r.server_id), r.command, r.status, Number(r.order_id)]),
    [
      [server.id, `give steve sword 3 red #${orderId} p${sword} Sword u${steve} c4242`, 'waiting', Number(orderId)],
      [other.id, 'say steve x1', 'waiting', Number(orderId)],
      [other.id, 'say steve x1', 'waiting', Number(orderId)],
      [other.id, 'say steve x1', 'waiting', Number(orderId)],
    ],
    'placeholders filled; perUnit once per unit; no refund command yet',
  );

  // Out of stock: the whole buy rolls back, its commands with it.
  res = await buy(app, { userID: steve, products: [{ id: sword, quantity: 3, variables: { color: 'blue' } }] });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'OUT_OF_STOCK');
  t.equal(await rowCount(app, 'delivery_queue'), 4, 'a failed buy queues nothing');
});

t.test('the plugin HTTP mode: queue listing, one player per validate, each row once', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const server = await makeServer(app);
  const other = await makeServer(app, 'Creative');
  const category = await makeCategory(app, { name: 'Items' });
  const sword = await makeProduct(app, { categoryID: category, name: 'Sword', price: '1' });
  const rank = await makeProduct(app, { categoryID: category, name: 'Rank', price: '1' });
  await addCommand(app, sword, { serverID: server.id, trigger: 'purchase', command: 'give {username} sword' });
  await addCommand(app, sword, { serverID: other.id, trigger: 'purchase', command: 'elsewhere {username}' });
  await addCommand(app, rank, { serverID: server.id, trigger: 'purchase', command: 'rank {username}', requireOnline: true });
  const alex = await makeUser(app, 'alex', 1000);
  const steve = await makeUser(app, 'steve', 1000);
  for (const [user, product] of [
    [alex, sword],
    [steve, sword],
    [alex, sword],
    [steve, rank],
  ] as const) {
    t.ok([200, 201].includes((await buy(app, { userID: user, products: [product] })).statusCode));
  }

  let res = await pollQueue(app, server.token);
  t.equal(res.statusCode, 200, res.body);
  const listed = res.json();
  t.equal(listed.length, 3, "the requireOnline row and the other server's rows are not listed");
  for (const row of listed) {
    t.strictSame(Object.keys(row), ['id', 'status', 'retry', 'updatedAt']);
    t.equal(row.status, 'sending');
    t.equal(row.retry, '0');
    t.type(row.id, 'string');
  }
  const ids = listed.map((r: { id: string }) => r.id);
  const otherIds = (await pollQueue(app, other.token)).json().map((r: { id: string }) => r.id);

  // The plugin posts every listed id (and here also another server's): one player's rows come back.
  res = await validate(app, server.token, [...ids, ...otherIds]);
  t.equal(res.statusCode, 200, res.body);
  t.same(res.json(), {
    commands: [
      { command: 'give alex sword', username: 'alex' },
      { command: 'give alex sword', username: 'alex' },
    ],
  });
  res = await validate(app, server.token, ids);
  t.same(res.json(), { commands: [{ command: 'give steve sword', username: 'steve' }] }, 'the next player on the next call');
  res = await validate(app, server.token, ids);
  t.same(res.json(), { commands: [] }, 'a second validate of the same ids hands out nothing');
  t.same((await pollQueue(app, server.token)).json(), [], 'nothing left for this mode');
  t.equal((await pollQueue(app, other.token)).json().length, 3, "the other server's rows were left alone");
  const statuses = await app.db.query(sql`select ${fields({ status: Q.status, n: count() })} from ${DeliveryQueue} group by ${Q.status} order by ${Q.status}`);
  t.same(
    statuses.map((s) => [s.status, Number(s.n)]),
    [
      ['done', 3],
      ['waiting', 4],
    ],
  );

  // The game plugin reads `error` into its enum: its general code, ours in `code`.
  for (const bad of [await pollQueue(app, 'x'.repeat(43)), await validate(app, 'nope', ids)]) {
    t.equal(bad.statusCode, 404);
    t.match(bad.json(), { status: false, error: 'USER_NOT_FOUND', code: 'DELIVERY_SERVER_NOT_FOUND' });
  }
  res = await validate(app, server.token, ['abc']);
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'USER_NOT_FOUND');
  t.equal(res.json().code, 'VALIDATION_ERROR');
  t.match((await read(app, `/api/admin/delivery/servers/${server.id}`)).lastSeenDate, /\d/);
});

t.test("the plugin's poll is one statement (its server held from the last poll), its queue read from one index alone, no row looked up", async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const server = await makeServer(app);
  const category = await makeCategory(app, { name: 'Items' });
  const sword = await makeProduct(app, { categoryID: category, name: 'Sword', price: '1' });
  await addCommand(app, sword, { serverID: server.id, trigger: 'purchase', command: 'give {username} sword' });
  const steve = await makeUser(app, 'steve', 1000);
  t.equal((await buy(app, { userID: steve, products: [sword] })).statusCode, 200);
  // The first poll also reads the server and writes when it was last seen.
  t.equal((await pollQueue(app, server.token)).json().length, 1);
  const seen: { text: string; values: unknown[] }[] = [];
  const db = { query: app.db.query, queryArrays: app.db.queryArrays, run: app.db.run };
  for (const name of ['query', 'queryArrays', 'run'] as const) {
    app.db[name] = ((statement: { text: string; values: unknown[] }) => {
      seen.push(statement);
      return (db[name] as (s: unknown) => unknown).call(app.db, statement);
    }) as never;
  }
  const res = await pollQueue(app, server.token);
  Object.assign(app.db, db);
  t.equal(res.json().length, 1, res.body);
  t.equal(seen.length, 1, 'its queue alone');
  const { text, values } = seen[0]!;
  if (app.db.dialect === 'sqlite') {
    const plan = (await app.db.unchecked.query<{ detail: string }>(`explain query plan ${text}`, values)).map((r) => r.detail);
    t.match(plan.join('; '), /^SEARCH delivery_queue USING COVERING INDEX delivery_queue_server_queue_index \(server_id=\? AND status=\?\)/, plan.join('; '));
    t.notMatch(plan.join('; '), /TEMP B-TREE/, 'already in id order');
  } else {
    const plan = await app.db.unchecked.query<{ table: string; type: string; key: string; Extra: string | null }>(`explain ${text}`, values);
    t.match(plan, [{ table: 'delivery_queue', key: 'delivery_queue_server_queue_index' }], JSON.stringify(plan));
    t.equal(plan.length, 1);
    t.match(plan[0]?.Extra, /Using index/, 'read from the index alone');
    t.notMatch(plan[0]?.Extra, /filesort/, 'already in id order');
  }
  // A server with nothing waiting gets an empty list; a token of no active server, the plugin's not-found.
  const listed = res.json().map((r: { id: string }) => r.id);
  t.equal((await validate(app, server.token, listed)).json().commands.length, 1);
  t.same((await pollQueue(app, server.token)).json(), []);
  const unknown = await pollQueue(app, 'x'.repeat(43));
  t.equal(unknown.statusCode, 404);
  t.match(unknown.json(), { status: false, error: 'USER_NOT_FOUND', code: 'DELIVERY_SERVER_NOT_FOUND' });
});

t.test('after an outage the plugin takes a long queue: it validates every id it was listed, past the default field limit', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const server = await makeServer(app);
  const category = await makeCategory(app, { name: 'Items' });
  const coin = await makeProduct(app, { categoryID: category, name: 'Coin', price: '0.01' });
  await addCommand(app, coin, { serverID: server.id, trigger: 'purchase', command: 'give {username} coin', perUnit: true });
  const steve = await makeUser(app, 'steve', 1000);
  for (let i = 0; i < 3; i++) t.equal((await buy(app, { userID: steve, products: [{ id: coin, quantity: 100 }] })).statusCode, 200);
  const ids = (await pollQueue(app, server.token)).json().map((r: { id: string }) => r.id);
  t.equal(ids.length, 300, 'every waiting row is listed');

  // The plugin posts them all as a form, as it does with any list.
  let res = await validate(app, server.token, ids.slice(0, 150));
  t.equal(res.statusCode, 200, res.body.slice(0, 200));
  t.equal(res.json().commands.length, 150);
  res = await call(app, '/api/command-logs/validate', { body: { token: server.token, commands: ids.slice(150) }, as: 'json' });
  t.equal(res.statusCode, 200, res.body.slice(0, 200));
  t.equal(res.json().commands.length, 150, 'and as JSON');
  t.same((await pollQueue(app, server.token)).json(), [], 'the queue is drained');

  // The route's bound holds: the schema's 500 ids and the token.
  res = await validate(
    app,
    server.token,
    Array.from({ length: 501 }, (_, i) => String(i + 1)),
  );
  t.equal(res.statusCode, 413, res.body);
  t.equal(res.json().code ?? res.json().error, 'PAYLOAD_TOO_LARGE');
  // What the schema does not name keeps the default limit, however many ids the route takes.
  const extra = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}`, '1']));
  res = await call(app, '/api/command-logs/validate', { body: { token: server.token, commands: ['1'], ...extra }, as: 'json' });
  t.equal(res.statusCode, 413, res.body);
  res = await call(app, '/api/command-logs/validate', { body: { token: server.token, commands: ['1'], ...extra }, as: 'urlencoded' });
  t.equal(res.statusCode, 413, res.body);
});

t.test("each poll answers its rows as they are now: a row's JSON is kept only while its tries, its time and the site's time zone are unchanged", async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const server = await makeServer(app);
  const category = await makeCategory(app, { name: 'Items' });
  const coin = await makeProduct(app, { categoryID: category, name: 'Coin', price: '0.01' });
  await addCommand(app, coin, { serverID: server.id, trigger: 'purchase', command: 'give {username} coin', perUnit: true });
  const [steve, alex] = [await makeUser(app, 'steve', 1000), await makeUser(app, 'alex', 1000)];
  t.equal((await buy(app, { userID: steve, products: [{ id: coin, quantity: 4 }] })).statusCode, 200);
  // What the poll must answer, read from the table and formatted here.
  const table = async (zone: string) =>
    (
      await app.db.query(
        sql`select ${fields({ id: Q.id, tries: Q.tries, updated: Q.updatedDate })} from ${DeliveryQueue} where ${Q.status} = 'waiting' order by ${Q.id}`,
      )
    ).map((r) => ({
      id: String(r.id),
      status: Number(r.tries) > 0 ? 'error' : 'sending',
      retry: String(r.tries),
      updatedAt: displayTimestamp(String(r.updated), zone),
    }));
  const polled = async (why: string, zone = 'UTC') => {
    const res = await pollQueue(app, server.token);
    t.equal(res.statusCode, 200, res.body);
    t.same(res.json(), await table(zone), why);
    return res.json() as { id: string; status: string; retry: string; updatedAt: string }[];
  };
  const first = await polled('four rows');
  t.equal(first.length, 4);
  const [a, b, c] = first.map((r) => Number(r.id));

  await DeliveryQueue.update(app.db, a!, { tries: 2 });
  t.match((await polled('a row tried twice, its time the same'))[0], { status: 'error', retry: '2', updatedAt: first[0]!.updatedAt });
  await DeliveryQueue.update(app.db, b!, { updatedDate: '2026-01-02 03:04:05' });
  t.equal((await polled('a row written at another time'))[1]!.updatedAt, '2026-01-02 03:04:05');
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { timezone: 'Europe/Berlin' }, as: 'json' })).statusCode, 200);
  t.equal((await polled('the site in another time zone', 'Europe/Berlin'))[1]!.updatedAt, '2026-01-02 04:04:05');
  // Rows gone from the middle and new ones after: the rest keep their place.
  await DeliveryQueue.update(app.db, c!, { status: 'done' });
  t.equal((await buy(app, { userID: alex, products: [{ id: coin, quantity: 2 }] })).statusCode, 200);
  const last = await polled('one row done, two bought', 'Europe/Berlin');
  t.same(
    last.slice(0, 3).map((r) => r.id),
    [first[0]!.id, first[1]!.id, first[3]!.id],
  );
  t.equal(last.length, 5);
});
