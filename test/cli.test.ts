import t from 'tap';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { promisify, stripVTControlCharacters } from 'node:util';
import { join } from 'node:path';
import { rootDir } from '../core/config.ts';
import { build, scratchDir, sharedDatabaseUrl, startServer } from './helper.ts';

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
  t.match(
    (await keys('list')).stdout,
    /^lobby\tapi admin\tcreated [\d :-]{19}\tlast used \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n$/,
    'list shows when the key was last used',
  );
  await t.rejects(keys('create', 'lobby'), 'a name is used once');
  t.match((await keys('revoke', 'lobby')).stdout, /Revoked "lobby"/);
  t.match((await keys('list')).stdout, /revoked/);
  await t.rejects(keys('revoke', 'nobody'), { code: 1, stderr: /^No active key named "nobody"\.\n$/ }, 'an unknown name is an error, said in one sentence');
  await t.rejects(keys('revoke', 'lobby'), { code: 1 }, 'so is a key revoked already');
  await t.rejects(keys('frobnicate'), { code: 2 });
  const usage = { code: 2, stderr: /^usage: npm run keys -- create <name>/ };
  await t.rejects(keys('create', 'stray', '--bogus'), usage, 'an unknown flag is refused with the usage line');
  await t.rejects(keys('create', 'stray', '--scope'), usage, 'so is a flag missing its value');
  await t.rejects(keys('revoke', 'lobby', '--admin'), usage, 'and a flag of another command');
  t.notMatch((await keys('list')).stdout, /stray/, 'no key was made');
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

t.test('logs read as lines for a person on a terminal, JSON otherwise', async (t) => {
  // The server's own logger, as `npm start` makes it, writing one line and closing.
  const program = `const { buildApp } = await import(${JSON.stringify(join(rootDir, 'core/app.ts'))});
const app = await buildApp();
app.log.info('hello from the log');
await app.close();`;
  // A file, not -e: the pretty printer runs in a worker thread, which refuses -e's flags.
  const file = join(scratchDir(t), 'log-once.mjs');
  writeFileSync(file, program);
  const env = { ...process.env, DATABASE_URL: 'sqlite::memory:', API_KEY: 'log-test-key', LOG_LEVEL: 'info' };
  const node = [process.execPath, file];
  const piped = await run(node[0]!, node.slice(1), { env, cwd: rootDir });
  const line = piped.stdout.split('\n').find((l) => l.includes('hello from the log'));
  t.match(JSON.parse(line!), { level: 30, msg: 'hello from the log' }, 'piped: one JSON object a line');

  // util-linux `script` runs the same program with a terminal as its stdout.
  const quoted = node.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const tty = await run('script', ['-qec', quoted, '/dev/null'], { env, cwd: rootDir });
  const shown = tty.stdout.split('\n').find((l) => l.includes('hello from the log'));
  t.ok(shown, 'the line is there');
  t.throws(() => JSON.parse(shown!.replace(/\r$/, '')), 'not JSON');
  t.match(stripVTControlCharacters(shown!), /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] INFO: hello from the log/, 'time, level and message');
});
