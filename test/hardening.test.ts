/** Issue 16: the host's defences (logging, strict input, sockets, boot). */
import { connect, createServer, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createConnection } from 'mysql2/promise';
import { ConfigError, rootDir } from '../core/config.ts';
import { freePort } from './mariadb-server.ts';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildApp } from '../core/app.ts';
import { ADMIN_KEY, AS_JAVA, ENCODINGS, build, call, freshDatabaseUrl, onMysql, type Encoding } from './helper.ts';
import { newUser, rowCount, until } from './fixtures.ts';

t.test('a failing statement is logged with its error code, never its SQL, parameters or values', async (t) => {
  const lines: string[] = [];
  const app = await buildApp({
    env: { DATABASE_URL: await freshDatabaseUrl(t), API_KEY: ADMIN_KEY },
    config: { log: { level: 'info' }, plugins: { auth: { rateLimit: { register: { max: 0 } } } } },
    logStream: {
      write: (line: string) => {
        lines.push(line);
      },
    },
  });
  t.teardown(() => app.close());
  await app.db.unchecked.run('drop table auth_credentials');
  const res = await call(app, '/api/auth/register', {
    body: { username: 'Sentinel_77', password: 'hunter22', email: 'sentinel@example.com', ip: '10.0.0.1', useragent: 'x' },
  });
  t.equal(res.statusCode, 500);
  const failure = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed');
  t.ok(failure, 'the failure was logged');
  t.equal(failure.err.code, onMysql ? 'ER_NO_SUCH_TABLE' : 'ERR_SQLITE_ERROR', 'with the database error code');
  const text = lines.join('');
  for (const secret of ['$argon2id', 'insert into', 'auth_credentials (', 'password_hash']) t.notOk(text.includes(secret), `no ${secret}`);
  t.notOk(/"sql"|"sqlMessage"|"params"/.test(text), 'no driver fields');
});

t.test('strict types: no boolean, null or list for a number, only plain digits, in every encoding', async (t) => {
  const app = await build(t, { features: ['users', 'auth', 'credits', 'bazaar'] });
  const steve = await newUser(app, 'Steve', { cents: 1000 });
  const server = (await call(app, '/api/admin/bazaar/servers', { body: { name: 'Main' } })).json();
  const item = (amount: unknown) => ({ serverID: server.id ?? server.data?.id, itemID: 'STONE', amount, durability: 0, maxDurability: 0, base64: 'AAAA' });
  /** `code`: ours, where the route's game plugin reads `error` into its enum and gets the nearest code it knows. */
  const refuse = async (url: string, body: Record<string, unknown>, error: string, encodings: Encoding[] = ENCODINGS, code?: string) => {
    for (const as of encodings) {
      const res = await call(app, url, { body, as, headers: code === undefined ? {} : AS_JAVA });
      t.equal(res.statusCode, 400, `${url} ${JSON.stringify(body)} as ${as}`);
      t.equal(res.json().error, error, `${JSON.stringify(body)} as ${as}: ${res.body}`);
      t.equal(res.json().code, code, `${JSON.stringify(body)} as ${as}: our code`);
    }
  };
  await refuse('/api/auth/sessions', { userID: true, ip: '10.0.0.1' }, 'VALIDATION_ERROR', ['json']);
  await refuse('/api/auth/sessions', { userID: null, ip: '10.0.0.1' }, 'VALIDATION_ERROR', ['json']);
  await refuse('/api/auth/sessions', { userID: [steve.id], ip: '10.0.0.1' }, 'VALIDATION_ERROR');
  for (const amount of ['0x10', '1e2', '+5', ' 5', '5 ', '1_0', true]) {
    await refuse(
      `/api/bazaar/storages/${steve.id}/items`,
      item(amount),
      'INSERT_ERROR',
      typeof amount === 'boolean' ? ['json'] : ENCODINGS,
      'VALIDATION_ERROR',
    );
  }
  await refuse(`/api/bazaar/storages/${steve.id}/items`, item(['1']), 'INSERT_ERROR', ENCODINGS, 'VALIDATION_ERROR');
  for (const amount of [' 5', '5 ', '+5', '0x10', '1e2']) await refuse('/api/credits/add', { target_username: 'Steve', amount }, 'INVALID_AMOUNT');
  await refuse('/api/credits/add', { target_username: 'Steve', amount: ['1'] }, 'INVALID_AMOUNT', ENCODINGS, 'VALIDATION_ERROR');
  await refuse('/api/credits/add', { target_username: 'Steve', amount: true }, 'INVALID_AMOUNT', ['json'], 'VALIDATION_ERROR');
  t.equal(await rowCount(app, 'bazaar_items'), 0, 'nothing was stored');
  t.equal((await call(app, '/api/credits?username=Steve')).json().credits, '10.00 USD', 'no balance changed');

  // A JSON number written with an exponent is taken as written: the same answer as the string.
  const exp = await app.inject({
    method: 'POST',
    url: '/api/credits/add',
    headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' },
    payload: '{"target_username":"Steve","amount":1e2}',
  });
  t.equal(exp.json().error, 'INVALID_AMOUNT', 'JSON 1e2 is refused like "1e2"');
  const plain = await app.inject({
    method: 'POST',
    url: '/api/credits/add',
    headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' },
    payload: '{"target_username":"Steve","amount":2.5}',
  });
  t.equal(plain.statusCode, 200, 'a plain JSON number is fine');
  for (const as of ENCODINGS) {
    const res = await call(app, `/api/bazaar/storages/${steve.id}/items`, { body: item('16'), as });
    t.equal(res.statusCode, 200, `plain digits are accepted as ${as}: ${res.body}`);
  }
});

/** A raw client socket: what it received and when the server closed it. */
function rawSocket(port: number): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const opened = Date.now();
    socket.on('data', (chunk) => {
      data += chunk.toString();
    });
    socket.on('error', () => {
      /* a reset is a close too */
    });
    const closed = new Promise<number>((r) => socket.on('close', () => r(Date.now() - opened)));
    socket.once('connect', () => resolve({ socket, received: () => data, closed }));
    socket.once('error', reject);
  });
}

t.test('slow and idle sockets are closed: headers, body progress, unauthenticated bodies, the connection cap', async (t) => {
  const app = await buildApp({
    env: { DATABASE_URL: await freshDatabaseUrl(t), API_KEY: ADMIN_KEY },
    config: { log: { level: 'silent' }, server: { headersTimeoutMs: 500, requestTimeoutMs: 1500, idleTimeoutMs: 700, maxConnections: 6 } },
  });
  t.teardown(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const post = (key: string) => `POST /api/admin/settings HTTP/1.1\r\nHost: x\r\n${key}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`;

  const unauthenticated = await rawSocket(port);
  unauthenticated.socket.write(post(''));
  const ms = await unauthenticated.closed;
  t.match(unauthenticated.received(), /^HTTP\/1\.1 401/, 'a 401 while the body is still coming');
  t.match(unauthenticated.received(), /connection: close/i);
  t.ok(ms < 400, `and the socket closed with it (${ms} ms)`);

  const headers = await rawSocket(port);
  headers.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n');
  const headersMs = await headers.closed;
  t.ok(headersMs >= 400 && headersMs < 2000, `unfinished headers: closed after ${headersMs} ms`);

  const stalled = await rawSocket(port);
  stalled.socket.write(post(`X-Api-Key: ${ADMIN_KEY}\r\n`));
  const stalledMs = await stalled.closed;
  t.ok(stalledMs >= 600 && stalledMs < 1500, `a body that stops arriving: closed after ${stalledMs} ms`);

  const trickle = await rawSocket(port);
  trickle.socket.write(post(`X-Api-Key: ${ADMIN_KEY}\r\n`));
  const timer = setInterval(() => trickle.socket.write(' '), 200);
  const trickleMs = await trickle.closed;
  clearInterval(timer);
  t.ok(trickleMs >= 1400 && trickleMs < 3500, `a body trickling in: closed at the request deadline, after ${trickleMs} ms`);

  const keepAlive = await rawSocket(port);
  keepAlive.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  const keepAliveMs = await keepAlive.closed;
  t.match(keepAlive.received(), /^HTTP\/1\.1 200/);
  t.ok(
    keepAliveMs >= 600 && keepAliveMs < 2500,
    `an idle keep-alive connection (Node adds a second to the keep-alive timeout): closed after ${keepAliveMs} ms`,
  );

  const held = await Promise.all(Array.from({ length: 6 }, () => rawSocket(port)));
  const extra = await rawSocket(port);
  const extraMs = await extra.closed;
  t.ok(extraMs < 300, `over the cap a connection is closed at once (${extraMs} ms)`);
  for (const h of held) h.socket.destroy();
  // The cap counts the server's side: free once it has seen them close.
  await until(() => new Promise<boolean>((resolve) => app.server.getConnections((_err, n) => resolve(n === 0))));
  t.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200, 'and the server serves again');
});

t.test("Node's own refusals come in the API's error shape: 431 oversized headers, 400 malformed request line", async (t) => {
  const app = await buildApp({ env: { DATABASE_URL: await freshDatabaseUrl(t), API_KEY: ADMIN_KEY }, config: { log: { level: 'silent' } } });
  t.teardown(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const exchange = async (request: string) => {
    const s = await rawSocket(port);
    s.socket.write(request);
    await s.closed;
    const [head, body] = s.received().split('\r\n\r\n');
    return { head: head!, body: JSON.parse(body!) };
  };
  let res = await exchange(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
  t.match(res.head, /^HTTP\/1\.1 431 /);
  t.match(res.head, /content-type: application\/json/i);
  t.strictSame(res.body, { status: false, error: 'HEADERS_TOO_LARGE', message: 'The request headers are larger than allowed.' });
  res = await exchange('GARBAGE\r\n\r\n');
  t.match(res.head, /^HTTP\/1\.1 400 /);
  t.strictSame(res.body, { status: false, error: 'VALIDATION_ERROR', message: 'The request is not well-formed HTTP.' });
});

t.test('boot: an unreachable database is retried with one line per attempt naming DATABASE_URL, then given up', async (t) => {
  const lines: string[] = [];
  const port = await freePort();
  const started = Date.now();
  const err = await buildApp({
    env: { DATABASE_URL: `mysql://app:hunter2@127.0.0.1:${port}/community`, API_KEY: ADMIN_KEY },
    config: { log: { level: 'silent' }, database: { bootRetrySeconds: 2, connectTimeoutMs: 500 } },
    bootLog: (line) => lines.push(line),
  }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof ConfigError, 'a one-line boot error, not a stack trace');
  t.match((err as Error).message, /DATABASE_URL \(mysql:\/\/app:\*\*\*@127\.0\.0\.1:\d+\/community\) cannot be reached \(ECONNREFUSED\); gave up after 2 s/);
  t.ok(Date.now() - started >= 1900, 'after retrying for the configured time');
  t.ok(lines.length >= 2, `${lines.length} retries announced`);
  t.ok(
    lines.every((l) => /^The database named by DATABASE_URL .* cannot be reached \(ECONNREFUSED\); retrying in \d\.\d s\.$/.test(l) && !l.includes('\n')),
    'one line each',
  );
  t.notOk(lines.join('').includes('hunter2'), 'never the password');
});

t.test('boot: the database comes up while the server waits for it', { skip: !onMysql && 'needs TEST_MYSQL_URL' }, async (t) => {
  const real = new URL(await freshDatabaseUrl(t));
  const port = await freePort();
  const proxy = createServer((client) => {
    const upstream = connect(Number(real.port), real.hostname);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  t.teardown(() => proxy.close());
  const lines: string[] = [];
  const viaProxy = new URL(real);
  viaProxy.port = String(port);
  const app = await buildApp({
    env: { DATABASE_URL: viaProxy.toString(), API_KEY: ADMIN_KEY },
    config: { log: { level: 'silent' }, database: { connectTimeoutMs: 500 } },
    bootLog: (line) => {
      // The database comes up once the server has said it waits for it.
      if (lines.push(line) === 1) proxy.listen(port, '127.0.0.1');
    },
  });
  t.teardown(() => app.close());
  t.ok(lines.length >= 1, 'it waited');
  t.equal((await app.inject({ url: '/health' })).statusCode, 200, 'and serves once the database is there');
});

t.test(
  'boot: a MySQL database that does not exist is not created unless database.createDatabase says so',
  { skip: !onMysql && 'needs TEST_MYSQL_URL' },
  async (t) => {
    const name = `t_missing_${randomBytes(4).toString('hex')}`;
    const url = new URL(process.env.TEST_MYSQL_URL!);
    url.pathname = `/${name}`;
    const root = new URL(process.env.TEST_MYSQL_URL!);
    root.pathname = '/';
    const exists = async () => {
      const conn = await createConnection({ uri: root.toString() });
      const [rows] = await conn.query('select schema_name from information_schema.schemata where schema_name = ?', [name]);
      await conn.end();
      return (rows as unknown[]).length > 0;
    };
    t.teardown(async () => {
      const conn = await createConnection({ uri: root.toString() });
      await conn.query(`drop database if exists ${name}`);
      await conn.end();
    });
    await t.rejects(
      buildApp({ env: { DATABASE_URL: url.toString(), API_KEY: ADMIN_KEY }, config: { log: { level: 'silent' } } }),
      new RegExp(`The database "${name}" named by DATABASE_URL .* does not exist: create it .* or set database.createDatabase to true`),
    );
    t.equal(await exists(), false, 'nothing was created');
    const lines: string[] = [];
    const app = await buildApp({
      env: { DATABASE_URL: url.toString(), API_KEY: ADMIN_KEY },
      config: { log: { level: 'silent' }, database: { createDatabase: true } },
      bootLog: (line) => lines.push(line),
    });
    t.teardown(() => app.close());
    t.equal(await exists(), true, 'created when allowed');
    t.match(lines.join('\n'), /Created the database/, 'and said so');
  },
);

t.test('boot: a wrong database password stops `npm start` with one sentence, no stack', { skip: !onMysql && 'needs TEST_MYSQL_URL' }, async (t) => {
  const url = new URL(await freshDatabaseUrl(t));
  url.password = 'not-the-password';
  const started = await promisify(execFile)(process.execPath, [join(rootDir, 'core/server.js')], {
    env: { ...process.env, DATABASE_URL: url.toString(), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    cwd: rootDir,
  }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  );
  t.equal(started.code, 1, 'a non-zero exit');
  t.match(
    started.stderr,
    new RegExp(
      String.raw`^Cannot start: The database named by DATABASE_URL \(mysql://[^:]+:\*\*\*@[^)]+\) ` +
        String.raw`refused the user name or password \(ER_ACCESS_DENIED_ERROR\); check them in DATABASE_URL\.\n$`,
    ),
    'one sentence',
  );
  t.notOk(started.stderr.includes('not-the-password'), 'never the password');
});
