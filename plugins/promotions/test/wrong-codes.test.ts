/**
 * Guessing codes (issue 44): wrong coupon and gift card codes are counted per account (a guest's
 * session) and per address, in the database; past the limit every code is refused, a right one
 * too, with the wait said (API: 429 RATE_LIMITED and Retry-After; storefront: the form's error).
 */
import t from 'tap';
import { build, call, onMysql, overBoth, sharedDatabaseUrl } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { CoreRateLimit } from '../../../core/rate-limits.ts';
import { fields, sql } from '../../../core/sql.ts';
import { balanceOf, buy, coupon, giftCard, makeCategory, makeProduct, makeUser, rowCount, shop } from './fixtures.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';
const limits = (perAccount: number, perAddress: number, perApiClient: number) => ({
  plugins: {
    promotions: {
      wrongCodes: {
        perAccount: { max: perAccount, windowSeconds: 600 },
        perAddress: { max: perAddress, windowSeconds: 600 },
        perApiClient: { max: perApiClient, windowSeconds: 600 },
      },
    },
  },
});

t.test(`the API: a player's wrong codes past the limit, then a right one, are refused with Retry-After; another player is not (${db})`, async (t) => {
  const { app, vip, sword } = await shop(t, { config: limits(3, 100, 6) });
  const steve = await makeUser(app, 'steve', 5000);
  const alex = await makeUser(app, 'alex', 5000);
  await coupon(app, { code: 'SUMMER10', kind: 'percent', value: 10 });
  await coupon(app, { code: 'ONCE', kind: 'percent', value: 10, maxUses: 1 });
  const card = await giftCard(app, '5.00');
  t.equal((await buy(app, alex, [sword], { coupon: 'ONCE' })).statusCode, 200, 'a right code is not counted');

  t.match((await buy(app, steve, [sword], { coupon: 'WINTER10' })).json(), { error: 'PROMOTION_INVALID', message: /no coupon WINTER10 running/ });
  t.match((await buy(app, steve, [sword], { coupon: 'ONCE' })).json(), { error: 'PROMOTION_USED_UP' }, 'used up: still its own answer');
  t.match((await buy(app, steve, [sword], { giftCard: 'NOPE-NOPE' })).json(), { error: 'PROMOTION_INVALID' });
  const orders = await rowCount(app, 'store_orders');
  const limited = await buy(app, steve, [vip], { coupon: 'summer10' });
  t.equal(limited.statusCode, 429, 'the right code past the limit');
  t.match(limited.json(), { status: false, error: 'RATE_LIMITED', message: /Too many wrong codes; try again in 10 min/ });
  const wait = Number(limited.headers['retry-after']);
  t.ok(wait > 590 && wait <= 600, `Retry-After is the window's rest (${wait})`);
  t.equal(await rowCount(app, 'store_orders'), orders, 'nothing bought');
  t.equal(await balanceOf(app, steve), 5000, 'nothing charged');
  const redeem = await call(app, '/api/promotions/gift-cards/redeem', { body: { userID: steve, code: card.code }, as: 'json' });
  t.equal(redeem.statusCode, 429, 'a gift card is refused to the player too');
  t.ok(Number(redeem.headers['retry-after']) > 0);
  t.equal((await buy(app, steve, [sword])).statusCode, 200, 'a buy without a code is not limited');

  t.match((await buy(app, alex, [vip], { coupon: 'SUMMER10' })).json(), { total: '9.00' }, 'another player on the same API client is not affected');
  // The API client's count: steve's three wrong codes and two refused attempts (alex's right ones were given back), and this one.
  t.equal((await call(app, '/api/promotions/gift-cards/NOPE-1')).statusCode, 404);
  const client = await call(app, `/api/promotions/gift-cards/${card.code}`);
  t.equal(client.statusCode, 429, "over the API client's own limit: a right card is refused");
  t.ok(Number(client.headers['retry-after']) > 0);
  const elsewhere = await call(app, `/api/promotions/gift-cards/${card.code}`, { remoteAddress: '198.51.100.7' });
  t.match(elsewhere.json(), { balance: '5.00' }, 'another API client is not affected');
});

t.test(`the count holds across two instances on one database, guesses sent together included (${db})`, async (t) => {
  const url = await sharedDatabaseUrl(t);
  const config = limits(4, 100, 100);
  const first = await build(t, { databaseUrl: url, features: ['users', 'credits', 'store', 'promotions'], config });
  const second = await build(t, { databaseUrl: url, features: ['users', 'credits', 'store', 'promotions'], config });
  const items = await makeCategory(first, { name: 'Items' });
  const sword = await makeProduct(first, { categoryID: items, name: 'Sword', price: '4.00' });
  const steve = await makeUser(first, 'steve', 5000);
  await coupon(first, { code: 'SUMMER10', kind: 'percent', value: 10 });
  const answers = await overBoth([first, second], 10, (app, i) => buy(app, steve, [sword], { coupon: `GUESS${i}` }));
  const errors = answers.map((r) => r.json().error);
  t.equal(errors.filter((e) => e === 'PROMOTION_INVALID').length, 4, `exactly the limit was judged (${errors.join(' ')})`);
  t.equal(errors.filter((e) => e === 'RATE_LIMITED').length, 6, 'the rest refused, on either instance');
  t.equal((await buy(second, steve, [sword], { coupon: 'SUMMER10' })).statusCode, 429, 'the right code, on the other instance');
  t.equal((await buy(first, steve, [sword], { coupon: 'SUMMER10' })).statusCode, 429, 'and on the first');
});

t.test(`the storefront: a guest's wrong codes past the limit are refused per address and per session, with the wait said (${db})`, async (t) => {
  const app = await build(t, { config: { ...limits(3, 5, 100), server: { trustProxy: true } } });
  const ranks = await makeCategory(app, { name: 'Ranks' });
  const vip = await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '10.00' });
  await coupon(app, { code: 'SUMMER10', kind: 'percent', value: 10 });
  const guest = (ip: string) => new Visitor(app, { 'x-forwarded-for': ip });
  const codes = async (v: Visitor, code: string) => v.post('/basket/codes', { coupon: code, giftCard: '' });

  const a = guest('203.0.113.5');
  await a.post('/basket/add', { product: String(vip), quantity: '1' });
  for (const code of ['WINTER10', 'SPRING10', 'AUTUMN10']) {
    const res = await codes(a, code);
    t.equal(res.statusCode, 422, code);
    t.match(res.body, new RegExp(`This code does not apply: there is no coupon ${code} running`));
  }
  const refused = await codes(a, 'SUMMER10');
  t.equal(refused.statusCode, 429, "the right code past the session's limit");
  t.match(refused.body, /id="codes-error">Too many wrong codes: no code is accepted for now. Try again in 10 min./, 'the form says how long to wait');

  // The same session from another address: still its count.
  const moved = guest('198.51.100.9');
  for (const [k, v] of a.cookies) moved.cookies.set(k, v);
  t.equal((await codes(moved, 'SUMMER10')).statusCode, 429, 'the session counts wherever it comes from');

  // A new session from the first address: of its five, the address has had three wrong codes and one refused; one try is left.
  const b = guest('203.0.113.5');
  await b.post('/basket/add', { product: String(vip), quantity: '1' });
  t.equal((await codes(b, 'WRONG1')).statusCode, 422, "the address's fourth wrong code");
  const byAddress = await codes(b, 'SUMMER10');
  t.equal(byAddress.statusCode, 429, 'a fresh session from the same address is refused');
  t.match(byAddress.body, /Too many wrong codes/);

  const c = guest('192.0.2.44');
  await c.post('/basket/add', { product: String(vip), quantity: '1' });
  const fine = await codes(c, 'SUMMER10');
  t.equal(fine.statusCode, 303, 'another address and session are not affected');
  t.match((await c.get('/basket')).body, /Coupon SUMMER10/);
});

t.test(`a right code's attempt is counted with one statement a key and given back in one statement (${db})`, async (t) => {
  const { app, sword } = await shop(t, { config: limits(3, 100, 6) });
  const steve = await makeUser(app, 'steve', 5000);
  await coupon(app, { code: 'SUMMER10', kind: 'percent', value: 10 });
  const counts: string[] = [];
  for (const method of ['query', 'run'] as const) {
    const original = app.db[method].bind(app.db) as (statement: { text: string }) => Promise<never>;
    app.db[method] = ((statement: { text: string }) => {
      if (/`core_rate_limits`/.test(statement.text)) counts.push(statement.text.split(' ')[0]!);
      return original(statement);
    }) as never;
  }
  t.equal((await buy(app, steve, [sword], { coupon: 'SUMMER10' })).statusCode, 200);
  // Each key's increment, which hands back its count (no read after it), then one give-back for both.
  t.strictSame(counts, ['insert', 'insert', 'update']);
  t.equal(await rowCount(app, 'core_rate_limits'), 2, 'the API client and the player each have a count');
  t.same(
    (await app.db.query(sql`select ${fields({ hits: CoreRateLimit.c.hits })} from ${CoreRateLimit}`)).map((r) => Number(r.hits)),
    [0, 0],
    'both given back',
  );
});
