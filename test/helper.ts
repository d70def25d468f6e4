/**
 * Test helpers: a fresh app on a fresh database per call, driven through app.inject the way
 * clients call. Set TEST_MYSQL_URL (a MySQL/MariaDB server; each build gets its own scratch
 * database there) to run the same tests on MySQL/MariaDB; otherwise SQLite in memory.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createConnection } from 'mysql2/promise';
import qs from 'qs';
import { buildApp } from '../core/app.ts';
import { merge, rootDir } from '../core/config.ts';
import { builtinNames } from '../core/features.ts';

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef';
/** TOTP_ENCRYPTION_KEY of the test servers (32 bytes, base64). */
export const TOTP_KEY = Buffer.alloc(32, 7).toString('base64');
export const onMysql = Boolean(process.env.TEST_MYSQL_URL);
/**
 * The User-Agent both Java clients send (`HttpURLConnection`'s default, `Java/<version>`): the
 * header that gets them the error codes their enums know (docs/clients.md).
 */
export const JAVA_AGENT = 'Java/17.0.2';
/** Headers of a call sent as a Java client sends it (see JAVA_AGENT). */
export const AS_JAVA = { 'user-agent': JAVA_AGENT };

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

/** A folder of the test's own, removed when it ends (unlike t.testdir, a second one leaves the first alone). */
export function scratchDir(t: TestLike): string {
  const dir = mkdtempSync(join(tmpdir(), 'test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A database a second process (the CLI, `npm start`) can open too: a scratch MySQL database, or a SQLite file. */
export async function sharedDatabaseUrl(t: TestLike): Promise<string> {
  if (process.env.TEST_MYSQL_URL) return freshDatabaseUrl(t);
  return `sqlite:${join(scratchDir(t), 'db.sqlite')}`;
}

/**
 * Runs `calls` (each given its index) spread over two instances of one database, alternately, all
 * at once; the answers in the calls' order. On SQLite each instance gets its share as a burst in
 * turn: two connections in one process would wait on each other's write lock with the event loop blocked.
 */
export async function overBoth<T>(apps: readonly [FastifyInstance, FastifyInstance], calls: number,
  fn: (app: FastifyInstance, i: number) => Promise<T>): Promise<T[]> {
  const indices = Array.from({ length: calls }, (_, i) => i);
  if (apps[0].db.dialect !== 'sqlite') return Promise.all(indices.map((i) => fn(apps[i % 2]!, i)));
  const out: T[] = [];
  for (const k of [0, 1]) await Promise.all(indices.filter((i) => i % 2 === k).map(async (i) => { out[i] = await fn(apps[k]!, i); }));
  return out;
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
}

/** Builds the app on a fresh database; closed when the test ends. */
export async function build(t: TestLike, opts: BuildTestOptions = {}): Promise<FastifyInstance> {
  const url = opts.databaseUrl ?? await freshDatabaseUrl(t);
  const only = opts.features ? { plugins: Object.fromEntries(builtinNames().map((n) => [n, { enabled: opts.features!.includes(n) }])) } : {};
  const app = await buildApp({
    env: { API_KEY: ADMIN_KEY, TOTP_ENCRYPTION_KEY: TOTP_KEY, DATABASE_URL: url, ...opts.env },
    config: merge(merge({ log: { level: opts.logStream ? 'info' : 'silent' }, database: { poolSize: 5 } }, only), opts.config ?? {}),
    logger: opts.logStream ? undefined : false,
    logStream: opts.logStream,
    selfChecks: true,
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
  const parts = form ? form.split('&').map((pair) => {
    const [k, v = ''] = pair.split('=');
    return `--${boundary}\r\nContent-Disposition: form-data; name="${decodeURIComponent(k!)}"\r\n\r\n${decodeURIComponent(v.replaceAll('+', ' '))}\r\n`;
  }) : [];
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

/** Creates an API key with only the `api` scope. */
export async function apiKey(app: FastifyInstance, name = 'game-server'): Promise<string> {
  return app.apiKeys.create(name, ['api']);
}

export interface StartedServer {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** `http://127.0.0.1:<port>` */
  address: string;
  /** What the server has written to stdout so far (its JSON log). */
  output(): string;
}

/**
 * `npm start` as an operator runs it (core/server.js in its own process, on 127.0.0.1 and a free
 * port, logging at info); killed when the test ends if it is still running.
 */
export async function startServer(t: TestLike, env: Record<string, string>): Promise<StartedServer> {
  const child = spawn(process.execPath, [join(rootDir, 'core/server.js')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, cwd: rootDir, stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let out = '';
  const address = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  return { child, address, output: () => out };
}
