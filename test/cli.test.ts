import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { rootDir } from '../core/config.ts';
import { build, sharedDatabaseUrl, startServer } from './helper.ts';

const run = promisify(execFile);

t.test('npm run keys: create, list, revoke; the server honours them', async (t) => {
  const env = { ...process.env, DATABASE_URL: await sharedDatabaseUrl(t), LOG_LEVEL: 'silent' };
  const keys = (...args: string[]) => run(process.execPath, [join(rootDir, 'core/cli/keys.ts'), ...args], { env, cwd: rootDir });
  const created = await keys('create', 'lobby', '--admin');
  const key = /ck_[0-9a-f]{48}/.exec(created.stdout)?.[0];
  t.ok(key, 'the new key is printed once');
  const listed = await keys('list');
  t.match(listed.stdout, /^lobby\tapi admin\tcreated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\tlast used never\n$/);
  t.notOk(listed.stdout.includes(key!), 'list never shows a key');
  const server = await build(t, { databaseUrl: env.DATABASE_URL, features: [] });
  t.equal((await server.inject({ method: 'GET', url: '/api/admin/settings', headers: { 'x-api-key': key! } })).statusCode, 200);
  await server.close();
  t.match((await keys('list')).stdout, /^lobby\tapi admin\tcreated [\d :-]{19}\tlast used \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n$/, 'list shows when the key was last used');
  await t.rejects(keys('create', 'lobby'), 'a name is used once');
  t.match((await keys('revoke', 'lobby')).stdout, /Revoked "lobby"/);
  t.match((await keys('list')).stdout, /revoked/);
  await t.rejects(keys('frobnicate'), { code: 2 });
});

t.test('npm start serves, and SIGTERM shuts it down gracefully', async (t) => {
  const { child, address, output } = await startServer(t, { DATABASE_URL: await sharedDatabaseUrl(t), API_KEY: 'start-test-key' });
  let res = await fetch(`${address}/health`);
  t.equal(res.status, 200);
  res = await fetch(`${address}/api/admin/settings`);
  t.equal(res.status, 401);
  res = await fetch(`${address}/api/admin/settings`, { headers: { 'X-Api-Key': 'start-test-key' } });
  t.equal(res.status, 200, 'API_KEY is the bootstrap admin key');
  t.notOk(output().includes('start-test-key'), 'the key never reaches the log');
  const code = await new Promise<number | null>((resolve) => {
    child.once('exit', (c) => resolve(c));
    child.kill('SIGTERM');
  });
  t.equal(code, 0, 'exits cleanly on SIGTERM');
  t.match(output(), /shutting down/);
});
