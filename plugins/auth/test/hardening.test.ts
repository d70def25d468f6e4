/** Issue 16: limits that must hold under parallel and disguised attempts. */
import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { buildApp } from '../../../core/app.ts';
import { TestClock } from '../../../core/clock.ts';
import { builtinNames } from '../../../core/features.ts';
import { ADMIN_KEY, AS_JAVA, TOTP_KEY, apiKey, build, call, freshDatabaseUrl, onMysql, scratchDir, type TestLike } from '../../../test/helper.ts';
import { NO_RATE_LIMIT, login, register, sessionStatus, totp, wrongCode } from './fixtures.ts';
import { count, fields, sql } from '../../../core/sql.ts';
import { UsersAccount } from '../../users/entities.ts';
import { AuthTotp } from '../entities.ts';

t.test('the register limit holds for parallel registers from one ip', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT });
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      call(app, '/api/auth/register', {
        body: { username: `racer_${i}`, password: 'hunter22', email: `racer${i}@example.com`, ip: '203.0.113.9', useragent: 'GameServer/1.0' },
      }),
    ),
  );
  const codes = results.map((r) => (r.statusCode === 200 ? 'ok' : r.json().error));
  t.equal(codes.filter((c) => c === 'ok').length, 3, 'exactly the limit of 3 pass');
  t.equal(codes.filter((c) => c === 'REGISTER_LIMIT').length, 17, 'the rest get REGISTER_LIMIT');
  const [row] = await app.db.query(sql`select ${fields({ n: count() })} from ${UsersAccount} where ${UsersAccount.c.creationIp} = ${'203.0.113.9'}`);
  t.equal(Number(row!.n), 3);
});

const LOCKOUT = {
  plugins: {
    auth: {
      tfaMaxAttempts: 5,
      rateLimit: { login: { max: 0 }, register: { max: 0 } },
      lockout: { password: { maxFailures: 4, lockSeconds: 2 }, code: { maxFailures: 6, lockSeconds: 2 } },
    },
  },
};

t.test('wrong two-factor codes are capped per account across every pending login', async (t) => {
  const clock = new TestClock();
  const app = await build(t, { features: ['users', 'auth'], config: LOCKOUT, clock });
  const { id } = await register(app, 'Steve', 'correct horse');
  const { secret } = (await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
  t.equal((await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret) } })).statusCode, 200);
  // Three logins from three ips, each below its own limit of 5 wrong codes: 6 wrong codes in all.
  const tokens: string[] = [];
  for (const ip of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) tokens.push((await login(app, 'Steve', 'correct horse', { ip })).json().data.token);
  const wrong = wrongCode(secret);
  const answers = await Promise.all([...tokens, ...tokens].map((token) => call(app, '/api/auth/tfa/verify', { body: { token, code: wrong } })));
  t.strictSame(
    answers.map((r) => r.json().error),
    Array(6).fill('WRONG_CODE'),
  );
  const res = await call(app, '/api/auth/tfa/verify', { body: { token: tokens[0]!, code: totp(secret, 30) }, headers: AS_JAVA });
  t.equal(res.statusCode, 429, 'the seventh code is refused, the right one too');
  t.equal(res.json().error, 'TFA_VERIFICATION_FAILED', "the auth plugin's nearest code");
  t.equal(res.json().code, 'RATE_LIMITED');
  t.ok(Number(res.headers['retry-after']) >= 1 && Number(res.headers['retry-after']) <= 2, 'Retry-After says when');
  t.equal(await sessionStatus(app, tokens[0]!), 404);
  clock.advance(2100);
  const after = await call(app, '/api/auth/tfa/verify', { body: { token: tokens[0]!, code: totp(secret, 30) } });
  t.equal(after.statusCode, 200, 'once the lock is over the right code works');
});

t.test('wrong passwords are capped per account whatever the ip', async (t) => {
  const clock = new TestClock();
  const app = await build(t, { features: ['users', 'auth'], config: LOCKOUT, clock });
  await register(app, 'Alex', 'correct horse');
  const answers = await Promise.all(['1', '2', '3', '4'].map((n) => login(app, 'Alex', 'wrong horse', { ip: `10.1.0.${n}` })));
  t.strictSame(
    answers.map((r) => r.json().error),
    Array(4).fill('WRONG_PASSWORD'),
  );
  const locked = await login(app, 'Alex', 'correct horse', { ip: '10.1.0.5' });
  t.equal(locked.statusCode, 429);
  t.equal(locked.json().error, 'UNKNOWN_ERROR', 'the auth plugin has no code for it');
  t.equal(locked.json().code, 'RATE_LIMITED');
  t.ok(Number(locked.headers['retry-after']) >= 1);
  clock.advance(2100);
  t.equal((await login(app, 'Alex', 'correct horse')).statusCode, 200, 'the right password works once the lock is over');
  // A right password starts the count again.
  for (const n of [1, 2, 3]) t.equal((await login(app, 'Alex', 'wrong horse')).json().error, 'WRONG_PASSWORD', `wrong ${n}`);
  t.equal((await login(app, 'Alex', 'correct horse')).statusCode, 200);
  t.equal((await login(app, 'Alex', 'wrong horse')).json().error, 'WRONG_PASSWORD');
});

t.test('username variants do not reach the account, and share no limiter bucket with it', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: { plugins: { auth: { rateLimit: { login: { max: 2 } } } } } });
  await register(app, 'alice', 'correct horse');
  for (const variant of ['alice ', 'ålice', 'alıce', 'ALİCE']) {
    const res = await login(app, variant, 'correct horse');
    t.equal(res.json().error, 'USER_NOT_FOUND', JSON.stringify(variant));
    t.equal((await call(app, `/api/users/?username=${encodeURIComponent(variant)}`)).statusCode, 404, `lookup of ${JSON.stringify(variant)}`);
  }
  t.equal((await login(app, 'ALICE', 'correct horse')).statusCode, 200, 'case still does not matter');
  t.equal((await login(app, 'alice', 'correct horse')).statusCode, 200);
  t.equal((await login(app, 'Alice', 'correct horse')).statusCode, 429, 'every case of the name shares one bucket');
});

t.test('TOTP secrets are stored encrypted; clear ones are encrypted at start; a wrong key stops the boot', async (t) => {
  // a database that outlives the server: restarts read what the one before left
  const url = onMysql ? await freshDatabaseUrl(t) : `sqlite:${t.testdir()}/community.db`;
  const app = await build(t, { features: ['users', 'auth'], databaseUrl: url });
  const { id } = await register(app, 'Steve', 'correct horse');
  const { secret } = (await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
  t.equal((await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret) } })).statusCode, 200);
  const [row] = await app.db.query(sql`select ${fields({ secret: AuthTotp.c.secret })} from ${AuthTotp} where ${AuthTotp.c.userId} = ${id}`);
  t.match(row!.secret, /^v1:[A-Za-z0-9_-]+$/, 'stored encrypted');
  t.notOk(row!.secret?.includes(secret), 'not the secret itself');
  // A secret from before encryption, in clear: still good, and encrypted when the server starts.
  const { id: old } = await register(app, 'Oldie', 'correct horse');
  const clear = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
  await AuthTotp.insert(app.db, { userId: old, secret: clear, pendingSecret: null, lastStep: 0 });
  await UsersAccount.update(app.db, old, { authStatus: 1 });
  await app.close();

  const again = await build(t, { features: ['users', 'auth'], databaseUrl: url });
  const [sealed] = await again.db.query(sql`select ${fields({ secret: AuthTotp.c.secret })} from ${AuthTotp} where ${AuthTotp.c.userId} = ${old}`);
  t.match(sealed!.secret, /^v1:/, 'the clear secret was encrypted at start');
  const token = (await login(again, 'Oldie', 'correct horse')).json().data.token;
  t.equal((await call(again, '/api/auth/tfa/verify', { body: { token, code: totp(clear, 30) } })).statusCode, 200, 'and still checks codes');
  await again.close();

  await t.rejects(
    build(t, { features: ['users', 'auth'], databaseUrl: url, env: { TOTP_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64') } }),
    /TOTP_ENCRYPTION_KEY does not decrypt the stored two-factor secrets/,
    'a key that does not open the stored secrets stops the boot',
  );
  await t.rejects(
    build(t, { features: ['users', 'auth'], databaseUrl: url, env: { TOTP_ENCRYPTION_KEY: 'short' } }),
    /TOTP_ENCRYPTION_KEY must be 32 random bytes/,
  );
  const keyless = await build(t, { features: ['users', 'auth'], databaseUrl: url, env: { TOTP_ENCRYPTION_KEY: '' } });
  const res = await call(keyless, '/api/auth/tfa/setup', { body: { userID: id } });
  t.equal(res.statusCode, 503, 'no enrolment without a key');
  t.equal(res.json().error, 'SERVICE_UNAVAILABLE');
});

t.test('disabling two-factor needs a good code, except through the admin API', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT });
  const { id } = await register(app, 'Steve', 'correct horse');
  const { secret } = (await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
  await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret) } });
  const key = await apiKey(app);
  let res = await call(app, '/api/auth/tfa/disable', { key, body: { userID: id } });
  t.equal(res.json().error, 'VALIDATION_ERROR', 'no code, no disable');
  res = await call(app, '/api/auth/tfa/disable', { key, body: { userID: id, code: wrongCode(secret) } });
  t.equal(res.json().error, 'WRONG_CODE');
  res = await call(app, '/api/admin/auth/tfa/disable', { key, body: { userID: id } });
  t.equal(res.statusCode, 403, 'the admin route needs the admin scope');
  t.equal((await call(app, `/api/users/?userID=${id}`)).json().authStatus, '1', 'still on');
  res = await call(app, '/api/admin/auth/tfa/disable', { body: { userID: id } });
  t.equal(res.statusCode, 200);
  t.equal((await call(app, `/api/users/?userID=${id}`)).json().authStatus, '0', 'the admin turned it off');
});

/** The server as `npm start` builds it with users and auth, its log lines kept. */
async function started(t: TestLike, url: string, env: Record<string, string> = {}) {
  const lines: string[] = [];
  const app = await buildApp({
    env: { DATABASE_URL: url, API_KEY: ADMIN_KEY, ...env },
    config: { log: { level: 'info' }, plugins: Object.fromEntries(builtinNames().map((n) => [n, { enabled: n === 'users' || n === 'auth' }])) },
    logStream: {
      write: (line: string) => {
        lines.push(line);
      },
    },
  });
  t.teardown(() => app.close());
  await app.ready();
  return { app, said: () => lines.map((l) => JSON.parse(l).msg as string).filter((m) => /two-factor|TOTP/i.test(m)) };
}

t.test(
  'on a SQLite file without TOTP_ENCRYPTION_KEY, a key is made at first start beside the database and kept',
  { skip: onMysql && 'SQLite file' },
  async (t) => {
    const dir = scratchDir(t);
    const url = `sqlite:${dir}/community.db`;
    const keyFile = `${dir}/community.db.totp-key`;
    const first = await started(t, url);
    t.equal(statSync(keyFile).mode & 0o777, 0o600, 'the key file is readable by its owner only');
    t.match(first.said(), [/^Made a key for two-factor secrets in .*community\.db\.totp-key/], 'one line says so');
    const { id } = await register(first.app, 'Steve', 'correct horse');
    const { secret } = (await call(first.app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
    t.equal(
      (await call(first.app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret) } })).statusCode,
      200,
      'enrolment works on a default install',
    );
    const key = readFileSync(keyFile, 'utf8');
    await first.app.close();

    const second = await started(t, url);
    t.equal(readFileSync(keyFile, 'utf8'), key, 'the second start reuses the key');
    t.match(second.said(), [/^Two-factor secrets are encrypted with the key in .*community\.db\.totp-key/]);
    const token = (await login(second.app, 'Steve', 'correct horse')).json().data.token;
    t.equal(
      (await call(second.app, '/api/auth/tfa/verify', { body: { token, code: totp(secret, 30) } })).statusCode,
      200,
      'a secret enrolled before the restart still verifies',
    );
    await second.app.close();

    // The variable wins over the file: the stored secret was sealed with the file's key, so another key stops the boot.
    await t.rejects(started(t, url, { TOTP_ENCRYPTION_KEY: TOTP_KEY }), /TOTP_ENCRYPTION_KEY does not decrypt the stored two-factor secrets/);
    const elsewhere = scratchDir(t);
    const withKey = await started(t, `sqlite:${elsewhere}/community.db`, { TOTP_ENCRYPTION_KEY: TOTP_KEY });
    t.throws(() => statSync(`${elsewhere}/community.db.totp-key`), { code: 'ENOENT' }, 'with the variable set no key file is made');
    t.same(withKey.said(), [], 'and nothing to say');
  },
);

t.test(
  'on MySQL/MariaDB without TOTP_ENCRYPTION_KEY, two-factor enrolment is refused and the start says so',
  { skip: !onMysql && 'needs TEST_MYSQL_URL' },
  async (t) => {
    const { app, said } = await started(t, await freshDatabaseUrl(t));
    t.match(said(), [/^TOTP_ENCRYPTION_KEY is not set: two-factor enrolment is refused, whatever the twoFactorEnabled site setting says/]);
    const { id } = await register(app, 'Steve', 'correct horse');
    t.equal((await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().error, 'SERVICE_UNAVAILABLE');
  },
);
