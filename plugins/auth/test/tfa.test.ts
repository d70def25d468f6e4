import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { build, call } from '../../../test/helper.ts';
import { TestClock } from '../../../core/clock.ts';
import { addSeconds, now, parseTimestamp } from '../../../core/format.ts';
import { expectErrors, missingFields, newUser, snapshot } from '../../../test/fixtures.ts';
import { NO_RATE_LIMIT, TABLES, failedAttempts, login, register, sessionStatus, sha256, snapshotExceptCounts, totp, totpAt, wrongCode } from './fixtures.ts';
import { fields, sql } from '../../../core/sql.ts';
import { AuthSession, AuthTotp } from '../entities.ts';

const S = AuthSession.c;

const frozen = () => new TestClock({ frozen: true });
const verify = (app: FastifyInstance, token: string, code: string) => call(app, '/api/auth/tfa/verify', { body: { token, code } });

/**
 * A registered user with two-factor enrolled; the code used to enable it is spent. Tests compare
 * codes of the current 30 s step with the one enrolment used, so their apps run on a frozen clock
 * (a busy machine cannot carry a test into the next step half way).
 */
async function enrolled(app: FastifyInstance, name = 'Steve'): Promise<{ id: number; secret: string }> {
  const { id } = await register(app, name, 'correct horse');
  const setup = await call(app, '/api/auth/tfa/setup', { body: { userID: id } });
  const { secret } = setup.json().data;
  const res = await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret) } });
  if (res.statusCode !== 200) throw new Error(`enable: ${res.body}`);
  return { id, secret };
}

async function pendingLogin(app: FastifyInstance, name = 'Steve'): Promise<string> {
  const res = await login(app, name, 'correct horse');
  if (!res.json().data?.isTfaRequired) throw new Error(`expected a two-factor login: ${res.body}`);
  return res.json().data.token;
}

t.test('the test TOTP generator matches RFC 6238', async (t) => {
  // RFC 6238 appendix B, SHA-1 key "12345678901234567890": 94287082 at T=59, 07081804 at T=1111111109 (last 6 digits).
  t.equal(totpAt('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', 59), '287082');
  t.equal(totpAt('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', 1111111109), '081804');
});

t.test("codes are checked against the host's clock, so a test moves it instead of waiting for a step", async (t) => {
  const clock = new TestClock({ frozen: true, at: Date.now() + 3600_000 });
  const app = await build(t, { features: ['users', 'auth'], clock });
  const { id } = await register(app, 'Steve', 'correct horse');
  const { secret } = (await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
  const hourAhead = totpAt(secret, clock.now() / 1000);
  t.notOk(
    [-30, 0, 30].some((offset) => totpAt(secret, Date.now() / 1000 + offset) === hourAhead),
    'not a code of the real time',
  );
  t.equal((await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: hourAhead } })).statusCode, 200, "the clock's code enables");
  clock.advance(90_000);
  const token = await pendingLogin(app);
  t.equal((await verify(app, token, totpAt(secret, clock.now() / 1000 - 30))).statusCode, 200, "and the step before the moved clock's verifies");
});

t.test('enrolment: setup, enable with a real code, authStatus "1"', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: { plugins: { auth: { tfaIssuer: 'Block Party' } } } });
  const { id } = await register(app, 'Steve');
  let res = await call(app, '/api/auth/tfa/setup', { body: { userID: String(id) } });
  t.equal(res.statusCode, 200);
  const { secret, otpauthUrl } = res.json().data;
  t.strictSame(res.json(), { status: true, data: { secret, otpauthUrl } });
  t.match(secret, /^[A-Z2-7]{32}$/, '160 random bits in base32');
  t.equal(otpauthUrl, `otpauth://totp/Block%20Party:Steve?secret=${secret}&issuer=Block%20Party`);
  t.equal((await call(app, `/api/users/?userID=${id}`)).json().authStatus, '0', 'not on before enable');

  const before = await snapshotExceptCounts(app);
  res = await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: wrongCode(secret) } });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'WRONG_CODE');
  res = await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: 'abcdef' } });
  t.equal(res.json().error, 'WRONG_CODE');
  t.strictSame(await snapshotExceptCounts(app), before, 'wrong codes changed nothing');
  t.equal(await failedAttempts(app, 'auth_totp', id), 2, 'but count against the account');

  res = await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret) }, as: 'json' });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), { status: true });
  t.equal((await call(app, `/api/users/?userID=${id}`)).json().authStatus, '1');
  t.equal((await login(app, 'Steve', 'correct horse')).json().data.isTfaRequired, true);
});

t.test('login with two-factor: pending token, wrong code, right code, replay', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT, clock: frozen() });
  const { secret } = await enrolled(app);
  const token = await pendingLogin(app);
  t.match(token, /^[0-9a-f]{32}$/);
  t.equal(await sessionStatus(app, token), 404, 'a pending token is not a session yet');
  const [pending] = await app.db.query(
    sql`select ${fields({ created_at: S.createdAt, expires_at: S.expiresAt })} from ${AuthSession} where ${S.tokenHash} = ${sha256(token)}`,
  );
  t.equal((parseTimestamp(pending!.expires_at).getTime() - parseTimestamp(pending!.created_at).getTime()) / 1000, 300, 'it waits 5 minutes for the code');

  let res = await verify(app, token, wrongCode(secret));
  t.equal(res.statusCode, 400);
  t.strictSame(res.json(), { status: false, error: 'WRONG_CODE', message: 'The code is wrong.' });
  t.equal(await sessionStatus(app, token), 404, 'still pending after a wrong code');
  res = await verify(app, token, totp(secret));
  t.equal(res.json().error, 'WRONG_CODE', 'the code that enabled two-factor cannot be used again');
  t.match(res.json().message, /used already/);

  // The next window's code is accepted (±1 step), like an authenticator app a little ahead.
  const code = totp(secret, 30);
  res = await verify(app, token, code);
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), { status: true });
  t.equal(await sessionStatus(app, token), 200, 'the session is live now');
  const [verified] = await app.db.query(sql`select ${fields({ expires_at: S.expiresAt })} from ${AuthSession} where ${S.tokenHash} = ${sha256(token)}`);
  t.ok(verified!.expires_at > addSeconds(now(), 29 * 86400), 'and lasts as a normal session');

  res = await verify(app, token, code);
  t.equal(res.json().error, 'SESSION_NOT_FOUND', 'a verified token has nothing left to verify');
  const second = await pendingLogin(app);
  res = await verify(app, second, code);
  t.equal(res.json().error, 'WRONG_CODE', 'a code is good once, even for another login');
  t.equal(await sessionStatus(app, second), 404);
});

t.test('one code, two logins at the same moment: exactly one succeeds', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT, clock: frozen() });
  const { secret } = await enrolled(app);
  const tokens = [await pendingLogin(app), await pendingLogin(app), await pendingLogin(app)];
  const code = totp(secret, 30);
  const answers = await Promise.all(tokens.map((token) => verify(app, token, code)));
  t.strictSame(answers.map((r) => r.statusCode).sort(), [200, 400, 400]);
  t.strictSame(
    answers.filter((r) => r.statusCode === 400).map((r) => r.json().error),
    ['WRONG_CODE', 'WRONG_CODE'],
  );
  const live = await Promise.all(tokens.map((token) => sessionStatus(app, token)));
  t.strictSame(live.sort(), [200, 404, 404], 'one live session');
});

t.test('two-factor verify: unknown and expired tokens, too many wrong codes', async (t) => {
  const app = await build(t, {
    features: ['users', 'auth'],
    config: { plugins: { auth: { tfaMaxAttempts: 3, rateLimit: { login: { max: 0 } } } } },
    clock: frozen(),
  });
  const { secret } = await enrolled(app);
  let res = await verify(app, '0'.repeat(32), totp(secret, 30));
  t.equal(res.statusCode, 404);
  t.equal(res.json().error, 'SESSION_NOT_FOUND');

  const expiring = await pendingLogin(app);
  await app.db.run(sql`update ${AuthSession} set ${S.expiresAt} = ${addSeconds(now(), -1)} where ${S.tokenHash} = ${sha256(expiring)}`);
  const before = await snapshot(app, TABLES);
  res = await verify(app, expiring, totp(secret, 30));
  t.equal(res.statusCode, 404, 'five minutes are over');
  t.equal(res.json().error, 'SESSION_NOT_FOUND');
  t.strictSame(await snapshot(app, TABLES), before, 'and the code was not spent');

  const guessed = await pendingLogin(app);
  for (const n of [1, 2]) {
    res = await verify(app, guessed, wrongCode(secret));
    t.equal(res.json().error, 'WRONG_CODE', `wrong code ${n}`);
  }
  res = await verify(app, guessed, '12345x');
  t.equal(res.json().error, 'WRONG_CODE');
  t.match(res.json().message, /Too many wrong codes/);
  res = await verify(app, guessed, totp(secret, 30));
  t.equal(res.json().error, 'SESSION_NOT_FOUND', 'after the third wrong code the login is dropped');
});

t.test('wrong codes sent at once each count against the pending login', async (t) => {
  const app = await build(t, {
    features: ['users', 'auth'],
    config: { plugins: { auth: { tfaMaxAttempts: 3, rateLimit: { login: { max: 0 } } } } },
    clock: frozen(),
  });
  const { secret } = await enrolled(app);
  const guessed = await pendingLogin(app);
  const answers = await Promise.all(Array.from({ length: 6 }, () => verify(app, guessed, wrongCode(secret))));
  t.same(
    [...new Set(answers.map((res) => res.json().error))].filter((e) => e !== 'WRONG_CODE' && e !== 'SESSION_NOT_FOUND'),
    [],
    'each one refused',
  );
  t.ok(
    answers.some((res) => /Too many wrong codes/.test(res.json().message)),
    'one of them ended the login',
  );
  const res = await verify(app, guessed, totp(secret, 30));
  t.equal(res.json().error, 'SESSION_NOT_FOUND', 'the right code after them finds no login to complete');
});

t.test('two-factor off: by the site setting, or by disable with a code', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT, clock: frozen() });
  const { id, secret } = await enrolled(app);
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { twoFactorEnabled: false }, as: 'json' });
  let res = await login(app, 'Steve', 'correct horse');
  t.equal(res.json().data.isTfaRequired, false, 'the site setting switches the second step off');
  t.equal(await sessionStatus(app, res.json().data.token), 200);
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { twoFactorEnabled: true }, as: 'json' });

  const waiting = await pendingLogin(app);
  const before = await snapshotExceptCounts(app);
  res = await call(app, '/api/auth/tfa/disable', { body: { userID: id, code: wrongCode(secret) } });
  t.equal(res.json().error, 'WRONG_CODE', 'an api key alone cannot turn it off');
  t.strictSame(await snapshotExceptCounts(app), before, 'a wrong code changes nothing');
  res = await call(app, '/api/auth/tfa/disable', { body: { userID: id, code: totp(secret, 30) } });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), { status: true });
  t.equal((await call(app, `/api/users/?userID=${id}`)).json().authStatus, '0');
  t.strictSame(await AuthTotp.select(app.db), [], 'the secret is gone');
  t.equal((await verify(app, waiting, '123456')).json().error, 'SESSION_NOT_FOUND', 'logins waiting for a code are dropped');
  res = await login(app, 'Steve', 'correct horse');
  t.equal(res.json().data.isTfaRequired, false);
});

t.test('enrolment errors', async (t) => {
  const app = await build(t, { features: ['users', 'auth'] });
  const plain = await newUser(app, 'Plain');
  const before = await snapshot(app, TABLES);
  const tfa = (what: string) => `/api/auth/tfa/${what}`;
  await expectErrors(t, app, [
    { url: tfa('setup'), body: { userID: 999 }, status: 404, error: 'USER_NOT_FOUND' },
    { url: tfa('setup'), body: { userID: 'abc' }, status: 400, error: 'VALIDATION_ERROR', message: /userID/ },
    { url: tfa('enable'), body: { userID: 999, code: '123456' }, status: 404, error: 'USER_NOT_FOUND' },
    { url: tfa('enable'), body: { userID: plain.id, code: '123456' }, status: 400, error: 'VALIDATION_ERROR', message: /setup first/ },
    { url: tfa('disable'), body: { userID: 999, code: '123456' }, status: 404, error: 'USER_NOT_FOUND' },
    ...missingFields(tfa('setup'), { userID: plain.id }),
    ...missingFields(tfa('enable'), { userID: plain.id, code: '123456' }),
    ...missingFields(tfa('disable'), { userID: plain.id, code: '123456' }),
    { url: '/api/admin/auth/tfa/disable', body: { userID: 999 }, status: 404, error: 'USER_NOT_FOUND' },
    ...missingFields('/api/admin/auth/tfa/disable', { userID: plain.id }),
    // Called by the game auth plugin: its ErrorCode for each field.
    ...missingFields(
      tfa('verify'),
      { token: '0'.repeat(32), code: '123456' },
      undefined,
      (field) => ({ token: 'SESSION_NOT_FOUND', code: 'WRONG_CODE' })[field]!,
    ),
  ]);
  t.strictSame(await snapshot(app, TABLES), before);
});
