/**
 * Issue 44: nothing a person types reaches a game server as a command of its own. A control
 * character (a line break above all) in any value a command is built from is refused where it
 * comes in, with a clear 400 or the form's error, and the command renderer refuses to emit one
 * whatever reaches it; a refusal orders, charges and queues nothing.
 */
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { created, makeCategory, makeProduct, newUser, snapshot } from './fixtures.ts';
import { STRIPE_ENV, offline } from './gateways.ts';
import { build, call, onMysql } from './helper.ts';
import { Visitor } from './visitor.ts';
import { fields, sql } from '../core/sql.ts';
import { DeliveryCommand, DeliveryQueue } from '../plugins/delivery/entities.ts';
import { StoreOrderItem } from '../plugins/store/entities.ts';

const Q = DeliveryQueue.c;
/** A command stored before the checks came in, written past them. */
const storeCommand = (app: FastifyInstance, product: number, command: string) =>
  app.db.run(sql`update ${DeliveryCommand} set ${DeliveryCommand.c.command} = ${command} where ${DeliveryCommand.c.productId} = ${product}`);

offline(t);

const DB = onMysql ? 'MariaDB' : 'SQLite';
const TABLES = ['store_orders', 'store_order_items', 'credits_ledger', 'delivery_queue', 'payments_payments', 'users_linked_accounts'];
const URLS = { returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/basket' };
/** What a player may type to smuggle a second command in, and the other controls the check covers. */
const EVIL = [
  'x\nop mallory',
  'x\r\nop mallory',
  'x\rop mallory',
  'x\u2028op mallory',
  'x\u2029op mallory',
  'x\u0085op mallory',
  'x\u007fop',
  'x\u009b',
  'x\top',
  'x\u0000op mallory',
];
/** A NUL is refused at the edge already, before any route (core/http/strict-types.ts): VALIDATION_ERROR naming the field. */
const refusal = (value: string, field: RegExp, product: number) =>
  value.includes('\u0000')
    ? { error: 'VALIDATION_ERROR', message: field }
    : { error: 'INVALID_VARIABLE', message: new RegExp(`^Invalid variable for product ${product}: "name" holds a line break`) };
/** The test name stays on one line of the TAP stream. */
const shown = (text: string) => JSON.stringify(text).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

const command = (app: FastifyInstance, product: number, body: Record<string, unknown>) =>
  created(app, `/api/admin/store/products/${product}/commands`, body, 'json');

/** A sword a player names (a free-text variable), given on a game server by a command that carries the name. */
async function shop(app: FastifyInstance) {
  const categoryID = await makeCategory(app, { name: 'Items' });
  const sword = await makeProduct(app, { categoryID, name: 'Sword', price: '1.00', variables: [{ name: 'name', required: false, values: [] }] });
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Survival' }, 'json');
  await command(app, sword, { serverID: server.id, trigger: 'purchase', command: 'give {username} sword named {var:name}' });
  const alice = await newUser(app, 'alice', { cents: 10_000 });
  return { sword, server: String(server.id), serverToken: String(server.token), alice };
}

const queued = async (app: FastifyInstance) =>
  (await app.db.query(sql`select ${fields({ command: Q.command })} from ${DeliveryQueue} order by ${Q.id}`)).map((r) => r.command);

t.test(`the buy API refuses a variable with a control character: INVALID_VARIABLE, nothing ordered or queued (${DB})`, async (t) => {
  const app = await build(t);
  const { sword, alice } = await shop(app);
  const before = await snapshot(app, TABLES);
  for (const [i, value] of EVIL.entries()) {
    const as = (['json', 'urlencoded', 'multipart'] as const)[i % 3]!;
    const res = await call(app, '/api/store/buy', { body: { userID: alice.id, products: [{ id: sword, variables: { name: value } }] }, as });
    t.equal(res.statusCode, 400, `${shown(value)} as ${as}: ${res.body}`);
    t.match(res.json(), { status: false, ...refusal(value, /^products\.0\.variables\.name /, sword) }, `${shown(value)}: names the product`);
  }
  t.strictSame(await snapshot(app, TABLES), before, 'no order, no debit, nothing queued');

  // Non-ASCII text is no control character: it is bought and delivered as typed.
  const res = await call(app, '/api/store/buy', { body: { userID: alice.id, products: [{ id: sword, variables: { name: 'Épée 😀' } }] }, as: 'json' });
  t.equal(res.json().status, true, res.body);
  t.strictSame(await queued(app), ['give alice sword named Épée 😀']);
});

t.test(`a purchase paid at a gateway refuses a control character in a variable or the guest's name before any payment starts (${DB})`, async (t) => {
  const app = await build(t, { env: STRIPE_ENV });
  const { sword } = await shop(app);
  const before = await snapshot(app, TABLES);
  // No gateway is mocked: a request that got as far as Stripe would be a 502, not a 400.
  const cases: [Record<string, unknown>, Record<string, unknown>][] = [
    ...EVIL.map((value): [Record<string, unknown>, Record<string, unknown>] => [
      { username: 'alice', lines: [{ productID: sword, variables: { name: value } }] },
      refusal(value, /^lines\.0\.variables\.name /, sword),
    ]),
    [{ guestName: 'Notch', lines: [{ productID: sword, variables: { name: 'x\r\nop mallory' } }] }, refusal('\n', /x/, sword)],
    // A guest's name was held to 3 to 16 of A-Z a-z 0-9 _ already.
    [{ guestName: 'Notch\nop', lines: [{ productID: sword }] }, { error: 'INVALID_GUEST_NAME' }],
    [{ guestName: 'Notch\u2028', lines: [{ productID: sword }] }, { error: 'INVALID_GUEST_NAME' }],
  ];
  for (const [body, answer] of cases) {
    const res = await call(app, '/api/payments/purchase', { body: { gateway: 'stripe', ...URLS, ...body }, as: 'json' });
    t.equal(res.statusCode, 400, `${shown(JSON.stringify(body))}: ${res.body}`);
    t.match(res.json(), answer, shown(JSON.stringify(body)));
  }
  t.strictSame(await snapshot(app, TABLES), before, 'no payment stored, nothing ordered or queued');
});

t.test(
  `the storefront: a variable with a line break is the product form's error, not a basket line; a hand-written basket pays for nothing (${DB})`,
  async (t) => {
    const app = await build(t, { env: STRIPE_ENV });
    const { sword } = await shop(app);
    const v = new Visitor(app);
    const page = await v.get(`/product/${sword}`);
    t.match(page.body, /name="var_name"/, 'the product page asks for the name');

    for (const value of ['x\nop mallory', 'x\r\nop mallory', 'x\u2028op mallory', 'x\u0085op mallory', 'x\u0000op mallory']) {
      const res = await v.post('/basket/add', { product: String(sword), quantity: '1', var_name: value });
      t.match(res.headers['content-type'], /text\/html/, `${shown(value)}: a page, not the API's JSON`);
      if (value.includes('\u0000')) {
        // Refused at the edge, before any route, as every request with a NUL is.
        t.equal(res.statusCode, 400, `${shown(value)}: the storefront's error page`);
      } else {
        t.equal(res.statusCode, 422, `${shown(value)}: the form again`);
        t.match(res.body, /Check the options you chose: name: line breaks and other control characters are not allowed\./);
      }
      t.notOk(v.cookies.has('storefront_basket'), 'nothing in the basket');
    }
    t.equal((await v.post('/basket/add', { product: String(sword), quantity: '1', var_name: 'Excalibur' })).statusCode, 303, 'a plain name is added');

    // A basket cookie written by hand with a line break: the line is dropped, so a guest pays for nothing.
    const guest = new Visitor(app);
    await guest.get('/basket');
    guest.cookies.set('storefront_basket', Buffer.from(JSON.stringify([[sword, 1, { name: 'x\nop mallory' }]])).toString('base64url'));
    t.match((await guest.get('/basket')).body, /Your basket is empty/, 'the hand-written line is no basket line');
    const before = await snapshot(app, TABLES);
    const paid = await guest.post('/checkout/gateway', { gateway: 'stripe', guestName: 'Notch' });
    t.equal(paid.statusCode, 303, 'back to the basket');
    const named = new Visitor(app);
    await named.post('/basket/add', { product: String(sword), quantity: '1', var_name: 'Excalibur' });
    const badName = await named.post('/checkout/gateway', { gateway: 'stripe', guestName: 'Notch\nop mallory' });
    t.equal(badName.statusCode, 422, "a guest name with a line break is the form's error");
    t.match(badName.body, /Type your in-game name/);
    t.strictSame(await snapshot(app, TABLES), before, 'no payment started, nothing ordered or queued');
  },
);

t.test(`the renderer refuses a command with a control character, from any value: a buy rolls back whole, a refund keeps it failed (${DB})`, async (t) => {
  const app = await build(t);
  const { sword, server, serverToken, alice } = await shop(app);
  const categoryID = await makeCategory(app, { name: 'Named by staff' });

  // A product name is the admin's text: a line break in it reaches {productName}.
  const badge = await makeProduct(app, { categoryID, name: 'Badge', price: '1.00' });
  await command(app, badge, { serverID: server, trigger: 'purchase', command: 'give {username} {productName}' });
  t.equal((await call(app, `/api/admin/store/products/${badge}`, { method: 'PATCH', body: { name: 'Badge\nop mallory' }, as: 'json' })).statusCode, 200);
  const before = await snapshot(app, TABLES);
  let res = await call(app, '/api/store/buy', { body: { userID: alice.id, products: [badge] }, as: 'json' });
  t.equal(res.statusCode, 400, res.body);
  t.match(res.json(), { error: 'VALIDATION_ERROR', message: /^productName: .*product \d+.*\{productName\} holds a line break/ });
  t.strictSame(await snapshot(app, TABLES), before, 'no order, no debit, nothing queued');

  // A command saved with a line break is refused at save; one stored before that check, at the buy.
  res = await call(app, `/api/admin/store/products/${badge}/commands`, {
    body: { serverID: server, trigger: 'purchase', command: 'say hi\nop mallory' },
    as: 'json',
  });
  t.equal(res.statusCode, 400, res.body);
  t.match(res.json(), { error: 'VALIDATION_ERROR', message: /^command: / });
  await storeCommand(app, sword, 'say hi\nop {username}');
  res = await call(app, '/api/store/buy', { body: { userID: alice.id, products: [{ id: sword, variables: { name: 'Excalibur' } }] }, as: 'json' });
  t.equal(res.statusCode, 400, res.body);
  t.match(res.json(), { error: 'VALIDATION_ERROR', message: `command: the command of product ${sword} holds a line break` });
  t.strictSame(await snapshot(app, TABLES), before, 'still nothing ordered or queued');

  // A variable value stored before the buy checked it: the refund goes through (staff must be able to
  // refund), its command kept failed with the line break written as an escape, never handed out as it is.
  await storeCommand(app, sword, 'give {username} sword named {var:name}');
  await command(app, sword, { serverID: server, trigger: 'refund', command: 'clear {username} sword {var:name}' });
  res = await call(app, '/api/store/buy', { body: { userID: alice.id, products: [{ id: sword, variables: { name: 'Excalibur' } }] }, as: 'json' });
  t.equal(res.json().status, true, res.body);
  const { orderID } = res.json();
  await app.db.run(
    sql`update ${StoreOrderItem} set ${StoreOrderItem.c.variables} = ${JSON.stringify({ name: 'x\nop mallory' })} where ${StoreOrderItem.c.orderId} = ${Number(orderID)}`,
  );
  res = await call(app, `/api/admin/store/orders/${orderID}/refund`, { method: 'POST' });
  t.equal(res.statusCode, 200, res.body);
  const rows = await app.db.query(
    sql`select ${fields({ command: Q.command, status: Q.status, last_error: Q.lastError })} from ${DeliveryQueue} where ${Q.runOn} = 'refund'`,
  );
  t.same(
    rows,
    [
      {
        command: 'clear alice sword x\\u000aop mallory',
        status: 'failed',
        last_error:
          `Invalid variable for product ${sword}: "name" holds a line break or another control character: a game server would run what follows ` +
          'it as a command of its own.',
      },
    ],
    'the refund command is kept failed, escaped, with the reason',
  );
  t.same((await call(app, `/api/delivery/claim`, { body: { token: serverToken, limit: '10' }, as: 'json' })).json().commands, [], 'and is not handed out');
});

t.test(`names a command carries: usernames were refused already, a linked chat ID is refused now (${DB})`, async (t) => {
  const app = await build(t);
  const { alice } = await shop(app);
  for (const username of ['bob\nop', 'bob\r\n', 'bob\u2028', 'bob\u0000']) {
    const res = await call(app, '/api/auth/register', {
      body: { username, password: 'correct horse 1', email: 'bob@example.com', ip: '10.0.0.7', useragent: 'test' },
      as: 'json',
    });
    // A NUL is refused at the edge, before the route (core/http/strict-types.ts).
    t.equal(res.json().error, username.includes('\u0000') ? 'VALIDATION_ERROR' : 'INVALID_USERNAME', `register ${shown(username)}`);
  }
  const before = await snapshot(app, TABLES);
  for (const externalID of ['1234\nop mallory', '1234\u2029', '1234\u0000']) {
    const res = await call(app, `/api/admin/users/${alice.id}/linked-accounts/chat`, { method: 'PUT', body: { externalID }, as: 'json' });
    t.equal(res.statusCode, 400, `${shown(externalID)}: ${res.body}`);
    t.match(res.json(), { error: 'VALIDATION_ERROR', message: /^externalID\b/ });
  }
  t.strictSame(await snapshot(app, TABLES), before, 'no account linked');
});
