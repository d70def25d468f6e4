/**
 * npm run export / import, run as an operator runs them: a community on SQLite goes to MariaDB (when
 * TEST_MYSQL_URL is set; another SQLite file otherwise) and back, and comes out the same.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import * as tar from 'tar';
import type { FastifyInstance } from 'fastify';
import { rootDir } from '../core/config.ts';
import { TestClock } from '../core/clock.ts';
import type { Manifest } from '../core/archive/format.ts';
import { fields, sql, sum } from '../core/sql.ts';
import { CreditsLedgerEntry, CreditsWallet } from '../plugins/credits/entities.ts';
import { build, call, freshDatabaseUrl, onMysql, scratchDir } from './helper.ts';
import { makeCategory, makeProduct, newUser, PNG, totp } from './fixtures.ts';
import { CLIENT, NO_RATE_LIMIT, register } from '../plugins/auth/test/fixtures.ts';

const run = promisify(execFile);
// Each test runs the command line five times over, each a process that loads every feature: minutes on a busy machine.
t.setTimeout(600_000);

/** Runs npm run export or import against a database; `config` is a config file's path (where images go on MySQL). */
function archive(databaseUrl: string, ...args: string[]) {
  const config = args[2] ? { CONFIG: args.pop()! } : {};
  return run(process.execPath, [join(rootDir, 'core/cli/archive.ts'), ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...config },
    cwd: rootDir,
  });
}

/** The archive's manifest, read out of it. */
async function manifestOf(file: string, dir: string): Promise<Manifest> {
  const out = join(dir, `m-${Math.random().toString(36).slice(2)}`);
  mkdirSync(out);
  await tar.extract({ file, cwd: out }, ['manifest.json']);
  return JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as Manifest;
}

/** Each part's checksum by its path: two archives of the same data have the same ones. */
function checksums(m: Manifest): Record<string, string> {
  return Object.fromEntries(m.parts.map((p) => [p.path, `${p.sha256} ${p.kind === 'table' ? p.rows : p.bytes}`]));
}

/** A community with accounts, a password and two-factor, balances moved about, a catalogue and an image. */
async function community(app: FastifyInstance, imageDir: string): Promise<{ secret: string }> {
  const { id } = await register(app, 'Steve', 'correct horse');
  const { secret } = (await call(app, '/api/auth/tfa/setup', { body: { userID: id } })).json().data;
  const enabled = await call(app, '/api/auth/tfa/enable', { body: { userID: id, code: totp(secret) } });
  if (enabled.statusCode !== 200) throw new Error(`enable: ${enabled.body}`);
  for (let i = 0; i < 5; i++) await newUser(app, `player${i}`, { cents: 10_000 + i });
  for (let i = 0; i < 10; i++) {
    const sent = await call(app, '/api/credits/send', {
      body: { sender_username: `player${i % 5}`, target_username: `player${(i + 1) % 5}`, amount: '0.25' },
      as: 'urlencoded',
    });
    if (sent.statusCode !== 200) throw new Error(`send: ${sent.body}`);
  }
  const categoryId = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  await makeProduct(app, { name: 'VIP', price: '5.00', categoryID: categoryId });
  mkdirSync(imageDir, { recursive: true });
  writeFileSync(join(imageDir, 'ab12.png'), PNG);
  return { secret };
}

/** Every wallet equals the sum of its ledger, and the ledger's last balance. */
async function ledgerHolds(app: FastifyInstance): Promise<boolean> {
  const L = CreditsLedgerEntry.c;
  const sums = await app.db.query(sql`select ${fields({ userId: L.userId, total: sum(L.delta) })} from ${CreditsLedgerEntry} group by ${L.userId}`);
  const wallets = await CreditsWallet.select(app.db);
  return wallets.length === sums.length && wallets.every((w) => sums.some((s) => s.userId === w.userId && Number(s.total) === w.balance));
}

t.test('SQLite → MariaDB → SQLite: every table, the ledger, a password and two-factor secret come through', async (t) => {
  const dir = scratchDir(t);
  const sourceUrl = `sqlite:${join(dir, 'source', 'db.sqlite')}`;
  mkdirSync(join(dir, 'source'));
  const source = await build(t, { databaseUrl: sourceUrl, config: NO_RATE_LIMIT });
  const { secret } = await community(source, join(dir, 'source', 'images'));
  const wallets = await CreditsWallet.select(source.db);
  t.ok(await ledgerHolds(source), 'the source ledger adds up');

  // The server keeps serving while the export runs: a read and a write meanwhile answer.
  const first = join(dir, 'first.tar.gz');
  const exporting = archive(sourceUrl, 'export', first);
  const during = await call(source, '/api/credits/send', {
    body: { sender_username: 'player0', target_username: 'player1', amount: '0.01' },
    as: 'urlencoded',
  });
  t.equal(during.statusCode, 200, 'a write during the export is served');
  t.match((await exporting).stdout, /Exported \d+ rows and 1 files to /);
  const walletsAfter = await CreditsWallet.select(source.db);
  await source.close();
  const m1 = await manifestOf(first, dir);
  t.equal(m1.version, 1);
  t.ok(
    m1.parts.some((p) => p.kind === 'table' && p.table === 'auth_totp' && p.rows === 1),
    'two-factor secrets are in it',
  );

  const middleUrl = onMysql ? await freshDatabaseUrl(t) : `sqlite:${join(dir, 'middle.sqlite')}`;
  const middleConfig = join(dir, 'middle.json');
  writeFileSync(middleConfig, JSON.stringify({ plugins: { store: { images: { folder: join(dir, 'middle-images') } } } }));
  t.match((await archive(middleUrl, 'import', first, middleConfig)).stdout, /Imported \d+ rows and 1 files from /);
  t.ok(existsSync(join(dir, 'middle-images', 'ab12.png')), 'the image goes to the folder the install keeps them in');
  const second = join(dir, 'second.tar.gz');
  await archive(middleUrl, 'export', second, middleConfig);

  mkdirSync(join(dir, 'last'));
  const lastUrl = `sqlite:${join(dir, 'last', 'db.sqlite')}`;
  await archive(lastUrl, 'import', second);
  const third = join(dir, 'third.tar.gz');
  await archive(lastUrl, 'export', third);

  const m2 = await manifestOf(second, dir);
  const m3 = await manifestOf(third, dir);
  t.same(checksums(m2), checksums(m1), 'the export from the middle database has every table and file byte for byte as the first');
  t.same(checksums(m3), checksums(m1), 'and so has the one after coming back');
  t.ok(existsSync(join(dir, 'last', 'images', 'ab12.png')), 'the image is in the new install');

  const clock = new TestClock({ at: Date.now() + 120_000 });
  const last = await build(t, { databaseUrl: lastUrl, config: NO_RATE_LIMIT, clock });
  // The snapshot was taken before or after the write made during the export, never half way.
  const carried = JSON.stringify(await CreditsWallet.select(last.db));
  t.ok(carried === JSON.stringify(wallets) || carried === JSON.stringify(walletsAfter), 'the same balances');
  t.ok(await ledgerHolds(last), 'the ledger adds up to the wallets');
  const login = await call(last, '/api/auth/login', { body: { username: 'Steve', password: 'correct horse', ...CLIENT } });
  t.equal(login.statusCode, 200, 'the carried-over password signs in');
  t.equal(login.json().data.isTfaRequired, true, 'two-factor stays on');
  const verified = await call(last, '/api/auth/tfa/verify', { body: { token: login.json().data.token, code: totp(secret) } });
  t.equal(verified.statusCode, 200, 'the carried-over two-factor secret checks the code');
});

t.test('an import is refused into an install that holds data, and for a damaged archive, writing nothing', async (t) => {
  const dir = scratchDir(t);
  const url = `sqlite:${join(dir, 'db.sqlite')}`;
  const app = await build(t, { databaseUrl: url });
  await newUser(app, 'Alex', { cents: 500 });
  const file = join(dir, 'a.tar.gz');
  await archive(url, 'export', file);
  await app.close();

  const full = await archive(url, 'import', file).catch((err) => err);
  t.equal(full.code, 2);
  t.match(full.stderr, /Cannot import: This install is not empty \(\w+ has \d+ rows\)/);

  const damaged = join(dir, 'damaged.tar.gz');
  writeFileSync(damaged, readFileSync(file).subarray(0, 200));
  const other = `sqlite:${join(dir, 'other.sqlite')}`;
  const bad = await archive(other, 'import', damaged).catch((err) => err);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /Cannot import: .* is not a readable archive/);

  // A file part whose name would reach outside its folder: refused before anything is written.
  const crafted = join(dir, 'crafted');
  mkdirSync(crafted);
  await tar.extract({ file, cwd: crafted });
  const manifest = JSON.parse(readFileSync(join(crafted, 'manifest.json'), 'utf8')) as Manifest;
  writeFileSync(join(crafted, 'evil.png'), PNG);
  manifest.parts.push({
    kind: 'file',
    path: 'evil.png',
    feature: 'store',
    folder: 'images',
    name: '../evil.png',
    bytes: PNG.length,
    sha256: createHash('sha256').update(PNG).digest('hex'),
  });
  writeFileSync(join(crafted, 'manifest.json'), JSON.stringify(manifest));
  const craftedFile = join(dir, 'crafted.tar.gz');
  await tar.create({ gzip: true, cwd: crafted, file: craftedFile }, ['manifest.json', ...manifest.parts.map((p) => p.path)]);
  mkdirSync(join(dir, 'third'));
  const third = `sqlite:${join(dir, 'third', 'db.sqlite')}`;
  const escaped = await archive(third, 'import', craftedFile).catch((err) => err);
  t.equal(escaped.code, 2);
  t.match(escaped.stderr, /Cannot import: The archive names a file "\.\.\/evil\.png" that is not a plain file name/);
  t.notOk(existsSync(join(dir, 'third', 'evil.png')), 'nothing lands outside the folder');
  const after = new DatabaseSync(join(dir, 'third', 'db.sqlite'));
  t.same(after.prepare('select count(*) as n from users_accounts').get(), { n: 0 }, 'no row was written');
  after.close();

  // A database this version never migrated has not the tables the features describe.
  const bare = join(dir, 'bare.sqlite');
  new DatabaseSync(bare).close();
  const unmigrated = await archive(`sqlite:${bare}`, 'export', join(dir, 'b.tar.gz')).catch((err) => err);
  t.equal(unmigrated.code, 2);
  t.match(unmigrated.stderr, /Cannot export: The database lacks \d+ migrations of this version .*: run npm run migrate, then export/);
  t.notOk(existsSync(join(dir, 'b.tar.gz')), 'no archive is left');
});
