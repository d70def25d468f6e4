/**
 * Issue 34: two servers on one database share every request limit and account lockout. A count
 * begun on one instance goes on on the other, so a client cannot double a limit by being sent to
 * both (core/rate-limits.ts, plugins/auth/lockout.ts).
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { TestClock } from '../core/clock.ts';
import { login, register } from '../plugins/auth/test/fixtures.ts';
import { register as registerPlayer, signInByForm } from '../plugins/console/test/browser.ts';
import { Visitor } from './visitor.ts';
import { ECHO_PLUGIN, rowCount } from './fixtures.ts';
import { CoreRateLimit } from '../core/rate-limits.ts';
import { sql } from '../core/sql.ts';
import { apiKey, build, call, sharedDatabaseUrl, type BuildTestOptions } from './helper.ts';

/** Two servers on one database, as two instances behind a load balancer. */
async function twoInstances(t: Parameters<typeof build>[0], opts: Omit<BuildTestOptions, 'databaseUrl'>): Promise<[FastifyInstance, FastifyInstance]> {
  const databaseUrl = await sharedDatabaseUrl(t);
  const a = await build(t, { ...opts, databaseUrl });
  const b = await build(t, { ...opts, databaseUrl });
  return [a, b];
}

function retryAfter(res: { headers: Record<string, unknown> }): number {
  return Number(res.headers['retry-after']);
}

t.test('the login limit counts across instances: 2 tries on A, the 3rd and 4th on B', async (t) => {
  const [a, b] = await twoInstances(t, { features: ['users', 'auth'], config: { plugins: { auth: { rateLimit: { login: { max: 3, windowSeconds: 60 } } } } } });
  await register(a, 'Steve', 'correct horse');
  for (const app of [a, a, b]) t.equal((await login(app, 'Steve', 'guess')).json().error, 'WRONG_PASSWORD');
  const res = await login(b, 'Steve', 'correct horse');
  t.equal(res.statusCode, 429, 'the 4th try in the window is refused on B, even with the right password');
  t.equal(res.json().code, 'RATE_LIMITED');
  t.ok(retryAfter(res) >= 1 && retryAfter(res) <= 60, `Retry-After within the window (${String(res.headers['retry-after'])})`);
  t.equal((await login(a, 'Steve', 'correct horse')).statusCode, 429, 'and on A');
  t.equal((await login(b, 'Steve', 'correct horse', { ip: '203.0.113.9' })).statusCode, 200, 'the same name from another ip has a count of its own');
  const stored = JSON.stringify(await CoreRateLimit.select(a.db));
  t.notMatch(stored, /steve|198\.51\.100\.4/i, 'the stored keys name no player and no address');
});

t.test('the register limit counts across instances', async (t) => {
  const [a, b] = await twoInstances(t, {
    features: ['users', 'auth'],
    config: { plugins: { auth: { rateLimit: { register: { max: 2, windowSeconds: 60 } } } } },
  });
  const body = { username: 'Neo', password: 'correct horse', email: 'neo@example.com', ip: '198.51.100.7', useragent: 'GameServer/1.0' };
  t.equal((await call(a, '/api/auth/register', { body })).statusCode, 200);
  t.equal((await call(b, '/api/auth/register', { body })).json().error, 'USERNAME_ALREADY_EXIST');
  const res = await call(b, '/api/auth/register', { body });
  t.equal(res.statusCode, 429);
  t.equal(res.json().error, 'RATE_LIMITED');
  t.ok(retryAfter(res) >= 1 && retryAfter(res) <= 60);
});

t.test('the account lockout counts across instances', async (t) => {
  const lockout = { plugins: { auth: { rateLimit: { login: { max: 0 }, register: { max: 0 } }, lockout: { password: { maxFailures: 4, lockSeconds: 30 } } } } };
  const [a, b] = await twoInstances(t, { features: ['users', 'auth'], config: lockout });
  await register(a, 'Alex', 'correct horse');
  for (const [app, ip] of [
    [a, '10.1.0.1'],
    [a, '10.1.0.2'],
    [a, '10.1.0.3'],
    [b, '10.1.0.4'],
  ] as const) {
    t.equal((await login(app, 'Alex', 'wrong horse', { ip })).json().error, 'WRONG_PASSWORD');
  }
  for (const app of [b, a]) {
    const res = await login(app, 'Alex', 'correct horse', { ip: '10.1.0.5' });
    t.equal(res.statusCode, 429, 'locked on both instances, the right password too');
    t.equal(res.json().code, 'RATE_LIMITED');
    t.ok(retryAfter(res) >= 1 && retryAfter(res) <= 30);
  }
});

t.test('the console sign-in limit counts across instances', async (t) => {
  const [a, b] = await twoInstances(t, {
    features: ['users', 'auth', 'console'],
    config: { plugins: { console: { signInRateLimit: { max: 2, windowSeconds: 60 } } } },
  });
  await registerPlayer(a, 'Morgan');
  t.equal((await signInByForm(a, 'nobody')).statusCode, 401);
  t.equal((await signInByForm(b, 'nobody')).statusCode, 401);
  const res = await signInByForm(b, 'Morgan');
  t.equal(res.statusCode, 429, 'the 3rd sign-in from the address is refused on B');
  t.match(res.body, /Too many sign-in attempts/);
  t.ok(retryAfter(res) >= 1 && retryAfter(res) <= 60);
});

t.test("the storefront's sign-in limit counts across instances", async (t) => {
  const [a, b] = await twoInstances(t, { config: { plugins: { storefront: { rateLimit: { signIn: { max: 2 } } } } } });
  for (const app of [a, b]) t.equal((await new Visitor(app).post('/login', { username: 'Steve', password: 'wrong' })).statusCode, 401);
  const res = await new Visitor(b).post('/login', { username: 'Steve', password: 'wrong' });
  t.equal(res.statusCode, 429, 'the 3rd sign-in from the address is refused on B');
  t.match(res.body, /Too many attempts/);
});

t.test("any route's own limit: counted per route across instances, exact under parallel calls", async (t) => {
  const echo = { plugins: { ...ECHO_PLUGIN, echo: { ...ECHO_PLUGIN.echo, limit: { max: 10, windowMs: 60_000 } } } };
  const [a, b] = await twoInstances(t, { features: [], config: echo });
  // A burst at each instance in turn: two SQLite connections in one process (unlike two servers)
  // would wait on each other's write lock with the event loop blocked.
  const statuses: number[] = [];
  for (const app of [a, b]) {
    const answers = await Promise.all(Array.from({ length: 12 }, () => call(app, '/api/echo/limited', { method: 'POST' })));
    statuses.push(...answers.map((r) => r.statusCode));
  }
  t.equal(statuses.filter((s) => s === 200).length, 10, 'exactly the limit of 10 pass, whichever instance they reached');
  t.equal(statuses.filter((s) => s === 429).length, 14, 'the rest are refused');
  t.equal((await call(a, '/api/echo/limited-too', { method: 'POST' })).statusCode, 200, 'another route has its own count');
  t.equal(await rowCount(a, 'core_rate_limits'), 2);
});

t.test('a window ends on every instance at once, and the sweep deletes it', async (t) => {
  const echo = { plugins: { ...ECHO_PLUGIN, echo: { ...ECHO_PLUGIN.echo, limit: { max: 1, windowMs: 1000 } } } };
  const clock = new TestClock();
  const [a, b] = await twoInstances(t, { features: [], config: { ...echo, rateLimits: { sweepSeconds: 1 } }, clock });
  t.equal((await call(a, '/api/echo/limited', { method: 'POST' })).statusCode, 200);
  const refused = await call(b, '/api/echo/limited', { method: 'POST' });
  t.equal(refused.statusCode, 429);
  t.equal(retryAfter(refused), 1);
  clock.advance(1100);
  t.equal((await call(b, '/api/echo/limited', { method: 'POST' })).statusCode, 200, 'a new window after the first one ends');
  const deadline = Date.now() + 5000;
  while ((await rowCount(a, 'core_rate_limits')) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  t.equal(await rowCount(a, 'core_rate_limits'), 0, 'windows past their end are deleted');
});

t.test('each count answers what is left of the limit and of its window, and one past two million still refuses', async (t) => {
  const echo = { plugins: { ...ECHO_PLUGIN, echo: { ...ECHO_PLUGIN.echo, limit: { max: 3, windowMs: 60_000 } } } };
  const clock = new TestClock();
  const app = await build(t, { features: [], config: echo, clock });
  const answers = [];
  for (let i = 0; i < 4; i++) {
    answers.push(await call(app, '/api/echo/limited', { method: 'POST' }));
    clock.advance(10_000);
  }
  t.strictSame(
    answers.map((r) => [r.statusCode, Number(r.headers['x-ratelimit-remaining']), Number(r.headers['x-ratelimit-reset'])]),
    [
      [200, 2, 60],
      [200, 1, 50],
      [200, 0, 40],
      [429, 0, 30],
    ],
  );
  t.equal(retryAfter(answers[3]!), 30);
  // MySQL hands the count back packed in one number: the most a window counts keeps it exact.
  await app.db.run(sql`update ${CoreRateLimit} set ${CoreRateLimit.c.hits} = ${2 ** 21 + 5}`);
  const refused = await call(app, '/api/echo/limited', { method: 'POST' });
  t.equal(refused.statusCode, 429);
  t.equal(retryAfter(refused), 20, 'the window ends when it did');
});

t.test("a route's exponential backoff is counted in the database too: each refusal doubles the wait", async (t) => {
  const echo = { plugins: { ...ECHO_PLUGIN, echo: { ...ECHO_PLUGIN.echo, limit: { max: 1, windowMs: 2000, exponentialBackoff: true } } } };
  const [a, b] = await twoInstances(t, { features: [], config: echo });
  t.equal((await call(a, '/api/echo/limited', { method: 'POST' })).statusCode, 200);
  const waits = [];
  for (const app of [b, a, b]) waits.push(retryAfter(await call(app, '/api/echo/limited', { method: 'POST' })));
  t.strictSame(waits, [2, 4, 8]);
});

t.test('the hot API paths have no limit: they write no count', async (t) => {
  const app = await build(t);
  const calls = [
    call(app, '/api/users?username=nobody'),
    call(app, '/api/credits/send', { body: { sender_username: 'nobody', target_username: 'noone', amount: '0.01' } }),
    call(app, '/api/store/buy', { body: { userID: '1', products: [{ id: '1', quantity: 1 }] }, as: 'json' }),
    call(app, '/api/store/listing'),
    call(app, `/api/command-logs/${'0'.repeat(32)}/queue`),
  ];
  for (const res of await Promise.all(calls)) {
    t.notOk(res.headers['x-ratelimit-limit'], `${res.statusCode} ${res.body.slice(0, 60)}: no limit header`);
  }
  t.equal(await rowCount(app, 'core_rate_limits'), 0);
});

t.test('a revoked API key is refused on every instance within apiKeys.cacheSeconds', async (t) => {
  const [a, b] = await twoInstances(t, { features: ['users'], config: { apiKeys: { cacheSeconds: 1 } } });
  const key = await apiKey(a, 'game-server');
  const profile = (app: FastifyInstance) => call(app, '/api/users?username=nobody', { key });
  /** Polls `app` until the key gets `status`; returns the seconds it took. */
  const until = async (app: FastifyInstance, status: number) => {
    const started = performance.now();
    while ((await profile(app)).statusCode !== status) {
      if (performance.now() - started > 5000) throw new Error(`still not ${status} after 5 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return (performance.now() - started) / 1000;
  };
  // Both instances use the key, so each holds it as known in its cache.
  t.ok((await until(a, 404)) < 1.5, 'the new key works on A');
  t.ok((await until(b, 404)) < 1.5, 'and on B within the bound');
  for (let i = 0; i < 3; i++) t.equal((await profile(b)).statusCode, 404);
  t.ok(await a.apiKeys.revoke('game-server'));
  t.equal((await profile(a)).statusCode, 401, 'refused at once on the instance that revoked it');
  const took = await until(b, 401);
  t.ok(took <= 1.5, `refused on the other instance after ${took.toFixed(2)} s (cacheSeconds 1, plus a request's time)`);
  t.equal((await profile(b)).json().error, 'INVALID_API_KEY');
});
