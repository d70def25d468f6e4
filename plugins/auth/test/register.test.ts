import t from 'tap';
import { AS_JAVA, ENCODINGS, apiKey, build, call } from '../../../test/helper.ts';
import { expectErrors, missingFields, snapshot, type ErrorCase } from '../../../test/fixtures.ts';
import { fields, sql } from '../../../core/sql.ts';
import { UsersAccount } from '../../users/entities.ts';
import { AuthCredential, AuthSession } from '../entities.ts';
import { CLIENT, NO_RATE_LIMIT, TABLES, register, sessionStatus, sha256 } from './fixtures.ts';

const form = (fields: Record<string, string> = {}) => ({ username: 'Steve_01', password: 'hunter22', email: 'Steve@Example.com', ...CLIENT, ...fields });

t.test('register: an account, an argon2id hash, and a live session', async (t) => {
  const app = await build(t, { features: ['users', 'auth'] });
  const key = await apiKey(app);
  const res = await call(app, '/api/auth/register', { key, body: form() });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.strictSame(body, { status: true, data: { token: body.data.token, isEmailVerificationRequired: false } });
  t.match(body.data.token, /^[0-9a-f]{32}$/, '128 random bits as lower-case hex');
  t.equal(await sessionStatus(app, body.data.token), 200, 'the token is a live session');

  const profile = (await call(app, '/api/users/?username=steve_01')).json();
  t.match(profile, { username: 'Steve_01', realname: 'Steve_01', email: 'Steve@Example.com', isVerified: '1', authStatus: '0', creationIP: CLIENT.ip });
  const [cred] = await app.db.query(
    sql`select ${fields({ user_id: AuthCredential.c.userId, password_hash: AuthCredential.c.passwordHash })} from ${AuthCredential}`,
  );
  t.equal(Number(cred!.user_id), Number(profile.id));
  t.match(cred!.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  const S = AuthSession.c;
  const sessions = await app.db.query(
    sql`select ${fields({ token_hash: S.tokenHash, ip: S.ip, user_agent: S.userAgent, verified: S.verified })} from ${AuthSession}`,
  );
  t.equal(sessions.length, 1);
  t.equal(sessions[0]!.token_hash, sha256(body.data.token), 'only the hash of the token is stored');
  t.strictSame([sessions[0]!.ip, sessions[0]!.user_agent, Number(sessions[0]!.verified)], [CLIENT.ip, CLIENT.useragent, 1]);
});

t.test('register accepts every encoding', async (t) => {
  const app = await build(t, { features: ['users', 'auth'] });
  for (const [i, as] of ENCODINGS.entries()) {
    const res = await call(app, '/api/auth/register', { body: form({ username: `user_${as}`, email: `u${i}@example.com`, ip: `10.0.0.${i}` }), as });
    t.equal(res.statusCode, 200, as);
    t.equal(res.json().status, true, as);
  }
});

t.test('register errors: codes and statuses, nothing written', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT });
  await register(app, 'Taken', 'hunter22', '10.9.9.9');
  const before = await snapshot(app, TABLES);
  const attempt = (fields: Record<string, string>, error: string, message?: RegExp, code?: string): ErrorCase => ({
    url: '/api/auth/register',
    body: form(fields),
    status: 400,
    error,
    message,
    ...(code ? { code } : {}),
  });
  await expectErrors(t, app, [
    attempt({ username: 'tAKEN' }, 'USERNAME_ALREADY_EXIST'),
    attempt({ email: 'TAKEN@example.COM' }, 'EMAIL_ALREADY_EXIST'),
    attempt({ username: 'ab' }, 'INVALID_USERNAME'),
    attempt({ username: 'a'.repeat(17) }, 'INVALID_USERNAME'),
    attempt({ username: 'Steve!' }, 'INVALID_USERNAME'),
    attempt({ username: 'Stéve' }, 'INVALID_USERNAME'),
    attempt({ username: '' }, 'INVALID_USERNAME'),
    attempt({ password: '12345' }, 'INVALID_PASSWORD', /6 to 128/),
    attempt({ password: 'x'.repeat(129) }, 'INVALID_PASSWORD'),
    attempt({ email: 'not-an-email' }, 'INVALID_EMAIL'),
    attempt({ email: 'a b@example.com' }, 'INVALID_EMAIL'),
    attempt({ email: '' }, 'INVALID_EMAIL'),
    attempt({ email: `${'a'.repeat(190)}@example.com` }, 'INVALID_EMAIL'),
    // The game auth plugin reads `error` into its ErrorCode enum: a field of its own, else UNKNOWN_ERROR.
    attempt({ ip: '' }, 'UNKNOWN_ERROR', /ip/, 'VALIDATION_ERROR'),
    attempt({ ip: 'x'.repeat(46) }, 'UNKNOWN_ERROR', /ip/, 'VALIDATION_ERROR'),
    attempt({ useragent: 'x'.repeat(513) }, 'UNKNOWN_ERROR', /useragent/, 'VALIDATION_ERROR'),
    ...missingFields(
      '/api/auth/register',
      form(),
      undefined,
      (field) => ({ username: 'INVALID_USERNAME', password: 'INVALID_PASSWORD', email: 'INVALID_EMAIL' })[field] ?? 'UNKNOWN_ERROR',
    ),
  ]);
  t.strictSame(await snapshot(app, TABLES), before, 'no failed registration wrote anything');
});

t.test('two registrations racing for one name: one account, one clear refusal', async (t) => {
  const app = await build(t, { features: ['users', 'auth'] });
  const answers = await Promise.all(
    ['10.0.1.1', '10.0.1.2', '10.0.1.3'].map((ip, i) =>
      call(app, '/api/auth/register', { body: form({ username: ['Racer', 'racer', 'RACER'][i]!, email: `racer${i}@example.com`, ip }) }),
    ),
  );
  t.strictSame(answers.map((r) => r.statusCode).sort(), [200, 400, 400]);
  t.strictSame(
    answers.filter((r) => r.statusCode === 400).map((r) => r.json().error),
    ['USERNAME_ALREADY_EXIST', 'USERNAME_ALREADY_EXIST'],
  );
  t.equal((await UsersAccount.select(app.db)).length, 1);
  t.equal((await AuthCredential.select(app.db)).length, 1, 'no credentials without an account');
});

t.test('many registrations at once, neighbours in the name index: every one an account, none a fault', async (t) => {
  // On MySQL, locking reads of names nobody has took gap locks that parallel inserts deadlocked on.
  const app = await build(t, { features: ['users', 'auth'] });
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      call(app, '/api/auth/register', {
        body: form({ username: `crowd_${String(i).padStart(2, '0')}`, email: `crowd${i}@example.com`, ip: `10.0.2.${i + 1}` }),
      }),
    ),
  );
  t.strictSame(
    answers.map((r) => r.statusCode),
    answers.map(() => 200),
    answers.find((r) => r.statusCode !== 200)?.body ?? 'all 200',
  );
  t.equal((await UsersAccount.select(app.db)).length, 40);
  t.equal((await AuthCredential.select(app.db)).length, 40);
});

t.test('register limit per IP, and the settings that change it', async (t) => {
  const app = await build(t, { features: ['users', 'auth'] });
  for (const name of ['one', 'two', 'three']) await register(app, name, 'hunter22', '192.0.2.1');
  const before = await snapshot(app, TABLES);
  let res = await call(app, '/api/auth/register', { body: form({ username: 'four', email: 'four@example.com', ip: '192.0.2.1' }) });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'REGISTER_LIMIT', 'the default limit is 3 accounts per IP');
  t.strictSame(await snapshot(app, TABLES), before);
  res = await call(app, '/api/auth/register', { body: form({ username: 'four', email: 'four@example.com', ip: '192.0.2.2' }) });
  t.equal(res.statusCode, 200, 'another IP may register');

  await call(app, '/api/admin/settings', { method: 'PATCH', body: { registerLimit: 0 }, as: 'json' });
  res = await call(app, '/api/auth/register', { body: form({ username: 'five', email: 'five@example.com', ip: '192.0.2.1' }) });
  t.equal(res.statusCode, 200, '0 turns the limit off');
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { registerLimit: 1 }, as: 'json' });
  res = await call(app, '/api/auth/register', { body: form({ username: 'six', email: 'six@example.com', ip: '192.0.2.2' }) });
  t.equal(res.json().error, 'REGISTER_LIMIT', 'a lower limit applies at once');

  await call(app, '/api/admin/settings', { method: 'PATCH', body: { registrationEmailRequired: false }, as: 'json' });
  const noEmail: Record<string, string> = form({ username: 'seven', ip: '192.0.2.3' });
  delete noEmail.email;
  res = await call(app, '/api/auth/register', { body: noEmail });
  t.equal(res.statusCode, 200, 'email may be left out when the setting says so');
  t.equal((await call(app, '/api/users/?username=seven')).json().email, '');
  res = await call(app, '/api/auth/register', { body: form({ username: 'eight', email: 'bad', ip: '192.0.2.4' }) });
  t.equal(res.json().error, 'INVALID_EMAIL', 'an email given must still be valid');
});

t.test('register is rate limited per username and ip', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: { plugins: { auth: { rateLimit: { register: { max: 2, windowSeconds: 60 } } } } } });
  for (let i = 0; i < 2; i++) {
    const res = await call(app, '/api/auth/register', { body: form({ username: 'Spammer', password: '1' }) });
    t.equal(res.json().error, 'INVALID_PASSWORD');
  }
  let res = await call(app, '/api/auth/register', { body: form({ username: 'SPAMMER' }), headers: AS_JAVA });
  t.equal(res.statusCode, 429, 'the third try within the window is refused, whatever the case of the name');
  t.equal(res.json().error, 'REGISTER_LIMIT', "the auth plugin's nearest code");
  t.equal(res.json().code, 'RATE_LIMITED');
  t.match(res.headers['retry-after'], /^[0-9]+$/);
  t.equal((await UsersAccount.select(app.db)).length, 0, 'a refused call writes nothing');
  res = await call(app, '/api/auth/register', { body: form({ username: 'Spammer', ip: '192.0.2.77' }) });
  t.equal(res.statusCode, 200, 'another ip has its own count');
});
