/**
 * The two calls a game server makes on every player join: login, and the profile by username
 * (with its balance and linked accounts). Each baseline does the same reads and writes by hand,
 * as a hand-written server would: the profile in one joined query, the login counting its try and
 * the account's attempt as the contract limits them, verifying the same argon2id hash and writing
 * the same session row.
 */
import { createHash, randomBytes } from 'node:crypto';
import { verify } from '@node-rs/argon2';
import { addSeconds, now } from '../core/format.ts';
import type { BaseDb, Row } from './base-db.ts';
import { counted } from './base-limits.ts';
import { Api, PASSWORD, USERAGENT, money, type BenchRequest, type Scenario } from './scenario.ts';

/** Usernames in mixed case, as players type them: lookups are case-insensitive. */
const nameOf = (i: number) => (i % 2 ? `Player${i}` : `player${i}`);
const spelled = (i: number, round: number) => (round % 2 ? nameOf(i).toUpperCase() : nameOf(i));

/** `rounds` passes over the players, one request each, made by `request(player, round)`. */
function everyPlayer(rounds: number, players: number, request: (i: number, round: number) => BenchRequest): BenchRequest[] {
  return Array.from({ length: rounds * players }, (_, n) => request(n % players, Math.floor(n / players)));
}

const PROFILE_SQL = `select a.id, a.username, a.email, a.is_verified, a.auth_status, a.creation_ip, a.creation_date, l.platform, l.external_id,
  w.balance from users_accounts a left join users_linked_accounts l on l.user_id = a.id left join credits_wallets w on w.user_id = a.id
  where a.username_key = ?`;

const notFound = { status: false, error: 'USER_NOT_FOUND', message: 'No such user.' };

const profile: Scenario = {
  name: 'users/profile',
  readOnly: true,
  async seed(api: Api) {
    const players = 200;
    await Api.batched(players, 10, async (i) => {
      const id = await api.player(i, nameOf(i), 1000 + i);
      // Half the players have linked their chat account, as on a real server.
      if (i % 2) await api.send('PUT', `/api/admin/users/${id}/linked-accounts/chat`, { externalID: String(100000000000000000n + BigInt(i)) });
    });
    return everyPlayer(2, players, (i, round) => ({ method: 'GET', path: `/api/users?username=${spelled(i, round)}` }));
  },
  baseline: {
    method: 'GET',
    url: '/api/users',
    async handler(db: BaseDb, request, reply) {
      const rows = await db.all(PROFILE_SQL, [(request.query as { username: string }).username.toLowerCase()]);
      const user = rows[0];
      if (!user) return reply.code(404).send(notFound);
      const linkedAccounts: Record<string, string> = {};
      for (const r of rows) if (r.platform && r.external_id) linkedAccounts[r.platform] = r.external_id;
      return {
        id: String(user.id),
        username: user.username,
        realname: user.username,
        email: user.email ?? '',
        credit: money(Number(user.balance ?? 0)),
        isVerified: String(user.is_verified),
        authStatus: String(user.auth_status),
        creationIP: user.creation_ip,
        creationDate: user.creation_date,
        linkedAccounts,
        uuid: '',
        lastlogin: '',
        x: '',
        y: '',
        z: '',
        world: '',
        isLogged: '0',
      };
    },
  },
};

const login: Scenario = {
  name: 'auth/login',
  async seed(api: Api) {
    const players = 50;
    await Api.batched(players, 10, (i) => api.player(1000 + i, `gamer${i}`, 0));
    // Many username+ip pairs, so the per-pair login limit (10 a minute) is never what is measured.
    return everyPlayer(100, players, (i, round) => ({
      method: 'POST',
      path: '/api/auth/login',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: round % 2 ? `GAMER${i}` : `gamer${i}`, password: PASSWORD, ip: `10.2.${round}.${i}`, useragent: USERAGENT }),
    }));
  },
  baseline: {
    method: 'POST',
    url: '/api/auth/login',
    async handler(db: BaseDb, request, reply) {
      const body = request.body as { username: string; password: string; ip: string; useragent: string };
      // The contract's limits, as the server's config/default.json sets them: tries per username and ip, wrong passwords per account.
      const [tries] = await counted(db, [loginBucket(body.username, body.ip)], [60_000]);
      if (tries!.hits > 10) return reply.code(429).send(rateLimited);
      const [user] = await db.all('select id from users_accounts where username_key = ?', [body.username.toLowerCase()]);
      if (!user) return reply.code(404).send(notFound);
      const at = now();
      if ((await db.changed(CLAIM_SQL, [at, at, user.id, at])) === 0) return reply.code(429).send(rateLimited);
      const [credential] = (await db.all('select password_hash from auth_credentials where user_id = ?', [user.id])) as Row[];
      if (!credential || !(await verify(credential.password_hash as string, body.password))) {
        await db.changed('update auth_credentials set locked_until = ? where user_id = ? and failed_attempts >= 10 and locked_until is null', [
          addSeconds(now(), 900),
          user.id,
        ]);
        return reply.code(401).send({ status: false, error: 'WRONG_PASSWORD', message: 'The password is wrong.' });
      }
      await db.changed('update auth_credentials set failed_attempts = 0, locked_until = null where user_id = ?', [user.id]);
      const token = randomBytes(16).toString('hex');
      const created = now();
      const values = [createHash('sha256').update(token).digest('hex'), user.id, body.ip, body.useragent, created, addSeconds(created, 30 * 86400)];
      await db.changed(
        'insert into auth_sessions (token_hash, user_id, ip, user_agent, verified, failed_codes, created_at, expires_at) values (?, ?, ?, ?, 1, 0, ?, ?)',
        values,
      );
      return { status: true, data: { token, isTfaRequired: false } };
    },
  },
};

const rateLimited = { status: false, error: 'RATE_LIMITED', message: 'Too many attempts.' };

/** The server's bucket of a login's tries (core/rate-limits.ts): its route, then the username's lookup form and the ip. */
const loginBucket = (username: string, ip: string) => createHash('sha256').update(`POST /api/auth/login\nlogin:${username.toLowerCase()}|${ip}`).digest('hex');

/** One attempt taken on the account before its password is checked, refused at 10 in a row (plugins/auth/lockout.ts). */
const CLAIM_SQL = `update auth_credentials set
  failed_attempts = case when locked_until is not null and locked_until <= ? then 1 else failed_attempts + 1 end,
  locked_until = case when locked_until is not null and locked_until <= ? then null else locked_until end
  where user_id = ? and (failed_attempts < 10 or (locked_until is not null and locked_until <= ?))`;

export const scenarios: Scenario[] = [profile, login];
