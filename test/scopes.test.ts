/**
 * Keys narrower than `api`: a feature (`credits`), or one of its actions (`credits:read`,
 * `store:buy`); admin routes stay `admin` only. Checked through HTTP, the CLI and the document.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { rootDir } from '../core/config.ts';
import { build, call, scratchDir } from './helper.ts';
import { newUser } from './fixtures.ts';
import { count, fields, sql } from '../core/sql.ts';
import { CreditsLedgerEntry } from '../plugins/credits/entities.ts';
import { makeCategory, makeProduct } from '../plugins/store/test/fixtures.ts';

const run = promisify(execFile);

t.test('a scoped key reaches its feature or action and nothing else', async (t) => {
  const app = await build(t, { features: ['users', 'credits', 'store'] });
  const steve = await newUser(app, 'Steve', { cents: 5000 });
  const categoryID = await makeCategory(app, { name: 'Ranks' });
  const productID = await makeProduct(app, { name: 'VIP', categoryID, price: '10.00' });

  const reader = await app.apiKeys.create('balance-reader', ['credits:read']);
  const shop = await app.apiKeys.create('game-shop', ['store:buy', 'store:read']);
  const wallet = await app.apiKeys.create('wallet', ['credits']);

  const as = (key: string, url: string, body?: Record<string, unknown>) => call(app, url, { key, body, as: 'urlencoded' });
  t.equal((await as(reader, '/api/credits?username=Steve')).statusCode, 200, 'credits:read reads a balance');
  let res = await as(reader, '/api/credits/add', { target_username: 'Steve', amount: '1' });
  t.equal(res.statusCode, 403, 'credits:read cannot mint credits');
  // Our own code: the caller is no Java client (docs/clients.md).
  t.same(res.json(), { status: false, error: 'FORBIDDEN', message: 'This API key lacks the scope for this route (credits or credits:write).' });
  t.equal((await as(reader, '/api/store/listing')).statusCode, 403, 'nor read another feature');

  t.equal((await as(shop, '/api/store/listing')).statusCode, 200);
  res = await as(shop, '/api/store/buy', { userID: String(steve.id), products: [String(productID)] });
  t.ok([200, 201].includes(res.statusCode), `store:buy buys (${res.statusCode} ${res.body})`);
  t.equal((await as(shop, '/api/credits/add', { target_username: 'Steve', amount: '1' })).statusCode, 403, 'a shop key cannot mint credits');

  t.equal((await as(wallet, '/api/credits/add', { target_username: 'Steve', amount: '1' })).statusCode, 200, 'the feature scope covers its actions');
  t.equal((await as(wallet, '/api/credits?username=Steve')).statusCode, 200);
  t.equal((await as(wallet, '/api/admin/settings')).statusCode, 403, 'admin routes need admin');
  t.equal(
    (await as(await app.apiKeys.create('plain', ['api']), '/api/credits/add', { target_username: 'Steve', amount: '1' })).statusCode,
    200,
    '`api` still reaches every public route',
  );

  await t.rejects(app.apiKeys.create('bad', ['credits:']), { code: 'VALIDATION_ERROR' });
  await t.rejects(app.apiKeys.create('none', []), { code: 'VALIDATION_ERROR' });
});

t.test('the document names the scopes of each route', async (t) => {
  const app = await build(t, { features: ['users', 'credits', 'store'] });
  const doc = (await app.inject({ url: '/docs/json' })).json();
  t.match(doc.paths['/api/credits/add'].post.description, /Scope: `api` or `credits` or `credits:write`\./);
  t.match(doc.paths['/api/credits'].get.description, /Scope: `api` or `credits` or `credits:read`\./);
  t.match(doc.paths['/api/store/buy'].post.description, /Scope: `api` or `store` or `store:buy`\./);
  t.match(doc.paths['/api/admin/settings'].patch.description, /Scope: `admin`\./);
});

t.test('npm run keys -- create NAME --scope …', async (t) => {
  const env = { ...process.env, DATABASE_URL: `sqlite:${join(scratchDir(t), 'db.sqlite')}`, LOG_LEVEL: 'silent' };
  const keys = (...args: string[]) => run(process.execPath, [join(rootDir, 'core/cli/keys.ts'), ...args], { env, cwd: rootDir });
  t.match(
    (await keys('create', 'lobby', '--scope', 'credits:read,store:buy', '--scope', 'delivery')).stdout,
    /Created key "lobby" \(credits:read, store:buy, delivery\)/,
  );
  t.match((await keys('list')).stdout, /^lobby\tcredits:read store:buy delivery\t/m);
  await t.rejects(keys('create', 'odd', '--scope', 'Credits'), { code: 1, stderr: /"Credits" is not a scope/ });
});

t.test('a request whose key is looked up (not yet known, or the list stale) runs its handler once', async (t) => {
  // cacheSeconds 0: every request reads the key list again, the path a request takes every few seconds.
  const app = await build(t, { features: ['users', 'credits'], config: { apiKeys: { cacheSeconds: 0 } } });
  await newUser(app, 'Steve');
  const key = await app.apiKeys.create('game-server', ['api']);
  for (let i = 0; i < 3; i++) {
    const res = await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '1.00' }, key });
    t.equal(res.statusCode, 200);
  }
  t.equal((await call(app, '/api/credits?username=Steve', { key })).json().raw_credits, 3, 'three adds, three credits');
  const [ledger] = await app.db.query(sql`select ${fields({ n: count() })} from ${CreditsLedgerEntry} where ${CreditsLedgerEntry.c.reason} <> 'set'`);
  t.equal(Number(ledger!.n), 3, 'one ledger row per add');
});
