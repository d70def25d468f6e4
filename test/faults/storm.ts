/**
 * The busiest night, for the fault suite: real server processes on a private MariaDB, a storm of
 * sends, adds, removes and buys from several game servers at once, and the invariants that must
 * hold afterwards whatever happened in between.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { rootDir } from '../../core/config.ts';
import { formatMoney } from '../../core/format.ts';
import { seeded } from '../random.ts';
import { until } from '../fixtures.ts';

export const KEY = 'fault-suite-admin-key-0123456789';

/** One `npm start` process (core/server.js) on 127.0.0.1:port. */
export class ServerProcess {
  readonly url: string;
  #child?: ChildProcess;
  readonly #port: number;
  readonly #databaseUrl: string;
  readonly #env: Record<string, string>;

  /** `env` adds to the environment, e.g. CONFIG naming a config file. */
  constructor(port: number, databaseUrl: string, env: Record<string, string> = {}) {
    this.#port = port;
    this.#databaseUrl = databaseUrl;
    this.#env = env;
    this.url = `http://127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    this.#child = spawn(process.execPath, [join(rootDir, 'core/server.js')], {
      cwd: rootDir,
      env: { ...process.env, PORT: String(this.#port), HOST: '127.0.0.1', DATABASE_URL: this.#databaseUrl, API_KEY: KEY, LOG_LEVEL: 'warn', ...this.#env },
      stdio: 'ignore',
    });
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (this.#child.exitCode !== null) throw new Error(`server exited with ${this.#child.exitCode}`);
      try {
        if ((await fetch(`${this.url}/health`)).ok) return;
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('server did not become healthy');
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  }
}

export async function api(
  base: string,
  path: string,
  body?: Record<string, string>,
  method = body ? 'POST' : 'GET',
): Promise<{ status: number; json: any; retryAfter: string | null }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-api-key': KEY, ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    body: body ? new URLSearchParams(body).toString() : undefined,
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, json: await res.json(), retryAfter: res.headers.get('retry-after') };
}

export interface World {
  users: string[];
  /** Each user's ID, in the order of `users`: the database picks them (a Galera cluster leaves gaps). */
  ids: string[];
  productId: string;
  stock: number;
}

/** Players with credits, and one product with limited stock. */
export async function seed(base: string, players = 6, stock = 150): Promise<World> {
  const ok = (r: { status: number; json: unknown }, what: string) => {
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json as Record<string, any>;
  };
  ok(await api(base, '/api/admin/settings', { registerLimit: '0' }, 'PATCH'), 'settings');
  const users: string[] = [];
  const ids: string[] = [];
  for (let i = 0; i < players; i++) {
    const username = `player${i}`;
    ok(
      await api(base, '/api/auth/register', {
        username,
        password: 'correct horse',
        email: `${username}@example.com`,
        ip: '10.0.0.1',
        useragent: 'fault-suite',
      }),
      'register',
    );
    ok(await api(base, '/api/credits/add', { target_username: username, amount: '100.00' }), 'add');
    users.push(username);
    ids.push(String(ok(await api(base, `/api/users?username=${username}`), 'profile').id));
  }
  const category = ok(await api(base, '/api/admin/store/categories', { name: 'Ranks' }), 'category');
  const product = ok(
    await api(base, '/api/admin/store/products', { categoryID: category.id, name: 'Key', price: '1.50', stock: String(stock), duration: '-1' }),
    'product',
  );
  return { users, ids, productId: String(product.id), stock };
}

/**
 * A storm's phase: at least `minMs`, and until `enough()` says the storm did its share (a loaded
 * machine answers fewer a second); at most a minute, so a stuck one fails the assertions that follow.
 */
export async function phase(minMs: number, enough: () => boolean): Promise<void> {
  await Promise.all([new Promise((r) => setTimeout(r, minMs)), until(enough, 60_000)]);
}

export type Op = 'send' | 'add' | 'remove' | 'buy';

export interface Outcome {
  op: Op;
  status: number;
  error?: string;
  message?: string;
  orderID?: string;
  retryAfter?: string | null;
  /** When it was sent (Date.now()). */
  at: number;
  ms: number;
}

/**
 * `workers` loops fire random operations at the servers in turn until `until` resolves;
 * network failures (a killed server) are recorded with status 0. Each outcome is pushed to
 * `outcomes` as it comes, so a timeline can wait on the work done.
 */
export async function storm(
  servers: () => string[],
  world: World,
  workers: number,
  until: Promise<unknown>,
  seedValue = 1,
  outcomes: Outcome[] = [],
): Promise<Outcome[]> {
  let done = false;
  void until.then(() => {
    done = true;
  });
  const rnd = seeded(seedValue);
  const pick = <T>(list: T[]) => list[Math.floor(rnd() * list.length)]!;
  // Whole cents, formatted as the server does: float arithmetic would send amounts like 1.1500000000000001.
  const amount = () => formatMoney(100 + Math.floor(rnd() * 400));
  const loop = async (w: number) => {
    for (let i = 0; !done; i++) {
      const list = servers();
      const base = list[(w + i) % list.length]!;
      const op = pick<Op>(['send', 'send', 'send', 'buy', 'buy', 'add', 'remove']);
      const a = pick(world.users);
      let b = pick(world.users);
      while (b === a) b = pick(world.users);
      const body: Record<string, string> =
        op === 'send'
          ? { sender_username: a, target_username: b, amount: amount() }
          : op === 'buy'
            ? { userID: world.ids[world.users.indexOf(a)]!, 'products[0][id]': world.productId, 'products[0][quantity]': '1' }
            : { target_username: a, amount: amount() };
      const path = op === 'buy' ? '/api/store/buy' : `/api/credits/${op}`;
      const started = Date.now();
      try {
        const res = await api(base, path, body);
        // Our precise code: these routes answer the game plugin's nearest one in `error` (docs/clients.md).
        outcomes.push({
          op,
          status: res.status,
          error: res.json?.code ?? res.json?.error,
          message: res.json?.message,
          orderID: res.json?.orderID,
          retryAfter: res.retryAfter,
          at: started,
          ms: Date.now() - started,
        });
      } catch (err) {
        outcomes.push({ op, status: 0, error: (err as Error).name, at: started, ms: Date.now() - started });
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => loop(w)));
  return outcomes;
}

export interface Invariants {
  problems: string[];
  counts: Record<string, number>;
}

/** What must hold in the database after any storm, crash or outage. */
export async function checkInvariants(databaseUrl: string, world: World, outcomes: Outcome[]): Promise<Invariants> {
  const conn = await createConnection({ uri: databaseUrl });
  const problems: string[] = [];
  const q = async (sql: string, params: unknown[] = []) => (await conn.query(sql, params))[0] as Record<string, any>[];
  try {
    const wallets = await q(
      'select w.user_id, w.balance, coalesce(sum(l.delta), 0) as ledger from credits_wallets w left join credits_ledger l on l.user_id ' +
        '= w.user_id group by w.user_id, w.balance',
    );
    for (const w of wallets) {
      if (Number(w.balance) !== Number(w.ledger)) problems.push(`user ${w.user_id}: balance ${w.balance} but ledger sum ${w.ledger}`);
      if (Number(w.balance) < 0) problems.push(`user ${w.user_id}: negative balance ${w.balance}`);
    }
    const [totals] = await q(
      'select (select coalesce(sum(balance), 0) from credits_wallets) as balances, (select coalesce(sum(delta), 0) from ' + 'credits_ledger) as deltas',
    );
    if (Number(totals!.balances) !== Number(totals!.deltas)) problems.push(`sum of balances ${totals!.balances} ≠ sum of ledger deltas ${totals!.deltas}`);

    const ledgerBy = Object.fromEntries((await q('select reason, count(*) as n from credits_ledger group by reason')).map((r) => [r.reason, Number(r.n)]));
    const ok = (op: Op) => outcomes.filter((o) => o.op === op && o.status >= 200 && o.status < 300).length;
    // A crash may commit work whose answer was never sent, so the database may hold more, never less.
    if ((ledgerBy.send ?? 0) < ok('send')) problems.push(`${ok('send')} sends answered 2xx but ${ledgerBy.send ?? 0} are recorded`);
    if ((ledgerBy.send ?? 0) !== (ledgerBy.receive ?? 0)) problems.push(`${ledgerBy.send} send rows but ${ledgerBy.receive} receive rows`);
    if ((ledgerBy.add ?? 0) < ok('add') + world.users.length) problems.push(`${ok('add')} adds answered 2xx but ${ledgerBy.add} are recorded`);
    if ((ledgerBy.remove ?? 0) < ok('remove')) problems.push(`${ok('remove')} removes answered 2xx but ${ledgerBy.remove} are recorded`);

    const orderIds = outcomes.filter((o) => o.op === 'buy' && o.status >= 200 && o.status < 300).map((o) => Number(o.orderID));
    if (orderIds.length) {
      const found = await q('select count(*) as n from store_orders where id in (?)', [orderIds]);
      if (Number(found[0]!.n) !== orderIds.length) problems.push(`${orderIds.length} buys answered 2xx but only ${found[0]!.n} of their orders exist`);
    }
    const [stock] = await q('select stock from store_products where id = ?', [world.productId]);
    const [sold] = await q('select coalesce(sum(quantity), 0) as n from store_order_items where product_id = ?', [world.productId]);
    const [purchases] = await q("select count(*) as n from credits_ledger where reason = 'purchase'");
    const [orders] = await q("select count(*) as n from store_orders where type = 'credit'");
    if (Number(stock!.stock) < 0) problems.push(`negative stock ${stock!.stock}`);
    if (world.stock - Number(stock!.stock) !== Number(sold!.n))
      problems.push(`stock went from ${world.stock} to ${stock!.stock} but ${sold!.n} units are in orders`);
    if (Number(purchases!.n) !== Number(orders!.n)) problems.push(`${orders!.n} purchase orders but ${purchases!.n} purchase debits`);
    return { problems, counts: { wallets: wallets.length, sends: ledgerBy.send ?? 0, orders: Number(orders!.n), stockLeft: Number(stock!.stock) } };
  } finally {
    await conn.end();
  }
}

/** Statuses a storm may see from a healthy server: success or one of the listed refusals. */
export const LISTED = new Set(['NOT_ENOUGH_CREDITS', 'INSUFFICIENT_BALANCE', 'OUT_OF_STOCK', 'INVALID_TARGET']);
