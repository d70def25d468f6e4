/**
 * `BENCH_ONLY=rush npm run bench`: a launch as it happens, on the server (pinned to one core, as
 * every scenario) and on the bare baseline doing the same mix by hand. Players browse the
 * storefront; a share of them buy from the launch category, which a sale lowers (some with the
 * launch coupon), on credit or through Stripe (Stripe's API a stand-in on 127.0.0.1 answering as
 * Stripe does, bench/rush-stripe.ts; its signed webhook completes the order); twenty game servers
 * poll their queue and ack what they run (the official plugin's HTTP mode); two webhook endpoints
 * take every order and credit change and a Discord channel announces every order (receivers in
 * this process; Discord's is a relay the config lists, answering as Discord does; the baseline
 * sends them too, bench/base-webhooks.ts); and staff keep the console's dashboard open (the mix:
 * bench/rush-mix.ts). Subscriptions, idempotency keys, tax and the test mode are on as shipped,
 * with nothing of theirs running; BENCH_RUSH_VARIANT=idempotency sends every buy with an
 * Idempotency-Key, BENCH_RUSH_VARIANT=tax adds tax at checkout (taxMode exclusive): Stripe
 * computes it for the buyers' country and each completion records it, BENCH_RUSH_VARIANT=testmode
 * puts the shop in test mode: the checkouts go through the test gateway and staff pay each in the
 * console (its form on the staff session), a test order, and BENCH_RUSH_VARIANT=subscriptions makes
 * one of the two checkouts a monthly package's (Stripe Billing), its subscription started on completion.
 *
 * The load rises in steps of concurrent connections (BENCH_RUSH_STEPS, each BENCH_SECONDS long
 * after a second of warm-up), each step run BENCH_RUSH_REPEATS times a side (3), the sides taking
 * turns, until a side's median p99 passes 100 ms. Its capacity is its median rates at p99 = 100 ms,
 * between its last step under and its first over (atLimit): pages a second, purchases (on credit
 * and completed at the gateway) and commands delivered a minute. The baseline does the same
 * database work by hand, the sale and the coupon priced and their use recorded
 * (bench/store-promotions.ts), the Stripe checkout and its completion (bench/base-checkout.ts) and
 * the dashboard's figures read on the staff session (bench/dashboard.ts) included.
 */
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { freePort } from '../test/mariadb-server.ts';
import { startDiscordRelay, startReceiver, type DiscordRelay, type Receiver } from '../test/receiver.ts';
import { cpuTime, databases, LOAD_CORE, onDatabases, seconds, serverConfig, spawnNode, startBaseline, startServer, stop } from './harness.ts';
import { kindCosts, settled } from './rush-kinds.ts';
import { countKinds, rushSequence, type RushItem, type Shop } from './rush-mix.ts';
import { startStripe, STRIPE_SECRETS } from './rush-stripe.ts';
import { Api } from './scenario.ts';
import { seedCatalogue } from './store.ts';

const GAME_SERVERS = 20;
const BUYERS = 100;
const P99_LIMIT_MS = 100;
const STEPS = (process.env.BENCH_RUSH_STEPS ?? '1,2,4,8,12,16,24,32,48,64').split(',').map(Number);
const VARIANT = process.env.BENCH_RUSH_VARIANT ?? '';
const KINDS = process.env.BENCH_RUSH_KINDS === '1';
/** Each step this many times a side, the sides taking turns: one sample on a shared core is noisy (bench/results.md). */
const REPEATS = Number(process.env.BENCH_RUSH_REPEATS ?? 3);

/** A staff member's console session and its CSRF token (the session lives in the database, so the baseline never needs it). */
async function consoleSession(api: Api): Promise<{ cookie: string; csrf: string }> {
  const staff = await api.player(9000, 'launchstaff', 0);
  const roleID = await api.create('/api/admin/roles', { name: 'Admin', slug: 'admin' });
  await api.send('POST', `/api/users/${staff}/roles`, { roleID });
  const cookie = await api.consoleCookie('launchstaff');
  const page = await (await fetch(`${api.base}/console/payments`, { headers: { cookie } })).text();
  return { cookie, csrf: /name="_csrf" value="([0-9a-f]+)"/.exec(page)![1]! };
}

/** The testmode variant: one test checkout paid by staff in the console, which a walk that opens on a payment pays again. */
async function paidTestCheckout(api: Api, shop: Shop): Promise<string> {
  const started = (await api.send('POST', '/api/payments/purchase', {
    gateway: 'test',
    userID: shop.buyers[0]!,
    lines: [{ productID: shop.launchIds[0]! }],
    returnURL: 'https://play.example.com/thanks',
    cancelURL: 'https://play.example.com/basket',
  })) as { data: { paymentID: string } };
  const paid = await fetch(`${api.base}/console/payments/test-checkout/${started.data.paymentID}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: shop.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: `_csrf=${shop.csrf}`,
  });
  if (paid.status !== 303) throw new Error(`the seed's test checkout answered ${paid.status}`);
  return started.data.paymentID;
}

const PACKAGE_CENTS = 499;

/** The subscriptions variant: a monthly package for each game server, sold through Stripe Billing, its command run at the start. */
async function monthlyPackages(api: Api, servers: string[]): Promise<string[]> {
  const categoryID = await api.create('/api/admin/store/categories', { name: 'Monthly passes' });
  const ids: string[] = [];
  for (const [i, serverID] of servers.entries()) {
    const productID = await api.create('/api/admin/store/products', { categoryID, name: `Launch pass ${i}`, price: (PACKAGE_CENTS / 100).toFixed(2) });
    await api.send('POST', `/api/admin/store/products/${productID}/commands`, { serverID, command: 'give {username} launch_pass 1', trigger: 'purchase' });
    await api.send('POST', '/api/admin/subscription-plans', { productID, intervalUnit: 'months', price: (PACKAGE_CENTS / 100).toFixed(2) });
    ids.push(productID);
  }
  return ids;
}

/** The shop of a launch, through the server's API as an owner would make it. */
async function seed(api: Api, key: string, webhooks: Receiver[], discord: DiscordRelay): Promise<Shop> {
  const { categoryIds, productIds } = await seedCatalogue(api, 8, 24);
  const launch = await api.create('/api/admin/store/categories', { name: 'Launch' });
  const tokens: string[] = [];
  const servers: string[] = [];
  const launchIds: string[] = [];
  for (let i = 0; i < GAME_SERVERS; i++) {
    const server = (await api.send('POST', '/api/admin/delivery/servers', { name: `Realm ${i}` })) as { id: string; token: string };
    tokens.push(server.token);
    servers.push(server.id);
    const product = await api.create('/api/admin/store/products', { categoryID: launch, name: `Launch kit ${i}`, price: '4.99' });
    await api.send('POST', `/api/admin/store/products/${product}/commands`, {
      serverID: server.id,
      command: 'give {username} launch_kit 1',
      trigger: 'purchase',
    });
    launchIds.push(product);
  }
  const day = 86_400_000;
  const stamp = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
  await api.send('POST', '/api/admin/promotions/sales', {
    name: 'Launch week',
    percent: '20',
    categoryIDs: [launch],
    startDate: stamp(Date.now() - day),
    endDate: stamp(Date.now() + 7 * day),
  });
  await api.send('POST', '/api/admin/promotions/coupons', {
    code: 'LAUNCH10',
    kind: 'percent',
    value: '10',
    stacksWithSale: true,
    maxUses: '0',
    perPlayer: '0',
  });
  for (const [i, r] of webhooks.entries()) {
    await api.create('/api/admin/notifications/endpoints', { name: `launch receiver ${i}`, url: r.url, events: ['store.order.completed', 'credits.changed'] });
  }
  await api.create('/api/admin/notifications/endpoints', discord.endpoint(['store.order.completed'], 'launch announcements'));
  // Tax added at checkout: Stripe computes it (Stripe Tax), the completion records it.
  if (VARIANT === 'tax') await api.send('PATCH', '/api/admin/settings', { taxMode: 'exclusive' });
  const packages = VARIANT === 'subscriptions' ? await monthlyPackages(api, servers) : undefined;
  // The shop in test mode: its checkouts go through the test gateway, paid by staff in the console.
  if (VARIANT === 'testmode') await api.send('PATCH', '/api/admin/settings', { testMode: true });
  const buyers: string[] = [];
  await Api.batched(BUYERS, 10, async (i) => {
    buyers[i] = await api.player(8000 + i, `launcher${i}`, 1_000_000_00);
  });
  const shop: Shop = {
    key,
    categoryIds,
    productIds,
    launchIds,
    tokens,
    buyers,
    coupon: 'LAUNCH10',
    stripeSecret: STRIPE_SECRETS.STRIPE_WEBHOOK_SECRET,
    ...(await consoleSession(api)),
    ...(packages ? { packageIds: packages, packagePrice: PACKAGE_CENTS } : {}),
  };
  return VARIANT === 'testmode' ? { ...shop, paidTest: await paidTestCheckout(api, shop) } : shop;
}

interface Step {
  connections: number;
  rps: number;
  p99: number;
  byKind: Record<string, number>;
  failed: Record<string, number>;
  firstBody: Record<string, string>;
  p99ByKind: Record<string, number>;
  /** Each kind's mean latency in ms: at a few connections, where a side's time goes besides its CPU. */
  meanByKind: Record<string, number>;
  delivered: number;
  /** Gateway checkouts their webhook completed. */
  completed: number;
  non2xx: number;
  /** Webhook sends the receivers took during the step. */
  webhooks: number;
  /** The side's CPU time during the step, per request answered (what it left for later not counted). */
  cpuUs: number;
}

/** One step of load on `url` served by `pid`: a warm-up second, then BENCH_SECONDS; `sends` counts the webhooks received so far. */
async function step(url: string, pid: number, sequence: RushItem[], connections: number, sends: () => number): Promise<Step> {
  await walk(url, sequence, connections, 1);
  const before = sends();
  const cpuBefore = cpuTime(pid);
  const measured = await walk(url, sequence, connections, seconds);
  return { ...measured, connections, webhooks: sends() - before, cpuUs: (cpuTime(pid) - cpuBefore) / Math.max(1, measured.requests) };
}

/** The load generator walking `sequence` on `url` for `duration` seconds. */
async function walk(
  url: string,
  sequence: RushItem[],
  connections: number,
  duration: number,
): Promise<Omit<Step, 'connections' | 'webhooks' | 'cpuUs'> & { requests: number }> {
  const proc = spawnNode(LOAD_CORE, ['bench/rush-load.ts'], {});
  proc.stdin!.end(JSON.stringify({ url, sequence, connections, seconds: duration, firstSubscription: subscriptionsTaken }));
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => {
    out += d;
  });
  if ((await new Promise((r) => proc.once('exit', r))) !== 0) throw new Error('the rush load generator failed');
  const walked = JSON.parse(out) as Omit<Step, 'connections' | 'webhooks' | 'cpuUs'> & { requests: number; subscriptions: number };
  subscriptionsTaken += walked.subscriptions;
  return walked;
}

/** The pairs of player and monthly package the walks took so far: each later walk takes the next ones, as a player subscribes to a package once. */
let subscriptionsTaken = 0;

/** A step's rates: pages a second, purchases (on credit and completed at the gateway) and commands delivered a minute. */
function rates(s: Step): string {
  const perSecond = (n: number | undefined) => (n ?? 0) / seconds;
  const purchases = (s.byKind.buy ?? 0) + s.completed;
  return `${perSecond(s.byKind.page).toFixed(0)} | ${(perSecond(purchases) * 60).toFixed(0)} | ${(perSecond(s.completed) * 60).toFixed(0)} | ${(perSecond(s.delivered) * 60).toFixed(0)}`;
}

/** The middle of `values` (the lower of the two middles of an even count). */
const middle = (values: number[]) => values.toSorted((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

/**
 * `steps` as one, each figure (connections, p99, the rates, the CPU a request) `combine`d and the
 * non-2xx answers summed; the kinds' figures (p99, mean, refusals) are the first step's.
 */
function combined(steps: Step[], combine: (values: number[]) => number): Step {
  const of = (field: (s: Step) => number) => combine(steps.map(field));
  const kinds = new Set(steps.flatMap((s) => Object.keys(s.byKind)));
  return {
    ...steps[0]!,
    connections: of((s) => s.connections),
    p99: of((s) => s.p99),
    rps: of((s) => s.rps),
    byKind: Object.fromEntries([...kinds].map((k) => [k, of((s) => s.byKind[k] ?? 0)])),
    delivered: of((s) => s.delivered),
    completed: of((s) => s.completed),
    webhooks: of((s) => s.webhooks),
    cpuUs: of((s) => s.cpuUs),
    non2xx: steps.reduce((n, s) => n + s.non2xx, 0),
  };
}

/** A step's repeats as one: each figure their median, the kinds' those of the run whose p99 is the median. */
function medianStep(runs: Step[]): Step {
  const typical = runs.toSorted((a, b) => a.p99 - b.p99)[Math.floor((runs.length - 1) / 2)]!;
  return combined([typical, ...runs.filter((r) => r !== typical)], middle);
}

/**
 * The rates at p99 = 100 ms: between the last step under it and the first over, in proportion to
 * how far their p99s are from it (the steps are coarse, and a side's rates move from one to the next).
 * A side that never passed it keeps its last step's.
 */
function atLimit(under: Step, over: Step | undefined): Step {
  if (!over) return under;
  const f = (P99_LIMIT_MS - under.p99) / (over.p99 - under.p99);
  return { ...combined([under, over], ([a, b]) => a! + (b! - a!) * f), p99: P99_LIMIT_MS };
}

const row = (db: string, side: string, s: Step) =>
  `| ${db} | ${side} | ${Number.isInteger(s.connections) ? s.connections : s.connections.toFixed(1)} | ${s.rps.toFixed(0)} | ${s.p99} | ${rates(s)} | ${(s.webhooks / seconds).toFixed(0)} | ${s.non2xx} |`;

async function rushDatabase(kind: string, url: string): Promise<string[]> {
  const key = randomBytes(24).toString('hex');
  const port = String(await freePort());
  // Two webhook receivers and a Discord channel (a relay the config lists, answering as Discord does).
  const discord = await startDiscordRelay();
  const webhooks = [await startReceiver(), await startReceiver()];
  const receivers = [...webhooks, discord];
  const stripe = await startStripe();
  const config = serverConfig({ ...discord.config, plugins: { ...discord.config.plugins, payments: { stripeApiBase: stripe.url } } });
  const env = { DATABASE_URL: url, PORT: port, HOST: '127.0.0.1', API_KEY: key, CONFIG: config, ...STRIPE_SECRETS, STRIPE_API_BASE: stripe.url };
  let server: ChildProcess | undefined;
  let baseline: ChildProcess | undefined;
  const lines: string[] = [];
  try {
    server = (await startServer(env)).proc;
    const shop = await seed(new Api(`http://127.0.0.1:${port}`, key), key, webhooks, discord);
    const basePort = String(await freePort());
    baseline = await startBaseline({
      ...env,
      PORT: basePort,
      BENCH_BASE_WEBHOOKS: '1',
      BENCH_BASE_TAX: VARIANT === 'tax' ? 'exclusive' : '',
      BENCH_BASE_TESTMODE: VARIANT === 'testmode' ? '1' : '',
    });
    const side = (name: string, url: string, proc: ChildProcess) => ({
      name,
      url,
      proc,
      sequence: rushSequence(shop, VARIANT),
      last: undefined as Step | undefined,
      /** The first step whose p99 passed the limit. */
      over: undefined as Step | undefined,
    });
    const sent = () => receivers.reduce((n, r) => n + r.received.length, 0);
    const sides = [side('server', `http://127.0.0.1:${port}`, server), side('baseline', `http://127.0.0.1:${basePort}`, baseline)];
    console.log(`${kind}: one walk of the mix`, JSON.stringify(countKinds(sides[0]!.sequence)));
    if (KINDS) console.log(`\n${kind}, each kind alone at a few connections:\n${(await kindCosts(sides, walk, sent)).join('\n')}\n`);
    for (const connections of STEPS) {
      const active = sides.filter((s) => !s.over);
      const runs = new Map(active.map((side) => [side, [] as Step[]]));
      for (let repeat = 0; repeat < REPEATS; repeat++) {
        // The sides take turns at going first, so neither always meets the machine's slower moments.
        for (const side of repeat % 2 ? active.toReversed() : active) {
          // Each side's step starts once both have sent what earlier steps left (their webhooks), on the core they share.
          await settled(sent);
          const s = await step(side.url, side.proc.pid!, side.sequence, connections, sent);
          console.log(
            row(kind, side.name, s),
            `CPU ${s.cpuUs.toFixed(0)} µs/request, p99 by kind (ms): ${JSON.stringify(s.p99ByKind)}, mean: ${JSON.stringify(s.meanByKind)}`,
            Object.keys(s.failed).length ? `refused: ${JSON.stringify(s.failed)}, first answers: ${JSON.stringify(s.firstBody)}` : '',
          );
          runs.get(side)!.push(s);
        }
      }
      for (const side of active) {
        const s = medianStep(runs.get(side)!);
        if (REPEATS > 1) console.log(row(kind, `${side.name}, median of ${REPEATS}`, s));
        if (s.p99 > P99_LIMIT_MS) side.over = s;
        else side.last = s;
      }
    }
    for (const side of sides)
      lines.push(
        side.last
          ? `${row(kind, `${side.name}, last step under`, side.last)}\n${row(kind, side.over ? `**${side.name} at p99 ${P99_LIMIT_MS} ms**` : `**${side.name}, under ${P99_LIMIT_MS} ms at every step**`, atLimit(side.last, side.over))}`
          : `| ${kind} | ${side.name} | p99 above ${P99_LIMIT_MS} ms at the first step | | | | | | | | |`,
      );
  } finally {
    if (baseline) await stop(baseline);
    if (server) await stop(server);
    for (const r of receivers) await r.close();
    await stripe.close();
  }
  return lines;
}

export async function runRush(): Promise<void> {
  const lines: string[] = [];
  for (const kind of databases) {
    await onDatabases(kind, 1, async ([url], name) => {
      lines.push(...(await rushDatabase(name, url!)));
    });
  }
  console.log(
    `\nRush${VARIANT ? ` (${VARIANT})` : ''}: the last step under p99 ${P99_LIMIT_MS} ms, and the rates at it (between that step and the next), ${seconds} s a step\n`,
  );
  console.log(
    '| database | side | connections | req/s | p99 ms | pages/s | purchases/min | of which at the gateway | commands delivered/min | webhooks sent/s | non-2xx |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const line of lines) console.log(line);
}
