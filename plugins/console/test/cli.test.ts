/** `npm run console -- admin <username>`: the first admin, who can then sign in (checked through HTTP, no browser needed). */
import t from 'tap';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { rootDir } from '../../../core/config.ts';
import { build, call, sharedDatabaseUrl } from '../../../test/helper.ts';
import { PASSWORD, register, signInByForm } from './browser.ts';
import { sql } from '../../../core/sql.ts';
import { UsersAccount } from '../../users/entities.ts';
import { ConsoleSession } from '../entities.ts';

const run = promisify(execFile);

/** Runs the console CLI as a child process, `input` piped to its stdin; resolves with its exit code and output. */
function cliWithInput(env: NodeJS.ProcessEnv, input: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [join(rootDir, 'plugins/console/cli.ts'), ...args], { env, cwd: rootDir }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
    child.on('error', reject);
    child.stdin!.end(input);
  });
}

t.test('npm run console -- admin makes the first admin', async (t) => {
  const env = { ...process.env, DATABASE_URL: await sharedDatabaseUrl(t), LOG_LEVEL: 'silent', CONFIG: '' };
  const cli = (...args: string[]) => run(process.execPath, [join(rootDir, 'plugins/console/cli.ts'), ...args], { env, cwd: rootDir });
  let app = await build(t, { databaseUrl: env.DATABASE_URL });
  const id = await register(app, 'Dana');
  const before = await signInByForm(app, 'Dana');
  t.equal(before.statusCode, 403, 'no console role yet');
  t.match(before.body, /no console role/);
  await app.close();

  t.match((await cli('admin', 'dana')).stdout, /Dana now holds the role "admin"/);
  t.match((await cli('admin', 'Dana')).stdout, /Dana now holds the role "admin"/, 'running it twice changes nothing more');
  t.match(await cliWithInput(env, '', 'admin', 'nobody'), { code: 1, stderr: /^No password was given\.\n$/ }, 'an unknown name with no password makes nothing');
  await t.rejects(cli('owner', 'Dana'), { code: 2 });
  await t.rejects(cli('support', 'Dana', '--bogus'), { code: 2, stderr: /^usage: npm run console/ }, 'an unknown flag grants nothing');

  app = await build(t, { databaseUrl: env.DATABASE_URL });
  const roles = (await call(app, `/api/users/${id}/roles`)).json();
  t.same(
    roles.map((r: { name: string }) => r.name),
    ['Console admin'],
    'the API shows the role',
  );
  const granted = (await call(app, '/api/admin/audit?action=users.role.grant')).json();
  t.match(
    granted,
    [
      { actorKind: 'cli', actor: /\(command line\)$/, summary: 'Granted Console admin to Dana (permanent)' },
      { actorKind: 'cli', summary: 'Granted Console admin to Dana (permanent)' },
    ],
    'the audit log has both grants, by the command line',
  );
  const after = await signInByForm(app, 'Dana');
  t.equal(after.statusCode, 303);
  t.equal(after.headers.location, '/console');
  const session = String(after.headers['set-cookie']).match(/console_session=([0-9a-f]{64}); Max-Age|console_session=([0-9a-f]{64});/);
  t.ok(session, 'a session cookie is set');
  t.match(String(after.headers['set-cookie']), /HttpOnly/);
  t.match(String(after.headers['set-cookie']), /SameSite=Strict/);
  t.notMatch(String(after.headers['set-cookie']), /Secure/, 'not Secure over plain HTTP');
});

t.test('npm run console -- admin makes the account first when nobody has the name', async (t) => {
  const env = { ...process.env, DATABASE_URL: await sharedDatabaseUrl(t), LOG_LEVEL: 'silent', CONFIG: '' };
  const short = await cliWithInput(env, 'abc\n', 'admin', 'alice');
  t.equal(short.code, 1, 'a too-short password fails');
  t.match(short.stderr, /^The password must be \d+ to \d+ characters long\.\n$/, 'in one sentence');

  const made = await cliWithInput(env, `${PASSWORD}\n`, 'admin', 'alice', '--email', 'alice@example.org');
  t.equal(made.code, 0, made.stderr);
  t.match(made.stdout, /Made the account "alice"/);
  t.match(made.stdout, /alice now holds the role "admin"/);

  const app = await build(t, { databaseUrl: env.DATABASE_URL });
  const profile = (await call(app, '/api/users?username=alice')).json();
  t.equal(profile.email, 'alice@example.org');
  t.equal((await call(app, '/api/users?username=abc')).statusCode, 404);
  t.equal((await UsersAccount.select(app.db)).length, 1, 'the refused run made nothing');
  const signed = await signInByForm(app, 'alice');
  t.equal(signed.statusCode, 303, 'the piped password signs in to the console');
  t.equal(signed.headers.location, '/console');
  await app.close();

  const revoked = await cliWithInput(env, '', 'revoke', 'alice', 'admin');
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(revoked.stdout, /alice no longer holds the role "admin"/);
  t.match(await cliWithInput(env, '', 'revoke', 'alice', 'admin'), { code: 1, stderr: /does not hold the role "admin"/ });
  t.match(await cliWithInput(env, '', 'revoke', 'alice', 'nosuch'), { code: 1, stderr: /No role has the slug "nosuch"/ });
  const again = await build(t, { databaseUrl: env.DATABASE_URL });
  t.equal((await signInByForm(again, 'alice')).statusCode, 403, 'without the role the console is closed');
});

t.test('the session cookie is Secure behind a TLS proxy', async (t) => {
  const app = await build(t, { config: { server: { trustProxy: true } } });
  await register(app, 'Erin');
  await call(app, '/api/admin/roles', { body: { name: 'Admin', slug: 'admin' } });
  const roleId = (await call(app, '/api/admin/roles')).json()[0].id;
  const userId = (await call(app, '/api/users?username=Erin')).json().id;
  await call(app, `/api/users/${userId}/roles`, { body: { roleID: roleId } });
  const form = await app.inject({ url: '/console/login', headers: { 'x-forwarded-proto': 'https' } });
  t.match(String(form.headers['set-cookie']), /Secure/);
  const cookie = String(form.headers['set-cookie']).split(';')[0]!;
  const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec(form.body)![1]!;
  const res = await app.inject({
    method: 'POST',
    url: '/console/login',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https' },
    payload: new URLSearchParams({ _csrf: csrf, username: 'Erin', password: PASSWORD }).toString(),
  });
  t.equal(res.statusCode, 303);
  t.match(String(res.headers['set-cookie']), /console_session=[0-9a-f]{64};[^,]*Secure/);
});

t.test('sign-in is rate limited per address', async (t) => {
  const app = await build(t, { config: { plugins: { console: { signInRateLimit: { max: 2, windowSeconds: 600 } } } } });
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const form = await app.inject('/console/login');
    const cookie = String(form.headers['set-cookie']).split(';')[0]!;
    const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec(form.body)![1]!;
    const res = await app.inject({
      method: 'POST',
      url: '/console/login',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: csrf, username: 'nobody', password: 'x' }).toString(),
    });
    statuses.push(res.statusCode);
    if (i === 2) t.match(res.body, /Too many sign-in attempts/);
  }
  t.same(statuses, [401, 401, 429]);
});

t.test('a session idle past the timeout is signed out', async (t) => {
  const app = await build(t);
  const id = await register(app, 'Fay');
  await call(app, '/api/admin/roles', { body: { name: 'Admin', slug: 'admin' } });
  await call(app, `/api/users/${id}/roles`, { body: { roleID: (await call(app, '/api/admin/roles')).json()[0].id } });
  const signed = await signInByForm(app, 'Fay');
  const cookie = String(signed.headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  t.equal((await app.inject({ url: '/console', headers: { cookie } })).statusCode, 200, 'signed in');
  // An hour without a request, with the default 30 minutes of idle time.
  await app.db.run(sql`update ${ConsoleSession} set ${ConsoleSession.c.lastSeenAt} = ${'2000-01-01 00:00:00'}`);
  const idle = await app.inject({ url: '/console', headers: { cookie } });
  t.equal(idle.statusCode, 303);
  t.equal(idle.headers.location, '/console/login?next=%2Fconsole');
  t.same(await ConsoleSession.select(app.db), [], 'the idle session is gone');
});
