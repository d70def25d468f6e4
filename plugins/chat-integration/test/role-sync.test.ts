import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import nock from 'nock';
import type { FastifyInstance } from 'fastify';
import { build, call, freshDatabaseUrl, onMysql, type TestLike } from '../../../test/helper.ts';
import { addSeconds, now } from '../../../core/format.ts';
import { TestClock } from '../../../core/clock.ts';
import { created, newUser } from '../../../test/fixtures.ts';
import { usersRef } from '../../users/contract.ts';
import { chatIntegrationRef } from '../contract.ts';
import { fields, sql } from '../../../core/sql.ts';
import { ChatIntegrationRoleSync } from '../entities.ts';

const TOKEN = 'test-bot-token.secret';
/** The bot token reaches the feature through the environment the server is built with. */
const ENV = { CHAT_SYNC_TEST_TOKEN: TOKEN };

const API = 'https://chat.test';
const GUILD = '700000000000000001';
const CHAT_USER = '111111111111111111';
const CHAT_ROLE = '900000000000000001';
const ROLE_PATH = `/api/v10/guilds/${GUILD}/members/${CHAT_USER}/roles/${CHAT_ROLE}`;

/** Fast timings, so retries and polls take milliseconds. */
function config(roleSync: Record<string, unknown> = {}) {
  return {
    plugins: {
      users: { sweepSeconds: 1 },
      'chat-integration': {
        roleSync: {
          apiBaseUrl: `${API}/api/v10`,
          guildId: GUILD,
          botTokenEnv: 'CHAT_SYNC_TEST_TOKEN',
          pollMs: 20,
          retryBaseMs: 20,
          retryMaxMs: 200,
          requestTimeoutMs: 1000,
          ...roleSync,
        },
      },
    },
  };
}
const FEATURES = ['users', 'chat-integration'];

/** An app whose role sync talks to the fake chat API, with `config(roleSync)`. */
function syncApp(t: TestLike, roleSync: Record<string, unknown> = {}, databaseUrl?: string): Promise<FastifyInstance> {
  return build(t, { features: FEATURES, env: ENV, databaseUrl, config: config(roleSync) });
}

nock.disableNetConnect();
t.afterEach(() => nock.cleanAll());
t.teardown(() => nock.enableNetConnect());

/** Every request that reached the fake chat API and matched no interceptor. */
const unexpected: string[] = [];
nock.emitter.on('no match', (req: { method?: string; path?: string; url?: string }) => unexpected.push(`${req.method} ${req.path ?? req.url}`));

/** A network failure as fetch reports it (nock needs an Error instance for fetch to reject). */
const netError = (code: string, message: string) => Object.assign(new Error(message), { code });
t.beforeEach(() => {
  unexpected.length = 0;
});

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 8000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const R = ChatIntegrationRoleSync.c;
const OUTBOX = fields({ id: R.id, attempts: R.attempts, failed_at: R.failedAt, last_error: R.lastError });
const outbox = (app: FastifyInstance) => app.db.query(sql`select ${OUTBOX} from ${ChatIntegrationRoleSync} order by ${R.id}`);
const outboxEmpty = async (app: FastifyInstance) => (await outbox(app)).length === 0;

async function turnSync(app: FastifyInstance, on: boolean): Promise<void> {
  const res = await call(app, '/api/admin/integrations/chat/settings', { method: 'PATCH', body: { roleSyncingStatus: on }, as: 'json' });
  if (res.statusCode !== 200) throw new Error(res.body);
}

/** A database two apps can use one after the other: on SQLite a file, not :memory:. */
async function restartableDatabase(t: TestLike): Promise<string> {
  if (onMysql) return freshDatabaseUrl(t);
  const file = join(tmpdir(), `role-sync-${randomBytes(6).toString('hex')}.db`);
  t.teardown(() => {
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  });
  return `sqlite:${file}`;
}

/** The same switch through the service, so that it can join a transaction. */
async function turnSyncInside(app: FastifyInstance, on: boolean): Promise<void> {
  await app.services.get(chatIntegrationRef).updateSettings({ roleSyncingStatus: on });
}

/** A user linked to CHAT_USER and a role mapped to CHAT_ROLE. */
async function setup(app: FastifyInstance, opts: { sync?: boolean; link?: boolean } = {}) {
  const users = app.services.get(usersRef);
  const user = await newUser(app, 'steve');
  if (opts.link ?? true) await users.linkAccount(user.id, 'chat', CHAT_USER);
  const role = await created(app, '/api/admin/roles', { name: 'VIP', chatRoleID: CHAT_ROLE }, 'json');
  if (opts.sync ?? true) await turnSync(app, true);
  return { users, userId: user.id, roleId: Number(role.id) };
}

/** An interceptor for one member-role call that records when it came, with the bot token required. */
function expectCall(method: 'put' | 'delete', status: number, body: unknown = '', seen: number[] = []) {
  return nock(API, { reqheaders: { authorization: `Bot ${TOKEN}` } })
    [method](ROLE_PATH)
    .reply(() => {
      seen.push(Date.now());
      return [status, body as string];
    });
}

/** Answers every member-role call with 204 and records the methods in order. */
function recorder(): string[] {
  const calls: string[] = [];
  const scope = nock(API, { reqheaders: { authorization: `Bot ${TOKEN}` } }).persist();
  scope.put(ROLE_PATH).reply(() => {
    calls.push('PUT');
    return [204, ''];
  });
  scope.delete(ROLE_PATH).reply(() => {
    calls.push('DELETE');
    return [204, ''];
  });
  return calls;
}

t.test('a grant and a revoke reach the chat API with the right path and bot token', async (t) => {
  const app = await syncApp(t);
  const { users, userId, roleId } = await setup(app);

  const put = expectCall('put', 204);
  await users.grantRole(userId, roleId);
  await until('the PUT', () => put.isDone());
  await until('the outbox to drain', () => outboxEmpty(app));

  const del = expectCall('delete', 204);
  t.ok(await users.revokeRole(userId, roleId));
  await until('the DELETE', () => del.isDone());
  await until('the outbox to drain', () => outboxEmpty(app));
  t.same(unexpected, [], 'no other call was made');
});

t.test('the role change does not wait for the chat API', async (t) => {
  const app = await syncApp(t);
  const { userId, roleId } = await setup(app);
  // The chat API answers only when the test lets it (nock's .delay() does not hold back fetch).
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  const put = nock(API)
    .put(ROLE_PATH)
    .reply(async () => {
      await answered;
      return [204, ''];
    });
  const res = await call(app, `/api/users/${userId}/roles`, { body: { roleID: String(roleId) } });
  t.equal(res.statusCode, 200, res.body);
  await until('the PUT to be on its way', () => put.isDone());
  t.equal((await outbox(app)).length, 1, 'the API call answered while the chat API had not: the work waits in the outbox');
  answer();
  await until('the outbox to drain', () => outboxEmpty(app));
});

t.test('extending a role and its expiry both sync', async (t) => {
  // The grant below runs out when the test moves the clock; the users' sweep runs every second.
  const clock = new TestClock();
  const app = await build(t, { features: FEATURES, env: ENV, config: config(), clock });
  const { users, userId, roleId } = await setup(app);
  const calls = recorder();
  await users.extendRole(userId, roleId, 30);
  await until('the PUT of the grant', () => calls.length === 1);
  await users.extendRole(userId, roleId, 0);
  await until('the PUT of the extension', () => calls.length === 2);
  await until('the outbox to drain', () => outboxEmpty(app));
  t.same(calls, ['PUT', 'PUT']);

  // A short grant that runs out: the users feature's sweep revokes it and the chat role goes.
  await users.grantRole(userId, roleId, addSeconds(now(), 1));
  clock.advance(2000);
  await until('the DELETE after expiry', () => calls.at(-1) === 'DELETE');
  await until('the outbox to drain', () => outboxEmpty(app));
  t.same(await users.rolesOf(userId), []);
  t.same(unexpected, []);
});

t.test('a 429 waits for retry_after, then the call is made again', async (t) => {
  const app = await syncApp(t);
  const { users, userId, roleId } = await setup(app);
  const seen: number[] = [];
  const limited = expectCall('put', 429, { message: 'You are being rate limited.', retry_after: 0.3, global: false }, seen);
  const ok = expectCall('put', 204, '', seen);
  await users.grantRole(userId, roleId);
  await until('the retried PUT', () => limited.isDone() && ok.isDone());
  t.equal(seen.length, 2);
  t.ok(seen[1]! - seen[0]! >= 290, `waited ${seen[1]! - seen[0]!} ms for a retry_after of 300 ms`);
  await until('the outbox to drain', () => outboxEmpty(app));
});

t.test('a 500 and a network error are retried with backoff', async (t) => {
  const app = await syncApp(t, { retryBaseMs: 100, retryMaxMs: 1000 });
  const { users, userId, roleId } = await setup(app);
  const seen: number[] = [];
  const failing = expectCall('put', 500, 'oops', seen);
  const broken = nock(API).put(ROLE_PATH).replyWithError(netError('ECONNRESET', 'socket hang up'));
  const ok = expectCall('put', 204, '', seen);
  await users.grantRole(userId, roleId);
  await until('the second failure to be recorded', async () => (await outbox(app))[0]?.attempts === 2);
  t.match((await outbox(app))[0]!.last_error, /PUT: .*socket hang up/);
  await until('the third PUT', () => failing.isDone() && broken.isDone() && ok.isDone());
  await until('the outbox to drain', () => outboxEmpty(app));
  t.ok(seen[1]! - seen[0]! >= 100 + 200 - 5, `backoff doubled between attempts (${seen[1]! - seen[0]!} ms)`);
});

t.test('a refusal (4xx) is kept as failed, not retried; the next role change tries again', async (t) => {
  const app = await syncApp(t);
  const { users, userId, roleId } = await setup(app);
  const refused = expectCall('put', 403, { message: 'Missing Permissions', code: 50013 });
  await users.grantRole(userId, roleId);
  await until('the row to fail', async () => (await outbox(app))[0]?.failed_at != null);
  t.ok(refused.isDone());
  t.match((await outbox(app))[0]!.last_error, /403/);
  // Proving that nothing happens takes a wait: five poll intervals of the worker.
  await new Promise((r) => setTimeout(r, 20 * 5));
  t.same(unexpected, [], 'a failed row is not sent again on its own');

  const del = expectCall('delete', 204);
  await users.revokeRole(userId, roleId);
  await until('the DELETE', () => del.isDone());
  await until('the outbox to drain', () => outboxEmpty(app));
});

t.test('a removal the chat platform cannot find counts as done', async (t) => {
  const app = await syncApp(t);
  const { users, userId, roleId } = await setup(app);
  const put = expectCall('put', 204);
  await users.grantRole(userId, roleId);
  await until('the PUT', () => put.isDone());
  const gone = expectCall('delete', 404, { message: 'Unknown Member', code: 10007 });
  await users.revokeRole(userId, roleId);
  await until('the DELETE', () => gone.isDone());
  await until('the outbox to drain', () => outboxEmpty(app));
  t.same(await outbox(app), [], 'no retry and no failed row is left');
  t.same(unexpected, []);
});

t.test('two site roles on one chat role: revoking one keeps the chat role', async (t) => {
  const app = await syncApp(t);
  const { users, userId, roleId } = await setup(app);
  const other = await call(app, '/api/admin/roles', { body: { name: 'VIP yearly', chatRoleID: CHAT_ROLE }, as: 'json' });
  const calls = recorder();
  await users.grantRole(userId, roleId);
  await users.grantRole(userId, Number(other.json().id));
  await until('the outbox to drain', () => outboxEmpty(app));
  await users.revokeRole(userId, roleId);
  await until('the revoke to be handled', async () => calls.length >= 2 && (await outboxEmpty(app)));
  t.notOk(calls.includes('DELETE'), `the chat role was never removed (${calls.join(', ')})`);

  await users.revokeRole(userId, Number(other.json().id));
  await until('the DELETE once neither is held', () => calls.at(-1) === 'DELETE');
});

t.test('with sync switched off nothing is sent, and pending work waits until it is on', async (t) => {
  const app = await syncApp(t);
  const { users, userId, roleId } = await setup(app, { sync: false });
  const put = expectCall('put', 204);
  await users.grantRole(userId, roleId);
  t.same(await outbox(app), [], 'nothing was queued');

  // Queued while on, switched off in the same transaction: the worker, woken at commit, finds it off.
  await app.db.transaction(async () => {
    await turnSyncInside(app, true);
    await users.revokeRole(userId, roleId);
    await turnSyncInside(app, false);
  });
  t.equal((await outbox(app)).length, 1);
  // Proving that nothing happens takes a wait: ten poll intervals of the worker.
  await new Promise((r) => setTimeout(r, 20 * 10));
  t.same(unexpected, [], 'nothing was sent while off');
  t.notOk(put.isDone());
  t.same(
    (await outbox(app)).map((r) => r.attempts),
    [0],
  );

  nock.cleanAll();
  const del = expectCall('delete', 204);
  await turnSync(app, true);
  await until('the held DELETE once on again', () => del.isDone());
  await until('the outbox to drain', () => outboxEmpty(app));
});

t.test('no bot token or no guild: nothing is queued or sent', async (t) => {
  for (const roleSync of [{ botTokenEnv: 'CHAT_SYNC_TEST_MISSING_TOKEN' }, { guildId: '' }]) {
    const app = await syncApp(t, roleSync);
    const { users, userId, roleId } = await setup(app);
    await users.grantRole(userId, roleId);
    t.same(await outbox(app), [], JSON.stringify(roleSync));
  }
  t.same(unexpected, []);
});

t.test('an unlinked user or a role without chatRoleID is skipped', async (t) => {
  const app = await syncApp(t);
  const { users, userId, roleId } = await setup(app, { link: false });
  await users.grantRole(userId, roleId);
  t.same(await outbox(app), [], 'no chat account linked');
  const plain = await call(app, '/api/admin/roles', { body: { name: 'Plain' }, as: 'json' });
  await users.linkAccount(userId, 'chat', CHAT_USER);
  await users.grantRole(userId, Number(plain.json().id));
  t.same(await outbox(app), [], 'the role has no chat role');
});

t.test('the outbox row rolls back with the role change', async (t) => {
  const app = await syncApp(t);
  const { users, userId, roleId } = await setup(app);
  await t.rejects(
    app.db.transaction(async () => {
      await users.grantRole(userId, roleId);
      t.equal((await outbox(app)).length, 1, 'written inside the transaction');
      throw new Error('the purchase failed after the grant');
    }),
    /purchase failed/,
  );
  t.same(await outbox(app), []);
  t.same(await users.rolesOf(userId), []);
  const res = await call(app, `/api/users/${userId}/roles`, { body: { roleID: '999' } });
  t.equal(res.json().error, 'ROLE_NOT_FOUND');
  t.same(await outbox(app), [], 'a refused API call queues nothing');
  t.same(unexpected, []);
});

t.test('a restart with pending work finishes it', async (t) => {
  const url = await restartableDatabase(t);

  // First run: the chat API is unreachable.
  const first = await syncApp(t, { retryBaseMs: 50 }, url);
  const { users, userId, roleId } = await setup(first);
  nock(API).persist().put(ROLE_PATH).replyWithError(netError('ECONNREFUSED', 'connect ECONNREFUSED'));
  await users.grantRole(userId, roleId);
  await until('a failed attempt', async () => ((await outbox(first))[0]?.attempts ?? 0) >= 1);
  await first.close();
  nock.cleanAll();

  // Second run on the same database: the API is back, and the boot resumes the pending row.
  const put = expectCall('put', 204);
  const second = await syncApp(t, {}, url);
  await until('the pending PUT after the restart', () => put.isDone());
  await until('the outbox to drain', () => outboxEmpty(second));
  t.same(unexpected, []);
});

t.test('closing the app mid-delivery hands the row back at once for the next boot', async (t) => {
  const url = await restartableDatabase(t);
  // A chat API that never answers: the close must abort the call, not wait out its timeout.
  const first = await syncApp(t, { requestTimeoutMs: 60000 }, url);
  const { users, userId, roleId } = await setup(first);
  const hanging = nock(API)
    .put(ROLE_PATH)
    .reply(() => new Promise(() => {}));
  await users.grantRole(userId, roleId);
  await until('the PUT to be in flight', () => hanging.isDone());
  const closing = Date.now();
  await first.close();
  t.ok(Date.now() - closing < 5000, 'the close did not wait for the chat API');

  const put = expectCall('put', 204);
  const second = await syncApp(t, { requestTimeoutMs: 60000 }, url);
  // Without the hand-back the row would stay leased for two request timeouts (two minutes here).
  await until('the PUT after the restart', () => put.isDone(), 5000);
  await until('the outbox to drain', () => outboxEmpty(second));
  t.same(unexpected, []);
});
