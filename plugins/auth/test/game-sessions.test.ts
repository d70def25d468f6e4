/**
 * `POST /api/auth/game-sessions` as the game auth plugin sends it on every pre-login (its
 * `SessionRequest`: urlencoded, values not percent-encoded) and read as its `AuthUtil` reads it:
 * `status`, no `error`, `data.state` one of its `SessionState`s, `data.token`, `data.user.realname`;
 * and an error's `error` always one of its `ErrorCode`s.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { AUTH_PLUGIN_CODES } from '../../../core/clients.ts';
import { ADMIN_KEY, build, call, JAVA_AGENT } from '../../../test/helper.ts';
import { NO_RATE_LIMIT, register, sessionStatus, totp } from './fixtures.ts';
import { sql } from '../../../core/sql.ts';
import { AuthSession } from '../entities.ts';

const IP = '203.0.113.9';
const AGENT = 'LeaderOS-Auth/1.0 (Paper 1.21; session)';

/** The plugin's own encoding: `key=value` joined by `&`, nothing escaped. */
function gameSession(app: FastifyInstance, fields: Record<string, string>, key = ADMIN_KEY) {
  return app.inject({
    method: 'POST',
    url: '/api/auth/game-sessions',
    headers: { 'x-api-key': key, 'content-type': 'application/x-www-form-urlencoded', 'user-agent': JAVA_AGENT },
    payload: Object.entries(fields)
      .map(([k, v]) => `${k}=${v}`)
      .join('&'),
  });
}

/** What AuthUtil.checkGameSession takes from a good answer; it throws on anything else. */
function asPlugin(res: { statusCode: number; json(): any }) {
  if (![200, 201, 202].includes(res.statusCode)) throw new Error(`status ${res.statusCode}`);
  const body = res.json();
  if (body.status !== true || 'error' in body || !body.data) throw new Error(`not a session answer: ${JSON.stringify(body)}`);
  return { state: body.data.state as string, token: body.data.token as string | undefined, realname: body.data.user?.realname as string | undefined };
}

t.test('each state as the plugin acts on it', async (t) => {
  const app = await build(t, { config: NO_RATE_LIMIT });

  t.strictSame(
    asPlugin(await gameSession(app, { username: 'Steve', ip: IP, useragent: AGENT })),
    { state: 'REGISTER_REQUIRED', token: undefined, realname: undefined },
    'no account: the plugin asks the player to register',
  );

  const steve = await call(app, '/api/auth/register', {
    body: { username: 'Steve', password: 'correct horse', email: 'steve@example.com', ip: IP, useragent: AGENT },
    as: 'urlencoded',
  });
  t.equal(steve.statusCode, 200);
  const { id } = (await call(app, '/api/users/?username=Steve')).json();

  let session = asPlugin(await gameSession(app, { username: 'Steve', ip: IP, useragent: AGENT }));
  t.equal(session.state, 'HAS_SESSION', 'the session opened at register, same ip and client: in without a password');
  t.equal(session.realname, 'Steve');
  t.match(session.token, /^[0-9a-f]{32}$/);
  t.equal(await sessionStatus(app, session.token!), 200, 'the token is a live session');

  session = asPlugin(await gameSession(app, { username: 'Steve', ip: '198.51.100.1', useragent: AGENT }));
  t.strictSame(session, { state: 'LOGIN_REQUIRED', token: undefined, realname: 'Steve' }, 'another address: a password is needed');
  session = asPlugin(await gameSession(app, { username: 'Steve', ip: IP, useragent: 'LeaderOS-Auth/1.0 (Spigot)' }));
  t.equal(session.state, 'LOGIN_REQUIRED', 'another client: a password is needed');

  session = asPlugin(await gameSession(app, { username: 'steve', ip: IP, useragent: AGENT }));
  t.strictSame(session, { state: 'USERNAME_CASE_MISMATCH', token: undefined, realname: 'Steve' }, 'the account is Steve: steve is refused');

  // Two-factor: a login from here waits for its code; the plugin asks for it with a fresh token.
  const setup = (await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
  t.equal((await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(setup.secret) } })).statusCode, 200);
  await app.db.run(sql`delete from ${AuthSession} where ${AuthSession.c.userId} = ${id}`);
  const login = await call(app, '/api/auth/login', { body: { username: 'Steve', password: 'correct horse', ip: IP, useragent: AGENT }, as: 'urlencoded' });
  t.equal(login.json().data.isTfaRequired, true);
  session = asPlugin(await gameSession(app, { username: 'Steve', ip: IP, useragent: AGENT }));
  t.equal(session.state, 'TFA_REQUIRED');
  t.equal(await sessionStatus(app, session.token!), 404, 'the token is pending until the code');
  const verified = await call(app, '/api/auth/tfa/verify', { body: { token: session.token, code: totp(setup.secret, 30) }, as: 'urlencoded' });
  t.equal(verified.statusCode, 200, verified.body);
  t.equal(await sessionStatus(app, session.token!), 200, 'the code makes it a session');

  // Email verification switched on for this account.
  await register(app, 'Alex', 'correct horse', IP);
  const alex = (await call(app, '/api/users/?username=Alex')).json();
  t.equal((await call(app, `/api/admin/users/${alex.id}`, { method: 'PATCH', body: { isVerified: '0' }, as: 'json' })).statusCode, 200);
  t.strictSame(asPlugin(await gameSession(app, { username: 'Alex', ip: IP, useragent: AGENT })), {
    state: 'EMAIL_NOT_VERIFIED',
    token: undefined,
    realname: 'Alex',
  });
});

t.test("every error carries a code of the plugin's ErrorCode, and ours beside it", async (t) => {
  const app = await build(t, { config: NO_RATE_LIMIT });
  const known = new Set<string>(AUTH_PLUGIN_CODES);
  const cases: [string, Awaited<ReturnType<typeof gameSession>>, string, string][] = [
    ['a name the rules refuse', await gameSession(app, { username: 'no spaces!', ip: IP, useragent: AGENT }), 'INVALID_USERNAME', 'INVALID_USERNAME'],
    ['no ip', await gameSession(app, { username: 'Steve', useragent: AGENT }), 'UNKNOWN_ERROR', 'VALIDATION_ERROR'],
    ['a wrong key', await gameSession(app, { username: 'Steve', ip: IP, useragent: AGENT }, 'wrong-key'), 'UNKNOWN_ERROR', 'INVALID_API_KEY'],
  ];
  for (const [what, res, error, ours] of cases) {
    const body = res.json();
    t.ok(res.statusCode >= 400, `${what}: an error status (${res.statusCode})`);
    t.equal(body.status, false, what);
    t.ok(known.has(body.error), `${what}: ${body.error} is in the plugin's enum`);
    t.equal(body.error, error, what);
    t.equal(body.code ?? body.error, ours, `${what}: our code in \`code\` when it differs`);
    t.type(body.message, 'string');
  }
});
