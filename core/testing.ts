/**
 * Builds the host on a fresh database per call and drives it through app.inject the way clients
 * call: the host's tests (test/helper.ts) and plugin packages' (`@community-platform/sdk/testing`)
 * share it. Set TEST_MYSQL_URL (a MySQL/MariaDB server; each build gets its own scratch database
 * there) to run the same tests on MySQL/MariaDB; otherwise SQLite in memory.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createConnection } from 'mysql2/promise';
import qs from 'qs';
import { buildApp } from './app.ts';
import type { Clock } from './clock.ts';
import { merge } from './config.ts';
import { builtinNames } from './features.ts';
import { fill, templateFor } from './testing-template.ts';

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef';
/** TOTP_ENCRYPTION_KEY of the test servers (32 bytes, base64). */
export const TOTP_KEY = Buffer.alloc(32, 7).toString('base64');
/** What the helpers need of a tap test: somewhere to put clean-up. */
export interface TestLike {
  teardown(fn: () => unknown): void;
}

/** A database URL of its own for one test: SQLite in memory, or a scratch MySQL database dropped at teardown. */
export async function freshDatabaseUrl(t: TestLike): Promise<string> {
  const server = process.env.TEST_MYSQL_URL;
  if (!server) return 'sqlite::memory:';
  const name = `t_${randomBytes(6).toString('hex')}`;
  const root = new URL(server);
  root.pathname = '/';
  const admin = await createConnection({ uri: root.toString() });
  await admin.query(`create database ${name}`);
  await admin.end();
  t.teardown(async () => {
    const conn = await createConnection({ uri: root.toString() });
    await conn.query(`drop database if exists ${name}`);
    await conn.end();
  });
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface BuildTestOptions {
  config?: unknown;
  env?: Record<string, string>;
  /** Reuse a database (a restart); otherwise a fresh one. */
  databaseUrl?: string;
  /** Run only these built-in features (the rest are disabled); all of them when omitted. */
  features?: string[];
  /** Where the server's log lines go, from level info; by default it logs nothing. */
  logStream?: { write(line: string): void };
  /** A clock the test moves forward (core/clock.ts TestClock) instead of sleeping. */
  clock?: Clock;
}

/** Builds the app on a fresh database; closed when the test ends. */
export async function build(t: TestLike, opts: BuildTestOptions = {}): Promise<FastifyInstance> {
  const url = opts.databaseUrl ?? (await freshDatabaseUrl(t));
  const only = opts.features ? { plugins: Object.fromEntries(builtinNames().map((n) => [n, { enabled: opts.features!.includes(n) }])) } : {};
  const env = { API_KEY: ADMIN_KEY, TOTP_ENCRYPTION_KEY: TOTP_KEY, DATABASE_URL: url, ...opts.env };
  const config = merge(merge({ log: { level: opts.logStream ? 'info' : 'silent' }, database: { poolSize: 5 } }, only), opts.config ?? {});
  // A database the test chose is migrated as a server would; a fresh one is filled from the template.
  const template = opts.databaseUrl || env.DATABASE_URL !== url ? undefined : await templateFor(env, config);
  const app = await buildApp({
    env,
    config,
    logger: opts.logStream ? undefined : false,
    logStream: opts.logStream,
    selfChecks: true,
    clock: opts.clock,
    beforeMigrate: template && ((db) => fill(db, url, template)),
  });
  t.teardown(() => app.close());
  await app.ready();
  return app;
}

export type Encoding = 'json' | 'urlencoded' | 'multipart';
export const ENCODINGS: Encoding[] = ['multipart', 'urlencoded', 'json'];

/** Encodes a body as a client would: PHP bracket keys for the two form encodings. */
export function encode(body: Record<string, unknown>, as: Encoding): { payload: string; headers: Record<string, string> } {
  if (as === 'json') return { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } };
  const form = qs.stringify(body, { arrayFormat: 'indices', encodeValuesOnly: false });
  if (as === 'urlencoded') return { payload: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } };
  const boundary = `----test${randomBytes(8).toString('hex')}`;
  const parts = form
    ? form.split('&').map((pair) => {
        const [k, v = ''] = pair.split('=');
        return `--${boundary}\r\nContent-Disposition: form-data; name="${decodeURIComponent(k!)}"\r\n\r\n${decodeURIComponent(v.replaceAll('+', ' '))}\r\n`;
      })
    : [];
  return { payload: `${parts.join('')}--${boundary}--\r\n`, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  body?: Record<string, unknown>;
  as?: Encoding;
  /** The API key to send; null sends none. Defaults to the admin key. */
  key?: string | null;
  headers?: Record<string, string>;
  /** The client's address (default 127.0.0.1). */
  remoteAddress?: string;
}

/** One HTTP call through inject, with the API key and the body encoded as asked (multipart by default). */
// biome-ignore lint/suspicious/noExplicitAny: a test reads answers of every shape
export async function call(app: FastifyInstance, url: string, opts: CallOptions = {}): Promise<LightMyRequestResponse & { json<T = any>(): T }> {
  const method = opts.method ?? (opts.body ? 'POST' : 'GET');
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== null) headers['x-api-key'] = opts.key ?? ADMIN_KEY;
  let payload: string | undefined;
  if (opts.body) {
    const enc = encode(opts.body, opts.as ?? 'multipart');
    payload = enc.payload;
    Object.assign(headers, enc.headers);
  }
  return app.inject({ method, url, headers, payload, remoteAddress: opts.remoteAddress });
}

/** Whether the host resolves a package of this name (installed beside it in node_modules), as it does `plugins.<name>.package`. */
export function hostResolves(name: string): boolean {
  try {
    import.meta.resolve(name);
    return true;
  } catch {
    return false;
  }
}
