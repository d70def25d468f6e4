import t from 'tap';
import { buildApp, logSafeUrl } from '../core/app.ts';
import { builtinNames } from '../core/features.ts';
import { type Sql, sql } from '../core/sql.ts';
import { CoreApiKey } from '../core/api-keys.ts';
import { CoreSetting } from '../core/settings.ts';
import { ECHO_PLUGIN } from './fixtures.ts';
import { ADMIN_KEY, apiKey, build, call, freshDatabaseUrl } from './helper.ts';

t.test('API key: missing, wrong, valid, and the admin scope', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  let res = await call(app, '/api/echo', { key: null });
  t.equal(res.statusCode, 401);
  t.same(res.json(), { status: false, error: 'INVALID_API_KEY', message: 'The X-Api-Key header is missing.' });
  res = await call(app, '/api/echo', { key: 'nope' });
  t.equal(res.statusCode, 401);
  t.equal(res.json().error, 'INVALID_API_KEY');
  t.match(res.json().message, /not hold a valid/);
  res = await call(app, '/api/echo', { headers: { 'X-API-KEY': ADMIN_KEY }, key: null });
  t.equal(res.statusCode, 200, 'header name is case-insensitive');

  const gameKey = await apiKey(app);
  t.match(gameKey, /^ck_[0-9a-f]{48}$/);
  res = await call(app, '/api/echo', { key: gameKey });
  t.equal(res.statusCode, 200);
  res = await call(app, '/api/admin/settings', { key: gameKey });
  t.equal(res.statusCode, 403);
  t.equal(res.json().error, 'FORBIDDEN');
  res = await call(app, '/api/admin/settings');
  t.equal(res.statusCode, 200);

  t.ok(await app.apiKeys.revoke('game-server'));
  res = await call(app, '/api/echo', { key: gameKey });
  t.equal(res.statusCode, 401, 'a revoked key stops working');
  const listed = await app.apiKeys.list();
  t.equal(listed.length, 1);
  t.equal(listed[0]!.name, 'game-server');
  t.ok(listed[0]!.revokedAt);
  const stored = await CoreApiKey.select(app.db);
  t.not(stored[0]!.keyHash, gameKey, 'only a hash of the key is stored');
  t.notOk(JSON.stringify(stored).includes(gameKey.slice(3)));
});

t.test('API key: a revoke holds for a request that joins a key list read begun before it', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  const gameKey = await apiKey(app);
  // The list of keys is read again after a create; this read's answer is held back until the
  // revoke below is done, so it is the list as it was before the revoke.
  const query = app.db.query.bind(app.db);
  let reading!: () => void;
  const read = new Promise<void>((resolve) => {
    reading = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  app.db.query = (async (statement: Sql<unknown>) => {
    const rows = await query(statement);
    if (/from `core_api_keys` where `revoked_at` is null/.test(statement.text)) {
      reading();
      await released;
    }
    return rows;
  }) as typeof app.db.query;
  const before = call(app, '/api/echo', { key: gameKey });
  await read;
  t.ok(await app.apiKeys.revoke('game-server'));
  const after = call(app, '/api/echo', { key: gameKey });
  release();
  const res = await after;
  t.equal(res.statusCode, 401, 'the key is refused once the revoke is done');
  t.equal(res.json().error, 'INVALID_API_KEY');
  // The request that started the read began before the revoke: either answer is right for it.
  t.ok([200, 401].includes((await before).statusCode));
});

t.test('API key: a percent-encoded path is checked as the route it reaches', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  const gameKey = await apiKey(app);
  // The router decodes `%61` to `a`, so these reach /api/echo and /api/admin/settings.
  let res = await call(app, '/%61pi/echo');
  t.equal(res.statusCode, 200, 'the encoded path reaches the route');
  res = await call(app, '/%61pi/echo', { key: null });
  t.equal(res.statusCode, 401, 'no key');
  t.equal(res.json().error, 'INVALID_API_KEY');
  for (const url of ['/api/%61dmin/settings', '/%61pi/admin/settings', '/api/adm%69n/settings']) {
    res = await call(app, url);
    t.equal(res.statusCode, 200, `${url} reaches the admin route`);
    res = await call(app, url, { key: gameKey });
    t.equal(res.statusCode, 403, `${url} with a key without the admin scope`);
    t.equal(res.json().error, 'FORBIDDEN');
  }
});

t.test('health and docs need no key; unknown routes are JSON 404s', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  let res = await call(app, '/health', { key: null });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: true, database: 'up' });
  res = await call(app, '/docs', { key: null });
  t.ok(res.statusCode === 200 || res.statusCode === 302, `docs page answers (${res.statusCode})`);
  res = await call(app, '/docs/json', { key: null });
  t.equal(res.statusCode, 200);
  const doc = res.json();
  t.ok(doc.paths['/api/echo'], 'routes are in the OpenAPI document');
  t.ok(doc.paths['/api/admin/settings']);
  t.ok(doc.components.schemas.ErrorResponse, 'the error shape is documented');
  res = await call(app, '/api/nothing/here');
  t.equal(res.statusCode, 404);
  t.same(res.json(), { status: false, error: 'NOT_FOUND', message: 'No route GET /api/nothing/here.' });
  t.match(res.headers['content-type'], /application\/json/);
});

t.test('errors: domain codes map to statuses, faults reveal nothing', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  let res = await call(app, '/api/echo/domain');
  t.equal(res.statusCode, 404);
  t.same(res.json(), { status: false, error: 'ROLE_NOT_FOUND', message: 'No role with ID 7.' });
  res = await call(app, '/api/echo/fail');
  t.equal(res.statusCode, 500);
  t.same(res.json(), { status: false, error: 'INTERNAL_ERROR', message: `An internal error occurred (request ${res.headers['x-request-id']}).` });
  t.notOk(res.body.includes('secret'), 'no internals in the body');
  res = await call(app, '/api/echo/db');
  t.same(res.json(), { rows: [{ one: 1 }] });
  t.notOk('error' in res.json(), 'success bodies carry no error key');
});

t.test('site settings: defaults from config, changed at run time, validated', async (t) => {
  const app = await build(t, { features: [], config: { site: { currency: 'EUR' } } });
  let res = await call(app, '/api/admin/settings');
  t.equal(res.json().data.currency, 'EUR');
  t.equal(res.json().data.registerLimit, 3);
  res = await call(app, '/api/admin/settings', {
    method: 'PATCH',
    body: { registerLimit: '5', twoFactorEnabled: 'false', timezone: 'Europe/Berlin' },
    as: 'urlencoded',
  });
  t.equal(res.statusCode, 200);
  t.match(res.json().data, { registerLimit: 5, twoFactorEnabled: false, timezone: 'Europe/Berlin', currency: 'EUR' });
  t.equal(app.settings.get().registerLimit, 5, 'features read the new value through the registry');
  for (const bad of [{ currency: 'euro' }, { timezone: 'Mars/Olympus' }, { buyResponseStatus: 202 }, { cashbackPercent: -1 }]) {
    res = await call(app, '/api/admin/settings', { method: 'PATCH', body: bad, as: 'json' });
    t.equal(res.statusCode, 400, JSON.stringify(bad));
    t.equal(res.json().error, 'VALIDATION_ERROR');
  }
  t.equal(app.settings.get().timezone, 'Europe/Berlin', 'a refused change changes nothing');
  const rows = await CoreSetting.select(app.db, sql`order by ${CoreSetting.c.key}`);
  t.same(
    rows.map((r) => r.key),
    ['registerLimit', 'timezone', 'twoFactorEnabled'],
  );
});

t.test('tokens in URLs never reach the log', async (t) => {
  const lines: string[] = [];
  const url = await freshDatabaseUrl(t);
  const app = await buildApp({
    env: { DATABASE_URL: url, API_KEY: ADMIN_KEY },
    config: { log: { level: 'info' }, plugins: Object.fromEntries(builtinNames().map((n) => [n, { enabled: false }])) },
    logStream: {
      write: (line: string) => {
        lines.push(line);
      },
    },
  });
  t.teardown(() => app.close());
  t.equal(logSafeUrl('/api/auth/sessions/0123456789abcdef0123456789abcdef?x=1'), '/api/auth/sessions/[redacted]?x=1');
  t.equal(logSafeUrl('/api/users/?userID=12'), '/api/users/?userID=12', 'ordinary URLs stay readable');
  await app.inject({ method: 'GET', url: '/api/auth/sessions/0123456789abcdef0123456789abcdef', headers: { 'x-api-key': ADMIN_KEY } });
  const text = lines.join('');
  t.match(text, /sessions\/\[redacted\]/, 'the request was logged, masked');
  t.notOk(text.includes('0123456789abcdef0123456789abcdef'));
  t.notOk(text.includes(ADMIN_KEY), 'nor the API key');
});

t.test('every credential the server issues is masked in a logged URL, whatever its alphabet', async (t) => {
  const lines: string[] = [];
  const app = await buildApp({
    env: { DATABASE_URL: await freshDatabaseUrl(t), API_KEY: ADMIN_KEY },
    config: {
      log: { level: 'info' },
      plugins: Object.fromEntries(builtinNames().map((n) => [n, { enabled: ['delivery', 'store', 'users', 'credits'].includes(n) }])),
    },
    logStream: {
      write: (line: string) => {
        lines.push(line);
      },
    },
  });
  t.teardown(() => app.close());
  const created = await app.inject({ method: 'POST', url: '/api/admin/delivery/servers', headers: { 'x-api-key': ADMIN_KEY }, payload: { name: 'Lobby' } });
  const { token } = created.json();
  t.match(token, /^[A-Za-z0-9_-]{43}$/, 'a delivery token is 43 characters of base64url');
  // Failed requests (no key) are logged at info with their URL: the token in the path and in the query.
  t.equal((await app.inject({ method: 'GET', url: `/api/command-logs/${token}/queue` })).statusCode, 401);
  t.equal((await app.inject({ method: 'GET', url: `/api/delivery/stream?token=${token}` })).statusCode, 401);
  t.equal((await app.inject({ method: 'GET', url: `/api/command-logs/${token}/nowhere`, headers: { 'x-api-key': ADMIN_KEY } })).statusCode, 404);
  const text = lines.join('');
  t.match(text, /command-logs\/\[redacted\]\/queue/, 'the path was logged, masked');
  t.match(text, /stream\?token=\[redacted\]/, 'the query was logged, masked');
  t.notOk(text.includes(token), 'the token never reaches the log');

  // The shapes of the others: API keys, session and pending two-factor tokens, console sessions, TOTP secrets.
  for (const secret of [`ck_${'ab12'.repeat(12)}`, '0123456789abcdef'.repeat(2), 'f0'.repeat(32), 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP']) {
    t.equal(logSafeUrl(`/x/${secret}?k=${secret}`), '/x/[redacted]?k=[redacted]', secret.slice(0, 6));
  }
  t.equal(
    logSafeUrl('/api/users/069a79f4-44e9-4726-a5be-fca90e38aaf5?name=Steve_the_builder'),
    '/api/users/069a79f4-44e9-4726-a5be-fca90e38aaf5?name=Steve_the_builder',
    'a player UUID and a name stay readable',
  );
});
