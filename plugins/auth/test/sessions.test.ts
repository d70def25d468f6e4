import { auditRef } from '../../../core/audit.ts';
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { ENCODINGS, apiKey, build, call } from '../../../test/helper.ts';
import { addSeconds, now, parseTimestamp } from '../../../core/format.ts';
import { expectErrors, missingFields, newUser, snapshot } from '../../../test/fixtures.ts';
import { usersRef } from '../../users/contract.ts';
import { DbAuthService } from '../service.ts';
import { SecretBox } from '../secrets.ts';
import { TABLES, sessionStatus, sha256 } from './fixtures.ts';
import { fields, sql } from '../../../core/sql.ts';
import { AuthSession } from '../entities.ts';

const S = AuthSession.c;

async function storedSession(app: FastifyInstance, token: string) {
  const [row] = await app.db.query(
    sql`select ${fields({ user_id: S.userId, ip: S.ip, user_agent: S.userAgent, created_at: S.createdAt, expires_at: S.expiresAt })}
      from ${AuthSession} where ${S.tokenHash} = ${sha256(token)}`,
  );
  return row!;
}

const seconds = (from: string, to: string) => (parseTimestamp(to).getTime() - parseTimestamp(from).getTime()) / 1000;

t.test('POST /api/auth/sessions opens a session; GET checks it', async (t) => {
  const app = await build(t, { features: ['users', 'auth'] });
  const steve = await newUser(app, 'Steve');
  const key = await apiKey(app);
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/auth/sessions', { key, body: { userID: String(steve.id), ip: '198.51.100.4' }, as });
    t.equal(res.statusCode, 201, as);
    const body = res.json();
    t.strictSame(body, { status: true, token: body.token }, as);
    t.match(body.token, /^[0-9a-f]{32}$/);
    t.equal(await sessionStatus(app, body.token), 200);
    const row = await storedSession(app, body.token);
    t.equal(Number(row.user_id), steve.id);
    t.equal(seconds(row.created_at, row.expires_at), 30 * 86400, 'without expires a session lasts 30 days');
  }
  let res = await call(app, '/api/auth/sessions', {
    key,
    body: { userID: steve.id, ip: '::1', useragent: 'Bot/2', expires: '2031-06-01 12:00:00' },
    as: 'json',
  });
  t.equal(res.statusCode, 201);
  t.match(await storedSession(app, res.json().token), { ip: '::1', user_agent: 'Bot/2', expires_at: '2031-06-01 12:00:00' });

  await call(app, '/api/admin/settings', { method: 'PATCH', body: { timezone: 'Europe/Berlin' }, as: 'json' });
  res = await call(app, '/api/auth/sessions', { key, body: { userID: steve.id, ip: '::1', expires: '2031-06-01 12:00:00' } });
  t.equal((await storedSession(app, res.json().token)).expires_at, '2031-06-01 10:00:00', 'expires is read in the site time zone (CEST = UTC+2)');
});

t.test('session checks: unknown, expired and pending tokens are SESSION_NOT_FOUND', async (t) => {
  const app = await build(t, { features: ['users', 'auth'] });
  const steve = await newUser(app, 'Steve');
  const res = await call(app, '/api/auth/sessions', { body: { userID: steve.id, ip: '::1' } });
  const token = res.json().token as string;
  t.equal(await sessionStatus(app, token), 200);
  t.equal(await sessionStatus(app, token.toUpperCase()), 200, 'hex is read in any case');
  for (const unknown of ['0'.repeat(32), 'nonsense', token.slice(0, 31)]) {
    const check = await call(app, `/api/auth/sessions/${unknown}`);
    t.equal(check.statusCode, 404, unknown);
    t.strictSame(check.json(), { status: false, error: 'SESSION_NOT_FOUND', message: 'No live session has this token.' });
  }
  await app.db.run(sql`update ${AuthSession} set ${S.expiresAt} = ${addSeconds(now(), -1)} where ${S.tokenHash} = ${sha256(token)}`);
  t.equal(await sessionStatus(app, token), 404, 'an expired session is gone at once');

  const live = (await call(app, '/api/auth/sessions', { body: { userID: steve.id, ip: '::1' } })).json().token as string;
  // The periodic sweep's work, done now rather than waited for.
  const auth = new DbAuthService(
    app.db,
    app.services.get(usersRef),
    app.settings,
    {
      sessionDays: 30,
      passwordMinLength: 6,
      passwordMaxLength: 128,
      tfaIssuer: 'x',
      tfaMaxAttempts: 5,
      lockout: { password: { maxFailures: 10, lockSeconds: 900 }, code: { maxFailures: 10, lockSeconds: 900 } },
    },
    new SecretBox(undefined),
    app.services.get(auditRef),
  );
  t.equal(await auth.sweepSessions(), 1, 'the sweep deletes the expired session');
  const left = await app.db.query(sql`select ${fields({ token_hash: S.tokenHash })} from ${AuthSession}`);
  t.strictSame(
    left.map((r) => r.token_hash),
    [sha256(live)],
    'and keeps the live one',
  );
});

t.test('session create errors change nothing', async (t) => {
  const app = await build(t, { features: ['users', 'auth'] });
  const steve = await newUser(app, 'Steve');
  const before = await snapshot(app, TABLES);
  const url = '/api/auth/sessions';
  await expectErrors(t, app, [
    { url, body: { userID: 999, ip: '::1' }, status: 404, error: 'USER_NOT_FOUND', message: 'No user with ID 999.' },
    { url, body: { userID: 'steve', ip: '::1' }, status: 400, error: 'VALIDATION_ERROR', message: /userID/ },
    { url, body: { userID: '1.5', ip: '::1' }, status: 400, error: 'VALIDATION_ERROR', message: /userID/ },
    { url, body: { userID: steve.id, ip: '::1', expires: 'next week' }, status: 400, error: 'VALIDATION_ERROR', message: /expires/ },
    { url, body: { userID: steve.id, ip: '::1', expires: '1000-01-01 00:00:00' }, status: 400, error: 'VALIDATION_ERROR', message: /expires/ },
    { url, body: { userID: steve.id, ip: '::1', expires: addSeconds(now(), -5) }, status: 400, error: 'VALIDATION_ERROR', message: /past/ },
    ...missingFields(url, { userID: steve.id, ip: '::1' }),
  ]);
  t.strictSame(await snapshot(app, TABLES), before);
});
