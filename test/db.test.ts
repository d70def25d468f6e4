import t from 'tap';
import { buildApp } from '../core/app.ts';
import { ADMIN_KEY, build, call, freshDatabaseUrl, greetingsOnFile, onMysql, sharedDatabaseUrl, type TestLike } from './helper.ts';
import { createConnection } from 'mysql2/promise';
import { ECHO_PLUGIN, settle, until } from './fixtures.ts';
import { MariaDbServer, haveMariaDb } from './mariadb-server.ts';
import { execFileSync } from 'node:child_process';
import { loadConfig } from '../core/config.ts';
import { coreEntities } from '../core/entities.ts';
import { discoverFeatures } from '../core/discover.ts';
import { Table } from '../core/table.ts';
import { raw, sql } from '../core/sql.ts';
import type { Database } from '../core/db.ts';
import { VotesLink } from '../plugins/votes/entities.ts';

t.test('after migrating, the schema matches the entities of every feature', async (t) => {
  const app = await build(t, { config: { plugins: { hello: { enabled: true } } } });
  const diff = await (await app.db.orm()).schema.getUpdateSchemaSQL({ wrap: false, safe: false, dropTables: false });
  t.equal(diff.trim(), '', `no difference on ${app.db.dialect}`);
});

t.test('every table names its columns as MikroORM does', async (t) => {
  const app = await build(t, { config: { plugins: { hello: { enabled: true } } } });
  const config = loadConfig({}, { plugins: { hello: { enabled: true } } });
  const definitions = (await discoverFeatures(config)).map((f) => f.def);
  const tables = [...coreEntities, ...definitions.flatMap((f) => f.entities ?? [])].filter((e) => e instanceof Table);
  t.ok(tables.length >= 30, `${tables.length} tables described with core/table.ts`);
  const metadata = (await app.db.orm()).getMetadata();
  for (const table of tables) {
    const meta = metadata.find(table.name as never)!;
    t.equal(meta.tableName, table.tableName, table.name);
    for (const [property, column] of Object.entries(table.columnOf)) {
      t.same(meta.properties[property]?.fieldNames, [column], `${table.tableName}.${column}`);
    }
  }
});

t.test('a table writes several records in one bound statement, refuses mixed ones, and reads a join through fromRow', async (t) => {
  const app = await build(t, { features: ['votes'] });
  const links = [
    { name: "Bob's list", link: 'https://a.example/{username}' },
    { name: 'Two', link: 'https://b.example/' },
  ];
  const before = app.db.statements;
  await VotesLink.insertMany(app.db, links);
  t.equal(app.db.statements - before, 1, 'one statement for both rows');
  await VotesLink.insertMany(app.db, []);
  t.equal(app.db.statements - before, 1, 'nothing to write, no statement');
  await t.rejects(VotesLink.insertMany(app.db, [{ name: 'Three', link: 'https://c.example/' }, { name: 'Four' }]), /same properties/);
  // The same table twice: an unqualified column list would be ambiguous here.
  const [v, w] = [VotesLink.as('v'), VotesLink.as('w')];
  const rows = await app.db.query(sql`select ${v.columns} from ${v} join ${w} on ${w.c.id} = ${v.c.id} order by ${v.c.id}`);
  t.same(
    rows.map((r) => VotesLink.fromRow(r)),
    links.map((l, i) => ({ id: i + 1, ...l })),
    'read back as written, nothing of the refused batch',
  );

  t.same(await VotesLink.find(app.db, 2), { id: 2, ...links[1] }, 'find: one record by its key');
  t.equal(await VotesLink.find(app.db, 3), undefined, 'find: no such row');
  const counted = app.db.statements;
  for (const id of [0, -1, 1.5, Number.NaN, 2 ** 53]) t.equal(await VotesLink.find(app.db, id), undefined, `find(${id}): no row can have it`);
  t.equal(app.db.statements, counted, 'an impossible key costs no statement');
});

/** Waits until another connection to `url`'s database runs a statement like `like`: one the test means to be blocked. */
async function runningElsewhere(url: string, like: string): Promise<void> {
  const watcher = await createConnection(url);
  try {
    await until(async () => {
      const [rows] = await watcher.query(
        'select count(*) as n from information_schema.processlist where db = database() and id <> connection_id() and info like ?',
        [like],
      );
      return Number((rows as { n: number }[])[0]!.n) > 0;
    });
  } finally {
    await watcher.end();
  }
}

t.test(
  'find with a lock holds the row until the transaction ends',
  { skip: onMysql ? false : "row locks are MariaDB's (run with TEST_MYSQL_URL)" },
  async (t) => {
    const url = await freshDatabaseUrl(t);
    const app = await build(t, { features: ['votes'], databaseUrl: url });
    await VotesLink.insert(app.db, { name: 'One', link: 'https://a.example/' });
    let release!: () => void;
    let locked!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const holding = new Promise<void>((r) => {
      locked = r;
    });
    const holder = app.db.transaction(async () => {
      t.equal((await VotesLink.find(app.db, 1, 'update'))?.name, 'One');
      locked();
      await held;
      await VotesLink.update(app.db, 1, { name: 'Held' });
    });
    await holding;
    // Another connection's write waits for the holder's commit, so it lands last.
    const writer = app.db.transaction(async () => {
      await VotesLink.update(app.db, 1, { name: 'Second' });
    });
    await runningElsewhere(url, 'update `votes_links`%');
    release();
    await Promise.all([holder, writer]);
    t.equal((await VotesLink.find(app.db, 1))?.name, 'Second', 'the other write waited for the lock');
  },
);

/**
 * A server started in a fresh process on a migrated database, `preload` run before anything else:
 * its /health status, and `globalThis[noted]` as the preload left it (null if never set).
 */
async function startedAfterMigration(t: TestLike, preload: string, noted: string): Promise<unknown> {
  const url = await sharedDatabaseUrl(t);
  const first = await buildApp({ env: { DATABASE_URL: url }, config: { log: { level: 'silent' } } });
  await first.ready();
  await first.close();
  const script = `const { buildApp } = await import(${JSON.stringify(new URL('../core/app.ts', import.meta.url).href)});
    const app = await buildApp({ config: { log: { level: 'silent' } } });
    await app.ready();
    const res = await app.inject({ url: '/health' });
    await app.close();
    console.log(JSON.stringify({ health: res.statusCode, ${noted}: globalThis.${noted} ?? null }));`;
  const out = execFileSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(preload)}`, '--input-type=module', '-e', script], {
    env: { ...process.env, DATABASE_URL: url },
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

t.test('a server whose schema is up to date never loads MikroORM', async (t) => {
  // Noting every module the fresh process loads.
  const hooks = `import { registerHooks } from 'node:module';
    registerHooks({ load(url, context, next) { if (url.includes('@mikro-orm')) globalThis.loaded = url; return next(url, context); } });`;
  t.same(await startedAfterMigration(t, hooks, 'loaded'), { health: 200, loaded: null });
});

t.test('a server on the default UTC starts without ICU: no collation, no time zone formatter', async (t) => {
  // Either one maps megabytes of ICU's data into the process (docs/performance.md: resident memory). The
  // database is migrated first because MikroORM, which only migrations load, sorts with localeCompare.
  const watch = `globalThis.icuUsedBy = [];
    const { localeCompare } = String.prototype;
    String.prototype.localeCompare = function (...a) { globalThis.icuUsedBy.push('localeCompare'); return localeCompare.apply(this, a); };
    const DateTimeFormat = Intl.DateTimeFormat;
    Intl.DateTimeFormat = function (...a) { globalThis.icuUsedBy.push('DateTimeFormat'); return new DateTimeFormat(...a); };`;
  t.same(await startedAfterMigration(t, watch, 'icuUsedBy'), { health: 200, icuUsedBy: [] });
});

t.test('transactions: all or nothing, nested calls join, events wait for the commit', async (t) => {
  const app = await build(t, { features: [], config: { plugins: { hello: { enabled: true } } } });
  const { db, events } = app;
  const seen: number[] = [];
  events.on('users.created', (p) => {
    seen.push(p.userId);
  });

  await t.rejects(
    db.transaction(async () => {
      await db.unchecked.run("insert into hello_greetings (name) values ('rolled back')");
      await db.transaction(async () => {
        await db.unchecked.run("insert into hello_greetings (name) values ('inner')");
        await events.emit('users.created', { userId: 1, username: 'x' });
      });
      throw new Error('boom');
    }),
    { message: 'boom' },
  );
  let rows = await db.unchecked.query('select name from hello_greetings');
  t.same(rows, [], 'the inner call joined the outer transaction and rolled back with it');
  await settle();
  t.same(seen, [], 'no event for work that rolled back');

  await db.transaction(async () => {
    await db.unchecked.run("insert into hello_greetings (name) values ('kept')");
    await events.emit('users.created', { userId: 2, username: 'y' });
    t.same(seen, [], 'listeners wait for the commit');
  });
  await settle();
  t.same(seen, [2]);
  rows = await db.unchecked.query('select name from hello_greetings');
  t.same(rows, [{ name: 'kept' }]);

  const inside: number[] = [];
  events.onCommitting('users.created', (p) => {
    inside.push(p.userId);
    throw new Error('outbox write failed');
  });
  await t.rejects(
    db.transaction(async () => {
      await db.unchecked.run("insert into hello_greetings (name) values ('lost')");
      await events.emit('users.created', { userId: 3, username: 'z' });
    }),
    { message: 'outbox write failed' },
  );
  t.same(inside, [3]);
  t.same(await db.unchecked.query('select name from hello_greetings'), [{ name: 'kept' }], 'a failing in-transaction listener rolls back the cause');
});

/** A flush that writes greetings and keeps what each call was given. */
function greetingsFlush(db: Database) {
  const flushes: string[][] = [];
  const flush = async (names: string[]) => {
    flushes.push(names);
    for (const name of names) await db.unchecked.run('insert into hello_greetings (name) values (?)', [name]);
  };
  return { flushes, flush };
}

t.test("collect: a transaction's items are written by one flush just before its commit, inside it; none if it rolls back; at once outside one", async (t) => {
  const app = await build(t, { features: [], config: { plugins: { hello: { enabled: true } } } });
  const { db } = app;
  const key = {};
  const { flushes, flush } = greetingsFlush(db);
  await db.transaction(async () => {
    await db.collect(key, 'a', flush);
    await db.transaction(() => db.collect(key, 'b', flush));
    t.same(flushes, [], 'nothing is written before the transaction ends');
  });
  t.same(flushes, [['a', 'b']], 'one flush with every item, nested calls included');
  t.same(await db.unchecked.query('select name from hello_greetings order by name'), [{ name: 'a' }, { name: 'b' }]);

  await t.rejects(
    db.transaction(async () => {
      await db.collect(key, 'c', flush);
      throw new Error('boom');
    }),
    { message: 'boom' },
  );
  await t.rejects(
    db.transaction(() =>
      db.collect(key, 'd', async () => {
        throw new Error('flush failed');
      }),
    ),
    { message: 'flush failed' },
  );
  t.same(flushes, [['a', 'b']], 'a transaction that fails before its commit flushes nothing');
  await db.collect(key, 'e', flush);
  t.same(flushes, [['a', 'b'], ['e']], 'outside a transaction the flush runs at once');
  t.same(
    (await db.unchecked.query<{ name: string }>('select name from hello_greetings order by name')).map((r) => r.name),
    ['a', 'b', 'e'],
  );
});

t.test(
  'collect on SQLite: the transactions sharing a commit share one flush; one that fails adds nothing; a failed flush fails them all',
  { skip: onMysql ? "SQLite's own commit path" : false },
  async (t) => {
    const app = await build(t, { features: [], config: { plugins: { hello: { enabled: true } } } });
    const { db } = app;
    const key = {};
    const { flushes, flush } = greetingsFlush(db);
    const names = async () => (await db.unchecked.query<{ name: string }>('select name from hello_greetings order by name')).map((r) => r.name);
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    // A holds the connection until the gate opens; B, C and D queue behind it and join its commit.
    const a = db.transaction(async () => {
      await db.collect(key, 'a', flush);
      await gate;
    });
    await settle();
    const b = db.transaction(async () => {
      await db.collect(key, 'b1', flush);
      await db.collect(key, 'b2', flush);
    });
    const c = db.transaction(async () => {
      await db.collect(key, 'c', flush);
      throw new Error('c fails');
    });
    const d = db.transaction(() => db.collect(key, 'd', flush));
    open();
    await t.rejects(c, { message: 'c fails' });
    await Promise.all([a, b, d]);
    t.same(flushes, [['a', 'b1', 'b2', 'd']], "one flush for the three that committed together; C's item dropped with it");
    t.same(await names(), ['a', 'b1', 'b2', 'd']);

    let open2!: () => void;
    const gate2 = new Promise<void>((r) => {
      open2 = r;
    });
    const e = db.transaction(async () => {
      await db.unchecked.run('insert into hello_greetings (name) values (?)', ['e']);
      await gate2;
    });
    await settle();
    const f = db.transaction(() =>
      db.collect(key, 'f', async () => {
        throw new Error('flush failed');
      }),
    );
    open2();
    await t.rejects(e, { message: 'flush failed' }, 'a member whose own work succeeded fails with the flush of its commit');
    await t.rejects(f, { message: 'flush failed' });
    t.same(await names(), ['a', 'b1', 'b2', 'd'], 'nothing of that batch is kept');
  },
);

t.test(
  'SQLite on a file: a read from outside any transaction answers at once with the last commit while a transaction holds the connection',
  { skip: onMysql ? "SQLite's own reader connection" : false },
  async (t) => {
    const { db, committed } = await greetingsOnFile(t);
    const greetings = sql`select name from ${raw('hello_greetings')} order by id`;
    const names = async () => (await db.query(greetings)).map((r) => String(r.name));
    const arrays = async () => (await db.queryArrays(greetings)).map((r) => String(r[0]));
    await db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'before'})`);
    const { promise: gate, resolve: open } = Promise.withResolvers<void>();
    const { promise: started, resolve: running } = Promise.withResolvers<void>();
    let seenInside: string[] = [];
    const held = db.transaction(async () => {
      await db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'held'})`);
      seenInside = await names();
      running();
      await gate;
    });
    await started;
    t.same(seenInside, ['before', 'held'], 'inside the transaction, its own write is seen');
    t.same(await names(), ['before'], 'outside, a read answers while the transaction holds the connection, without its write');
    t.same(await arrays(), ['before'], 'rows as arrays too');
    let waited = false;
    const written = db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'after'})`).then(() => {
      waited = true;
    });
    await settle();
    t.notOk(waited, 'a write from outside still waits for the transaction');
    open();
    await Promise.all([held, written]);
    t.same(await names(), ['before', 'held', 'after'], 'once committed, the reads see it');
    t.same(committed(), ['before', 'held', 'after']);
  },
);

t.test(
  'SQLite: a write from outside any transaction joins the batch that holds the connection, and shares its commit',
  { skip: onMysql ? "SQLite's own commit path" : false },
  async (t) => {
    const { db, committed } = await greetingsOnFile(t);
    const names = async () => (await db.query(sql`select name from ${raw('hello_greetings')} order by id`)).map((r) => String(r.name));
    const { promise: gate, resolve: open } = Promise.withResolvers<void>();
    const answered: string[] = [];
    // A holds the connection; the write W and then the transaction B arrive meanwhile.
    const a = db
      .transaction(async () => {
        await db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'a'})`);
        await gate;
      })
      .then(() => answered.push('a'));
    await settle();
    const w = db.run(sql`insert into ${raw('hello_greetings')} (name) values (${'w'})`).then((r) => {
      answered.push('w');
      return r;
    });
    let seenByB: string[] = [];
    const { promise: bGate, resolve: finishB } = Promise.withResolvers<void>();
    const { promise: bStarted, resolve: bRunning } = Promise.withResolvers<void>();
    const b = db
      .transaction(async () => {
        seenByB = await names();
        bRunning();
        await bGate;
      })
      .then(() => answered.push('b'));
    open();
    await bStarted;
    t.same(seenByB, ['a', 'w'], 'the write ran in the batch, after A and before B, which sees it');
    await settle();
    t.same(committed(), [], 'nothing of the batch is committed while B runs in it');
    t.same(answered, [], 'the write is not answered before the commit it shares');
    finishB();
    t.equal((await w).affectedRows, 1, 'the write answers its changed rows');
    await Promise.all([a, b]);
    t.same(committed(), ['a', 'w'], 'one commit made A and the write durable');
    t.same(answered, ['a', 'w', 'b'], 'each answered after that one commit');
  },
);

t.test(
  'SQLite groups commits: transactions that arrive together share one, none is answered or seen before it, and one that fails undoes only its own work',
  { skip: onMysql ? "SQLite's own commit path" : false },
  async (t) => {
    const { db, committed } = await greetingsOnFile(t);
    const insert = (name: string) => db.unchecked.run('insert into hello_greetings (name) values (?)', [name]);
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const answered: string[] = [];

    // A holds the connection until the gate opens; B, C and D arrive meanwhile and queue behind it.
    const a = db
      .transaction(async () => {
        await insert('a');
        await gate;
      })
      .then(() => answered.push('a'));
    await settle();
    let bRunning!: () => void;
    const bStarted = new Promise<void>((r) => {
      bRunning = r;
    });
    let finishB!: () => void;
    const bGate = new Promise<void>((r) => {
      finishB = r;
    });
    const b = db
      .transaction(async () => {
        await insert('b');
        bRunning();
        await bGate;
      })
      .then(() => answered.push('b'));
    const c = db.transaction(async () => {
      await insert('c');
      throw new Error('c fails');
    });
    const d = db
      .transaction(async () => {
        await insert('d');
      })
      .then(() => answered.push('d'));
    open();
    await bStarted;
    // A is done, but its commit is B's too: nobody outside sees A's row, and A has no answer yet.
    const read = db.unchecked.query<{ name: string }>('select name from hello_greetings order by id');
    await settle();
    t.same(committed(), [], "A's row is not committed while B runs in its batch");
    t.same(answered, [], 'A is not answered before the commit it shares');
    finishB();
    await t.rejects(c, { message: 'c fails' }, 'the failing transaction gets its own error');
    await Promise.all([a, b, d]);
    t.same(committed(), ['a', 'b', 'd'], "one commit made A, B and D durable; C's insert was undone alone");
    t.same(
      (await read).map((r) => r.name),
      [],
      'a read from outside answered at once, with the last commit (the reader connection)',
    );
    t.same(answered.sort(), ['a', 'b', 'd']);

    // SQLite dropping the whole transaction (here a member ends it behind the connection's back)
    // fails every member of the batch; the one queued after it starts a new batch and commits.
    let open2!: () => void;
    const gate2 = new Promise<void>((r) => {
      open2 = r;
    });
    const e = db.transaction(async () => {
      await insert('e');
      await gate2;
    });
    await settle();
    const f = db.transaction(async () => {
      await insert('f');
      await db.unchecked.run('rollback');
    });
    const g = db.transaction(async () => {
      await insert('g');
    });
    open2();
    await t.rejects(e, 'a member that finished fails with the batch it was in');
    await t.rejects(f);
    await g;
    t.same(committed(), ['a', 'b', 'd', 'g'], 'nothing of the lost batch is kept; the next batch commits');

    // A full batch (16) leaves the rest queued; a statement that waited outside runs before their batch
    // (a read the reader connection does not take, as every read in memory: not a plain select).
    await db.unchecked.run('delete from hello_greetings');
    let open3!: () => void;
    const gate3 = new Promise<void>((r) => {
      open3 = r;
    });
    const first = db.transaction(async () => {
      await insert('w0');
      await gate3;
    });
    await settle();
    const writes = Array.from({ length: 19 }, (_, i) =>
      db.transaction(async () => {
        await insert(`w${i + 1}`);
      }),
    );
    const waitingRead = db.unchecked.query<{ n: number }>('with counted as (select count(*) as n from hello_greetings) select n from counted');
    open3();
    t.equal(Number((await waitingRead)[0]!.n), 16, 'the read saw the first batch, and ran before the next one');
    await Promise.all([first, ...writes]);
    t.equal(committed().length, 20, 'the four left out of the full batch committed in the next');
  },
);

t.test(
  'a transaction that loses to another, or its connection before the commit, runs again from the start, its events once, up to database.transactionTries',
  { skip: onMysql ? false : 'needs MariaDB (run with TEST_MYSQL_URL)' },
  async (t) => {
    const url = await freshDatabaseUrl(t);
    const app = await build(t, {
      features: [],
      databaseUrl: url,
      config: { plugins: { hello: { enabled: true } }, database: { transactionTries: 3, retryDelayMs: 1 } },
    });
    const { db, events } = app;
    const seen: number[] = [];
    events.on('users.created', (p) => {
      seen.push(p.userId);
    });
    await db.unchecked.run("insert into hello_greetings (id, name) values (1, 'a'), (2, 'b')");

    // A real deadlock: the other client holds row 2 and has written more, so MariaDB rolls back
    // ours (the cheaper one) once it asks for row 1 that ours holds.
    const other = await createConnection(url);
    t.teardown(() => other.end());
    await other.query('start transaction');
    await other.query("update hello_greetings set name = 'other' where id = 2");
    await other.query("insert into hello_greetings (name) values ('x'), ('x'), ('x'), ('x'), ('x'), ('x'), ('x'), ('x')");
    let tries = 0;
    let otherDone: Promise<unknown> | undefined;
    await db.transaction(async () => {
      tries++;
      await db.unchecked.run("update hello_greetings set name = 'ours' where id = 1");
      await events.emit('users.created', { userId: tries, username: 'x' });
      if (tries === 1) {
        otherDone = other.query("update hello_greetings set name = 'other' where id = 1").then(() => other.query('commit'));
        await runningElsewhere(url, "update hello_greetings set name = 'other' where id = 1");
      }
      await db.unchecked.run("update hello_greetings set name = 'ours' where id = 2");
    });
    await otherDone;
    await settle();
    t.equal(tries, 2, 'the deadlock victim ran again');
    t.same(seen, [2], "only the committed try's event reached its listeners");
    t.same(await db.unchecked.query('select name from hello_greetings where id in (1, 2) order by id'), [{ name: 'ours' }, { name: 'ours' }]);

    // Galera's refusals, which a single server never gives: a certification conflict comes as the
    // same 1213; a node outside the primary component answers 1047.
    tries = 0;
    const notReady = Object.assign(new Error('WSREP has not yet prepared node for application use'), { errno: 1047 });
    await db.transaction(async () => {
      if (++tries === 1) throw notReady;
    });
    t.equal(tries, 2, '1047 is tried again');
    tries = 0;
    await t.rejects(
      db.transaction(async () => {
        tries++;
        throw notReady;
      }),
      notReady,
    );
    t.equal(tries, 3, 'no more tries than database.transactionTries');

    // A database node lost mid-transaction: its connection breaks. Before the commit was sent the
    // server rolled the work back, so it runs again on a new connection; at the commit it may have
    // committed, so the request fails (503) rather than risk doing it twice.
    const killer = await createConnection(url);
    t.teardown(() => killer.end());
    const killOwnConnection = async () => {
      const [row] = await db.unchecked.query<{ id: number }>('select connection_id() as id');
      await killer.query('kill ?', [row!.id]);
      await until(async () => {
        const [rows] = await killer.query('select count(*) as n from information_schema.processlist where id = ?', [row!.id]);
        return Number((rows as { n: number }[])[0]!.n) === 0;
      });
    };
    tries = 0;
    await db.transaction(async () => {
      if (++tries === 1) await killOwnConnection();
      await db.unchecked.run("update hello_greetings set name = 'after the loss' where id = 1");
    });
    t.equal(tries, 2, 'lost before its commit: run again');
    t.same(await db.unchecked.query('select name from hello_greetings where id = 1'), [{ name: 'after the loss' }]);
    tries = 0;
    await t.rejects(
      db.transaction(async () => {
        tries++;
        await db.unchecked.run("update hello_greetings set name = 'lost at commit' where id = 1");
        await killOwnConnection();
      }),
    );
    t.equal(tries, 1, 'lost at its commit: not run again');
    t.same(await db.unchecked.query('select name from hello_greetings where id = 1'), [{ name: 'after the loss' }]);
    t.equal(db.retries, 5, 'each run again is counted (db_transaction_retries_total)');
  },
);

t.test('every table has a primary key (Galera replicates rows by it)', async (t) => {
  const app = await build(t, { config: { plugins: { hello: { enabled: true }, examplepay: { enabled: true } } } });
  const tables =
    app.db.dialect === 'mysql'
      ? await app.db.unchecked.query<{ name: string; pk: number }>(`select t.table_name as name, (select count(*) from information_schema.table_constraints c
        where c.table_schema = t.table_schema and c.table_name = t.table_name and c.constraint_type = 'PRIMARY KEY') as pk
        from information_schema.tables t where t.table_schema = database() and t.table_type = 'BASE TABLE'`)
      : await app.db.unchecked.query<{ name: string; pk: number }>(`select m.name, (select count(*) from pragma_table_info(m.name) p where p.pk > 0) as pk
        from sqlite_master m where m.type = 'table' and m.name not like 'sqlite_%'`);
  t.ok(tables.length >= 30, `${tables.length} tables`);
  t.same(
    tables.filter((r) => Number(r.pk) === 0).map((r) => r.name),
    [],
    'none without one',
  );
});

t.test(
  'lock conflicts that outlast the retries: 503 with Retry-After, and nothing written',
  { skip: onMysql ? false : 'needs MariaDB (run with TEST_MYSQL_URL)' },
  async (t) => {
    const url = await freshDatabaseUrl(t);
    const app = await build(t, { features: [], databaseUrl: url, config: { plugins: ECHO_PLUGIN } });
    await app.db.unchecked.run("insert into core_settings (`key`, value) values ('echo.lock', 'before')");
    // Another client holds the row for the whole request: every try waits out its second.
    const holder = await createConnection(url);
    t.teardown(() => holder.end());
    await holder.query('start transaction');
    await holder.query("select value from core_settings where `key` = 'echo.lock' for update");
    const res = await call(app, '/api/echo/locked-write', { body: {} });
    await holder.query('rollback');
    t.equal(res.statusCode, 503);
    t.same(res.json(), { status: false, error: 'SERVICE_UNAVAILABLE', message: 'The database is busy with other writes; retry shortly.' });
    t.equal(res.headers['retry-after'], '2');
    t.same(await app.db.unchecked.query("select value from core_settings where `key` = 'echo.lock'"), [{ value: 'before' }]);
    t.equal((await call(app, '/api/echo/locked-write', { body: {} })).statusCode, 200, 'the lock gone, the same request passes');
  },
);

t.test(
  'the database goes away: 503 with Retry-After, never a hang, and back when it returns',
  { skip: !onMysql || !haveMariaDb() ? 'needs MariaDB (run with TEST_MYSQL_URL)' : false },
  async (t) => {
    const server = await MariaDbServer.create();
    t.teardown(() => server.destroy());
    const url = await server.database('outage');
    const app = await buildApp({
      env: { DATABASE_URL: url, API_KEY: ADMIN_KEY },
      config: { log: { level: 'silent' }, database: { connectTimeoutMs: 1000 }, plugins: ECHO_PLUGIN },
      logger: false,
    });
    t.teardown(() => app.close());
    t.equal((await call(app, '/api/echo/db')).statusCode, 200);

    await server.stop();
    const started = Date.now();
    let res = await call(app, '/api/echo/db');
    t.equal(res.statusCode, 503);
    t.same(res.json(), { status: false, error: 'SERVICE_UNAVAILABLE', message: 'The database is unavailable; retry shortly.' });
    t.equal(res.headers['retry-after'], '2');
    res = await call(app, '/health', { key: null });
    t.equal(res.statusCode, 503);
    t.equal(res.json().error, 'SERVICE_UNAVAILABLE');
    t.ok(Date.now() - started < 5000, 'answers promptly while the database is down');

    await server.start();
    const back = Date.now();
    let status = 0;
    while (Date.now() - back < 2000) {
      status = (await call(app, '/api/echo/db')).statusCode;
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    t.equal(status, 200, 'serves again within 2 s of the database returning');
  },
);
