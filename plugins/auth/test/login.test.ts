import { availableParallelism } from 'node:os';
import t from 'tap';
import { hash } from '@node-rs/argon2';
import bcrypt from 'bcryptjs';
import { ENCODINGS, apiKey, build } from '../../../test/helper.ts';
import { expectErrors, missingFields, newUser, snapshot, type ErrorCase } from '../../../test/fixtures.ts';
import { fields, sql } from '../../../core/sql.ts';
import { AuthCredential, AuthSession } from '../entities.ts';
import { argon2Work, checkPassword, hashPassword } from '../passwords.ts';
import { AUTH_TABLES, CLIENT, NO_RATE_LIMIT, failedAttempts, login, register, sessionStatus, sha256, snapshotExceptCounts } from './fixtures.ts';

t.test('login: a session token, case-insensitive usernames, every encoding', async (t) => {
  const app = await build(t, { features: ['users', 'auth'] });
  await register(app, 'Steve', 'correct horse');
  const key = await apiKey(app);
  for (const [i, as] of ENCODINGS.entries()) {
    const name = ['Steve', 'steve', 'STEVE'][i]!;
    const res = await login(app, name, 'correct horse', { key, as });
    t.equal(res.statusCode, 200, `${as} as ${name}`);
    const body = res.json();
    t.strictSame(body, { status: true, data: { token: body.data.token, isTfaRequired: false } });
    t.match(body.data.token, /^[0-9a-f]{32}$/);
    t.equal(await sessionStatus(app, body.data.token), 200, 'the token is a live session');
  }
  const hashes = await app.db.query(sql`select ${fields({ token_hash: AuthSession.c.tokenHash })} from ${AuthSession}`);
  t.equal(hashes.length, 4, 'one session per login (and the one of registering)');
  t.ok(hashes.every((h) => /^[0-9a-f]{64}$/.test(h.token_hash)));
});

t.test('login errors: codes, statuses, nothing written', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT });
  const steve = await register(app, 'Steve', 'correct horse');
  await newUser(app, 'NoPassword');
  const before = await snapshotExceptCounts(app);
  const attempt = (username: string, password: string, status: number, error: string): ErrorCase => ({
    url: '/api/auth/login',
    body: { username, password, ...CLIENT },
    status,
    error,
  });
  await expectErrors(t, app, [
    attempt('Steve', 'Correct horse', 401, 'WRONG_PASSWORD'),
    attempt('Steve', '', 401, 'WRONG_PASSWORD'),
    attempt('NoPassword', '', 401, 'WRONG_PASSWORD'),
    attempt('Herobrine', 'correct horse', 404, 'USER_NOT_FOUND'),
    attempt('', 'correct horse', 404, 'USER_NOT_FOUND'),
    // The game auth plugin reads `error` into its ErrorCode enum: a field of its own, else UNKNOWN_ERROR.
    ...missingFields(
      '/api/auth/login',
      { username: 'Steve', password: 'correct horse', ...CLIENT },
      undefined,
      (field) => ({ username: 'INVALID_USERNAME', password: 'INVALID_PASSWORD' })[field] ?? 'UNKNOWN_ERROR',
    ),
  ]);
  t.strictSame(await snapshotExceptCounts(app), before, 'no failed login opened a session');
  t.equal(await failedAttempts(app, 'auth_credentials', steve.id), 2, 'only the wrong passwords were counted, against the account');
});

t.test('login is rate limited per username and ip', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: { plugins: { auth: { rateLimit: { login: { max: 3, windowSeconds: 60 } } } } } });
  await register(app, 'Steve', 'correct horse');
  await register(app, 'Alex', 'correct horse');
  for (let i = 0; i < 3; i++) t.equal((await login(app, i ? 'steve' : 'Steve', 'guess')).statusCode, 401);
  const before = await snapshot(app, AUTH_TABLES);
  const res = await login(app, 'STEVE', 'correct horse');
  t.equal(res.statusCode, 429, 'the fourth try in the window is refused, even with the right password');
  t.equal(res.json().error, 'UNKNOWN_ERROR', 'the auth plugin has no code for it');
  t.equal(res.json().code, 'RATE_LIMITED');
  t.match(res.headers['retry-after'], /^[0-9]+$/);
  t.strictSame(await snapshot(app, AUTH_TABLES), before, 'a refused login opens no session');
  t.equal((await login(app, 'Steve', 'correct horse', { ip: '203.0.113.9' })).statusCode, 200, 'the same name from another ip');
  t.equal((await login(app, 'Alex', 'correct horse')).statusCode, 200, 'another name from the same ip (one game server, many players)');
});

t.test('imported bcrypt and AuthMe hashes work once, then become argon2id', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT });
  const C = AuthCredential.c;
  const bcrypt2b = bcrypt.hashSync('old secret', 4);
  const imported: [string, string][] = [
    ['Php', bcrypt2b.replace(/^\$2b\$/, '$2y$')],
    ['Legacy', bcrypt2b.replace(/^\$2b\$/, '$2a$')],
    ['Modern', bcrypt2b],
    ['AuthMe', `$SHA$f00dfeed12345678$${sha256(`${sha256('old secret')}f00dfeed12345678`)}`],
    ['AuthMeUpper', `$SHA$abc$${sha256(`${sha256('old secret')}abc`).toUpperCase()}`],
    ['OldArgon', await hash('old secret', { memoryCost: 8192, timeCost: 3, parallelism: 1 })],
  ];
  for (const [name, stored] of imported) {
    const user = await newUser(app, name);
    await AuthCredential.insert(app.db, { userId: user.id, passwordHash: stored, updatedAt: '2020-01-01 00:00:00' });
    const row = async () =>
      (await app.db.query(sql`select ${fields({ password_hash: C.passwordHash })} from ${AuthCredential} where ${C.userId} = ${user.id}`))[0]!.password_hash;

    let res = await login(app, name, 'wrong secret');
    t.equal(res.json().error, 'WRONG_PASSWORD', `${name}: a wrong password fails`);
    t.equal(await row(), stored, `${name}: a failed login keeps the old hash`);
    res = await login(app, name.toLowerCase(), 'old secret');
    t.equal(res.statusCode, 200, `${name}: the imported hash verifies`);
    t.match(await row(), /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, `${name}: rehashed to argon2id`);
    res = await login(app, name, 'old secret');
    t.equal(res.statusCode, 200, `${name}: the new hash verifies`);
    t.equal((await login(app, name, 'wrong secret')).statusCode, 401, `${name}: and still refuses a wrong password`);
  }

  const current = (await app.db.query(sql`select ${fields({ password_hash: C.passwordHash })} from ${AuthCredential} order by ${C.id}`)).map(
    (r) => r.password_hash,
  );
  const again = await newUser(app, 'Current');
  await AuthCredential.insert(app.db, { userId: again.id, passwordHash: current[0]!, updatedAt: '2020-01-01 00:00:00' });
  t.equal((await login(app, 'Current', 'old secret')).statusCode, 200);
  const [kept] = await app.db.query(
    sql`select ${fields({ password_hash: C.passwordHash, updated_at: C.updatedAt })} from ${AuthCredential} where ${C.userId} = ${again.id}`,
  );
  t.strictSame({ ...kept }, { password_hash: current[0], updated_at: '2020-01-01 00:00:00' }, 'a current argon2id hash is left alone');

  for (const [name, stored] of [
    ['Broken', '$argon2id$v=19$m=19456,t=2,p=1$bad'],
    ['Odd', '$SHA$nohash'],
    ['Plain', 'old secret'],
    ['Cut', '$2y$10$short'],
  ]) {
    const user = await newUser(app, name!);
    await AuthCredential.insert(app.db, { userId: user.id, passwordHash: stored!, updatedAt: '2020-01-01 00:00:00' });
    const res = await login(app, name!, 'old secret');
    t.equal(res.statusCode, 401, `${name}: a damaged or unknown hash is a wrong password, not a fault`);
    t.equal(res.json().error, 'WRONG_PASSWORD');
  }
});

t.test('argon2 runs one hash a core at a time, and every login waiting its turn succeeds', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT });
  const cores = availableParallelism();
  const names = Array.from({ length: cores + 3 }, (_, i) => `Waiter${i}`);
  const stored = await hashPassword('correct horse');
  const checks = names.map(() => checkPassword(stored, 'correct horse'));
  t.equal(argon2Work.activeCount, cores, 'one running a core');
  t.equal(argon2Work.pendingCount, 3, 'the others wait their turn');
  t.strictSame(
    await Promise.all(checks),
    names.map(() => ({ ok: true, rehash: false })),
  );

  // From an address each: one address may register three accounts.
  for (const [i, name] of names.entries()) await register(app, name, 'correct horse', `198.51.100.${10 + i}`);
  const answers = await Promise.all(names.map((name) => login(app, name, 'correct horse')));
  t.strictSame(
    answers.map((res) => res.statusCode),
    names.map(() => 200),
  );
  t.equal(argon2Work.activeCount + argon2Work.pendingCount, 0, 'none left waiting');
});
