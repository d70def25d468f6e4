/** Shared set-up for the auth tests. */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AS_JAVA, call, type CallOptions } from '../../../test/helper.ts';
import { USERS_TABLES, snapshot, totp } from '../../../test/fixtures.ts';
import { fields, sql } from '../../../core/sql.ts';
import { AuthCredential, AuthTotp } from '../entities.ts';

export { totp, totpAt } from '../../../test/fixtures.ts';

export const AUTH_TABLES = ['auth_credentials', 'auth_totp', 'auth_sessions'];
/** Every table an auth call may write: the users feature's and auth's own. */
export const TABLES = [...USERS_TABLES, ...AUTH_TABLES];
/** Config for tests that send many failing logins or registrations for one name. */
export const NO_RATE_LIMIT = { plugins: { auth: { rateLimit: { login: { max: 0 }, register: { max: 0 } } } } };
export const CLIENT = { ip: '198.51.100.4', useragent: 'GameServer/1.0' };

/**
 * The tables an auth call may write, without the per-account counts of wrong passwords and codes:
 * for checking that a refused call changed nothing but its count.
 */
export async function snapshotExceptCounts(app: FastifyInstance): Promise<Record<string, unknown[]>> {
  const tables = await snapshot(app, TABLES);
  for (const rows of Object.values(tables)) {
    for (const row of rows as Record<string, unknown>[]) {
      delete row.failed_attempts;
      delete row.locked_until;
    }
  }
  return tables;
}

/** Wrong passwords (`auth_credentials`) or codes (`auth_totp`) counted for a user. */
export async function failedAttempts(app: FastifyInstance, table: 'auth_credentials' | 'auth_totp', userId: number): Promise<number> {
  const T = table === 'auth_totp' ? AuthTotp : AuthCredential;
  const [row] = await app.db.query(sql`select ${fields({ n: T.c.failedAttempts })} from ${T} where ${T.c.userId} = ${userId}`);
  return Number(row?.n);
}

/** Registers through the API (as the game plugin does) and returns the profile id and session token. */
export async function register(app: FastifyInstance, username: string, password = 'correct horse', ip = CLIENT.ip): Promise<{ id: number; token: string }> {
  const res = await call(app, '/api/auth/register', {
    body: { username, password, email: `${username.toLowerCase()}@example.com`, ip, useragent: CLIENT.useragent },
  });
  if (res.statusCode !== 200) throw new Error(`register ${username}: ${res.statusCode} ${res.body}`);
  const profile = await call(app, `/api/users/?username=${username}`);
  return { id: Number(profile.json().id), token: res.json().data.token };
}

/** Logs in as the game auth plugin does (its Java User-Agent included). */
export function login(app: FastifyInstance, username: string, password: string, opts: Omit<CallOptions, 'body'> & { ip?: string } = {}) {
  return call(app, '/api/auth/login', {
    ...opts,
    headers: { ...AS_JAVA, ...opts.headers },
    body: { username, password, ip: opts.ip ?? CLIENT.ip, useragent: CLIENT.useragent },
  });
}

export function sessionStatus(app: FastifyInstance, token: string): Promise<number> {
  return call(app, `/api/auth/sessions/${token}`).then((res) => res.statusCode);
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A well-formed code that is none of the ones accepted now (±1 step). */
export function wrongCode(secret: string): string {
  const accepted = new Set([-30, 0, 30].map((offset) => totp(secret, offset)));
  return ['000000', '111111', '222222', '333333'].find((c) => !accepted.has(c))!;
}
