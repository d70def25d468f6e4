/**
 * The database on a small file system of its own (tmpfs): a full disk answers 503 with
 * Retry-After and writes nothing, reads still answer, /health says the disk is full, and the
 * server serves again by itself once space is back. SQLite in the SQLite run; in the MariaDB run (TEST_MYSQL_URL set), a
 * private mariadbd whose data directory is on the small disk. And a SQLite file that can only be
 * read: /health says so and writes answer 503. Mounting needs root (CI runs as root); elsewhere
 * the tests are skipped and say why.
 */
import t from 'tap';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { TestClock } from '../core/clock.ts';
import { build, call, onMysql, scratchDir } from './helper.ts';
import { newUser } from './fixtures.ts';
import { fields, sql, sum } from '../core/sql.ts';
import { CreditsLedgerEntry } from '../plugins/credits/entities.ts';
import { MariaDbServer, haveMariaDb } from './mariadb-server.ts';
import { CANNOT_MOUNT, fill, readOnlyView, smallDisk, unmount } from './small-disk.ts';

/**
 * Credits added one by one until the disk refuses three of them, then the disk freed: every
 * refusal is a 503 with Retry-After, and once space is back the next add lands exactly once.
 */
async function fullDisk(t: Test, dir: string, databaseUrl: string, tries: number): Promise<void> {
  const clock = new TestClock();
  const app = await build(t, { databaseUrl, features: ['users', 'credits'], config: { database: { writeFaultSeconds: 1 } }, clock });
  await newUser(app, 'Steve', { cents: 1000 });
  const add = () => call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '1.00' }, as: 'urlencoded' });
  t.equal((await add()).statusCode, 200);

  const filler = fill(dir);
  let refused = 0;
  // The WAL or the tablespace may still have room for some rows: write until the disk says no.
  for (let i = 0; i < tries; i++) {
    const res = await add();
    if (res.statusCode === 200) continue;
    t.equal(res.statusCode, 503, res.body);
    // Not a Java client: our own code, none of the game plugin's (docs/clients.md).
    t.strictSame(Object.keys(res.json()), ['status', 'error', 'message']);
    t.match(res.json(), { status: false, error: 'SERVICE_UNAVAILABLE' });
    t.ok(res.headers['retry-after'], 'Retry-After');
    refused++;
    if (refused === 3) break;
  }
  t.equal(refused, 3, 'writes are refused while the disk is full');
  const balance = (await call(app, '/api/credits?username=Steve')).json().raw_credits;
  const health = await call(app, '/health');
  t.equal(health.statusCode, 503, '/health says so');
  t.same(health.json(), { status: false, error: 'SERVICE_UNAVAILABLE', message: 'The disk is full.' });
  t.ok(health.headers['retry-after'], 'Retry-After on /health');
  clock.advance(1100);
  t.equal((await call(app, '/health')).statusCode, 200, 'writeFaultSeconds after the last refusal, /health no longer says so on its own');
  t.equal((await add()).statusCode, 503);
  t.equal((await call(app, '/health')).statusCode, 503, 'until the next write is refused');

  rmSync(filler);
  const res = await add();
  t.equal(res.statusCode, 200, `serving again once space is back: ${res.body}`);
  t.equal((await call(app, '/health')).statusCode, 200, 'and /health is up with the first write that succeeds');
  t.equal((await call(app, '/api/credits?username=Steve')).json().raw_credits, balance + 1, 'exactly the one new credit: nothing half-written before');
  const [total] = await app.db.query(sql`select ${fields({ s: sum(CreditsLedgerEntry.c.delta) })} from ${CreditsLedgerEntry}`);
  t.equal(Number(total!.s) / 100, balance + 1, 'the ledger agrees with the balance');
}

t.test('SQLite: a full disk answers 503 and writes nothing, then serves again by itself', { skip: onMysql && 'the SQLite run does this one' }, async (t) => {
  const dir = smallDisk(3);
  if (!dir) return t.plan(0, CANNOT_MOUNT);
  t.teardown(() => unmount(dir));
  await fullDisk(t, dir, `sqlite:${join(dir, 'db.sqlite')}`, 200);
});

const mariaSkip = !onMysql ? 'the MariaDB run (TEST_MYSQL_URL set) does this one' : !haveMariaDb() && 'needs the mariadbd binary';
t.test('MariaDB: a full disk answers 503 and writes nothing, then serves again by itself', { skip: mariaSkip }, async (t) => {
  // The smallest a stock MariaDB fits in: its system tables, a 12 MiB system tablespace, a
  // temporary one and a 4 MiB redo log take about 33 MiB.
  const dir = smallDisk(64);
  if (!dir) return t.plan(0, CANNOT_MOUNT);
  t.teardown(() => unmount(dir));
  const server = await MariaDbServer.create({ dir, args: ['--innodb-log-file-size=4M', '--innodb-buffer-pool-size=16M', '--innodb-autoextend-increment=1'] });
  // Teardowns run last-added first: the server stops before its disk goes.
  t.teardown(() => server.destroy());
  await fullDisk(t, dir, await server.database('disk'), 5000);
});

t.test(
  'SQLite: a read-only database boots, /health says it is read-only, reads answer and writes get 503',
  { skip: onMysql && 'the SQLite run does this one' },
  async (t) => {
    const dir = scratchDir(t);
    // The writer that made the database stays open, as another process would: its -wal and -shm
    // files let a read-only connection read the file (SQLite cannot create them on a read-only mount).
    const writer = await build(t, { databaseUrl: `sqlite:${join(dir, 'db.sqlite')}`, features: ['users', 'credits'] });
    await newUser(writer, 'Steve', { cents: 1000 });
    const view = readOnlyView(dir);
    if (!view) return t.plan(0, CANNOT_MOUNT);
    t.teardown(() => unmount(view));
    const app = await build(t, { databaseUrl: `sqlite:${join(view, 'db.sqlite')}`, features: ['users', 'credits'] });

    const health = await call(app, '/health');
    t.equal(health.statusCode, 503);
    t.same(health.json(), { status: false, error: 'SERVICE_UNAVAILABLE', message: 'The database is read-only.' });
    t.ok(health.headers['retry-after'], 'Retry-After on /health');
    t.equal((await call(app, '/api/credits?username=Steve')).json().raw_credits, 10, 'reads answer');

    for (const as of ['urlencoded', 'json'] as const) {
      const res = await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '1.00' }, as });
      t.equal(res.statusCode, 503, res.body);
      t.strictSame(Object.keys(res.json()), ['status', 'error', 'message']);
      t.match(res.json(), { status: false, error: 'SERVICE_UNAVAILABLE' }, 'our code to a caller that is no Java client');
      t.ok(res.headers['retry-after'], 'Retry-After on a write');
    }
    t.equal((await call(writer, '/api/credits?username=Steve')).json().raw_credits, 10, 'nothing was written');
    t.equal((await call(writer, '/health')).json().database, 'up', 'the writable connection is healthy: the probe left nothing behind');
  },
);
