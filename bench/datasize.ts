/**
 * `BENCH_ONLY=datasize npm run bench`: the hot paths on a grown database against the same on a
 * small one. The small database holds what the scenarios seed through the API (bench/accounts.ts,
 * credits.ts, store.ts, delivery.ts, storefront.ts) plus a staff member, a page of refunded orders and a player with a
 * history for the console; the large one is a copy of it grown directly in SQL to 100,000
 * players, 1,000,000 ledger rows, 200,000 orders (each with its item and delivered command) and
 * 2,000 products (the added ones retired, so the pages show the same). Both servers run as
 * shipped, side by side, and every request is measured on each taking turns, slice after slice;
 * the ratio is the large database's req/s ÷ the small one's, each over all its slices.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { createConnection, type Connection } from 'mysql2/promise';
import { freePort } from '../test/mariadb-server.ts';
import { scenarios as accounts } from './accounts.ts';
import { scenarios as credits } from './credits.ts';
import { scenarios as delivery } from './delivery.ts';
import { compare, connections, databases, memory, onDatabases, rounds, slice, startServer, stop, type Measure } from './harness.ts';
import { Api, type BenchRequest, withKey } from './scenario.ts';
import { scenarios as store } from './store.ts';
import { scenarios as storefront } from './storefront.ts';

export const PLAYERS = 100_000;
export const LEDGER = 1_000_000;
export const ORDERS = 200_000;
export const PRODUCTS = 2_000;
/** The console's player, whose ledger the player page pages through. */
const HISTORY = 200;
/** Refunded orders on the small database: more than the console's page of 50. */
const REFUNDED = 60;
const OLD = '2025-06-01 12:00:00';
const GROWN = [
  'users_accounts',
  'credits_wallets',
  'credits_ledger',
  'store_orders',
  'store_order_items',
  'store_products',
  'delivery_queue',
  'users_linked_accounts',
];

/** Runs statements on one of the two kinds of database; values always bound. */
export interface Sql {
  run(sql: string, params?: (string | number)[]): Promise<void>;
  one(sql: string, params?: (string | number)[]): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function open(url: string): Promise<Sql> {
  if (url.startsWith('sqlite:')) {
    const db = new DatabaseSync(url.slice('sqlite:'.length));
    db.exec('pragma journal_mode = wal; pragma synchronous = off');
    return {
      async run(sql, params = []) {
        db.prepare(sql).run(...params);
      },
      async one(sql, params = []) {
        return db.prepare(sql).get(...params) as Record<string, unknown>;
      },
      async close() {
        db.close();
      },
    };
  }
  const conn: Connection = await createConnection({ uri: url, multipleStatements: false });
  await conn.query('set foreign_key_checks = 0');
  // Numbering a million rows is a million steps of the recursive query below.
  await conn.query('set session max_recursive_iterations = ?', [2 * LEDGER]);
  return {
    async run(sql, params = []) {
      await conn.query(sql, params);
    },
    async one(sql, params = []) {
      return ((await conn.query(sql, params))[0] as Record<string, unknown>[])[0]!;
    },
    async close() {
      await conn.end();
    },
  };
}

/** 1..n as rows of `n(i)`, for an `insert … select` to number its rows by: the same text on SQLite and MariaDB. */
export const numbers = 'with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)';

/** Copies the small database into the empty large one (the server is stopped). */
async function copy(kind: string, from: string, to: string): Promise<void> {
  if (kind === 'sqlite') {
    const db = new DatabaseSync(from.slice('sqlite:'.length));
    db.prepare('vacuum into ?').run(to.slice('sqlite:'.length));
    db.close();
    return;
  }
  const source = new URL(from).pathname.slice(1);
  const target = new URL(to).pathname.slice(1);
  const sql = await open(to);
  const conn = await createConnection({ uri: to });
  const [tables] = (await conn.query('select table_name as t from information_schema.tables where table_schema = ?', [source])) as unknown as [{ t: string }[]];
  await conn.end();
  for (const { t } of tables) {
    await sql.run(`create table \`${target}\`.\`${t}\` like \`${source}\`.\`${t}\``);
    await sql.run(`insert into \`${target}\`.\`${t}\` select * from \`${source}\`.\`${t}\``);
  }
  await sql.close();
}

/** Grows the large database to the sizes above, in SQL: seconds, not the minutes the API would take. */
async function grow(url: string): Promise<string> {
  const started = performance.now();
  const sql = await open(url);
  try {
    await sql.run('begin');
    const { first } = (await sql.one('select coalesce(max(id), 0) + 1 as first from users_accounts')) as { first: number };
    await sql.run(
      `insert into users_accounts (username, username_key, email, email_key, is_verified, auth_status, creation_ip, creation_date)
      ${numbers} select concat('Filler', i), concat('filler', i), concat('filler', i, '@example.com'),
      concat('filler', i, '@example.com'), 1, 0, '10.9.0.1', ? from n`,
      [PLAYERS, OLD],
    );
    await sql.run('insert into credits_wallets (user_id, balance) select id, 100000 from users_accounts where id >= ?', [first]);
    await sql.run(
      `insert into users_linked_accounts (user_id, platform, external_id)
      select id, 'chat', concat('9', id) from users_accounts where id >= ? and id % 2 = 0`,
      [first],
    );

    const { product, server, orderFrom } = (await sql.one(`select (select min(id)
      from store_products) as product, (select min(id) from delivery_servers) as server,
      (select coalesce(max(id), 0) + 1 from store_orders) as orderFrom`)) as { product: number; server: number; orderFrom: number };
    await sql.run(
      `insert into store_orders (account_id, type, status, subtotal, discount, total, earnings, cashback, credit, currency, payment_api, payment_id,
      creation_date)
      ${numbers} select ? + i % ?, case when i % 10 = 0 then 'payment' else 'credit' end, case when i % 100 = 0 then 'refunded' else 'completed' end,
      500, 0, 500, 0, 0, 0, 'USD', case when i % 10 = 0 then 'paypal' else 'credits' end, case when i % 10 = 0 then
      concat('filler-', i) else null end, ? from n`,
      [ORDERS, first, PLAYERS, OLD],
    );
    await sql.run(
      `insert into store_order_items (order_id, product_id, product_name, quantity, unit_price, unit_total, variables)
      select id, ?, 'Retired kit', 1, 500, 500, '{}' from store_orders where id >= ?`,
      [product, orderFrom],
    );
    await sql.run(
      `insert into delivery_queue (server_id, user_id, username, order_id, product_id, command, run_on, require_online, status, tries,
      creation_date, updated_date)
      select ?, account_id, 'Filler', id, ?, 'say thanks', 'purchase', 0, 'done', 1, creation_date, creation_date
      from store_orders where id >= ?`,
      [server, product, orderFrom],
    );

    // A purchase row for each credit order, the rest admin grants: ten rows a player on average.
    await sql.run(
      `insert into credits_ledger (user_id, delta, balance, reason, key_name, order_id, transfer_id, created_at)
      select account_id, -500, 100000, 'purchase', null, id, null, creation_date from store_orders where id >= ? and type = 'credit'`,
      [orderFrom],
    );
    const { ledger } = (await sql.one('select count(*) as ledger from credits_ledger')) as { ledger: number };
    await sql.run(
      `insert into credits_ledger (user_id, delta, balance, reason, key_name, order_id, transfer_id, created_at)
      ${numbers} select ? + i % ?, 100, 100000, 'grant', 'filler', null, null, ? from n`,
      [LEDGER - Number(ledger), first, PLAYERS, OLD],
    );

    const { products, category } = (await sql.one(`select (select count(*) from store_products) as products,
      (select id from store_categories where name = 'Archive') as category`)) as { products: number; category: number };
    await sql.run(
      `insert into store_products (category_id, give_role_id, name, image_id, image_type, details, price, discounted_price, discount_expiry_date,
      duration, stock,
      priority, is_featured, game_status, game_title, game_description, game_item, is_active, creation_date)
      ${numbers} select ?, 0, concat('Retired ', i), '', '', '<p>No longer sold.</p>', 199, 0, '1000-01-01 00:00:00', 0, -1, i, 0, 1, '', '', '', 0, ? from n`,
      [PRODUCTS - Number(products), category, OLD],
    );
    await sql.run('commit');
    if (url.startsWith('sqlite:')) await sql.run('analyze');
    else for (const t of GROWN) await sql.run(`analyze table ${t}`);
    const counts = await sql.one(`select (select count(*) from users_accounts) as players, (select count(*) from credits_ledger) as ledger,
      (select count(*) from store_orders) as orders, (select count(*) from store_products) as products`);
    const listed = Object.entries(counts)
      .map(([k, v]) => `${Number(v).toLocaleString('en')} ${k}`)
      .join(', ');
    return `${listed} in ${((performance.now() - started) / 1000).toFixed(0)} s`;
  } finally {
    await sql.close();
  }
}

/** A staff member signed in to the console (the session lives in the database, so the copy shares it) and a player with a ledger to page. */
async function seedConsole(api: Api, url: string): Promise<{ cookie: string; player: string; middle: string; order: string }> {
  await api.create('/api/admin/store/categories', { name: 'Archive', isActive: false });
  const staff = await api.player(7000, 'staffer', 0);
  const roleID = await api.create('/api/admin/roles', { name: 'Admin', slug: 'admin' });
  await api.send('POST', `/api/users/${staff}/roles`, { roleID });
  const player = await api.player(7001, 'historian', 0);
  await Api.batched(HISTORY, 10, (i) => api.send('POST', '/api/credits/add', { target_username: 'historian', amount: `${1 + (i % 9)}.00` }));
  // A page of refunded orders, each by another player, as the grown database has: the refunded
  // list then shows the same on both, down to the buyers' names it looks up.
  const category = await api.create('/api/admin/store/categories', { name: 'Returns' });
  const product = await api.create('/api/admin/store/products', { categoryID: category, name: 'Returnable', price: '0.01' });
  await Api.batched(REFUNDED, 10, async (i) => {
    const buyer = await api.player(7100 + i, `returner${i}`, 100);
    const { orderID } = (await api.send('POST', '/api/store/buy', { userID: buyer, products: [{ id: product, quantity: 1 }] })) as { orderID: string };
    await api.send('POST', `/api/admin/store/orders/${orderID}/refund`, {});
  });
  const cookie = await api.consoleCookie('staffer');
  const sql = await open(url);
  try {
    const { middle } = (await sql.one('select id as middle from credits_ledger where user_id = ? order by id limit 1 offset ?', [
      Number(player),
      HISTORY / 2,
    ])) as { middle: number };
    const { last } = (await sql.one('select max(id) as last from store_orders')) as { last: number };
    return { cookie, player, middle: String(middle), order: String(last) };
  } finally {
    await sql.close();
  }
}

interface Row {
  name: string;
  small?: Measure;
  large?: Measure;
}

/**
 * Seeds the small database through a server on it, copies it into the large one and grows that;
 * returns the requests to measure and what the large one holds.
 */
export async function prepare(kind: string, [smallUrl, largeUrl]: string[], key: string): Promise<{ requests: Map<string, BenchRequest[]>; grown: string }> {
  const port = await freePort();
  const server = (await startServer(serverEnv(smallUrl!, port, key))).proc;
  const requests = new Map<string, BenchRequest[]>();
  let c: Awaited<ReturnType<typeof seedConsole>>;
  try {
    const api = new Api(`http://127.0.0.1:${port}`, key);
    for (const s of [...accounts.filter((s) => s.name === 'users/profile'), ...credits, ...store, ...delivery, ...storefront]) {
      requests.set(s.name, withKey(await s.seed(api), key));
    }
    c = await seedConsole(api, smallUrl!);
  } finally {
    await stop(server);
  }
  const page = (path: string): BenchRequest[] => [{ method: 'GET', path, headers: { cookie: c.cookie } }];
  requests.set('console/player', page(`/console/players/${c.player}`));
  requests.set('console/player history, deep', page(`/console/players/${c.player}?before=${c.middle}`));
  requests.set('console/orders', page('/console/orders'));
  requests.set('console/orders, deep', page(`/console/orders?before=${Number(c.order) - 100}`));
  requests.set('console/orders of a player', page('/console/orders?username=collector'));
  requests.set('console/orders refunded', page('/console/orders?status=refunded'));
  requests.set('console/players search', page('/console/players?q=player1'));
  await copy(kind, smallUrl!, largeUrl!);
  return { requests, grown: await grow(largeUrl!) };
}

const serverEnv = (url: string, port: number, key: string) => ({ DATABASE_URL: url, PORT: String(port), HOST: '127.0.0.1', API_KEY: key });

async function benchDatabase(kind: string, [smallUrl, largeUrl]: string[], name: string, version: string): Promise<string> {
  const key = randomBytes(24).toString('hex');
  const { requests, grown } = await prepare(kind, [smallUrl!, largeUrl!], key);
  console.log(`${name}: grown to ${grown}`);
  const smallPort = await freePort();
  let small: ChildProcess | undefined;
  const largePort = await freePort();
  let large: ChildProcess | undefined;
  const rows: Row[] = [...requests.keys()].map((n) => ({ name: n }));
  try {
    small = (await startServer(serverEnv(smallUrl!, smallPort, key))).proc;
    large = (await startServer(serverEnv(largeUrl!, largePort, key))).proc;
    for (const row of rows) {
      // Taking turns slice by slice, the order reversed each round: neither side always follows the other's writes.
      [row.small, row.large] = await compare(
        [[{ url: `http://127.0.0.1:${smallPort}`, pid: small.pid! }], [{ url: `http://127.0.0.1:${largePort}`, pid: large.pid! }]],
        requests.get(row.name)!,
        rounds,
        slice,
      );
      console.log(line(row));
    }
    console.log(`  RSS after the run: small ${memory(small.pid!).now} MiB, large ${memory(large.pid!).now} MiB`);
  } finally {
    if (small) await stop(small);
    if (large) await stop(large);
  }
  return `
## ${name} (${version}), large: ${grown}

| request | small req/s | small p50 / p99 | small CPU µs | large req/s | large p50 / p99 | large CPU µs | ratio req/s | ratio CPU | non-2xx |
|---|---|---|---|---|---|---|---|---|---|
${rows.map(line).join('\n')}
`;
}

const line = ({ name, small: s, large: l }: Row) =>
  `| ${name} | ${s!.rps.toFixed(0)} | ${s!.p50} / ${s!.p99} | ${s!.cpuUs.toFixed(0)} | ${l!.rps.toFixed(0)} | ${l!.p50} / ${l!.p99} | ${l!.cpuUs.toFixed(0)} ` +
  `| **${(l!.rps / s!.rps).toFixed(2)}** | **${(s!.cpuUs / l!.cpuUs).toFixed(2)}** | ${s!.non2xx}/${l!.non2xx} |`;

export async function runDataSize(): Promise<void> {
  const parts: string[] = [];
  for (const kind of databases)
    await onDatabases(kind, 2, async (urls, name, version) => {
      parts.push(await benchDatabase(kind, urls, name, version));
    });
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  console.log(`\n# Data size: ${when} UTC, ${rounds} slices of ${slice} s a side, taking turns, ${connections} connections\n${parts.join('')}`);
}
