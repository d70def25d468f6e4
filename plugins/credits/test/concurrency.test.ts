/**
 * Many overlapping requests at once, through app.inject with Promise.all. The proof runs on
 * MariaDB (TEST_MYSQL_URL), where transactions really interleave on a pool of connections; on
 * SQLite, which serialises writers, the same checks run with fewer requests.
 */
import { DatabaseSync } from 'node:sqlite';
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { build, call, onMysql } from '../../../test/helper.ts';
import { newUser, rowCount } from '../../../test/fixtures.ts';
import { seeded } from '../../../test/random.ts';
import { ledgerProblems } from './ledger.ts';
import { count, fields, sql, sum } from '../../../core/sql.ts';
import { CreditsLedgerEntry, CreditsWallet } from '../entities.ts';

const FEATURES = ['users', 'credits'];
const CONFIG = { database: { poolSize: 10 } };

async function users(app: FastifyInstance, names: string[]): Promise<void> {
  for (const username of names) await newUser(app, username);
}

async function totals(app: FastifyInstance): Promise<{ balances: number; deltas: number; wallets: number }> {
  const [w] = await app.db.query(sql`select ${fields({ s: sum(CreditsWallet.c.balance), n: count() })} from ${CreditsWallet}`);
  const [l] = await app.db.query(sql`select ${fields({ s: sum(CreditsLedgerEntry.c.delta) })} from ${CreditsLedgerEntry}`);
  return { balances: Number(w!.s ?? 0), deltas: Number(l!.s ?? 0), wallets: Number(w!.n) };
}

const cents = (amount: string) => Math.round(Number(amount) * 100);

t.test('overlapping sends, adds and removes among a few users: nothing lost, created or negative', async (t) => {
  const app = await build(t, { features: FEATURES, config: CONFIG });
  const names = ['ann', 'bob', 'cid', 'dee'];
  await users(app, names);
  for (const name of names) await call(app, '/api/credits/add', { body: { target_username: name, amount: '50.00' } });
  const random = seeded(42);
  const pick = () => names[Math.floor(random() * names.length)]!;
  const amount = () => String((1 + Math.floor(random() * 3000)) / 100);

  const requests = Array.from({ length: onMysql ? 400 : 150 }, () => {
    const roll = random();
    if (roll < 0.6) {
      const sender = pick();
      let target = pick();
      while (target === sender) target = pick();
      return { path: 'send', body: { sender_username: sender, target_username: target, amount: amount() } };
    }
    return { path: roll < 0.8 ? 'add' : 'remove', body: { target_username: pick(), amount: amount() } };
  });
  // On SQLite, count the commits (core/db/sqlite.ts: a batch waits a turn for more only while its fsync runs on its thread).
  let commits = 0;
  const exec = DatabaseSync.prototype.exec;
  DatabaseSync.prototype.exec = function (this: DatabaseSync, sql: string) {
    if (sql === 'commit') commits++;
    return exec.call(this, sql);
  };
  let responses: Awaited<ReturnType<typeof call>>[];
  try {
    responses = await Promise.all(requests.map((r) => call(app, `/api/credits/${r.path}`, { body: r.body, as: 'urlencoded' })));
  } finally {
    DatabaseSync.prototype.exec = exec;
  }
  // In memory nothing is fsynced, so no batch waits a turn to share one: each request commits its own transaction.
  if (!onMysql) t.equal(commits, requests.length, `${requests.length} writes, each its own commit at once`);

  // A transaction that lost to others' locks on every try is answered "busy, retry" (503) and
  // changed nothing, which the sums below check; on a loaded machine a few of 400 may lose.
  const busy = (r: { status: number; message?: string }) => r.status === 503 && /busy with other writes/.test(r.message ?? '');
  const unexpected = responses
    .map((res, i) => ({
      status: res.statusCode,
      error: res.json().error as string | undefined,
      message: res.json().message as string | undefined,
      path: requests[i]!.path,
    }))
    .filter((r) => r.status !== 200 && !(r.status === 400 && r.error === 'NOT_ENOUGH_CREDITS' && r.path !== 'add') && !(onMysql && busy(r)));
  t.same(unexpected, [], 'every answer is 200, NOT_ENOUGH_CREDITS or (MariaDB) busy; no other error');

  const ok = (path: string) => requests.filter((r, i) => r.path === path && responses[i]!.statusCode === 200);
  const sends = ok('send').length;
  const refused = responses.filter((res) => res.statusCode === 400).length;
  t.ok(sends > 0 && refused > 0, `the mix both moved credits (${sends} sends) and was refused (${refused})`);

  const expected = names.length * 5000 + ok('add').reduce((s, r) => s + cents(r.body.amount), 0) - ok('remove').reduce((s, r) => s + cents(r.body.amount), 0);
  const sum = await totals(app);
  t.equal(sum.balances, expected, 'the sum of balances is what the adds and removes that succeeded make it');
  t.equal(sum.deltas, sum.balances, 'the sum of ledger deltas equals the sum of balances');
  t.equal(await rowCount(app, 'credits_ledger'), names.length + ok('add').length + ok('remove').length + 2 * sends, 'one ledger row per change, two per send');
  t.same(await ledgerProblems(app), [], 'each balance equals its own ledger sum, running sums never negative');
});

t.test('sends between the same two users in both directions at once all succeed', async (t) => {
  const app = await build(t, { features: FEATURES, config: CONFIG });
  await users(app, ['ann', 'bob']);
  for (const name of ['ann', 'bob']) await call(app, '/api/credits/set', { body: { target_username: name, amount: '1000' } });
  const n = onMysql ? 300 : 100;
  const responses = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      call(app, '/api/credits/send', {
        body: i % 2 ? { sender_username: 'ann', target_username: 'bob', amount: '1.25' } : { sender_username: 'bob', target_username: 'ann', amount: '1.25' },
      }),
    ),
  );
  t.same(
    responses.filter((r) => r.statusCode !== 200).map((r) => r.body),
    [],
    'no deadlock or lock timeout reached a client',
  );
  const balances = await Promise.all(['ann', 'bob'].map(async (u) => (await call(app, `/api/credits?username=${u}`)).json().raw_credits));
  t.same(balances, [1000, 1000], 'as many sends each way: both balances are back where they started');
  t.same(await ledgerProblems(app), []);
});

t.test('first credits for users without a wallet, all at once: each wallet is created once', async (t) => {
  const app = await build(t, { features: FEATURES, config: CONFIG });
  const names = ['ann', 'bob', 'cid', 'dee', 'eve', 'fay'];
  await users(app, names);
  const random = seeded(7);
  const requests = Array.from({ length: onMysql ? 240 : 90 }, () => ({ target_username: names[Math.floor(random() * names.length)]!, amount: '0.10' }));
  const responses = await Promise.all(requests.map((body) => call(app, '/api/credits/add', { body })));
  t.same(
    responses.filter((r) => r.statusCode !== 200).map((r) => r.body),
    [],
    'every add succeeded',
  );
  const sum = await totals(app);
  t.equal(sum.wallets, new Set(requests.map((r) => r.target_username)).size, 'one wallet per user');
  t.equal(sum.balances, requests.length * 10);
  t.same(await ledgerProblems(app), []);
});
