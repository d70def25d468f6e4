/**
 * The lease sweep under a broken disk (SQLite on a small file system of its own, see
 * test/disk.test.ts): a database that cannot take writes is logged once, in a sentence, and once
 * more when it can again, not with a stack every round. The logging is the same on MariaDB
 * (core/background.ts); the full disk is made on SQLite, where it takes a tmpfs and no server.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { TestClock } from '../../../core/clock.ts';
import { until } from '../../../test/fixtures.ts';
import { build, call, onMysql, scratchDir } from '../../../test/helper.ts';
import { CANNOT_MOUNT, fill, readOnlyView, smallDisk, unmount } from '../../../test/small-disk.ts';
import { DELIVERY_FEATURES, addCommand, buy, makeCategory, makeProduct, makeServer, makeUser, backgroundRounds } from './fixtures.ts';

const skip = onMysql && 'the SQLite run does this one';
const config = { plugins: { delivery: { leaseSeconds: 1, sweepMs: 50 } } };

/** The sweep's log lines: level and message, and whether a stack came with it. */
function sweepLog(lines: string[]) {
  return lines
    .map((l) => JSON.parse(l))
    .filter((l) => /lease/.test(l.msg))
    .map((l) => ({ level: l.level, msg: l.msg, stack: Boolean(l.err?.stack) }));
}

t.test('a full disk under the lease sweep: logged once, and once when space is back', { skip }, async (t) => {
  const dir = smallDisk(3);
  if (!dir) return t.plan(0, CANNOT_MOUNT);
  t.teardown(() => unmount(dir));
  const lines: string[] = [];
  // The leases lapse when the test moves the clock, after the disk is full: every sweep round then
  // has rows to write, and none succeeds by having nothing to do (a real 1 s lease could lapse
  // before or after the fill, by the machine's load).
  const clock = new TestClock();
  const app = await build(t, {
    databaseUrl: `sqlite:${join(dir, 'db.sqlite')}`,
    features: DELIVERY_FEATURES,
    config: { plugins: { delivery: { leaseSeconds: 60, sweepMs: 50 } } },
    clock,
    logStream: {
      write: (l) => {
        lines.push(l);
      },
    },
  });
  const server = await makeServer(app);
  const sword = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Items' }), name: 'Sword', price: '1' });
  // Long commands spread the claimed rows over many pages: handing them back is a bigger write
  // than any the disk refuses below, so no room the WAL still has can take it.
  await addCommand(app, sword, { serverID: server.id, trigger: 'purchase', command: `give {username} ${'x'.repeat(2000)}` });
  const steve = await makeUser(app, 'steve', 100_000);
  for (let i = 0; i < 20; i++) t.equal((await buy(app, { userID: steve, products: [sword] })).statusCode, 200);
  const claim = () => call(app, '/api/delivery/claim', { body: { token: server.token, limit: 100 }, as: 'urlencoded' });
  t.equal((await claim()).json().commands.length, 20, 'claimed, and never acked: the sweep must hand them back');

  const rounds = backgroundRounds(app, 'expireLeases');
  const filler = fill(dir);
  clock.advance(61_000);
  await until(() => sweepLog(lines).length > 0);
  let refused = 0;
  for (let i = 0; refused < 3 && i < 200; i++) if ((await buy(app, { userID: steve, products: [sword] })).statusCode === 503) refused++;
  t.equal(refused, 3, 'buys are refused: the disk is full');
  const seen = rounds();
  await until(() => rounds() >= seen + 5);
  t.same(
    sweepLog(lines),
    [{ level: 50, msg: 'delivery lease sweep paused: The disk is full. It resumes by itself once the database serves again.', stack: false }],
    'one line for the whole outage, no stack',
  );

  rmSync(filler);
  await until(() => sweepLog(lines).length > 1);
  t.same(sweepLog(lines).slice(1), [{ level: 30, msg: 'delivery lease sweep resumed: the database serves again.', stack: false }], 'and one when it ends');
  t.equal((await claim()).json().commands.length, 20, 'the lapsed leases were handed back');
});

t.test('a read-only database under the lease sweep: logged once', { skip }, async (t) => {
  const dir = scratchDir(t);
  // The writer keeps the -wal and -shm files the read-only connection needs (as in test/disk.test.ts).
  await build(t, { databaseUrl: `sqlite:${join(dir, 'db.sqlite')}`, features: DELIVERY_FEATURES });
  const view = readOnlyView(dir);
  if (!view) return t.plan(0, CANNOT_MOUNT);
  t.teardown(() => unmount(view));
  const lines: string[] = [];
  const app = await build(t, {
    databaseUrl: `sqlite:${join(view, 'db.sqlite')}`,
    features: DELIVERY_FEATURES,
    config,
    logStream: {
      write: (l) => {
        lines.push(l);
      },
    },
  });
  const rounds = backgroundRounds(app, 'expireLeases');
  await until(() => rounds() >= 5);
  t.same(sweepLog(lines), [
    { level: 50, msg: 'delivery lease sweep paused: The database is read-only. It resumes by itself once the database serves again.', stack: false },
  ]);
});
