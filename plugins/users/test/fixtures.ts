/** Shared set-up for the users and auth tests. */
import type { FastifyInstance } from 'fastify';
import type { Test } from 'tap';
import { call } from '../../../test/helper.ts';
import { usersRef, type UserAccount } from '../contract.ts';
import type { DbUsersService } from '../service.ts';

/** The users service as the feature made it (its admin methods included). */
export function usersService(app: FastifyInstance): DbUsersService {
  return app.services.get(usersRef) as DbUsersService;
}

/** An account made through the service, with `<name>@example.com` unless told otherwise. */
export function newUser(app: FastifyInstance, username: string, fields: { email?: string | null; creationIP?: string } = {}): Promise<UserAccount> {
  return usersService(app).createAccount({
    username,
    email: fields.email === undefined ? `${username.toLowerCase()}@example.com` : fields.email,
    creationIP: fields.creationIP ?? '10.0.0.1',
  });
}

export interface RoleRowBody { id: string; name: string; slug: string; usernameCSS: string | null; badgeCSS: string | null; priority: string; chatRoleID: string }

/** A role made through the admin API. */
export async function newRole(app: FastifyInstance, name: string, priority = 0, chatRoleID = ''): Promise<RoleRowBody> {
  const res = await call(app, '/api/admin/roles', { body: { name, priority: String(priority), chatRoleID } });
  if (res.statusCode !== 201) throw new Error(`creating role ${name}: ${res.statusCode} ${res.body}`);
  return res.json();
}

/** Every row of the tables, to show that a failed call changed nothing. */
export async function snapshot(app: FastifyInstance, tables: string[]): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of tables) out[table] = await app.db.query(`select * from ${table} order by id`);
  return out;
}

export const USERS_TABLES = ['users_accounts', 'users_roles', 'users_role_assignments', 'users_linked_accounts'];

export interface ErrorCase {
  url: string;
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  body?: Record<string, unknown>;
  status: number;
  error: string;
  /** The message, in full (a string) or in part (a pattern). */
  message?: string | RegExp;
}

/** Sends each call and checks its error answer: status, `{status:false, error, message}`. */
export async function expectErrors(t: Test, app: FastifyInstance, cases: ErrorCase[]): Promise<void> {
  for (const c of cases) {
    const res = await call(app, c.url, { method: c.method, body: c.body });
    const label = `${c.method ?? (c.body ? 'POST' : 'GET')} ${c.url} ${JSON.stringify(c.body ?? {}).slice(0, 80)}`;
    t.equal(res.statusCode, c.status, label);
    const body = res.json();
    t.strictSame(Object.keys(body), ['status', 'error', 'message'], `${label}: the error shape`);
    t.equal(body.status, false, label);
    t.equal(body.error, c.error, label);
    if (typeof c.message === 'string') t.equal(body.message, c.message, label);
    else if (c.message) t.match(body.message, c.message, label);
  }
}

/** One case per field of a good body, sent without that field: VALIDATION_ERROR naming it. */
export function missingFields(url: string, body: Record<string, unknown>, fields = Object.keys(body)): ErrorCase[] {
  return fields.map((field) => {
    const { [field]: _left, ...rest } = body;
    return { url, body: rest, status: 400, error: 'VALIDATION_ERROR', message: `${field} is required` };
  });
}
