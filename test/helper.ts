/**
 * Test helpers: a fresh app on a fresh database per call, driven through app.inject the way
 * clients call (build, call and the rest of core/testing.ts, which plugin packages' test kit shares).
 * Set TEST_MYSQL_URL to run the same tests on MySQL/MariaDB; otherwise SQLite in memory.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { rootDir } from '../core/config.ts';
import type { Database } from '../core/db.ts';
import { build, freshDatabaseUrl, type TestLike } from '../core/testing.ts';

export {
  ADMIN_KEY,
  TOTP_KEY,
  build,
  call,
  encode,
  ENCODINGS,
  freshDatabaseUrl,
  type BuildTestOptions,
  type CallOptions,
  type Encoding,
  type TestLike,
} from '../core/testing.ts';
export const onMysql = Boolean(process.env.TEST_MYSQL_URL);
/**
 * The User-Agent both Java clients send (`HttpURLConnection`'s default, `Java/<version>`): the
 * header that gets them the error codes their enums know (docs/clients.md).
 */
export const JAVA_AGENT = 'Java/17.0.2';
/** Headers of a call sent as a Java client sends it (see JAVA_AGENT). */
export const AS_JAVA = { 'user-agent': JAVA_AGENT };

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

/** One scrape of `GET /metrics` (served without a key): a series' value by its name and labels, NaN when absent. */
export async function scrapeMetrics(app: FastifyInstance): Promise<(series: string) => number> {
  const lines = (await app.inject({ method: 'GET', url: '/metrics' })).body.split('\n');
  return (series) => Number(lines.find((line) => line.startsWith(`${series} `))?.slice(series.length + 1));
}

/** An instance with only the hello plugin, on the database `url` (a second instance on it: call again). */
export const helloOn = (t: TestLike, url: string) => build(t, { features: [], config: { plugins: { hello: { enabled: true } } }, databaseUrl: url });

/** The hello plugin's greetings on a SQLite file, and the names another connection to it sees: only what is committed. */
export async function greetingsOnFile(t: TestLike): Promise<{ db: Database; committed: () => string[] }> {
  const url = await sharedDatabaseUrl(t);
  const app = await helloOn(t, url);
  const other = new DatabaseSync(url.slice('sqlite:'.length));
  t.teardown(() => other.close());
  const committed = () => (other.prepare('select name from hello_greetings order by id').all() as { name: string }[]).map((r) => r.name);
  return { db: app.db, committed };
}

/**
 * The features' background rounds that write, an hour apart: two instances on one SQLite file take
 * turns for its write lock, so their rounds would slow every write the test makes on a loaded machine.
 */
export const QUIET_ROUNDS = {
  delivery: { sweepMs: 3_600_000, crossWakeMs: 0 },
  notifications: { pollMs: 3_600_000 },
  email: { pollMs: 3_600_000 },
  subscriptions: { sweepMs: 3_600_000 },
  users: { sweepSeconds: 3600 },
};

/**
 * Runs `calls` (each given its index) spread over two instances of one database, alternately, all
 * at once; the answers in the calls' order. On SQLite each instance gets its share as a burst in
 * turn: two connections in one process would wait on each other's write lock with the event loop blocked.
 */
export async function overBoth<T>(
  apps: readonly [FastifyInstance, FastifyInstance],
  calls: number,
  fn: (app: FastifyInstance, i: number) => Promise<T>,
): Promise<T[]> {
  const indices = Array.from({ length: calls }, (_, i) => i);
  if (apps[0].db.dialect !== 'sqlite') return Promise.all(indices.map((i) => fn(apps[i % 2]!, i)));
  const out: T[] = [];
  for (const k of [0, 1])
    await Promise.all(
      indices
        .filter((i) => i % 2 === k)
        .map(async (i) => {
          out[i] = await fn(apps[k]!, i);
        }),
    );
  return out;
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
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    cwd: rootDir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
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
