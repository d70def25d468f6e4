/**
 * Request ids, CORS, Prometheus metrics, and boot refusing a wrong configuration with one
 * sentence that names the setting.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { buildApp } from '../core/app.ts';
import { loadConfig, rootDir } from '../core/config.ts';
import { builtinNames } from '../core/features.ts';
import { ADMIN_KEY, apiKey, build, call, scrapeMetrics } from './helper.ts';
import { ECHO_PLUGIN, newUser, until } from './fixtures.ts';

/** A made id: the process's random prefix, then its count. */
const MADE = /^[0-9a-f]{12}-[0-9a-z]+$/;

t.test('X-Request-Id: made or kept, returned on every answer, in 500 bodies and in the log', async (t) => {
  const lines: string[] = [];
  const app = await buildApp({
    env: { API_KEY: ADMIN_KEY, DATABASE_URL: 'sqlite::memory:' },
    config: { log: { level: 'info' }, plugins: { ...ECHO_PLUGIN, ...Object.fromEntries(builtinNames().map((n) => [n, { enabled: false }])) } },
    logStream: {
      write: (line) => {
        lines.push(line);
      },
    },
  });
  t.teardown(() => app.close());
  const first = await app.inject({ method: 'GET', url: '/health' });
  const second = await app.inject({ method: 'GET', url: '/health' });
  t.match(first.headers['x-request-id'], MADE, 'a fresh id when the client sends none');
  t.not(first.headers['x-request-id'], second.headers['x-request-id'], 'unique per request');

  const given = await app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'lb-42.abc' } });
  t.equal(given.statusCode, 404);
  t.equal(given.headers['x-request-id'], 'lb-42.abc', "the client's id is kept, on errors too");
  const unsafe = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'bad id\twith spaces' } });
  t.match(unsafe.headers['x-request-id'], MADE, 'an id unfit for logs is replaced');

  const failed = await app.inject({ method: 'GET', url: '/api/echo/fail', headers: { 'x-api-key': ADMIN_KEY, 'x-request-id': 'trace-500' } });
  t.equal(failed.statusCode, 500);
  t.same(failed.json(), { status: false, error: 'INTERNAL_ERROR', message: 'An internal error occurred (request trace-500).' });
  const logged = lines.map((l) => JSON.parse(l)).filter((l) => l.reqId === 'trace-500');
  t.ok(
    logged.some((l) => l.msg === 'request failed'),
    'the failure is logged under the same id',
  );
  t.ok(logged.length >= 2, 'every log line of the request carries it');
});

t.test('the line a request gets: a failure at info with its status and time, a success only at debug; once, metrics on or off', async (t) => {
  for (const [level, metrics] of [
    ['info', false],
    ['info', true],
    ['debug', false],
  ] as const) {
    const lines: { msg: string; reqId: string; level: number; res?: { statusCode: number }; responseTime?: number }[] = [];
    const app = await buildApp({
      env: { API_KEY: ADMIN_KEY, DATABASE_URL: 'sqlite::memory:' },
      config: {
        log: { level },
        metrics: { enabled: metrics },
        plugins: { ...ECHO_PLUGIN, ...Object.fromEntries(builtinNames().map((n) => [n, { enabled: false }])) },
      },
      logStream: {
        write: (line) => {
          lines.push(JSON.parse(line) as (typeof lines)[number]);
        },
      },
    });
    t.teardown(() => app.close());
    const ask = (url: string, id: string) => app.inject({ method: 'GET', url, headers: { 'x-api-key': ADMIN_KEY, 'x-request-id': id } });
    t.equal((await ask('/health', 'fine')).statusCode, 200);
    t.equal((await ask('/nowhere', 'missing')).statusCode, 404);
    t.equal((await ask('/api/echo/fail', 'broken')).statusCode, 500);
    const completed = (id: string) => lines.filter((l) => l.reqId === id && l.msg === 'request completed');
    const at = `${level}${metrics ? ', metrics on' : ''}`;
    for (const [id, status] of [
      ['missing', 404],
      ['broken', 500],
    ] as const) {
      const [line, ...more] = completed(id);
      t.equal(more.length, 0, `${at}: one line for ${status}`);
      t.equal(line?.level, 30, `${at}: ${status} at info`);
      t.equal(line?.res?.statusCode, status, `${at}: with its status`);
      t.ok(typeof line?.responseTime === 'number' && line.responseTime >= 0, `${at}: and its time`);
    }
    t.equal(completed('fine').length, level === 'debug' ? 1 : 0, `${at}: a success is logged only at debug`);
    if (level === 'debug') t.equal(completed('fine')[0]?.level, 20, 'at debug level');
  }
});

t.test('CORS: off by default, then only for the configured origins', async (t) => {
  const closed = await build(t, { features: [] });
  const preflight = {
    method: 'OPTIONS' as const,
    url: '/api/admin/settings',
    headers: { origin: 'https://shop.example', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'x-api-key' },
  };
  let res = await closed.inject(preflight);
  t.notOk(res.headers['access-control-allow-origin'], 'no CORS unless configured');

  const open = await build(t, { features: [], config: { server: { corsOrigins: ['https://shop.example'] } } });
  res = await open.inject(preflight);
  t.equal(res.statusCode, 204);
  t.equal(res.headers['access-control-allow-origin'], 'https://shop.example');
  t.match(String(res.headers['access-control-allow-headers']).toLowerCase(), /x-api-key/);
  res = await open.inject({ method: 'GET', url: '/api/admin/settings', headers: { origin: 'https://shop.example', 'x-api-key': ADMIN_KEY } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['access-control-allow-origin'], 'https://shop.example');
  t.match(String(res.headers['access-control-expose-headers']), /X-Request-Id/);
  res = await open.inject({ ...preflight, headers: { ...preflight.headers, origin: 'https://evil.example' } });
  t.notOk(res.headers['access-control-allow-origin'], 'another origin is not allowed');
});

t.test('GET /metrics: off by default; admin only; HTTP, process and business series', async (t) => {
  const off = await build(t, { features: [] });
  t.equal((await off.inject({ method: 'GET', url: '/metrics' })).statusCode, 404, 'not served unless enabled');

  const app = await build(t, { config: { metrics: { enabled: true } } });
  let res = await app.inject({ method: 'GET', url: '/metrics' });
  t.equal(res.statusCode, 401);
  t.equal(res.json().error, 'INVALID_API_KEY');
  const gameKey = await apiKey(app);
  res = await app.inject({ method: 'GET', url: '/metrics', headers: { 'x-api-key': gameKey } });
  t.equal(res.statusCode, 403, 'a game server key may not read them');

  await newUser(app, 'Alice', { cents: 1500 });
  await newUser(app, 'Bob');
  t.equal(
    (await call(app, '/api/credits/send', { body: { sender_username: 'Alice', target_username: 'Bob', amount: '2.50' }, as: 'urlencoded' })).statusCode,
    200,
  );
  const category = (await call(app, '/api/admin/support/categories', { body: { name: 'Help' } })).json();
  t.equal((await call(app, '/api/support/tickets', { body: { accountID: '1', categoryID: category.id, title: 'Help', message: 'Please' } })).statusCode, 200);
  await app.inject({ method: 'GET', url: '/health' });

  res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/plain/);
  const text = res.body;
  t.match(text, /http_request_duration_seconds_count\{method="GET",route="\/health",status="200"\} 1\n/, 'requests by route pattern and status');
  t.match(text, /http_request_duration_seconds_count\{method="POST",route="\/api\/credits\/send",status="200"\} 1\n/);
  t.match(text, /credits_moved_cents_total\{direction="in"\} 1750\n/, 'credits moved in: 1500 added + 250 received');
  t.match(text, /credits_moved_cents_total\{direction="out"\} 250\n/);
  t.match(text, /support_open_tickets 1\n/, 'open tickets, counted at scrape');
  t.match(text, /nodejs_eventloop_lag_seconds /, 'event-loop lag');
  t.match(text, /process_resident_memory_bytes /);

  const pub = await build(t, { features: [], config: { metrics: { enabled: true, public: true } } });
  t.equal((await pub.inject({ method: 'GET', url: '/metrics' })).statusCode, 200, 'metrics.public serves without a key');
});

t.test('GET /metrics: database connections in use and idle, and callers waiting for one', async (t) => {
  // Keys cached for the whole test: each request then waits for the database on its own account.
  const app = await build(t, {
    features: ['users', 'credits'],
    config: { metrics: { enabled: true, public: true }, database: { poolSize: 3 }, apiKeys: { cacheSeconds: 3600 } },
  });
  await newUser(app, 'Steve');
  t.equal((await call(app, '/api/credits?username=Steve')).statusCode, 200);
  const scrape = async () => {
    const value = await scrapeMetrics(app);
    return { inUse: value('db_pool_connections{state="in_use"}'), idle: value('db_pool_connections{state="idle"}'), waiting: value('db_pool_waiting') };
  };
  // SQLite has one connection; the MySQL pool has poolSize.
  const connections = app.db.dialect === 'sqlite' ? 1 : 3;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let holding = 0;
  const held = Array.from({ length: connections }, () =>
    app.db.transaction(async () => {
      holding++;
      await gate;
    }),
  );
  await until(() => holding >= connections);
  t.equal(holding, connections, 'every connection is held by a transaction');

  const writes = Array.from({ length: 3 }, () => call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '1.00' }, as: 'urlencoded' }));
  let busy = await scrape();
  await until(async () => (busy = await scrape()).waiting >= 3);
  t.same(busy, { inUse: connections, idle: 0, waiting: 3 }, 'all in use, three requests waiting');

  open();
  await Promise.all(held);
  t.same(
    (await Promise.all(writes)).map((r) => r.statusCode),
    [200, 200, 200],
    'the waiting requests went through',
  );
  t.same(await scrape(), { inUse: 0, idle: connections, waiting: 0 }, 'all idle again, nobody waiting');
});

t.test('boot refuses a wrong configuration with one sentence naming the setting', async (t) => {
  const refused = (overrides: unknown, env: NodeJS.ProcessEnv = {}) => {
    try {
      loadConfig(env, overrides);
      return 'booted';
    } catch (err) {
      return (err as Error).message;
    }
  };
  t.equal(refused({}, { LOG_LEVEL: 'loud' }), 'Invalid setting log.level: must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent"');
  t.equal(refused({ server: { prot: 8080 } }), 'Invalid setting server.prot: unknown setting (misspelled?)');
  t.equal(refused({ site: { timezone: 'Berlin' } }), 'Invalid setting site.timezone: unknown time zone "Berlin" (use an IANA name such as "Europe/Berlin").');
  t.equal(refused({ site: { timezone: 'Europe/Berlin' } }), 'booted');
  await t.rejects(buildApp({ env: { DATABASE_URL: 'sqlite::memory:' }, config: { log: { level: 'silent' }, plugins: { suport: { enabled: true } } } }), {
    message: new RegExp(
      '^plugins\\.suport: there is no built-in feature of that name \\(built-in: .*support.*\\); ' +
        'a third-party feature needs plugins\\.suport\\.package\\.$',
    ),
  });
});

t.test('a taken port stops npm start with one sentence, no stack trace', async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.teardown(() => holder.close());
  const port = (holder.address() as { port: number }).port;
  const dir = t.testdir({});
  const child = spawn(process.execPath, [join(rootDir, 'core/server.js')], {
    cwd: rootDir,
    env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.equal(code, 1);
  t.equal(stderr, `Cannot start: 127.0.0.1:${port} is already in use. Set PORT (or server.port) to a free port, or stop the process that holds it.\n`);
});
