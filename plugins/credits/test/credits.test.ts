import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { AS_JAVA, ENCODINGS, apiKey, build, call } from '../../../test/helper.ts';
import { newUser, read, rowCount, settle } from '../../../test/fixtures.ts';
import { creditsRef } from '../contract.ts';
import { ledgerProblems } from './ledger.ts';

const FEATURES = ['users', 'credits'];

async function user(app: FastifyInstance, username: string): Promise<number> {
  return (await newUser(app, username)).id;
}

async function balanceOf(app: FastifyInstance, username: string): Promise<number> {
  return (await read(app, `/api/credits?username=${username}`)).raw_credits;
}

interface Row {
  id: string;
  userID: string;
  delta: string;
  balance: string;
  reason: string;
  keyName: string | null;
  orderID: string | null;
  transferID: string | null;
  creationDate: string;
}

function history(app: FastifyInstance, query: string): Promise<Row[]> {
  return read(app, `/api/credits/history?${query}`);
}

t.test('GET /api/credits: a new user has 0; by username (any case) or id; currency from the settings', async (t) => {
  const app = await build(t, { features: FEATURES });
  const id = await user(app, 'Steve');
  for (const url of ['/api/credits?username=Steve', '/api/credits?username=steve', `/api/credits?id=${id}`, '/api/credits/?username=STEVE']) {
    const res = await call(app, url);
    t.equal(res.statusCode, 200, url);
    t.same(res.json(), { status: true, credits: '0.00 USD', raw_credits: 0, currency: 'USD' }, url);
  }
  await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '12.5' } });
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { currency: 'EUR' }, as: 'json' })).statusCode, 200);
  const res = await call(app, `/api/credits?id=${id}`);
  t.same(res.json(), { status: true, credits: '12.50 EUR', raw_credits: 12.5, currency: 'EUR' });
  t.equal(typeof res.json().raw_credits, 'number', 'raw_credits is a JSON number');
});

t.test('GET /api/credits: unknown user, and exactly one of username and id', async (t) => {
  const app = await build(t, { features: FEATURES });
  await user(app, 'steve');
  // The game plugin reads `error` into its enum: USER_NOT_FOUND, its general code, with ours in `code`.
  const cases: [string, number, string, string?][] = [
    ['/api/credits?username=nobody', 404, 'USER_NOT_FOUND'],
    ['/api/credits?id=999999', 404, 'USER_NOT_FOUND'],
    ['/api/credits?id=99999999999999999', 404, 'USER_NOT_FOUND'],
    ['/api/credits', 400, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['/api/credits?username=', 400, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['/api/credits?username=steve&id=1', 400, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['/api/credits?id=abc', 400, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
  ];
  for (const [url, status, error, ours] of cases) {
    const res = await call(app, url, { headers: AS_JAVA });
    t.equal(res.statusCode, status, url);
    t.match(res.json(), { status: false, error, message: String }, url);
    t.equal(res.json().code, ours, `${url}: our code`);
  }
});

t.test('add, remove, set and send answer as api.md says, in every encoding', async (t) => {
  const app = await build(t, { features: FEATURES });
  await user(app, 'steve');
  await user(app, 'alex');
  let expected = 0;
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '10.25' }, as });
    expected += 1025;
    t.equal(res.statusCode, 200, as);
    t.same(
      res.json(),
      { status: true, current_credits: `${(expected / 100).toFixed(2)} USD`, current_raw_credits: expected / 100, currency: 'USD' },
      `add (${as})`,
    );
  }
  let res = await call(app, '/api/credits/remove', { body: { target_username: 'Steve', amount: 5 }, as: 'json' });
  t.same(res.json(), { status: true, current_credits: '25.75 USD', current_raw_credits: 25.75, currency: 'USD' }, 'remove, a JSON number amount');

  res = await call(app, '/api/credits/send', { body: { sender_username: 'steve', target_username: 'ALEX', amount: '0.75' }, as: 'urlencoded' });
  t.equal(res.statusCode, 200);
  t.same(
    res.json(),
    {
      status: true,
      current_credits: '25.00 USD',
      current_raw_credits: 25,
      target_current_credits: '0.75 USD',
      target_current_raw_credits: 0.75,
      currency: 'USD',
    },
    "send: the sender's balance, then the target's",
  );

  res = await call(app, '/api/credits/set', { body: { target_username: 'alex', amount: '100' } });
  t.same(res.json(), { status: true, current_credits: '100.00 USD', current_raw_credits: 100, currency: 'USD' }, 'set');
  res = await call(app, '/api/credits/set', { body: { target_username: 'alex', amount: '0' } });
  t.same(res.json(), { status: true, current_credits: '0.00 USD', current_raw_credits: 0, currency: 'USD' }, 'set to 0');
  t.equal(await balanceOf(app, 'steve'), 25);
  t.equal(await balanceOf(app, 'alex'), 0);
  t.same(await ledgerProblems(app), [], 'each balance is its ledger sum');
});

t.test('the legacy <user>/set path: the path names the target unless the body does', async (t) => {
  const app = await build(t, { features: FEATURES });
  await user(app, 'steve');
  await user(app, 'alex');
  let res = await call(app, '/api/credits/steve/set', { body: { amount: '42.00' } });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: true, current_credits: '42.00 USD', current_raw_credits: 42, currency: 'USD' });
  res = await call(app, '/api/credits/steve/set', { body: { target_username: '', amount: '43' }, as: 'urlencoded' });
  t.equal(await balanceOf(app, 'steve'), 43, 'an empty target_username falls back to the path');
  res = await call(app, '/api/credits/steve/set', { body: { target_username: 'alex', amount: '7.5' } });
  t.equal(res.statusCode, 200);
  t.equal(await balanceOf(app, 'alex'), 7.5, "the body's target_username wins");
  t.equal(await balanceOf(app, 'steve'), 43);

  res = await call(app, '/api/credits/nobody/set', { body: { amount: '1' } });
  t.equal(res.statusCode, 404);
  t.equal(res.json().error, 'USER_NOT_FOUND');
  res = await call(app, '/api/credits/set', { body: { amount: '1' }, headers: AS_JAVA });
  t.equal(res.statusCode, 400);
  t.match(res.json(), { error: 'USER_NOT_FOUND', code: 'VALIDATION_ERROR', message: /target_username/ }, 'the game plugin calls /set: its code, ours beside');
});

t.test('amounts: exact two-decimal values only; anything else is INVALID_AMOUNT and changes nothing', async (t) => {
  const app = await build(t, { features: FEATURES });
  await user(app, 'steve');
  await user(app, 'alex');
  await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '50' } });
  const rowsBefore = await rowCount(app, 'credits_ledger');

  const bad = ['abc', '1e3', '10.005', '', ' ', '-1', '-0.01', '+5', '.5', '5.', '1,50', '0x10', 'Infinity', '12345678901234', ' 7', '7 '];
  const tooSmall = ['0', '0.00', '0.001'];
  for (const path of ['add', 'remove']) {
    for (const amount of [...bad, ...tooSmall]) {
      const res = await call(app, `/api/credits/${path}`, { body: { target_username: 'steve', amount } });
      t.equal(res.statusCode, 400, `${path} ${JSON.stringify(amount)}`);
      t.equal(res.json().error, 'INVALID_AMOUNT', `${path} ${JSON.stringify(amount)}`);
    }
  }
  for (const amount of [...bad, ...tooSmall]) {
    const res = await call(app, '/api/credits/send', { body: { sender_username: 'steve', target_username: 'alex', amount } });
    t.equal(res.json().error, 'INVALID_AMOUNT', `send ${JSON.stringify(amount)}`);
  }
  for (const amount of bad) {
    const res = await call(app, '/api/credits/set', { body: { target_username: 'steve', amount } });
    t.equal(res.json().error, 'INVALID_AMOUNT', `set ${JSON.stringify(amount)}`);
  }
  for (const amount of [10.005, 1e21, -1, 0.1 + 0.2]) {
    const res = await call(app, '/api/credits/add', { body: { target_username: 'steve', amount }, as: 'json' });
    t.equal(res.json().error, 'INVALID_AMOUNT', `JSON number ${amount}`);
  }
  t.equal(await balanceOf(app, 'steve'), 50, 'no balance changed');
  t.equal(await balanceOf(app, 'alex'), 0);
  t.equal(await rowCount(app, 'credits_ledger'), rowsBefore, 'no ledger row written');

  for (const [amount, cents] of [
    ['10', 1000],
    ['10.0', 1000],
    ['10.50', 1050],
    ['0.01', 1],
    ['007.5', 750],
  ] as const) {
    const before = await balanceOf(app, 'alex');
    const res = await call(app, '/api/credits/add', { body: { target_username: 'alex', amount } });
    t.equal(res.statusCode, 200, `add ${JSON.stringify(amount)}`);
    t.equal(Math.round(res.json().current_raw_credits * 100), Math.round(before * 100) + cents, `${JSON.stringify(amount)} is ${cents} cents`);
  }
  const res = await call(app, '/api/credits/add', { body: { target_username: 'steve' }, headers: AS_JAVA });
  t.equal(res.statusCode, 400);
  t.match(res.json(), { error: 'INVALID_AMOUNT', code: 'VALIDATION_ERROR', message: /amount/ }, 'a missing amount names the field');
});

t.test("errors of api.md's table, each with its status, and nothing changes", async (t) => {
  const app = await build(t, { features: FEATURES });
  await user(app, 'steve');
  await user(app, 'alex');
  await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '10' } });
  const rowsBefore = await rowCount(app, 'credits_ledger');
  // The game plugin reads `error` into its enum: the nearest code it knows, ours in `code`.
  const cases: [string, Record<string, unknown>, number, string, string?][] = [
    ['add', { target_username: 'nobody', amount: '1' }, 404, 'USER_NOT_FOUND'],
    ['remove', { target_username: 'nobody', amount: '1' }, 404, 'USER_NOT_FOUND'],
    ['remove', { target_username: 'steve', amount: '10.01' }, 400, 'NOT_ENOUGH_CREDITS'],
    ['remove', { target_username: 'alex', amount: '0.01' }, 400, 'NOT_ENOUGH_CREDITS'],
    ['set', { target_username: 'nobody', amount: '1' }, 404, 'USER_NOT_FOUND'],
    ['send', { sender_username: 'nobody', target_username: 'alex', amount: '1' }, 404, 'USER_NOT_FOUND'],
    ['send', { sender_username: 'nobody', target_username: 'nobody2', amount: '1' }, 404, 'USER_NOT_FOUND'],
    ['send', { sender_username: 'steve', target_username: 'nobody', amount: '1' }, 404, 'TARGET_USER_NOT_FOUND'],
    ['send', { sender_username: 'steve', target_username: 'STEVE', amount: '1' }, 400, 'INVALID_TARGET'],
    ['send', { sender_username: 'steve', target_username: 'alex', amount: '10.01' }, 400, 'NOT_ENOUGH_CREDITS'],
    ['send', { sender_username: 'alex', target_username: 'steve', amount: '1' }, 400, 'NOT_ENOUGH_CREDITS'],
    ['send', { target_username: 'alex', amount: '1' }, 400, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['send', { sender_username: 'steve', amount: '1' }, 400, 'TARGET_USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['send', { sender_username: 'steve', target_username: 'alex' }, 400, 'INVALID_AMOUNT', 'VALIDATION_ERROR'],
    ['add', { amount: '1' }, 400, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
    ['add', { target_username: '', amount: '1' }, 400, 'USER_NOT_FOUND', 'VALIDATION_ERROR'],
  ];
  for (const [path, body, status, error, ours] of cases) {
    const res = await call(app, `/api/credits/${path}`, { body, headers: AS_JAVA });
    t.equal(res.statusCode, status, `${path} ${JSON.stringify(body)}`);
    t.match(res.json(), { status: false, error, message: String }, `${path} ${JSON.stringify(body)}`);
    t.equal(res.json().code, ours, `${path} ${JSON.stringify(body)}: our code`);
  }
  t.equal(await balanceOf(app, 'steve'), 10);
  t.equal(await balanceOf(app, 'alex'), 0);
  t.equal(await rowCount(app, 'credits_ledger'), rowsBefore, 'no ledger row written');
  const res = await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '1' }, key: 'wrong' });
  t.equal(res.statusCode, 401, 'the routes need an API key');
});

t.test('a balance cannot pass the configured maximum (INVALID_AMOUNT), and a send stays whole', async (t) => {
  const app = await build(t, { features: FEATURES, config: { plugins: { credits: { maxBalance: '100.00' } } } });
  await user(app, 'steve');
  await user(app, 'alex');
  t.equal((await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '100' } })).statusCode, 200, 'up to the maximum');
  let res = await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '0.01' } });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'INVALID_AMOUNT');
  res = await call(app, '/api/credits/set', { body: { target_username: 'alex', amount: '100.01' } });
  t.equal(res.json().error, 'INVALID_AMOUNT', 'set above the maximum');
  await call(app, '/api/credits/set', { body: { target_username: 'alex', amount: '99.99' } });
  res = await call(app, '/api/credits/send', { body: { sender_username: 'steve', target_username: 'alex', amount: '0.02' } });
  t.equal(res.json().error, 'INVALID_AMOUNT', 'the target would pass the maximum');
  t.equal(await balanceOf(app, 'steve'), 100, "the sender's debit rolled back");
  t.equal(await balanceOf(app, 'alex'), 99.99);
  res = await call(app, '/api/credits/remove', { body: { target_username: 'steve', amount: '50' } });
  t.equal(res.statusCode, 200, 'taking credits works at the maximum');
  t.same(await ledgerProblems(app), [], 'each balance is its ledger sum');
});

t.test('a bad maxBalance setting stops boot with a sentence naming it', async (t) => {
  await t.rejects(build(t, { features: FEATURES, config: { plugins: { credits: { maxBalance: 'lots' } } } }), { message: /plugins\.credits\.maxBalance/ });
});

t.test('the ledger: one row per change with reason, key name and transfer id; history newest first, paged', async (t) => {
  const app = await build(t, { features: FEATURES });
  const steve = await user(app, 'steve');
  const alex = await user(app, 'alex');
  const key = await apiKey(app, 'survival-server');
  const as = { key };
  await call(app, '/api/credits/add', { body: { target_username: 'steve', amount: '20' }, ...as });
  await call(app, '/api/credits/remove', { body: { target_username: 'steve', amount: '2.50' }, ...as });
  await call(app, '/api/credits/send', { body: { sender_username: 'steve', target_username: 'alex', amount: '7.25' }, ...as });
  await call(app, '/api/credits/steve/set', { body: { amount: '3' } });
  await call(app, '/api/credits/set', { body: { target_username: 'steve', amount: '3' } });

  const rows = await history(app, 'username=steve');
  t.same(
    rows.map((r) => [r.reason, r.delta, r.balance]),
    [
      ['set', '0.00', '3.00'],
      ['set', '-7.25', '3.00'],
      ['send', '-7.25', '10.25'],
      ['remove', '-2.50', '17.50'],
      ['add', '20.00', '20.00'],
    ],
    'newest first, each with its delta and the balance after',
  );
  t.same(
    rows.map((r) => r.keyName),
    ['bootstrap', 'bootstrap', 'survival-server', 'survival-server', 'survival-server'],
    "the API key's name",
  );
  for (const r of rows) {
    t.equal(r.userID, String(steve));
    t.match(r.id, /^\d+$/);
    t.match(r.creationDate, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    t.equal(r.orderID, null);
  }
  const [received] = await history(app, `id=${alex}`);
  t.match(received, { reason: 'receive', delta: '7.25', balance: '7.25', userID: String(alex) });
  t.match(received!.transferID, /^[0-9a-f-]{36}$/);
  t.equal(rows[2]!.transferID, received!.transferID, 'both sides of a send share the transfer id');
  t.equal(rows[0]!.transferID, null);

  const page1 = await history(app, 'username=steve&limit=2');
  t.same(
    page1.map((r) => r.id),
    rows.slice(0, 2).map((r) => r.id),
  );
  const page2 = await history(app, `username=steve&limit=2&before=${page1[1]!.id}`);
  t.same(
    page2.map((r) => r.id),
    rows.slice(2, 4).map((r) => r.id),
    'before pages back',
  );
  t.same(await history(app, `username=steve&before=${rows.at(-1)!.id}`), [], 'nothing before the first row');

  for (const q of ['username=steve&limit=0', 'username=steve&limit=101', 'username=steve&limit=x', 'username=steve&before=0', '']) {
    const res = await call(app, `/api/credits/history?${q}`);
    t.equal(res.statusCode, 400, q);
    t.equal(res.json().error, 'VALIDATION_ERROR', q);
  }
  t.equal((await call(app, '/api/credits/history?username=nobody')).json().error, 'USER_NOT_FOUND');
  t.same(await ledgerProblems(app), [], 'each balance is its ledger sum');
});

t.test("the service: joins the caller's transaction, refuses an overdraft with its own code, links orders, tells listeners after commit", async (t) => {
  const app = await build(t, { features: FEATURES });
  const steve = await user(app, 'steve');
  const alex = await user(app, 'alex');
  const credits = app.services.get(creditsRef);
  const seen: unknown[] = [];
  app.events.on('credits.changed', (e) => {
    seen.push(e);
  });

  t.equal(await credits.change(steve, 1000, { reason: 'payment', orderId: 7 }), 1000);
  await settle();
  t.same(seen, [{ userId: steve, delta: 1000, balance: 1000, reason: 'payment', orderId: 7 }]);

  await t.rejects(credits.change(steve, -1001, { reason: 'purchase', orderId: 8 }), {
    code: 'NOT_ENOUGH_CREDITS',
    message: 'The balance is lower than 10.01.',
  });
  await t.rejects(credits.change(alex, -1, { reason: 'purchase' }), { code: 'NOT_ENOUGH_CREDITS' }, 'a user without a wallet has nothing to take');
  await t.rejects(credits.change(steve, 0.5, { reason: 'add' }), { code: 'INVALID_AMOUNT' }, 'cents are whole');

  await t.rejects(
    app.db.transaction(async () => {
      await credits.change(steve, -400, { reason: 'purchase', orderId: 9 });
      await credits.change(steve, 40, { reason: 'cashback', orderId: 9 });
      t.equal(await credits.balance(steve), 640, 'inside the transaction the balance moved');
      throw new Error('the order failed');
    }),
    { message: 'the order failed' },
  );
  await settle();
  t.equal(await credits.balance(steve), 1000, 'rolled back with the caller');
  t.equal(seen.length, 1, 'no event for changes that rolled back');

  await app.db.transaction(async () => {
    await credits.change(steve, -400, { reason: 'purchase', orderId: 10 });
    await credits.change(steve, 40, { reason: 'cashback', orderId: 10 });
  });
  await settle();
  t.same(seen.slice(1), [
    { userId: steve, delta: -400, balance: 600, reason: 'purchase', orderId: 10 },
    { userId: steve, delta: 40, balance: 640, reason: 'cashback', orderId: 10 },
  ]);
  const res = await call(app, `/api/credits/history?id=${steve}`);
  t.same(
    res.json().map((r: Row) => [r.reason, r.orderID]),
    [
      ['cashback', '10'],
      ['purchase', '10'],
      ['payment', '7'],
    ],
  );

  const balances = await credits.balances([steve, alex, steve, 424242]);
  t.same(
    [...balances],
    [
      [steve, 640],
      [alex, 0],
      [424242, 0],
    ],
    'balances of several users, 0 for those without a wallet',
  );
  t.same([...(await credits.balances([]))], []);
  t.same(await ledgerProblems(app), [], 'each balance is its ledger sum');
});
