import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { ADMIN_KEY, AS_JAVA, ENCODINGS, call, type Encoding } from '../../../test/helper.ts';
import { PERMANENT, addSeconds, now, parseTimestamp } from '../../../core/format.ts';
import { settle } from '../../../test/fixtures.ts';
import { usersRef } from '../../users/contract.ts';
import { fields, sql } from '../../../core/sql.ts';
import { StoreOrderItem } from '../entities.ts';
import { balanceOf, makeCategory, makeProduct, makeRole, makeUser, snapshot, storeApp } from './fixtures.ts';

const I = StoreOrderItem.c;

const buy = (app: FastifyInstance, body: Record<string, unknown>, as: Encoding = 'multipart', headers: Record<string, string> = {}) =>
  call(app, '/api/store/buy', { body, as, headers });

const form = (app: FastifyInstance, payload: string) =>
  app.inject({
    method: 'POST',
    url: '/api/store/buy',
    payload,
    headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/x-www-form-urlencoded' },
  });

/** Days between now and a stored expiry. */
const daysLeft = (expiry: string) => (parseTimestamp(expiry).getTime() - Date.now()) / 86_400_000;

t.test('buy: ids or objects in every encoding; totals, balance, stock, order, event', async (t) => {
  const app = await storeApp(t);
  const category = await makeCategory(app, { name: 'Items' });
  const sword = await makeProduct(app, { categoryID: category, name: 'Sword', price: '10' });
  const potion = await makeProduct(app, { categoryID: category, name: 'Potion', price: '5', discountedPrice: '4', stock: 20 });
  const steve = await makeUser(app, 'steve', 10_000);
  const events: unknown[] = [];
  app.events.on('store.order.completed', (e) => {
    events.push(e);
  });

  let expected = 10_000;
  for (const as of ENCODINGS) {
    const res = await buy(app, { userID: String(steve), products: [String(sword)] }, as);
    t.equal(res.statusCode, 200, as);
    expected -= 1000;
    const body = res.json();
    t.same(
      body,
      {
        status: true,
        orderID: body.orderID,
        credits: (expected / 100).toFixed(2),
        products: [{ id: sword, quantity: 1, variables: [] }],
        cashback: '0.00',
        total: '10.00',
        subtotal: '10.00',
        discount: '0.00',
        data: { orderID: body.orderID, credits: expected / 100 },
      },
      `${as}: api.md's body plus the data mirror, ids and quantities as integers`,
    );
    t.match(body.orderID, /^\d+$/);
    t.notOk('error' in body);
  }

  let res = await buy(app, { userID: steve, products: [{ id: potion, quantity: 3 }, { id: sword }] }, 'json');
  t.equal(res.statusCode, 200);
  t.match(res.json(), {
    subtotal: '25.00',
    discount: '3.00',
    total: '22.00',
    credits: '48.00',
    products: [
      { id: potion, quantity: 3 },
      { id: sword, quantity: 1 },
    ],
  });
  t.equal(await balanceOf(app, steve), 4800);

  // The forms the game plugins send, written out by hand.
  for (const payload of [
    `userID=${steve}&products[]=${potion}`,
    `userID=${steve}&products=${potion}`,
    `userID=${steve}&products[0][id]=${potion}&products[0][quantity]=1`,
    `userID=${steve}&products[id]=${potion}`,
  ]) {
    res = await form(app, payload);
    t.equal(res.statusCode, 200, payload);
    t.same(res.json().products, [{ id: potion, quantity: 1, variables: [] }], payload);
  }
  res = await form(app, `userID=${steve}&products=${potion}&products=${sword}`);
  t.same(
    res.json().products.map((p: { id: number }) => p.id),
    [potion, sword],
    'repeated plain keys are several products',
  );
  t.equal(await balanceOf(app, steve), 4800 - 4 * 400 - 400 - 1000);

  res = await call(app, `/api/store/products/${potion}`);
  t.equal(res.json().stock, String(20 - 3 - 4 - 1), 'stock taken per unit bought');

  res = await call(app, `/api/users/${steve}/orders`);
  t.equal(res.statusCode, 200);
  const orders = res.json();
  t.equal(orders.length, 9);
  t.ok(Number(orders[0].id) > Number(orders[8].id), 'newest first');
  t.same(orders[5], {
    id: orders[5].id,
    accountID: String(steve),
    coupon: null,
    total: '22.00',
    discount: '3.00',
    subtotal: '25.00',
    earnings: '0.00',
    cashback: '0.00',
    credit: '0.00',
    type: 'credit',
    status: 'completed',
    paymentAPI: 'credits',
    paymentID: '',
    test: false,
    guestName: null,
    creationDate: orders[5].creationDate,
  });
  t.match(orders[5].creationDate, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);

  await settle();
  t.equal(events.length, 9, 'one store.order.completed per order');
  t.match(events[3], { orderId: Number(orders[5].id), userId: steve, username: 'steve', type: 'credit', total: 2200, currency: 'USD' });

  await app.settings.update({ buyResponseStatus: 201 });
  res = await buy(app, { userID: steve, products: [potion] });
  t.equal(res.statusCode, 201, "the setting switches the status to api.md's 201");
  t.equal(res.json().status, true);
});

t.test('every buy error, and a failed buy changes nothing', async (t) => {
  const app = await storeApp(t);
  const category = await makeCategory(app, { name: 'Ranks' });
  const vip = await makeRole(app, 'VIP');
  const rank = await makeProduct(app, { categoryID: category, name: 'VIP', price: '10', giveRoleID: vip, duration: 30 });
  const limited = await makeProduct(app, { categoryID: category, name: 'Limited', price: '1', stock: 2 });
  const withVars = await makeProduct(app, {
    categoryID: category,
    name: 'Kit',
    price: '1',
    variables: [{ name: 'server', required: true, values: ['eu', 'na'] }, { name: 'note' }],
  });
  const inactive = await makeProduct(app, { categoryID: category, name: 'Gone', price: '1', isActive: false });
  const poor = await makeUser(app, 'poor', 1050);
  const before = await snapshot(app, poor);

  // The game plugin reads `error` into its enum: where it lacks ours, the nearest it knows, ours in `code`.
  type Case = [string, Record<string, unknown>, number, string, RegExp, string];
  const malformed = (what: string, body: Record<string, unknown>, error: string, message: RegExp): Case => [
    what,
    body,
    400,
    error,
    message,
    'VALIDATION_ERROR',
  ];
  const cases: [string, Record<string, unknown>, number, string, RegExp?, string?][] = [
    ['unknown user', { userID: 999, products: [rank] }, 404, 'USER_NOT_FOUND'],
    malformed('malformed user', { userID: 'abc', products: [rank] }, 'USER_NOT_FOUND', /userID/),
    malformed('no user', { products: [rank] }, 'USER_NOT_FOUND', /userID/),
    malformed('no products', { userID: poor }, 'PRODUCT_NOT_FOUND', /products/),
    malformed('empty products', { userID: poor, products: '' }, 'PRODUCT_NOT_FOUND', /products/),
    malformed('object without id', { userID: poor, products: [{ quantity: 1 }] }, 'PRODUCT_NOT_FOUND', /products\[0\]\.id/),
    ['unknown product after a good one', { userID: poor, products: [rank, 999] }, 404, 'PRODUCT_NOT_FOUND', /999/],
    ['product id not a number', { userID: poor, products: ['abc'] }, 404, 'PRODUCT_NOT_FOUND', /abc/],
    ['inactive product', { userID: poor, products: [inactive] }, 404, 'PRODUCT_NOT_FOUND', new RegExp(String(inactive))],
    ...['0', '101', '1.5', '-1', 'abc', '1e2'].map((quantity): [string, Record<string, unknown>, number, string, RegExp] => [
      `quantity ${quantity}`,
      { userID: poor, products: [{ id: limited, quantity }] },
      400,
      'INVALID_QUANTITY',
      /quantity/,
    ]),
    ['required variable missing', { userID: poor, products: [{ id: withVars }] }, 400, 'INVALID_VARIABLE', new RegExp(`product ${withVars}.*server`)],
    [
      'value not allowed',
      { userID: poor, products: [{ id: withVars, variables: { server: 'asia' } }] },
      400,
      'INVALID_VARIABLE',
      new RegExp(`product ${withVars}`),
    ],
    ['undeclared variable', { userID: poor, products: [{ id: withVars, variables: { server: 'eu', color: 'red' } }] }, 400, 'INVALID_VARIABLE', /color/],
    ['free text too long', { userID: poor, products: [{ id: withVars, variables: { server: 'eu', note: 'x'.repeat(256) } }] }, 400, 'INVALID_VARIABLE', /note/],
    [
      'variables on a product without any',
      { userID: poor, products: [{ id: rank, variables: { server: 'eu' } }] },
      400,
      'INVALID_VARIABLE',
      new RegExp(`product ${rank}`),
    ],
    ['more than the stock', { userID: poor, products: [{ id: limited, quantity: 3 }] }, 400, 'OUT_OF_STOCK', new RegExp(String(limited))],
    ['the stock over two lines, after a role', { userID: poor, products: [rank, { id: limited, quantity: 2 }, limited] }, 400, 'OUT_OF_STOCK'],
    ['balance too low, after taking stock and a role', { userID: poor, products: [{ id: limited, quantity: 2 }, rank] }, 400, 'INSUFFICIENT_BALANCE'],
  ];
  for (const [name, body, status, code, message, ours] of cases) {
    const res = await buy(app, body, 'json', ours === undefined ? {} : AS_JAVA);
    t.equal(res.statusCode, status, `${name}: status`);
    t.match(res.json(), { status: false, error: code, message: message ?? /./ }, name);
    t.equal(res.json().code, ours, `${name}: our code`);
    t.same(await snapshot(app, poor), before, `${name}: balance, roles, stock and orders unchanged`);
  }

  // The same product in the forms of the game plugin: an out-of-range quantity from a form.
  const res = await form(app, `userID=${poor}&products[0][id]=${limited}&products[0][quantity]=0`);
  t.equal(res.json().error, 'INVALID_QUANTITY');
  t.same(await snapshot(app, poor), before);

  // And the money was enough for exactly this: the checks were not simply refusing everything.
  const ok = await buy(app, {
    userID: poor,
    products: [
      { id: limited, quantity: 2 },
      { id: withVars, variables: { server: 'na' } },
    ],
  });
  t.equal(ok.statusCode, 200);
  t.equal(ok.json().credits, '7.50');
});

t.test('variables reach the answer and the order', async (t) => {
  const app = await storeApp(t);
  const category = await makeCategory(app, { name: 'Kits' });
  const kit = await makeProduct(app, {
    categoryID: category,
    name: 'Kit',
    price: '1',
    variables: [{ name: 'server', required: true, values: ['eu', 'na'] }, { name: 'note' }, { name: 'color', values: ['red'] }],
  });
  const steve = await makeUser(app, 'steve', 1000);
  const res = await form(
    app,
    `userID=${steve}&products[0][id]=${kit}&products[0][quantity]=2&products[0][variables][server]=eu` +
      `&products[0][variables][note]=for%20my%20base&products[0][variables][color]=`,
  );
  t.equal(res.statusCode, 200, res.body);
  t.same(
    res.json().products,
    [
      {
        id: kit,
        quantity: 2,
        variables: [
          { name: 'server', value: 'eu' },
          { name: 'note', value: 'for my base' },
        ],
      },
    ],
    'declared order; an empty optional value is left out',
  );
  const [item] = await app.db.query(sql`select ${fields({ variables: I.variables, quantity: I.quantity, unit_total: I.unitTotal })} from ${StoreOrderItem}`);
  t.same(JSON.parse(item!.variables), { server: 'eu', note: 'for my base' });
  t.equal(Number(item!.quantity), 2);
  t.equal(Number(item!.unit_total), 100);
});

t.test('discounts count until they expire', async (t) => {
  const app = await storeApp(t);
  const category = await makeCategory(app, { name: 'Sale' });
  const inAnHour = addSeconds(now(), 3600);
  const product = await makeProduct(app, { categoryID: category, name: 'Cape', price: '20', discountedPrice: '15', discountExpiryDate: inAnHour });
  const steve = await makeUser(app, 'steve', 10_000);
  let res = await buy(app, { userID: steve, products: [{ id: product, quantity: 2 }] });
  t.match(res.json(), { subtotal: '40.00', discount: '10.00', total: '30.00', credits: '70.00' });
  await call(app, `/api/admin/store/products/${product}`, { method: 'PATCH', body: { discountExpiryDate: addSeconds(now(), -1) } });
  res = await buy(app, { userID: steve, products: [product] });
  t.match(res.json(), { subtotal: '20.00', discount: '0.00', total: '20.00', credits: '50.00' }, 'expired: full price');
  await call(app, `/api/admin/store/products/${product}`, { method: 'PATCH', body: { discountExpiryDate: PERMANENT } });
  res = await buy(app, { userID: steve, products: [product] });
  t.match(res.json(), { total: '15.00', credits: '35.00' }, 'the sentinel: a discount without end');
  t.equal(await balanceOf(app, steve), 3500);
});

t.test('roles: granted for the duration, extended by a second purchase, permanent with 0, none with -1', async (t) => {
  const app = await storeApp(t);
  const users = app.services.get(usersRef);
  const category = await makeCategory(app, { name: 'Ranks' });
  const vip = await makeRole(app, 'VIP');
  const legend = await makeRole(app, 'Legend');
  const month = await makeProduct(app, { categoryID: category, name: 'VIP 30', price: '1', giveRoleID: vip, duration: 30 });
  const forever = await makeProduct(app, { categoryID: category, name: 'VIP forever', price: '1', giveRoleID: vip, duration: 0 });
  const cosmetic = await makeProduct(app, { categoryID: category, name: 'Legend look', price: '1', giveRoleID: legend, duration: -1 });
  const steve = await makeUser(app, 'steve', 10_000);
  const expiryOf = async (roleId: number) => (await users.rolesOf(steve)).find((r) => r.id === roleId)?.expiryDate;

  await buy(app, { userID: steve, products: [month] });
  t.ok(Math.abs(daysLeft((await expiryOf(vip))!) - 30) < 0.01, 'granted for 30 days');
  await buy(app, { userID: steve, products: [month] });
  t.ok(Math.abs(daysLeft((await expiryOf(vip))!) - 60) < 0.01, 'a second purchase extends from the current expiry');
  await buy(app, { userID: steve, products: [{ id: month, quantity: 2 }] });
  t.ok(Math.abs(daysLeft((await expiryOf(vip))!) - 120) < 0.01, 'two units, two periods');
  const res = await call(app, `/api/users/${steve}/roles`);
  t.match(res.json(), [{ id: String(vip), name: 'VIP' }], 'visible through the users API');

  await buy(app, { userID: steve, products: [cosmetic] });
  t.equal(await expiryOf(legend), undefined, 'duration -1 grants no role');
  await buy(app, { userID: steve, products: [forever] });
  t.equal(await expiryOf(vip), PERMANENT);
  await buy(app, { userID: steve, products: [month] });
  t.equal(await expiryOf(vip), PERMANENT, 'a permanent role stays permanent');
  t.equal(await balanceOf(app, steve), 10_000 - 700);

  // A role deleted after the product was made: the buy fails whole rather than take money for nothing.
  const temp = await makeRole(app, 'Temp');
  const grants = await makeProduct(app, { categoryID: category, name: 'Temp', price: '1', giveRoleID: temp, duration: 1 });
  await call(app, `/api/admin/roles/${temp}`, { method: 'DELETE' });
  const before = await snapshot(app, steve);
  const failed = await buy(app, { userID: steve, products: [grants] }, 'multipart', AS_JAVA);
  t.equal(failed.json().error, 'PRODUCT_NOT_FOUND', "the game plugin's nearest code");
  t.equal(failed.json().code, 'ROLE_NOT_FOUND');
  t.same(await snapshot(app, steve), before);
});

t.test('cashback: the configured percent of the total, credited after the debit', async (t) => {
  const app = await storeApp(t);
  const category = await makeCategory(app, { name: 'Items' });
  const product = await makeProduct(app, { categoryID: category, name: 'Gem', price: '25', discountedPrice: '22' });
  const odd = await makeProduct(app, { categoryID: category, name: 'Odd', price: '9.99' });
  const free = await makeProduct(app, { categoryID: category, name: 'Free', price: '0' });
  const steve = await makeUser(app, 'steve', 10_000);
  await app.settings.update({ cashbackPercent: 10 });
  let res = await buy(app, { userID: steve, products: [product] });
  t.match(res.json(), { total: '22.00', cashback: '2.20', credits: '80.20', data: { credits: 80.2 } });
  await app.settings.update({ cashbackPercent: 2.5 });
  res = await buy(app, { userID: steve, products: [odd] });
  t.match(res.json(), { total: '9.99', cashback: '0.24', credits: '70.45' }, '2.5 % of 9.99 is 0.24975: rounded down to whole cents');
  res = await buy(app, { userID: steve, products: [free] });
  t.match(res.json(), { total: '0.00', cashback: '0.00', credits: '70.45' }, 'a free product moves no money');
  t.equal(await balanceOf(app, steve), 7045);
  const orders = (await call(app, `/api/users/${steve}/orders`)).json();
  t.match(orders[2], { total: '22.00', cashback: '2.20', credit: '2.20' }, 'the order records the cashback as credit it added');
});

t.test('a buy runs seven statements, whatever rules and variables its products carry; eight under a nested category', async (t) => {
  const app = await storeApp(t);
  const category = await makeCategory(app, { name: 'Items' });
  const nested = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Kits', parentID: category }), name: 'Kit', price: '1' });
  const plain = await makeProduct(app, { categoryID: category, name: 'Plain', price: '1', stock: 50 });
  const ruled = await makeProduct(app, {
    categoryID: category,
    name: 'Ruled',
    price: '2',
    variables: [{ name: 'server', required: true, values: ['eu', 'na'] }],
  });
  // Rules that need no further read (no required product, no role to compare): only reading them costs.
  const patched = await call(app, `/api/admin/store/products/${ruled}/rules`, { method: 'PATCH', body: { preventDowngrade: true }, as: 'json' });
  t.equal(patched.statusCode, 200);
  const steve = await makeUser(app, 'steve', 10_000);
  const counted = async (products: unknown[]) => {
    const before = app.db.statements;
    const res = await buy(app, { userID: steve, products }, 'json');
    t.equal(res.statusCode, 200, res.body);
    return app.db.statements - before;
  };
  // The user; the products with their rules, variables and own categories; the order; its lines;
  // the debit; its ledger row; the stock. (Features listening to the order, such as delivery, add
  // their own.) A nested category adds the categories on show, to judge those above it.
  t.equal(await counted([{ id: plain }]), 7, 'one product');
  t.equal(
    await counted([
      { id: plain, quantity: 2 },
      { id: ruled, variables: { server: 'eu' } },
    ]),
    7,
    'two products, one with rules and a variable',
  );
  t.equal(await counted([{ id: plain }, { id: nested }]), 8, 'a product in a nested category');
  t.equal(await balanceOf(app, steve), 10_000 - 100 - 400 - 200);
});
