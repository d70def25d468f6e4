/**
 * The players list and the ledger at size (10,000 players, 100,000 ledger rows), fast by
 * construction rather than by a stopwatch: a deep page runs the same statements as the first,
 * and every statement a page runs on those two tables reads them through an index (the query
 * plan, SQLite's or MySQL's, shows no full scan and no sort).
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { build, call } from '../../../test/helper.ts';
import { grant, register, role, signInByForm } from './browser.ts';
import { count, fields, type Sql, sql } from '../../../core/sql.ts';
import { countParam, type Database } from '../../../core/db.ts';
import { CreditsLedgerEntry } from '../../credits/entities.ts';
import { StoreOrder } from '../../store/entities.ts';
import { UsersAccount } from '../../users/entities.ts';

const PLAYERS = 10_000;
const LEDGER = 100_000;
const ORDERS = 5_000;
const BATCH = 500;

/** Rows written by bound multi-row inserts, in one transaction: seeding is not what is measured. */
async function bulkInsert<R>(
  app: FastifyInstance,
  table: { insertMany(db: Database, records: Partial<R>[]): Promise<void> },
  rows: number,
  row: (i: number) => Partial<R>,
): Promise<void> {
  await app.db.transaction(async () => {
    for (let start = 0; start < rows; start += BATCH) {
      await table.insertMany(
        app.db,
        Array.from({ length: Math.min(BATCH, rows - start) }, (_, k) => row(start + k)),
      );
    }
  });
}

/** What one page asked the database: the number of statements and the reads of the big tables. */
async function tracedOnce(app: FastifyInstance, url: string, cookie: string) {
  const reads: { sql: string; params: unknown[] }[] = [];
  const query = app.db.query.bind(app.db);
  const queryArrays = app.db.queryArrays.bind(app.db);
  const note = (statement: Sql<unknown>) => {
    if (/\bfrom `?(users_accounts|credits_ledger|store_orders)\b/.test(statement.text)) reads.push({ sql: statement.text, params: statement.values });
  };
  app.db.query = (async (sql: Sql<unknown>) => {
    note(sql);
    return query(sql);
  }) as typeof app.db.query;
  app.db.queryArrays = (sql) => {
    note(sql);
    return queryArrays(sql);
  };
  const before = app.db.statements;
  try {
    const res = await app.inject({ url, headers: { cookie } });
    return { res, statements: app.db.statements - before, reads };
  } finally {
    app.db.query = query;
    app.db.queryArrays = queryArrays;
  }
}

/**
 * The page's statements, the fewest of five loads: the server's own timers (settings refresh,
 * sweepers, the subscriptions' renewal round) may run a statement meanwhile, and they only ever add.
 */
async function traced(app: FastifyInstance, url: string, cookie: string) {
  let best = await tracedOnce(app, url, cookie);
  for (let i = 0; i < 4; i++) {
    const again = await tracedOnce(app, url, cookie);
    if (again.statements < best.statements) best = again;
  }
  return best;
}

/** A plan line that reads a whole big table, or sorts, instead of walking an index. */
async function badPlan(app: FastifyInstance, sql: string, params: unknown[]): Promise<string | undefined> {
  if (app.db.dialect === 'sqlite') {
    const plan = await app.db.unchecked.query<{ detail: string }>(`explain query plan ${sql}`, params);
    return plan.map((r) => r.detail).find((d) => /^SCAN (\w+ AS )?(a|users_accounts|credits_ledger)$/.test(d) || /TEMP B-TREE/.test(d));
  }
  const plan = await app.db.unchecked.query<{ table: string; type: string; key: string | null; Extra: string | null }>(`explain ${sql}`, params);
  const bad = plan.find(
    (r) => /^(a|users_accounts|credits_ledger)$/.test(r.table) && (r.type === 'ALL' || r.type === 'index' || !r.key || /filesort/.test(r.Extra ?? '')),
  );
  return bad && JSON.stringify(bad);
}

/**
 * A read of the accounts that walks an open-ended stretch of an index (from a key to the end)
 * rather than the rows a search can match: on a search, the walk goes on until a page is full.
 */
async function openRange(app: FastifyInstance, sql: string, params: unknown[]): Promise<string | undefined> {
  if (app.db.dialect === 'sqlite') {
    // Of two lower bounds on one column SQLite ranges over one it picks, not the greater.
    if ((sql.match(/username_key`? >=? \?/g) ?? []).length > 1) return 'two lower bounds on username_key';
    const plan = await app.db.unchecked.query<{ detail: string }>(`explain query plan ${sql}`, params);
    return plan
      .map((r) => r.detail)
      .find((d) => /^SEARCH (\w+ AS )?(a|users_accounts) USING .*\((username|email)_key>\?\)$/.test(d) || /^SCAN (\w+ AS )?(a|users_accounts)\b/.test(d));
  }
  const plan = await app.db.unchecked.query<{ table: string; rows: number | string }>(`explain ${sql}`, params);
  const bad = plan.find((r) => /^(a|users_accounts)$/.test(r.table) && Number(r.rows) > PLAYERS / 10);
  return bad && JSON.stringify(bad);
}

/** A read of the orders that walks the whole table (or its whole primary key) and tests each row. */
async function ordersScan(app: FastifyInstance, sql: string, params: unknown[]): Promise<string | undefined> {
  if (app.db.dialect === 'sqlite') {
    const plan = await app.db.unchecked.query<{ detail: string }>(`explain query plan ${sql}`, params);
    return plan.map((r) => r.detail).find((d) => /^SCAN store_orders\b/.test(d));
  }
  const plan = await app.db.unchecked.query<{ table: string; type: string }>(`explain ${sql}`, params);
  const bad = plan.find((r) => r.table === 'store_orders' && (r.type === 'ALL' || r.type === 'index'));
  return bad && JSON.stringify(bad);
}

t.test('players list and ledger at size use keyset pages through indexes', async (t) => {
  const app = await build(t);
  const adminId = await register(app, 'Alice');
  await grant(app, adminId, await role(app, 'Admin'));
  const steveId = await register(app, 'Steve');
  const signed = await signInByForm(app, 'Alice');
  const cookie = String(signed.headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];

  const name = (i: number) => `player${String(i).padStart(5, '0')}`;
  await bulkInsert(app, UsersAccount, PLAYERS, (i) => ({
    username: name(i),
    usernameKey: name(i),
    email: `${name(i)}@example.org`,
    emailKey: `${name(i)}@example.org`,
    isVerified: true,
    authStatus: 0,
    creationIp: '10.9.0.1',
    creationDate: '2026-01-01 00:00:00',
  }));
  const L = CreditsLedgerEntry.c;
  await bulkInsert(app, CreditsLedgerEntry, LEDGER, (i) => ({
    userId: steveId,
    delta: 100,
    balance: (i + 1) * 100,
    reason: `seed ${i}`,
    keyName: null,
    orderId: null,
    transferId: null,
    createdAt: '2026-01-01 00:00:00',
  }));
  const [players] = await app.db.query(sql`select ${fields({ n: count() })} from ${UsersAccount}`);
  const [ledger] = await app.db.query(sql`select ${fields({ n: count() })} from ${CreditsLedgerEntry} where ${L.userId} = ${steveId}`);
  t.equal(Number(players?.n), PLAYERS + 2, 'players seeded');
  t.equal(Number(ledger?.n), LEDGER, 'ledger rows seeded');

  await t.test('players: a deep page costs what the first costs', async (t) => {
    const first = await traced(app, '/console/players', cookie);
    t.equal(first.res.statusCode, 200);
    t.equal(first.res.body.match(/data-label="Username"/g)?.length, 50, 'a page of 50');
    t.match(
      first.res.body,
      /href="\/console\/players\?after=player00048"/,
      'the next page starts after the last name shown (Alice, then player00000 to player00048)',
    );
    const deep = await traced(app, `/console/players?after=${name(9_900)}`, cookie);
    t.equal(deep.res.statusCode, 200);
    t.match(deep.res.body, new RegExp(`>${name(9_901)}<`), 'the page after the key');
    t.notMatch(deep.res.body, new RegExp(`>${name(9_900)}<`));
    t.equal(deep.statements, first.statements, `the same ${first.statements} statements at any depth`);
    t.ok(first.reads.length > 0, 'the page reads the accounts');
    for (const { sql, params } of [...first.reads, ...deep.reads]) t.equal(await badPlan(app, sql, params), undefined, sql.replace(/\s+/g, ' ').slice(0, 120));
  });

  await t.test('players: a search by name prefix reads the index', async (t) => {
    const found = await traced(app, '/console/players?q=player0999', cookie);
    t.equal(found.res.body.match(/data-label="Username"/g)?.length, 10, 'player09990 to player09999');
    t.ok(found.reads.length > 0);
    // Here a sort is allowed: the accounts whose email matches are put in name order, as many as match.
    for (const q of ['player0999', 'player0999@example.org', 'Alice']) {
      const searched = await traced(app, `/console/players?q=${encodeURIComponent(q)}`, cookie);
      t.equal(searched.res.statusCode, 200);
      for (const { sql, params } of searched.reads) {
        const why = `${q}: the search reads only the names, emails and chat IDs it can match: ${sql.replace(/\s+/g, ' ').slice(0, 100)}`;
        t.equal(await openRange(app, sql, params), undefined, why);
      }
    }
    t.match((await traced(app, '/console/players?q=alice', cookie)).res.body, />Alice</, 'found by the start of the name, in any case');
    t.match((await traced(app, `/console/players?q=${name(42)}%40example`, cookie)).res.body, new RegExp(`>${name(42)}<`), 'found by the start of the email');
    const deeper = await traced(app, `/console/players?q=player0999&after=${name(9_995)}`, cookie);
    t.equal(deeper.res.body.match(/data-label="Username"/g)?.length, 4, 'a search pages on from its key: player09996 to player09999');
  });

  t.ok(await badPlan(app, 'select id from credits_ledger where reason = ? order by created_at', ['seed 5']), 'the plan check sees a full scan');

  await t.test('ledger: a deep page costs what the first costs', async (t) => {
    const first = await traced(app, `/console/players/${steveId}`, cookie);
    t.equal(first.res.statusCode, 200);
    t.equal(first.res.body.match(/data-label="Reason"/g)?.length, 50, 'a page of 50');
    t.match(first.res.body, new RegExp(`>seed ${LEDGER - 1}<`), 'newest first');
    const [deepest] = await app.db.query(
      sql`select ${fields({ id: L.id })} from ${CreditsLedgerEntry} where ${L.userId} = ${steveId} order by ${L.id} limit 1 offset ${countParam(1000)}`,
    );
    const deep = await traced(app, `/console/players/${steveId}?before=${deepest!.id}`, cookie);
    t.match(deep.res.body, />seed 999</, 'the row just before the key');
    t.notMatch(deep.res.body, />seed 1000</);
    t.equal(deep.res.body.match(/data-label="Reason"/g)?.length, 50);
    t.equal(deep.statements, first.statements, `the same ${first.statements} statements at any depth`);
    t.ok(
      deep.reads.some((r) => /credits_ledger/.test(r.sql)),
      'the page reads the ledger',
    );
    for (const { sql, params } of [...first.reads, ...deep.reads]) t.equal(await badPlan(app, sql, params), undefined, sql.replace(/\s+/g, ' ').slice(0, 120));
  });

  await t.test('orders: a page filtered by status or type reads its rows through an index', async (t) => {
    await bulkInsert(app, StoreOrder, ORDERS, (i) => ({
      accountId: steveId,
      type: i % 10 ? ('credit' as const) : ('payment' as const),
      status: i % 100 ? 'completed' : 'refunded',
      subtotal: 500,
      discount: 0,
      total: 500,
      earnings: 0,
      cashback: 0,
      credit: 0,
      currency: 'USD',
      paymentApi: i % 10 ? 'credits' : 'paypal',
      paymentId: i % 10 ? null : `p${i}`,
      creationDate: '2026-01-01 00:00:00',
    }));
    for (const url of ['/console/orders?status=refunded', '/console/orders?type=payment', '/console/orders?status=refunded&type=payment']) {
      const page = await traced(app, url, cookie);
      t.equal(page.res.statusCode, 200);
      t.equal(page.res.body.match(/data-label="Order"/g)?.length, url.includes('&') ? ORDERS / 100 : 50, url);
      const reads = page.reads.filter((r) => /\bfrom `?store_orders\b/.test(r.sql));
      t.ok(reads.length > 0, 'the page reads the orders');
      for (const { sql, params } of reads) t.equal(await ordersScan(app, sql, params), undefined, `${url}: ${sql.replace(/\s+/g, ' ').slice(0, 100)}`);
    }
  });

  t.equal((await call(app, `/api/credits?username=Steve`)).statusCode, 200, 'the API still answers');
});
