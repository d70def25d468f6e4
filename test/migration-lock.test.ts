/**
 * Instances started together against one database (a process manager starting its replicas):
 * one migrates under the migration lock (core/db/migration-lock.ts), the others wait for it and
 * start on the migrated schema; a lock whose owner died is taken over once its lease runs out.
 */
import { DatabaseSync } from 'node:sqlite';
import { createConnection } from 'mysql2/promise';
import t from 'tap';
import { buildApp } from '../core/app.ts';
import { CREATE_LOCK_TABLE, MigrationLock } from '../core/db/migration-lock.ts';
import { ADMIN_KEY, TOTP_KEY, onMysql, sharedDatabaseUrl, startServer, type TestLike } from './helper.ts';

/** An app built as `npm start` builds it, its boot lines (the lock's waiting and takeover) told to `say`. */
async function boot(t: TestLike, url: string, say: (line: string) => void) {
  const app = await buildApp({
    env: { API_KEY: ADMIN_KEY, TOTP_ENCRYPTION_KEY: TOTP_KEY, DATABASE_URL: url },
    // Four instances connecting at once on a busy test machine can take longer than the default 2 s.
    config: { log: { level: 'silent' }, database: { poolSize: 3, connectTimeoutMs: 10_000 } },
    logger: false,
    bootLog: say,
  });
  t.teardown(() => app.close());
  return app;
}

/** Runs `statements` on the database at `url` from a connection of the test's own (another process, as far as the app can tell). */
async function outside(url: string, statements: string[]): Promise<Record<string, unknown>[]> {
  if (url.startsWith('sqlite:')) {
    const db = new DatabaseSync(url.slice('sqlite:'.length));
    try {
      let rows: Record<string, unknown>[] = [];
      for (const s of statements) rows = db.prepare(s).all() as Record<string, unknown>[];
      return rows;
    } finally {
      db.close();
    }
  }
  const conn = await createConnection({ uri: url });
  try {
    let rows: Record<string, unknown>[] = [];
    for (const s of statements) rows = (await conn.query(s))[0] as Record<string, unknown>[];
    return rows;
  } finally {
    await conn.end();
  }
}

/** Migration names recorded more than once. */
const twice = (url: string) => outside(url, ['select name, count(*) as n from core_migrations group by name having count(*) > 1']);

/** A lock row as another instance leaves it: `expires` seconds from now (negative: its lease ran out). */
function lockRow(url: string, owner: string, expires: number): string[] {
  const mysql = !url.startsWith('sqlite:');
  return [
    CREATE_LOCK_TABLE[mysql ? 'mysql' : 'sqlite'],
    `insert into core_migration_lock (id, owner, expires_at) values (1, '${owner}', ${mysql ? 'unix_timestamp()' : 'unixepoch()'} + ${expires})`,
  ];
}

t.test('three server processes started at once on one empty database all serve; the migrations ran once', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const servers = await Promise.all([0, 1, 2].map(() => startServer(t, { DATABASE_URL: url, API_KEY: ADMIN_KEY, TOTP_ENCRYPTION_KEY: TOTP_KEY })));
  for (const [i, s] of servers.entries()) t.equal((await fetch(`${s.address}/health`)).status, 200, `instance ${i + 1} serves`);
  t.same(await twice(url), [], 'no migration applied twice');
  t.same(await outside(url, ['select * from core_migration_lock']), [], 'the lock is let go');
});

t.test(
  'apps built at once in one process: one migrates, the others wait for it and find nothing to do',
  { skip: onMysql ? false : "SQLite connections in one process block each other's event loop; the processes above cover SQLite" },
  async (t) => {
    const url = await sharedDatabaseUrl(t);
    const lines: string[] = [];
    const apps = await Promise.all([0, 1, 2, 3].map(() => boot(t, url, (line) => lines.push(line))));
    for (const app of apps) t.equal((await app.inject('/health')).statusCode, 200);
    const applied = await outside(url, ['select count(*) as n from core_migrations']);
    t.equal(Number(applied[0]!.n), apps[0]!.db.migrationNames.length, 'every migration recorded');
    t.same(await twice(url), [], 'none twice');
    t.ok(
      lines.some((l) => /^Another instance \(.+\) is migrating the database; waiting for it to finish\.$/.test(l)),
      'a waiting instance says so',
    );
  },
);

t.test('a lock held by a live instance makes a new one wait until it is let go', async (t) => {
  const url = await sharedDatabaseUrl(t);
  await outside(url, lockRow(url, 'other-host:7:live', 600));
  const lines: string[] = [];
  let said!: () => void;
  const waiting = new Promise<void>((r) => {
    said = r;
  });
  let built = false;
  const app = boot(t, url, (line) => {
    lines.push(line);
    said();
  }).then((a) => {
    built = true;
    return a;
  });
  await waiting;
  t.same(lines, ['Another instance (other-host:7:live) is migrating the database; waiting for it to finish.'], 'it says whom it waits for');
  t.notOk(built, 'and has not started');
  await outside(url, ['delete from core_migration_lock']);
  t.equal((await (await app).inject('/health')).statusCode, 200, 'once the lock is let go it migrates and starts');
  t.same(await twice(url), []);
});

t.test('a lock whose owner died mid-migration is taken over once its lease ran out', async (t) => {
  const url = await sharedDatabaseUrl(t);
  await outside(url, lockRow(url, 'gone-host:9:dead', -1));
  const lines: string[] = [];
  const app = await boot(t, url, (line) => lines.push(line));
  t.equal((await app.inject('/health')).statusCode, 200);
  t.same(lines, ['Took over the migration lock of gone-host:9:dead, whose lease had run out (it stopped while migrating).']);
  t.same(await outside(url, ['select * from core_migration_lock']), [], 'and let it go after migrating');
});

t.test('the holder renews its lease while it migrates', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const app = await boot(t, url, () => {});
  const lock = await MigrationLock.take(app.db, { leaseSeconds: 3, say: () => {} }, async () => false);
  t.ok(lock, 'taken');
  const expiry = async () => Number((await app.db.unchecked.query<{ e: number }>('select expires_at as e from core_migration_lock'))[0]!.e);
  const first = await expiry();
  // Renewed every second (a third of the lease); the clock is in whole seconds.
  const deadline = Date.now() + 10_000;
  let later = first;
  while (later <= first && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    later = await expiry();
  }
  t.ok(later > first, `the expiry moved on (${first} → ${later})`);
  const lines: string[] = [];
  t.equal(
    await MigrationLock.take(app.db, { leaseSeconds: 3, say: (l) => lines.push(l) }, async () => lines.length > 0),
    undefined,
    'another taker waits rather than take over',
  );
  await lock!.release();
  t.same(await app.db.unchecked.query('select * from core_migration_lock'), [], 'released');
});
