/**
 * The two calls a game server makes on every player join: login, and the profile by username.
 * Each baseline does the same SQL on a bare mysql2 pool (and, for login, verifies the same argon2id
 * hash and writes the same session row), so the ratio shows what the host and features cost.
 */
import { createHash, randomBytes } from 'node:crypto';
import { verify } from '@node-rs/argon2';
import type { FastifyInstance } from 'fastify';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { addSeconds, now } from '../core/format.ts';
import { usersRef } from '../plugins/users/contract.ts';
import type { BenchRequest, Scenario } from './scenario.ts';

const PASSWORD = 'correct horse battery';
const USERAGENT = 'GameServer/1.0';

/** What the profile and login both read: the account and its linked accounts, in one query. */
const ACCOUNT_SQL = `select a.id, a.username, a.email, a.is_verified, a.auth_status, a.creation_ip, a.creation_date, l.platform, l.external_id
  from users_accounts a left join users_linked_accounts l on l.user_id = a.id where a.username_key = ?`;

interface AccountRow extends RowDataPacket {
  id: number; username: string; email: string | null; is_verified: number; auth_status: number;
  creation_ip: string; creation_date: string; platform: string | null; external_id: string | null;
}

/** Usernames in mixed case, as players type them: lookups are case-insensitive. */
const nameOf = (i: number) => (i % 2 ? `Player${i}` : `player${i}`);
const spelled = (i: number, round: number) => (round % 2 ? nameOf(i).toUpperCase() : nameOf(i));

/** `rounds` passes over the players, one request each, made by `request(player, round)`. */
function everyPlayer(rounds: number, players: number, request: (i: number, round: number) => BenchRequest): BenchRequest[] {
  return Array.from({ length: rounds * players }, (_, n) => request(n % players, Math.floor(n / players)));
}

async function account(pool: Pool, username: string): Promise<AccountRow[]> {
  const [rows] = await pool.query<AccountRow[]>(ACCOUNT_SQL, [username.toLowerCase()]);
  return rows;
}

const login: Scenario = {
  name: 'auth/login',
  features: ['users', 'auth'],
  async prepare(app: FastifyInstance, key: string) {
    const players = 50;
    for (let i = 0; i < players; i++) {
      // One IP per player, so the register limit (accounts per IP) never refuses the seed.
      const res = await app.inject({
        method: 'POST', url: '/api/auth/register', headers: { 'x-api-key': key },
        payload: { username: nameOf(i), password: PASSWORD, email: `p${i}@example.com`, ip: `10.1.0.${i}`, useragent: USERAGENT },
      });
      if (res.statusCode !== 200) throw new Error(`seeding ${nameOf(i)}: ${res.statusCode} ${res.body}`);
    }
    // Many username+ip pairs, so the per-pair login rate limit (10 a minute) is never what is measured.
    return everyPlayer(100, players, (i, round) => ({
      method: 'POST', path: '/api/auth/login', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: spelled(i, round), password: PASSWORD, ip: `10.2.${round}.${i}`, useragent: USERAGENT }),
    }));
  },
  baseline(pool: Pool) {
    return {
      method: 'POST' as const,
      url: '/api/auth/login',
      async handler(request, reply) {
        const body = request.body as { username: string; password: string; ip: string; useragent: string };
        const [user] = await account(pool, body.username);
        if (!user) return reply.code(404).send({ status: false, error: 'USER_NOT_FOUND', message: 'No such user.' });
        const [[credential]] = await pool.query<RowDataPacket[]>('select password_hash from auth_credentials where user_id = ?', [user.id]);
        if (!credential || !await verify(credential.password_hash as string, body.password)) {
          return reply.code(401).send({ status: false, error: 'WRONG_PASSWORD', message: 'The password is wrong.' });
        }
        const token = randomBytes(16).toString('hex');
        const created = now();
        const expires = addSeconds(created, 30 * 86400);
        await pool.query(
          'insert into auth_sessions (token_hash, user_id, ip, user_agent, verified, failed_codes, created_at, expires_at) values (?, ?, ?, ?, 1, 0, ?, ?)',
          [createHash('sha256').update(token).digest('hex'), user.id, body.ip, body.useragent, created, expires]);
        return { status: true, data: { token, isTfaRequired: false } };
      },
    };
  },
};

const profile: Scenario = {
  name: 'users/profile',
  features: ['users'],
  async prepare(app: FastifyInstance) {
    const users = app.services.get(usersRef);
    const players = 200;
    for (let i = 0; i < players; i++) {
      const user = await users.createAccount({ username: nameOf(i), email: `p${i}@example.com`, creationIP: '10.1.0.1' });
      // Half the players have linked their chat account, as on a real server.
      if (i % 2) await users.linkAccount(user.id, 'chat', String(100000000000000000n + BigInt(i)));
    }
    return everyPlayer(2, players, (i, round) => ({ method: 'GET', path: `/api/users?username=${spelled(i, round)}` }));
  },
  baseline(pool: Pool) {
    return {
      method: 'GET' as const,
      url: '/api/users',
      async handler(request, reply) {
        const rows = await account(pool, (request.query as { username: string }).username);
        const user = rows[0];
        if (!user) return reply.code(404).send({ status: false, error: 'USER_NOT_FOUND', message: 'No such user.' });
        const linkedAccounts: Record<string, string> = {};
        for (const r of rows) if (r.platform && r.external_id) linkedAccounts[r.platform] = r.external_id;
        return {
          id: String(user.id), username: user.username, realname: user.username, email: user.email ?? '', credit: '0.00',
          isVerified: user.is_verified ? '1' : '0', authStatus: String(user.auth_status), creationIP: user.creation_ip,
          creationDate: user.creation_date, linkedAccounts,
        };
      },
    };
  },
};

export const scenarios: Scenario[] = [login, profile];
