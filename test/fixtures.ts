/**
 * Fixtures every feature's tests share: accounts (through the users and credits services the other
 * features build on) and the users feature's tables, calls that must succeed, table snapshots and
 * row counts, and tables of error cases. A feature's own set-up (its tables, its admin objects)
 * stays in plugins/<feature>/test/fixtures.ts; a feature's tests never import another's.
 */
import { createHmac } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Test } from 'tap';
import { clockNow } from '../core/clock.ts';
import { creditsRef } from '../plugins/credits/contract.ts';
import { usersRef, type UserAccount } from '../plugins/users/contract.ts';
import { call, JAVA_AGENT, type CallOptions, type Encoding } from './helper.ts';

/** The users feature's tables: what any call that writes accounts or roles may change. */
export const USERS_TABLES = ['users_accounts', 'users_roles', 'users_role_assignments', 'users_linked_accounts'];

/** The test plugin (test/fixtures/echo-plugin.ts) as a `plugins` config entry. */
export const ECHO_PLUGIN = { echo: { enabled: true, package: './test/fixtures/echo-plugin.ts' } };

/**
 * An account made through the users service, with `<name>@example.com` unless told otherwise.
 * With `cents`, it also gets that balance through the credits service (the credits feature must run).
 */
export async function newUser(
  app: FastifyInstance,
  username: string,
  fields: { email?: string | null; creationIP?: string; cents?: number } = {},
): Promise<UserAccount> {
  const user = await app.services.get(usersRef).createAccount({
    username,
    email: fields.email === undefined ? `${username.toLowerCase()}@example.com` : fields.email,
    creationIP: fields.creationIP ?? '10.0.0.1',
  });
  if (fields.cents) await app.services.get(creditsRef).change(user.id, fields.cents, { reason: 'test' });
  return user;
}

/** A user's id, with a balance (in cents) given through the credits service. */
export async function makeUser(app: FastifyInstance, username: string, cents = 0): Promise<number> {
  return (await newUser(app, username, { cents })).id;
}

export function balanceOf(app: FastifyInstance, userId: number): Promise<number> {
  return app.services.get(creditsRef).balance(userId);
}

/** A 1×1 PNG, for image uploads. */
export const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==', 'base64');

/** A role, a store category and a product made through the admin API: what a purchase needs. */
export async function makeRole(app: FastifyInstance, name: string): Promise<number> {
  return Number((await created(app, '/api/admin/roles', { name }, 'json')).id);
}

export async function makeCategory(app: FastifyInstance, body: Record<string, unknown>): Promise<number> {
  return Number((await created(app, '/api/admin/store/categories', body, 'json')).id);
}

export async function makeProduct(app: FastifyInstance, body: Record<string, unknown>): Promise<number> {
  return Number((await created(app, '/api/admin/store/products', body, 'json')).id);
}

/** A GET that must answer 200; returns its body. */
export async function read(app: FastifyInstance, url: string): Promise<any> {
  const res = await call(app, url);
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
  return res.json();
}

/** A POST that must answer 201 (an admin create); returns the created thing's body. */
export async function created(app: FastifyInstance, url: string, body: Record<string, unknown>, as?: Encoding): Promise<Record<string, any>> {
  const res = await call(app, url, { body, as });
  if (res.statusCode !== 201) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
  return res.json();
}

/** Every row of the tables, to show that a failed call changed nothing. */
export async function snapshot(app: FastifyInstance, tables: string[]): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of tables) out[table] = await app.db.unchecked.query(`select * from ${table} order by id`);
  return out;
}

/** How many rows a table holds. */
export async function rowCount(app: FastifyInstance, table: string): Promise<number> {
  const [row] = await app.db.unchecked.query<{ n: number }>(`select count(*) as n from ${table}`);
  return Number(row!.n);
}

/** Lets `on` event listeners run: they run once the emitting transaction has committed, a turn after the reply. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export interface ErrorCase {
  url: string;
  method?: CallOptions['method'];
  body?: Record<string, unknown>;
  status: number;
  error: string;
  /**
   * Our code, on a route whose client reads only its own codes: the case is then sent as that Java
   * client sends it (its User-Agent), and `error` is the nearest code it knows (docs/clients.md).
   */
  code?: string;
  /** The message, in full (a string) or in part (a pattern). */
  message?: string | RegExp;
}

/** Sends each call and checks its error answer: status, `{status:false, error, message}` (and `code` where the case has one). */
export async function expectErrors(t: Test, app: FastifyInstance, cases: ErrorCase[]): Promise<void> {
  for (const c of cases) {
    const res = await call(app, c.url, { method: c.method, body: c.body, headers: c.code === undefined ? {} : { 'user-agent': JAVA_AGENT } });
    const label = `${c.method ?? (c.body ? 'POST' : 'GET')} ${c.url} ${JSON.stringify(c.body ?? {}).slice(0, 80)}`;
    t.equal(res.statusCode, c.status, label);
    const body = res.json();
    t.strictSame(
      Object.keys(body),
      c.code === undefined ? ['status', 'error', 'message'] : ['status', 'error', 'message', 'code'],
      `${label}: the error shape`,
    );
    t.equal(body.status, false, label);
    t.equal(body.error, c.error, label);
    if (c.code !== undefined) t.equal(body.code, c.code, `${label}: our code`);
    if (typeof c.message === 'string') t.equal(body.message, c.message, label);
    else if (c.message) t.match(body.message, c.message, label);
  }
}

/**
 * One case per field of a good body, sent without that field: VALIDATION_ERROR naming it. On a
 * route a real client calls, `nearest` gives the code its `error` carries for each field.
 */
export function missingFields(url: string, body: Record<string, unknown>, fields = Object.keys(body), nearest?: (field: string) => string): ErrorCase[] {
  return fields.map((field) => {
    const { [field]: _left, ...rest } = body;
    const message = `${field} is required`;
    return nearest
      ? { url, body: rest, status: 400, error: nearest(field), code: 'VALIDATION_ERROR', message }
      : { url, body: rest, status: 400, error: 'VALIDATION_ERROR', message };
  });
}

function base32(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of text.replace(/=+$/, '')) bits += alphabet.indexOf(c).toString(2).padStart(5, '0');
  return Buffer.from((bits.match(/.{8}/g) ?? []).map((b) => parseInt(b, 2)));
}

/**
 * RFC 6238 written out here, independent of the library the server uses: what an authenticator
 * app shows for a base32 `secret` at `unixSeconds` (6 digits, 30 s, HMAC-SHA1).
 */
export function totpAt(secret: string, unixSeconds: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(unixSeconds / 30)));
  const mac = createHmac('sha1', base32(secret)).update(counter).digest();
  const offset = mac[mac.length - 1]! & 0xf;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

/**
 * Waits until `condition` holds, looking again every few milliseconds: for work a timer does (a
 * sweep, a heartbeat), with no fixed duration; tap's timeout bounds it, or `maxMs` when given.
 */
export async function until(condition: () => boolean | Promise<boolean>, maxMs = Infinity): Promise<void> {
  const end = Date.now() + maxMs;
  while (!(await condition()) && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** The code an authenticator app shows `offsetSeconds` from now (the host's clock: a test's, when it installed one). */
export function totp(secret: string, offsetSeconds = 0): string {
  return totpAt(secret, clockNow() / 1000 + offsetSeconds);
}
