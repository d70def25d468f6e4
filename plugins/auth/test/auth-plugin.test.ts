/**
 * The game auth plugin's login, register and two-factor calls as its request classes send them
 * (`LoginRequest`, `RegisterRequest`, `VerifyTfaRequest`: urlencoded, each value through
 * `URLEncoder.encode`, no email field when the player gave none) and read as its `Request` and
 * `AuthUtil` read them: `error` goes through `getEnum(ErrorCode.class, "error")`, which throws on a
 * code the enum lacks (the response is then null and the command crashes). Every failure must carry
 * one of its 12 codes, ours in `code` where they differ.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { ADMIN_KEY, build, call, JAVA_AGENT } from '../../../test/helper.ts';
import { NO_RATE_LIMIT, register, totp, wrongCode } from './fixtures.ts';

/** The plugin's `ErrorCode` enum, as docs/clients.md lists it ("Error codes a Java client can read"). */
const PLUGIN_CODES = new Set([
  'USER_NOT_FOUND',
  'WRONG_PASSWORD',
  'USERNAME_ALREADY_EXIST',
  'EMAIL_ALREADY_EXIST',
  'REGISTER_LIMIT',
  'INVALID_USERNAME',
  'INVALID_EMAIL',
  'INVALID_PASSWORD',
  'WRONG_CODE',
  'SESSION_NOT_FOUND',
  'TFA_VERIFICATION_FAILED',
  'UNKNOWN_ERROR',
]);

const IP = '203.0.113.7';
const AGENT = 'LeaderOS-Auth/1.0 (Paper 1.21)';

/** Java's URLEncoder.encode: form encoding, a space as `+`, and `*` left alone. */
const urlEncode = (value: string) =>
  encodeURIComponent(value)
    .replaceAll('%20', '+')
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** `AuthUtil`: success is HTTP 2xx with no `error` and a `data` object; otherwise the enum's code (UNKNOWN_ERROR when none). */
async function pluginCall(app: FastifyInstance, api: string, form: Record<string, string>, key = ADMIN_KEY, ip?: string) {
  if (ip) form = { ...form, ip };
  const res = await app.inject({
    method: 'POST',
    url: `/api/${api}`,
    headers: { 'x-api-key': key, 'content-type': 'application/x-www-form-urlencoded', 'user-agent': JAVA_AGENT },
    payload: Object.entries(form)
      .map(([k, v]) => `${k}=${urlEncode(v)}`)
      .join('&'),
  });
  const body = res.json();
  if ('error' in body && !PLUGIN_CODES.has(body.error))
    throw new Error(`getEnum fails on ${JSON.stringify(body.error)}: the plugin's response is null ` + `(${api}: ${res.body})`);
  const ok = [200, 201, 202].includes(res.statusCode) && !('error' in body);
  return {
    ok,
    statusCode: res.statusCode,
    data: body.data,
    error: ok ? null : ((body.error ?? 'UNKNOWN_ERROR') as string),
    code: body.code as string | undefined,
  };
}

/** RegisterRequest: no email field unless the player typed one. */
const registerForm = (username: string, password: string, email?: string) => ({ username, password, ip: IP, useragent: AGENT, ...(email ? { email } : {}) });
const loginForm = (username: string, password: string) => ({ username, password, ip: IP, useragent: AGENT });

t.test('register, login and the two-factor code as the plugin sends and reads them', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT });
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { registrationEmailRequired: false }, as: 'json' })).statusCode, 200);
  let res = await pluginCall(app, 'auth/register', registerForm('Steve', 'pass word+1'));
  t.ok(res.ok, 'an email-less register, as the plugin sends it by default, once the site allows it');
  t.match(res.data, { token: /^[0-9a-f]{32}$/, isEmailVerificationRequired: false });
  res = await pluginCall(app, 'auth/login', loginForm('steve', 'pass word+1'));
  t.ok(res.ok, 'the URL-encoded password is the one registered');
  t.equal(res.data.isTfaRequired, false);

  const { id } = (await call(app, '/api/users/?username=Steve')).json();
  const { secret } = (await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
  t.equal((await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret) } })).statusCode, 200);
  res = await pluginCall(app, 'auth/login', loginForm('Steve', 'pass word+1'));
  t.equal(res.data.isTfaRequired, true);
  const verified = await pluginCall(app, 'auth/tfa/verify', { code: totp(secret, 30), token: res.data.token });
  t.ok(verified.ok, 'VerifyTfaResponse: status true, no error');
});

t.test("every failure is a code of the plugin's ErrorCode, ours beside it when they differ", async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT });
  await register(app, 'Taken', 'correct horse', IP);
  const done = (await pluginCall(app, 'auth/login', loginForm('Taken', 'correct horse'))).data.token as string;
  // [what, api, form, error the plugin reads, our code (undefined: the same)]
  const cases: [string, string, Record<string, string>, string, string?][] = [
    ['register without an email (the setting asks for one)', 'auth/register', registerForm('Steve', 'correct horse'), 'INVALID_EMAIL', 'VALIDATION_ERROR'],
    ['register a taken name', 'auth/register', registerForm('taken', 'correct horse', 'new@example.com'), 'USERNAME_ALREADY_EXIST'],
    ['register a short password', 'auth/register', registerForm('Steve', '123', 'steve@example.com'), 'INVALID_PASSWORD'],
    ['register a bad name', 'auth/register', registerForm('no spaces!', 'correct horse', 'steve@example.com'), 'INVALID_USERNAME'],
    [
      'register without an ip',
      'auth/register',
      { username: 'Steve', password: 'correct horse', email: 's@example.com', useragent: AGENT },
      'UNKNOWN_ERROR',
      'VALIDATION_ERROR',
    ],
    ['login of nobody', 'auth/login', loginForm('Nobody', 'correct horse'), 'USER_NOT_FOUND'],
    ['login with a wrong password', 'auth/login', loginForm('Taken', 'wrong horse'), 'WRONG_PASSWORD'],
    ['login without a password', 'auth/login', { username: 'Taken', ip: IP, useragent: AGENT }, 'INVALID_PASSWORD', 'VALIDATION_ERROR'],
    ['login without a user agent', 'auth/login', { username: 'Taken', password: 'correct horse', ip: IP }, 'UNKNOWN_ERROR', 'VALIDATION_ERROR'],
    ['verify an unknown token', 'auth/tfa/verify', { code: '123456', token: '0'.repeat(32) }, 'SESSION_NOT_FOUND'],
    ['verify a token that waits for no code', 'auth/tfa/verify', { code: '123456', token: done }, 'SESSION_NOT_FOUND'],
    ['verify without a code', 'auth/tfa/verify', { token: done }, 'WRONG_CODE', 'VALIDATION_ERROR'],
    ['verify without a token', 'auth/tfa/verify', { code: '123456' }, 'SESSION_NOT_FOUND', 'VALIDATION_ERROR'],
  ];
  // No code of its own: UNKNOWN_ERROR, and on the two-factor route its failed verification.
  for (const [route, error] of [
    ['auth/register', 'UNKNOWN_ERROR'],
    ['auth/login', 'UNKNOWN_ERROR'],
    ['auth/tfa/verify', 'TFA_VERIFICATION_FAILED'],
  ] as const) {
    cases.push([`${route} with a wrong API key`, route, {}, error, 'INVALID_API_KEY']);
  }
  for (const [what, api, form, error, ours] of cases) {
    const res = await pluginCall(app, api, form, what.endsWith('wrong API key') ? 'wrong-key' : ADMIN_KEY);
    t.notOk(res.ok, `${what}: a failure (${res.statusCode})`);
    t.equal(res.error, error, what);
    t.equal(res.code, ours, `${what}: our code`);
  }
});

t.test("too many tries: each route's nearest code, RATE_LIMITED beside it, Retry-After kept", async (t) => {
  const app = await build(t, {
    features: ['users', 'auth'],
    config: {
      plugins: {
        auth: {
          rateLimit: { login: { max: 1, windowSeconds: 60 }, register: { max: 1, windowSeconds: 60 } },
          lockout: { code: { maxFailures: 1, lockSeconds: 60 } },
        },
      },
    },
  });
  await register(app, 'Steve', 'correct horse', '10.0.0.1');
  t.equal((await pluginCall(app, 'auth/login', loginForm('Steve', 'wrong horse'))).error, 'WRONG_PASSWORD');
  let res = await pluginCall(app, 'auth/login', loginForm('Steve', 'wrong horse'));
  t.equal(res.statusCode, 429);
  t.equal(res.error, 'UNKNOWN_ERROR', 'login: the plugin has no code for it');
  t.equal(res.code, 'RATE_LIMITED');

  t.equal((await pluginCall(app, 'auth/register', registerForm('Alex', '1', 'alex@example.com'))).error, 'INVALID_PASSWORD');
  res = await pluginCall(app, 'auth/register', registerForm('Alex', '1', 'alex@example.com'));
  t.equal(res.statusCode, 429);
  t.equal(res.error, 'REGISTER_LIMIT', "register: the plugin's limit on registrations");
  t.equal(res.code, 'RATE_LIMITED');

  const { id } = (await call(app, '/api/users/?username=Steve')).json();
  const { secret } = (await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
  t.equal((await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret) } })).statusCode, 200);
  const pending = (await pluginCall(app, 'auth/login', loginForm('Steve', 'correct horse'), ADMIN_KEY, '10.0.0.2')).data.token as string;
  t.equal((await pluginCall(app, 'auth/tfa/verify', { code: wrongCode(secret), token: pending })).error, 'WRONG_CODE');
  res = await pluginCall(app, 'auth/tfa/verify', { code: totp(secret, 30), token: pending });
  t.equal(res.statusCode, 429);
  t.equal(res.error, 'TFA_VERIFICATION_FAILED', "two-factor: the plugin's failed verification");
  t.equal(res.code, 'RATE_LIMITED');
});
