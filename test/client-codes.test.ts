/**
 * The Java clients' codes (docs/clients.md) go only to those clients: a caller whose User-Agent is
 * `HttpURLConnection`'s default `Java/<version>`, or whose key an admin marked for them. Everyone
 * else reads our own code in `error`, with no `code` field.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { rootDir } from '../core/config.ts';
import { newUser } from './fixtures.ts';
import { build, call, sharedDatabaseUrl } from './helper.ts';

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const JAVA = 'Java/17.0.2';

t.test('one failing request: our code to a browser or no User-Agent, the mapped one to Java/<version> and a marked key', async (t) => {
  const app = await build(t, { features: ['users', 'credits'] });
  await newUser(app, 'Steve');
  const marked = await app.apiKeys.create('kotlin-bot', ['api'], { clientCodes: true });
  const plain = await app.apiKeys.create('website', ['api']);
  const answer = async (url: string, key: string | null, agent?: string) => {
    const res = await call(app, url, { key, headers: agent ? { 'user-agent': agent } : {} });
    return { http: res.statusCode, ...res.json() };
  };

  // No key: the request never reaches the route's handler.
  const url = '/api/users?username=Steve';
  const noKey = { http: 401, status: false, error: 'INVALID_API_KEY', message: 'The X-Api-Key header is missing.' };
  t.strictSame(await answer(url, null, BROWSER), noKey, 'a browser: ours');
  t.strictSame(await answer(url, null), noKey, 'no User-Agent: ours');
  t.strictSame(
    await answer(url, null, JAVA),
    { ...noKey, error: 'USER_NOT_FOUND', code: 'INVALID_API_KEY' },
    "HttpURLConnection: the game plugin's nearest, ours in code",
  );
  t.match(await answer(url, null, 'Java/21.0.5'), { error: 'USER_NOT_FOUND', code: 'INVALID_API_KEY' }, 'any Java version');
  t.strictSame(await answer(url, null, 'NotJava/17 Java/17.0.2'), noKey, 'only an agent that starts with Java/');

  // A query the route refuses, with a key: the marked key gets the mapping whatever its agent.
  const refused = (await answer('/api/users', plain, BROWSER)) as Record<string, unknown>;
  t.match(refused, { http: 400, status: false, error: 'VALIDATION_ERROR' }, 'an unmarked key from a browser: ours');
  t.notOk('code' in refused);
  const mapped = { ...refused, error: 'USER_NOT_FOUND', code: 'VALIDATION_ERROR' };
  t.strictSame(await answer('/api/users', plain), refused, 'an unmarked key without an agent: ours');
  t.strictSame(await answer('/api/users', plain, JAVA), mapped, 'an unmarked key from Java: mapped');
  t.strictSame(await answer('/api/users', marked, BROWSER), mapped, 'a marked key from a browser: mapped');
  t.strictSame(await answer('/api/users', marked), mapped, 'a marked key without an agent: mapped');

  // A code the client knows reads the same for everyone.
  const missing = await answer('/api/users?username=Nobody', plain);
  t.match(missing, { http: 404, error: 'USER_NOT_FOUND' });
  for (const [key, agent] of [
    [plain, BROWSER],
    [plain, JAVA],
    [marked, undefined],
  ] as const) {
    t.strictSame(await answer('/api/users?username=Nobody', key, agent), missing, `${agent ?? 'no agent'}: USER_NOT_FOUND as it is`);
  }
});

t.test("npm run keys marks a key for the clients' codes, at creation or later", async (t) => {
  const env = { ...process.env, DATABASE_URL: await sharedDatabaseUrl(t), LOG_LEVEL: 'silent' };
  const keys = (...args: string[]) => promisify(execFile)(process.execPath, [join(rootDir, 'core/cli/keys.ts'), ...args], { env, cwd: rootDir });
  const created = await keys('create', 'auth-plugin', '--scope', 'users', '--client-codes');
  t.match(created.stdout, /Created key "auth-plugin" \(users; client codes\)/);
  const key = /ck_[0-9a-f]{48}/.exec(created.stdout)![0];
  t.match((await keys('list')).stdout, /^auth-plugin\tusers\tclient codes\tcreated /);
  const refused = async () => {
    const app = await build(t, { databaseUrl: env.DATABASE_URL, features: ['users'] });
    const body = (await call(app, '/api/users', { key, headers: { 'user-agent': BROWSER } })).json();
    await app.close();
    return body;
  };
  t.match(await refused(), { error: 'USER_NOT_FOUND', code: 'VALIDATION_ERROR' }, "the marked key reads the game plugin's code");
  t.match((await keys('client-codes', 'auth-plugin', 'off')).stdout, /now answers errors with our own codes/);
  t.notMatch((await keys('list')).stdout, /client codes/);
  t.match(await refused(), { error: 'VALIDATION_ERROR', code: undefined }, 'unmarked: ours again');
  t.match((await keys('client-codes', 'auth-plugin', 'on')).stdout, /the Java clients' codes/);
  t.match(await refused(), { error: 'USER_NOT_FOUND' });
  await t.rejects(keys('client-codes', 'nobody', 'on'), { code: 1, stderr: /No active key named "nobody"/ });
  await t.rejects(keys('client-codes', 'auth-plugin', 'maybe'), { code: 2 });
});
