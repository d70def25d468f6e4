import t from 'tap';
import { expectErrors, read, rowCount } from '../../../test/fixtures.ts';
import { build, call } from '../../../test/helper.ts';
import { sql } from '../../../core/sql.ts';
import { DeliveryCommand, DeliveryServer } from '../entities.ts';
import { DELIVERY_FEATURES, addCommand, makeCategory, makeProduct, makeServer, pollQueue } from './fixtures.ts';

t.test('game servers: create shows the token once, rotate replaces it, patch and delete', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const { id, token } = await makeServer(app);
  t.ok(token.length >= 32, 'a long random token');
  const stored = await DeliveryServer.select(app.db);
  t.not(stored[0]!.tokenHash, token, 'stored hashed');

  let list = await read(app, '/api/admin/delivery/servers');
  t.same(list, [{ id, name: 'Survival', isActive: true, lastSeenDate: null, creationDate: list[0].creationDate }], 'no token in the list');
  t.notOk('token' in (await read(app, `/api/admin/delivery/servers/${id}`)));

  t.equal((await pollQueue(app, token)).statusCode, 200);
  t.match((await read(app, `/api/admin/delivery/servers/${id}`)).lastSeenDate, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/, 'a poll is seen');

  let res = await call(app, `/api/admin/delivery/servers/${id}/token`, { method: 'POST' });
  t.equal(res.statusCode, 200);
  const rotated = res.json().token;
  t.ok(rotated.length >= 32 && rotated !== token);
  t.equal((await pollQueue(app, token)).statusCode, 404, 'the old token stops working');
  t.equal((await pollQueue(app, rotated)).statusCode, 200);

  res = await call(app, `/api/admin/delivery/servers/${id}`, { method: 'PATCH', body: { name: 'Lobby', isActive: 'false' }, as: 'urlencoded' });
  t.equal(res.statusCode, 200);
  t.match(res.json(), { name: 'Lobby', isActive: false });
  t.equal((await pollQueue(app, rotated)).statusCode, 404, 'an inactive server is refused');

  res = await call(app, `/api/admin/delivery/servers/${id}`, { method: 'DELETE' });
  t.same(res.json(), { status: true });
  list = await read(app, '/api/admin/delivery/servers');
  t.same(list, []);

  await expectErrors(t, app, [
    { url: '/api/admin/delivery/servers/999', status: 404, error: 'DELIVERY_SERVER_NOT_FOUND' },
    { url: '/api/admin/delivery/servers/999', method: 'PATCH', body: { name: 'x' }, status: 404, error: 'DELIVERY_SERVER_NOT_FOUND' },
    { url: '/api/admin/delivery/servers/999', method: 'DELETE', status: 404, error: 'DELIVERY_SERVER_NOT_FOUND' },
    { url: '/api/admin/delivery/servers/999/token', method: 'POST', status: 404, error: 'DELIVERY_SERVER_NOT_FOUND' },
    { url: '/api/admin/delivery/servers', body: {}, status: 400, error: 'VALIDATION_ERROR', message: /name/ },
    { url: '/api/admin/delivery/servers', body: { name: '' }, status: 400, error: 'VALIDATION_ERROR', message: /name/ },
  ]);
  t.equal(await rowCount(app, 'delivery_servers'), 0, 'the refused calls changed nothing');
});

t.test('product commands: placeholders checked at save, server and product must exist', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const server = await makeServer(app);
  const product = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Items' }), name: 'Sword', price: '1' });
  const url = `/api/admin/store/products/${product}/commands`;

  const cmd = await addCommand(app, product, { serverID: server.id, command: 'give {username} sword {quantity} {var:color}', trigger: 'purchase' });
  t.same(cmd, {
    id: cmd.id,
    productID: String(product),
    serverID: server.id,
    command: 'give {username} sword {quantity} {var:color}',
    trigger: 'purchase',
    requireOnline: false,
    perUnit: false,
  });
  let res = await call(app, `${url}/${cmd.id}`, { method: 'PATCH', body: { requireOnline: '1', perUnit: 'true', trigger: 'refund' }, as: 'urlencoded' });
  t.equal(res.statusCode, 200);
  t.match(res.json(), { requireOnline: true, perUnit: true, trigger: 'refund' });
  t.equal((await read(app, url)).length, 1);

  const commands = () => DeliveryCommand.select(app.db, sql`order by ${DeliveryCommand.c.id}`);
  const before = await commands();
  await expectErrors(t, app, [
    {
      url,
      body: { serverID: server.id, command: 'give {player} x', trigger: 'purchase' },
      status: 400,
      error: 'VALIDATION_ERROR',
      message: /unknown placeholder \{player\}/,
    },
    { url, body: { serverID: server.id, command: 'x {var:}', trigger: 'purchase' }, status: 400, error: 'VALIDATION_ERROR', message: /\{var:\}/ },
    { url, body: { serverID: server.id, command: 'x', trigger: 'join' }, status: 400, error: 'VALIDATION_ERROR', message: /trigger/ },
    { url, body: { serverID: '999', command: 'x', trigger: 'purchase' }, status: 404, error: 'DELIVERY_SERVER_NOT_FOUND' },
    { url, body: { serverID: 'abc', command: 'x', trigger: 'purchase' }, status: 404, error: 'DELIVERY_SERVER_NOT_FOUND' },
    { url, body: { serverID: server.id, trigger: 'purchase' }, status: 400, error: 'VALIDATION_ERROR', message: /command/ },
    {
      url: '/api/admin/store/products/999/commands',
      body: { serverID: server.id, command: 'x', trigger: 'purchase' },
      status: 404,
      error: 'PRODUCT_NOT_FOUND',
    },
    { url: '/api/admin/store/products/999/commands', status: 404, error: 'PRODUCT_NOT_FOUND' },
    { url: `${url}/${cmd.id}`, method: 'PATCH', body: { command: '{nope}' }, status: 400, error: 'VALIDATION_ERROR', message: /\{nope\}/ },
    { url: `${url}/999`, method: 'PATCH', body: { command: 'x' }, status: 404, error: 'DELIVERY_COMMAND_NOT_FOUND' },
    { url: `${url}/999`, method: 'DELETE', status: 404, error: 'DELIVERY_COMMAND_NOT_FOUND' },
  ]);
  t.same(await commands(), before, 'nothing changed');

  res = await call(app, `${url}/${cmd.id}`, { method: 'DELETE' });
  t.same(res.json(), { status: true });
  t.same(await read(app, url), []);
});

t.test('the poll holds its server a few seconds: a poll after the first is one statement, and a change is seen at once', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const { id, token } = await makeServer(app);
  const statements = async (fn: () => Promise<{ statusCode: number }>) => {
    const before = app.db.statements;
    const res = await fn();
    return { status: res.statusCode, statements: app.db.statements - before };
  };
  t.match(await statements(() => pollQueue(app, token)), { status: 200 }, 'the first poll reads the server');
  t.same(await statements(() => pollQueue(app, token)), { status: 200, statements: 1 }, 'the next: its rows only');
  t.same(await statements(() => pollQueue(app, 'x'.repeat(40))), { status: 404, statements: 1 }, 'an unknown token is read each time');
  t.same(await statements(() => pollQueue(app, 'x'.repeat(40))), { status: 404, statements: 1 });
  const res = await call(app, `/api/admin/delivery/servers/${id}`, { method: 'PATCH', body: { isActive: false }, as: 'json' });
  t.equal(res.statusCode, 200);
  t.equal((await pollQueue(app, token)).statusCode, 404, 'made inactive: refused at the next poll');
});
