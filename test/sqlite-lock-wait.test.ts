/**
 * SQLite on a file: a statement that finds another connection's write lock waits for it between
 * turns of the event loop (core/db/sqlite-file.ts LockWait), never inside SQLite, where the wait would
 * hold the loop and with it a second instance in the same process that holds the lock.
 */
import { DatabaseSync } from 'node:sqlite';
import t from 'tap';
import { raw, sql } from '../core/sql.ts';
import { settle, until } from './fixtures.ts';
import { call, helloOn, onMysql, sharedDatabaseUrl } from './helper.ts';

const skip = onMysql ? "SQLite's own lock" : false;

const greet = (app: Awaited<ReturnType<typeof helloOn>>, name: string) => call(app, '/api/hello/greetings', { body: { name }, as: 'json' });

t.test("two instances on one file in one process: a write waits for the other's transaction to end, and the loop turns meanwhile", { skip }, async (t) => {
  const url = await sharedDatabaseUrl(t);
  const one = await helloOn(t, url);
  const two = await helloOn(t, url);

  // One's transaction holds the file's write lock across awaits, as a feature's does.
  let finish: (() => void) | undefined;
  const held = one.db.transaction(async () => {
    await one.db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'one'})`);
    await new Promise<void>((resolve) => {
      finish = resolve;
    });
  });
  await until(() => finish !== undefined);

  const answered: string[] = [];
  const write = greet(two, 'two').then((res) => {
    answered.push('write');
    return res;
  });
  const inTransaction = two.db
    .transaction(() => two.db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'in a transaction'})`))
    .then(() => answered.push('transaction'));
  await settle();
  t.same(answered, [], "neither goes while one's transaction holds the lock");
  t.equal((await call(two, '/api/hello/greetings')).statusCode, 200, 'a read on the other instance answers meanwhile');

  finish!();
  await held;
  const res = await write;
  t.equal(res.statusCode, 201, res.body);
  await inTransaction;
  const names = (await call(one, '/api/hello/greetings')).json().map((g: { text: string }) => g.text);
  t.equal(names.length, 3, 'all three are written');
});

t.test('a write refused after the wait when another connection keeps the lock: unavailable, and nothing written', { skip }, async (t) => {
  const url = await sharedDatabaseUrl(t);
  const app = await helloOn(t, url);
  const other = new DatabaseSync(url.slice('sqlite:'.length));
  t.teardown(() => other.close());
  other.exec('begin immediate');

  // The statement meets the lock in the call itself: SQLite's own wait would return only after it.
  let refused = false;
  const write = app.db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'late'})`).finally(() => {
    refused = true;
  });
  const viaApi = greet(app, 'late too');
  await settle();
  t.notOk(refused, 'the write is still waiting');
  t.equal((await call(app, '/api/hello/greetings')).statusCode, 200, 'a read answers while it waits');

  const err = await write.then(
    () => undefined,
    (e: { errcode?: number }) => e,
  );
  t.equal(err?.errcode, 5, 'refused with the lock (SQLITE_BUSY), once the wait ran out');
  const res = await viaApi;
  t.equal(res.statusCode, 503, res.body);
  t.equal(res.json().error, 'SERVICE_UNAVAILABLE');
  other.exec('rollback');
  t.same((await call(app, '/api/hello/greetings')).json(), [], 'nothing was written');
  t.equal((await greet(app, 'after')).statusCode, 201, 'once the lock is let go, writes go again');
});
