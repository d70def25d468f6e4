/**
 * npm run backup / restore, and npm run migrate -- status: run as an operator runs them, against
 * the database a server is using (SQLite file, or a scratch MySQL/MariaDB database).
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { rootDir } from '../core/config.ts';
import { parseDatabaseUrl } from '../core/db/url.ts';
import { markHolders } from '../core/server-mark.ts';
import { build, call, onMysql, scratchDir, sharedDatabaseUrl, startServer } from './helper.ts';
import { newUser, rowCount } from './fixtures.ts';
import { fields, sql, typed } from '../core/sql.ts';
import { CreditsLedgerEntry, CreditsWallet } from '../plugins/credits/entities.ts';

const run = promisify(execFile);

function cli(script: string, databaseUrl: string, ...args: string[]) {
  return run(process.execPath, [join(rootDir, 'core/cli', script), ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
    cwd: rootDir,
  });
}

/** Every table's rows, in a stable order, to compare a database before and after. */
async function dump(app: Awaited<ReturnType<typeof build>>, tables: string[]) {
  const out: Record<string, unknown[]> = {};
  for (const table of tables) out[table] = await app.db.unchecked.query(`select * from ${table} order by id`);
  return out;
}

/** Empties the database as a lost disk would: every table gone. */
async function wipe(url: string): Promise<void> {
  if (url.startsWith('sqlite:')) {
    for (const suffix of ['', '-wal', '-shm']) rmSync(url.slice('sqlite:'.length) + suffix, { force: true });
    return;
  }
  const conn = await createConnection({ uri: url });
  const db = new URL(url).pathname.slice(1);
  await conn.query(`drop database \`${db}\``);
  await conn.query(`create database \`${db}\``);
  await conn.end();
}

t.test('a backup taken under load restores every row written before it, consistent', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const app = await build(t, { databaseUrl: url, features: ['users', 'credits'] });
  const users = [];
  for (let i = 0; i < 5; i++) users.push(await newUser(app, `player${i}`, { cents: 10_000 }));

  // Writers keep sending credits while the backup runs.
  let stop = false;
  let sent = 0;
  const load = (async () => {
    for (let i = 0; !stop; i++) {
      const res = await call(app, '/api/credits/send', {
        body: { sender_username: `player${i % 5}`, target_username: `player${(i + 1) % 5}`, amount: '0.01' },
        as: 'urlencoded',
      });
      if (res.statusCode !== 200) throw new Error(`send answered ${res.statusCode}: ${res.body}`);
      sent++;
    }
  })();
  while (sent < 20) await new Promise((r) => setTimeout(r, 5));
  const ledgerBefore = await rowCount(app, 'credits_ledger');
  const before = await dump(app, ['users_accounts']);
  const file = join(scratchDir(t), 'backup');
  const backedUp = await cli('backup.ts', url, 'backup', file);
  t.match(backedUp.stdout, /Backed up to /);
  const sentBeforeEnd = sent;
  stop = true;
  await load;
  t.ok(sent > 20, `writes went on during the backup (${sentBeforeEnd} sends before it ended)`);
  await app.close();

  await wipe(url);
  const restored = await cli('backup.ts', url, 'restore', file);
  t.match(restored.stdout, /Restored from /);

  const again = await build(t, { databaseUrl: url, features: ['users', 'credits'] });
  t.strictSame(await dump(again, ['users_accounts']), before, 'every account is back, unchanged');
  const ledgerAfter = await rowCount(again, 'credits_ledger');
  t.ok(ledgerAfter >= ledgerBefore, `every ledger row written before the backup is back (${ledgerAfter} >= ${ledgerBefore})`);
  // One consistent moment: each balance equals the sum of its ledger, and money is conserved.
  const wallets = await CreditsWallet.select(again.db, sql`order by ${CreditsWallet.c.userId}`);
  let total = 0;
  for (const w of wallets) {
    const L = CreditsLedgerEntry.c;
    const [sum] = await again.db.query(
      sql`select ${fields({ s: typed<number | string>(sql`coalesce(sum(${L.delta}), 0)`) })} from ${CreditsLedgerEntry} where ${L.userId} = ${w.userId}`,
    );
    t.equal(Number(sum!.s), Number(w.balance), `user ${w.userId}: balance = ledger sum`);
    total += Number(w.balance);
  }
  t.equal(total, 5 * 10_000, 'no cent created or lost');
});

t.test('restore refuses a file that is not a backup, and changes nothing', { skip: Boolean(process.env.TEST_MYSQL_URL) && 'SQLite file check' }, async (t) => {
  const url = await sharedDatabaseUrl(t);
  const app = await build(t, { databaseUrl: url, features: ['users'] });
  await newUser(app, 'keeper');
  await app.close();
  const bogus = join(scratchDir(t), 'not-a-backup');
  writeFileSync(bogus, 'hello');
  await t.rejects(cli('backup.ts', url, 'restore', bogus), { code: 2, stderr: /not a sound SQLite backup/ });
  const again = await build(t, { databaseUrl: url, features: ['users'] });
  t.equal(await rowCount(again, 'users_accounts'), 1, 'the database is untouched');
  await t.rejects(cli('backup.ts', url, 'restore'), { code: 2, stderr: /usage/ });
  await t.rejects(cli('backup.ts', url, 'backup', '--bogus'), { code: 2, stderr: /^usage: npm run backup/ }, 'an unknown flag is not a file name');
  await t.rejects(cli('migrate.ts', url, 'status', '--bogus'), { code: 2, stderr: /^usage: npm run migrate/ });
});

t.test('npm run migrate -- status lists applied and pending migrations', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const before = await cli('migrate.ts', url, 'status');
  const pending = before.stdout.split('\n').filter((l) => l.startsWith('pending\t'));
  t.ok(pending.length > 0, 'a new database has every migration pending');
  t.notMatch(before.stdout, /^applied\t/m);
  t.match(before.stdout, new RegExp(`0 applied, ${pending.length} pending\\.`));

  await cli('migrate.ts', url);
  const after = await cli('migrate.ts', url, 'status');
  const applied = after.stdout.split('\n').filter((l) => l.startsWith('applied\t'));
  t.strictSame(
    applied.map((l) => l.slice('applied\t'.length)),
    pending.map((l) => l.slice('pending\t'.length)),
    'the same migrations, now applied, in order',
  );
  t.match(after.stdout, new RegExp(`${applied.length} applied, 0 pending\\.`));
  await t.rejects(cli('migrate.ts', url, 'sideways'), { code: 2, stderr: /usage/ });
});

t.test('restore refuses while a server has the database open, changes nothing, and works once the server stopped', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const env = { DATABASE_URL: url, API_KEY: 'restore-test-key', CONFIG: '' };
  const keeperFound = async (address: string) =>
    (await fetch(`${address}/api/users?username=keeper`, { headers: { 'x-api-key': env.API_KEY } })).status === 200;
  let server = await startServer(t, env);
  const file = join(scratchDir(t), 'backup');
  await cli('backup.ts', url, 'backup', file);
  const registered = await fetch(`${server.address}/api/auth/register`, {
    method: 'POST',
    headers: { 'x-api-key': env.API_KEY },
    body: new URLSearchParams({ username: 'keeper', password: 'hunter22', email: 'keeper@example.com', ip: '10.0.0.1', useragent: 'test' }),
  });
  t.equal(registered.status, 200, `a write after the backup: ${await registered.text()}`);

  const refused = await cli('backup.ts', url, 'restore', file).then(
    () => undefined,
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
  t.equal(refused?.code, 1, 'a non-zero exit');
  t.match(refused?.stderr, /^A server has this database open: stop it, then restore\.\n$/, 'said in one sentence');
  t.equal(refused?.stdout, '', 'never "Restored"');
  t.ok(await keeperFound(server.address), 'the server still serves its data');

  await new Promise<void>((done) => {
    server.child.once('exit', () => done());
    server.child.kill('SIGTERM');
  });
  t.match((await cli('backup.ts', url, 'restore', file)).stdout, /Restored from /, 'once the server stopped');
  server = await startServer(t, env);
  t.notOk(await keeperFound(server.address), 'the backup is what the next start serves');

  // A killed server leaves no mark behind: the database (MySQL) or the kernel (SQLite) drops it with the process.
  await new Promise<void>((done) => {
    server.child.once('exit', () => done());
    server.child.kill('SIGKILL');
  });
  t.match((await cli('backup.ts', url, 'restore', file)).stdout, /Restored from /, 'after SIGKILL too');
});

t.test(
  'MySQL: the marking connection is kept busy, and taken again when lost (a database restart, a kill)',
  { skip: !onMysql && 'needs TEST_MYSQL_URL' },
  async (t) => {
    const url = await sharedDatabaseUrl(t);
    const target = parseDatabaseUrl(url);
    await build(t, { databaseUrl: url, features: [], config: { database: { markPingSeconds: 1 } } });
    const [holder] = await markHolders(target);
    t.ok(holder, 'the server holds its mark');
    const conn = await createConnection({ uri: url });
    // Idleness is what is under test: the server's idle count can only be read after time has passed.
    await new Promise((r) => setTimeout(r, 2500));
    const [[idle]] = (await conn.query('select time from information_schema.processlist where id = ?', [holder])) as unknown as [{ time: number }[]];
    t.ok(Number(idle!.time) <= 1, `pinged every second, so no proxy or wait_timeout finds it idle (idle ${idle!.time} s)`);
    await conn.query('kill ?', [holder]);
    await conn.end();
    let again: number[] = [];
    for (const deadline = Date.now() + 5000; Date.now() < deadline && !(again.length && again[0] !== holder); await new Promise((r) => setTimeout(r, 100))) {
      again = await markHolders(target);
    }
    t.equal(again.length, 1, 'held again');
    t.not(again[0], holder, 'by a new connection');
  },
);
