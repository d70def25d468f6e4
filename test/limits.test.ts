/**
 * Every `limit` and `offset` is bound the one way MySQL 8 takes in a prepared statement: as an
 * integer (core/db.ts `countParam`), never a JS number (mysql2 sends those as DOUBLE, which MySQL
 * 8.0.22 and later refuse there) and never written into the SQL. MariaDB takes a DOUBLE too, so the
 * routes are driven on whichever database the run has and every statement they send is checked.
 */
import t from 'tap';
import { countParam, NO_LIMIT } from '../core/db.ts';
import type { Sql } from '../core/sql.ts';
import { created, newUser } from './fixtures.ts';
import { build, call, onMysql } from './helper.ts';
import { grant, register, role, signInByForm } from '../plugins/console/test/browser.ts';

t.test('countParam takes whole numbers from 0 and refuses anything else', async (t) => {
  t.equal(countParam(0), 0n);
  t.equal(countParam(100), 100n);
  t.equal(countParam(Number.MAX_SAFE_INTEGER), BigInt(Number.MAX_SAFE_INTEGER));
  for (const bad of [1.5, -1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '5', 5n, undefined]) {
    t.throws(() => countParam(bad as number), TypeError, `refuses ${String(bad)} (${typeof bad})`);
  }
  t.equal(NO_LIMIT, 2n ** 63n - 1n, 'every row: the largest count both databases take');
});

type Statement = { sql: string; params: unknown[] };

/** What is wrong with how a statement binds its limit and offset, if anything. */
function badPaging({ sql, params }: Statement): string | undefined {
  const inlined = /\blimit\s+(?!\?|1\b)\S+|\boffset\s+(?!\?)\S+/i.exec(sql);
  if (inlined) return `"${inlined[0]}" written into the SQL`;
  const parts = sql.split('?');
  for (let i = 0; i < parts.length - 1; i++) {
    const clause = /\b(limit|offset)\s*$/i.exec(parts[i]!)?.[1];
    if (clause && typeof params[i] !== 'bigint') return `${clause} bound as ${typeof params[i]} ${String(params[i])}`;
  }
  return undefined;
}

t.test(`the limited routes bind their limits as integers (${onMysql ? 'MariaDB' : 'SQLite'})`, async (t) => {
  const app = await build(t);
  const seen: Statement[] = [];
  for (const method of ['query', 'queryArrays', 'run'] as const) {
    const original = app.db[method].bind(app.db) as (sql: string | Sql, params?: unknown[]) => Promise<never>;
    app.db[method] = ((sql: string | Sql, params: unknown[] = []) => {
      // A statement written with the sql tag carries its text and values itself.
      seen.push(typeof sql === 'string' ? { sql, params } : { sql: sql.text, params: sql.values });
      return original(sql, params);
    }) as never;
  }

  // Something on every page: a ledger, donations, orders with commands queued, a support desk.
  const admin = await register(app, 'Alice');
  await grant(app, admin, await role(app, 'Admin'));
  const steve = (await newUser(app, 'Steve')).id;
  for (const amount of ['1.00', '2.00', '3.00']) await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount } });
  for (const paymentID of ['p1', 'p2']) await created(app, '/api/admin/payments', { username: 'Steve', amount: '5.00', paymentID }, 'json');
  const category = await created(app, '/api/admin/store/categories', { name: 'Kits' }, 'json');
  const product = await created(app, '/api/admin/store/products', { categoryID: category.id, name: 'Sword', price: '1' }, 'json');
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Survival' }, 'json');
  const command = { serverID: server.id, trigger: 'purchase', command: 'give {username} sword' };
  await created(app, `/api/admin/store/products/${product.id}/commands`, command, 'json');
  for (let i = 0; i < 3; i++) t.equal((await call(app, '/api/store/buy', { body: { userID: steve, products: [product.id] }, as: 'json' })).statusCode, 200);
  const desk = await created(app, '/api/admin/support/categories', { name: 'Payments' }, 'json');
  await created(app, '/api/admin/support/answers', { title: 'Refunds', content: 'Allow three days.' }, 'json');
  let ticket = '';
  for (const title of ['Charged twice', 'Lost my kit']) {
    ticket = (await call(app, '/api/support/tickets', { body: { accountID: String(steve), categoryID: desk.id, title, message: 'Help.' } })).json().data.id;
    await call(app, `/api/support/tickets/${ticket}/messages`, { body: { accountID: String(admin), message: 'On it.', isAdmin: 'true' } });
  }
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).split(';')[0]!;

  const routes: [url: string, body?: Record<string, unknown>][] = [
    ['/api/credits/history?username=Steve&limit=2'],
    ['/api/store/donations?type=latest&limit=1'],
    ['/api/store/donations?type=top-monthly&limit=1'],
    ['/api/support/tickets?limit=1&offset=1'],
    ['/api/support/tickets?offset=1'],
    [`/api/support/tickets/${ticket}/messages?limit=1&offset=1`],
    ['/api/support/categories?limit=1'],
    ['/api/store/answers?limit=1&offset=0'],
    ['/api/admin/delivery/queue?page=2&perPage=1'],
    [`/api/command-logs/${server.token}/queue`],
    ['/api/delivery/claim', { token: server.token, limit: 2 }],
    ['/console/players?q=ste'],
    [`/console/players/${steve}`],
    ['/console/orders'],
    ['/console/payments'],
    ['/console/support'],
  ];
  for (const [url, body] of routes) {
    const from = seen.length;
    const res = url.startsWith('/console/') ? await app.inject({ url, headers: { cookie } }) : await call(app, url, body ? { body, as: 'json' } : {});
    t.equal(res.statusCode, 200, `${url} answers 200`);
    const limited = seen.slice(from).filter((s) => /\blimit\b(?!\s+1\b)|\boffset\b/i.test(s.sql));
    t.ok(limited.length > 0, `${url} reads with a limit`);
    t.same(limited.map(badPaging).filter(Boolean), [], `${url} binds its limits as integers`);
  }
  t.equal(Number((await call(app, '/api/support/tickets?offset=1')).json().length), 1, 'an offset alone reads every row past it');
});
