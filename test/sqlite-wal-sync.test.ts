/**
 * SQLite on a file commits with synchronous = normal and makes each commit durable with an fsync
 * of the write-ahead log (core/db/sqlite-file.ts WalSync), on the event loop while the disk answers
 * quickly, else on a thread of its own: a commit is answered only once an fsync that began after it
 * has returned, and commits asking while one runs share the next.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { INLINE_FSYNC_MS, WalSync } from '../core/db/sqlite-file.ts';
import { raw, sql } from '../core/sql.ts';
import { settle, until } from './fixtures.ts';
import { build, greetingsOnFile, onMysql, scrapeMetrics, scratchDir, sharedDatabaseUrl, type TestLike } from './helper.ts';

/** WalSync's fsyncs, each held at a gate until one `release()`, then run (or failed with `failWith`). */
function heldSyncs(t: TestLike, failWith?: Error) {
  const original = WalSync.prototype.flush;
  const gates: (() => void)[] = [];
  let calls = 0;
  WalSync.prototype.flush = async function (this: WalSync) {
    calls++;
    await new Promise<void>((r) => gates.push(r));
    if (failWith) throw failWith;
    return original.call(this);
  };
  t.teardown(() => {
    WalSync.prototype.flush = original;
    for (const open of gates.splice(0)) open();
  });
  return {
    calls: () => calls,
    waiting: () => gates.length,
    release: () => gates.shift()?.(),
  };
}

t.test(
  'SQLite on a file: a commit is answered after an fsync of its log that began after it, and commits asking meanwhile share the next',
  { skip: onMysql ? "SQLite's own commit path" : false },
  async (t) => {
    const { db, committed } = await greetingsOnFile(t);
    const insert = (name: string) => sql`insert into ${raw('hello_greetings')} (name) values (${name})`;
    t.same(await db.query(sql`pragma synchronous`), [{ synchronous: 1 }], "SQLite's COMMIT leaves the log's fsync to the server (normal)");

    const syncs = heldSyncs(t);
    const answered: string[] = [];
    const a = db.transaction(() => db.run(insert('a'))).then(() => answered.push('a'));
    await until(() => syncs.waiting() === 1);
    t.same(committed(), ['a'], 'the transaction is committed');
    await settle();
    t.same(answered, [], 'but not answered while its fsync runs');

    // Two more commits while that fsync runs: a transaction and a write from outside one.
    const b = db.transaction(() => db.run(insert('b'))).then(() => answered.push('b'));
    const w = db.run(insert('w')).then(() => answered.push('w'));
    await until(() => committed().length === 3);
    t.equal(syncs.calls(), 1, 'no second fsync begins while the first runs');
    syncs.release();
    await a;
    await until(() => syncs.waiting() === 1);
    t.same(answered, ['a'], 'the first fsync answers the commit before it only; the two after it wait for the next');
    syncs.release();
    await Promise.all([b, w]);
    t.equal(syncs.calls(), 2, 'the two later commits shared one fsync');
    t.same(answered.slice(1).sort(), ['b', 'w']);

    const before = syncs.calls();
    await db.run(sql`delete from ${raw('hello_greetings')} where name = ${'none'}`);
    t.equal(syncs.calls(), before, 'a write that changed no row asks for no fsync');
  },
);

t.test('SQLite on a file: a commit whose fsync fails is answered with the failure', { skip: onMysql ? "SQLite's own commit path" : false }, async (t) => {
  const { db } = await greetingsOnFile(t);
  const syncs = heldSyncs(t, Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
  const failed = db.transaction(() => db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'x'})`));
  await until(() => syncs.waiting() === 1);
  syncs.release();
  await t.rejects(failed, { code: 'EIO' }, 'the members learn that their commit may not be on the disk');
});

t.test(
  "SQLite on a file: a commit is answered while libuv's thread pool is busy (a slow DNS lookup, password hashes)",
  { skip: onMysql ? "SQLite's own commit path" : process.platform === 'win32' ? 'a named pipe' : false },
  async (t) => {
    const { db } = await greetingsOnFile(t);
    // Each open of a named pipe holds a thread of the pool until a writer opens it: all four (the pool's size) held.
    const fifo = join(scratchDir(t), 'held');
    execFileSync('mkfifo', [fifo]);
    let poolFree = false;
    const held = Array.from({ length: Number(process.env.UV_THREADPOOL_SIZE ?? 4) }, () =>
      open(fifo, 'r').then(async (handle) => {
        poolFree = true;
        await handle.close();
      }),
    );
    await settle();
    await db.transaction(() => db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'while busy'})`));
    t.notOk(poolFree, 'answered, the pool still held');
    // Opened from this thread: an open from the pool would wait behind the four.
    const writer = openSync(fifo, 'w');
    await Promise.all(held);
    closeSync(writer);
  },
);

t.test('SQLite on a file: the fsync runs on the event loop while the disk answers within the limit, and on its thread once it does not', async (t) => {
  const file = join(scratchDir(t), 'db.sqlite-wal');
  writeFileSync(file, 'frames');
  /** Whether the loop turned before `flush` answered: an answer from the thread comes with a turn. */
  const turned = async (wal: WalSync) => {
    let turn = false;
    setImmediate(() => {
      turn = true;
    });
    await wal.flush();
    return turn;
  };

  const quick = new WalSync(file, Number.POSITIVE_INFINITY);
  t.teardown(() => quick.close());
  t.equal(quick.place, 'loop');
  t.notOk(await turned(quick), 'a quick disk: answered on the loop, without a turn');
  t.equal(quick.place, 'loop', 'and the next one runs there too');

  // No fsync takes under a picosecond: the first, tried on the loop, sends the next ones to the thread.
  const slow = new WalSync(file, 1e-9);
  t.teardown(() => slow.close());
  t.equal(slow.place, 'loop', 'the first fsync is tried on the loop');
  t.notOk(await turned(slow));
  t.equal(slow.place, 'thread', 'over the limit: the next runs on the thread');
  t.ok(await turned(slow), 'answered by the thread, after a turn of the loop');
  t.equal(slow.place, 'thread', "the thread's fsyncs count in the average: it stays there");

  // A batch's commit asks from the event loop: a log that cannot be opened fails its members, nothing is thrown.
  const lost = new WalSync(join(scratchDir(t), 'none', 'db.sqlite-wal'));
  t.teardown(() => lost.close());
  await t.rejects(lost.synced(), { code: 'ENOENT' }, "a log that cannot be opened: the commit's answer is the failure");
});

t.test(
  "GET /metrics, SQLite on a file: the log's fsyncs, their recent average and whether they run on the thread",
  { skip: onMysql ? "SQLite's own commit path" : false },
  async (t) => {
    const app = await build(t, {
      features: [],
      config: { metrics: { enabled: true, public: true }, plugins: { hello: { enabled: true } } },
      databaseUrl: await sharedDatabaseUrl(t),
    });
    await app.db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'counted'})`);
    const value = await scrapeMetrics(app);
    const average = value('db_wal_fsync_average_seconds');
    t.ok(average > 0, "the commit's fsync is in the average");
    t.equal(value('db_wal_fsync_on_thread'), average < INLINE_FSYNC_MS / 1000 ? 0 : 1, 'on the thread exactly while the average is past the limit');
  },
);

t.test(
  'SQLite on a file: a commit waits a turn of the loop for more transactions only where its fsync runs on the thread',
  { skip: onMysql ? "SQLite's own commit path" : false },
  async (t) => {
    const { db, committed } = await greetingsOnFile(t);
    const insert = (name: string) => sql`insert into ${raw('hello_greetings')} (name) values (${name})`;
    const place = Object.getOwnPropertyDescriptor(WalSync.prototype, 'place')!;
    t.teardown(() => Object.defineProperty(WalSync.prototype, 'place', place));
    /** The fsyncs as if the disk were quick (`loop`) or slow (`thread`), whatever this machine's is. */
    const disk = (where: 'loop' | 'thread') => Object.defineProperty(WalSync.prototype, 'place', { configurable: true, get: () => where });

    disk('loop');
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    await db.transaction(() => db.run(insert('alone')));
    t.notOk(turned, 'the fsync on the loop: a lone transaction is committed and answered without a turn');

    /** Whether a transaction begun a turn after another saw it committed. */
    const secondSawFirst = async (where: 'loop' | 'thread') => {
      disk(where);
      let seen: string[] = [];
      const first = db.transaction(() => db.run(insert(`first-${where}`)));
      const second = settle().then(() =>
        db.transaction(async () => {
          seen = committed();
          await db.run(insert(`second-${where}`));
        }),
      );
      await Promise.all([first, second]);
      return seen.includes(`first-${where}`);
    };
    t.ok(await secondSawFirst('loop'), 'on the loop, the first committed at once: the second, a turn later, saw it');
    t.notOk(await secondSawFirst('thread'), 'on the thread, the first waited that turn: the second joined it, to share one commit and its fsync');
    t.same(committed().slice(-4), ['first-loop', 'second-loop', 'first-thread', 'second-thread'], 'all four committed, in order');
  },
);
