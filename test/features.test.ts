import t from 'tap';
import { Type } from '@sinclair/typebox';
import { buildApp } from '../core/app.ts';
import { builtinNames } from '../core/features.ts';
import { build, call, freshDatabaseUrl, ADMIN_KEY } from './helper.ts';
import { rowCount } from './fixtures.ts';

t.test('a disabled feature is never registered: no routes, no service, no tables', async (t) => {
  const app = await build(t, { features: [] });
  t.same(app.features, [], 'no features run');
  const res = await call(app, '/api/users/?userID=1');
  t.equal(res.statusCode, 404);
  t.equal(res.json().error, 'NOT_FOUND');
  const tables =
    app.db.dialect === 'sqlite'
      ? await app.db.unchecked.query<{ name: string }>("select name from sqlite_master where type = 'table' and name like 'users%'")
      : await app.db.unchecked.query<{ name: string }>(
          "select table_name as name from information_schema.tables where table_schema = database() and table_name like 'users%'",
        );
  t.same(tables, [], 'the users tables were not created');
});

t.test('an enabled feature provides its service and tables', async (t) => {
  const app = await build(t, { features: ['users'] });
  t.same(app.features, ['users']);
  t.equal(await rowCount(app, 'users_accounts'), 0);
});

t.test('a feature that requires a disabled one stops boot with a sentence naming both', async (t) => {
  const url = await freshDatabaseUrl(t);
  const plugins: Record<string, unknown> = Object.fromEntries(builtinNames().map((n) => [n, { enabled: false }]));
  plugins['needs-users'] = { enabled: true, package: './test/fixtures/needs-users.ts' };
  await t.rejects(buildApp({ env: { DATABASE_URL: url }, config: { log: { level: 'silent' }, plugins }, logger: false }), {
    message:
      'The "needs-users" feature requires the "users" feature, which is disabled (plugins.users.enabled = false). Enable "users" or disable ' +
      '"needs-users".',
  });
});

t.test('bad settings stop boot naming the setting', async (t) => {
  const url = await freshDatabaseUrl(t);
  await t.rejects(buildApp({ env: { DATABASE_URL: url }, config: { server: { port: 'eighty' } }, logger: false }), { message: /server\.port/ });
  await t.rejects(buildApp({ env: { DATABASE_URL: url }, config: { site: { currency: 'dollars' } }, logger: false }), { message: /site\.currency/ });
  await t.rejects(buildApp({ env: { DATABASE_URL: url }, config: { plugins: { users: { sweepSeconds: 0 } } }, logger: false }), {
    message: /plugins\.users\.sweepSeconds/,
  });
  await t.rejects(buildApp({ env: { DATABASE_URL: 'postgres://x/y' }, logger: false }), { message: /DATABASE_URL/ });
});

t.test("site settings are the features' own: checked at boot, kept while a built-in feature is disabled", async (t) => {
  const url = await freshDatabaseUrl(t);
  await t.rejects(
    buildApp({ env: { DATABASE_URL: url }, config: { site: { cashbackPercnt: 5 } }, logger: false }),
    { message: 'Invalid setting site.cashbackPercnt: unknown setting (misspelled?)' },
    'a key no feature declares',
  );
  await t.rejects(
    buildApp({ env: { DATABASE_URL: url }, config: { site: { buyResponseStatus: 202 } }, logger: false }),
    { message: 'Invalid setting site.buyResponseStatus: must be one of 200, 201' },
    "a feature's setting is checked like core's",
  );

  const app = await build(t, { features: ['users'], config: { site: { cashbackPercent: 7 } } });
  t.same(app.features, ['users'], 'store and auth are disabled');
  let res = await call(app, '/api/admin/settings');
  t.same(
    Object.keys(res.json().data),
    [
      'currency',
      'timezone',
      'registerLimit',
      'twoFactorEnabled',
      'registrationEmailRequired',
      'guestEmail',
      'testMode',
      'taxMode',
      'sellerTaxNumber',
      'newAccountDailyLimit',
      'newAccountDays',
      'stripeThreeDSecure',
      'promotionsGoalAmount',
      'promotionsGoalStart',
      'promotionsGoalEnd',
      'cashbackPercent',
      'buyResponseStatus',
      'storefrontTitle',
      'storefrontDescription',
      'storefrontLogo',
      'storefrontAccent',
      'storefrontAccentText',
      'storefrontFooterLinks',
      'storefrontServerAddress',
      'storefrontLanguage',
    ],
    "core's, then each built-in feature's by name, running or not",
  );
  t.equal(res.json().data.cashbackPercent, 7, 'the config default of a disabled feature is kept');
  res = await call(app, '/api/admin/settings', { method: 'PATCH', body: { buyResponseStatus: 201 }, as: 'json' });
  t.equal(res.json().data.buyResponseStatus, 201, 'and it can be set before the feature is enabled');

  const { declareSettings } = await import('../core/settings.ts');
  const flag = { schema: Type.Boolean({ default: false }), label: 'A flag' };
  t.throws(() => declareSettings([{ name: 'alpha', settings: { timezone: flag } }]), {
    message: 'The site setting timezone is declared by both core and the "alpha" feature.',
  });
  t.throws(
    () =>
      declareSettings([
        { name: 'beta', settings: { shared: flag } },
        { name: 'alpha', settings: { shared: flag } },
      ]),
    { message: 'The site setting shared is declared by both the "alpha" feature and the "beta" feature.' },
    'a setting has one owner',
  );
});

t.test('a third-party feature package loads, migrates and serves', async (t) => {
  const app = await build(t, { features: [], config: { plugins: { hello: { enabled: true, greeting: 'Welcome' } } } });
  t.same(app.features, ['hello']);
  let res = await call(app, '/api/hello/greetings', { body: { name: 'Steve' } });
  t.equal(res.statusCode, 201);
  t.same(res.json(), { status: true, id: '1' });
  res = await call(app, '/api/hello/greetings');
  t.same(res.json(), [{ id: '1', text: 'Welcome, Steve!' }], 'its option reaches it');
  res = await call(app, '/api/hello/greetings', { key: null });
  t.equal(res.statusCode, 401, 'the host guards its routes too');
  const done = await app.db.unchecked.query<{ name: string }>('select name from core_migrations order by id');
  t.ok(
    done.some((m) => m.name.endsWith('_hello_init')),
    'its migration ran',
  );
});

t.test('a third-party feature declares its own error codes and site settings', async (t) => {
  const app = await build(t, { features: [], config: { plugins: { hello: { enabled: true } }, site: { helloPunctuation: '.' } } });
  t.equal((await call(app, '/api/hello/greetings', { body: { name: 'Steve' } })).statusCode, 201);
  let res = await call(app, '/api/hello/greetings/1');
  t.same(res.json(), { id: '1', text: 'Hello, Steve.' }, 'its setting from config');
  res = await call(app, '/api/admin/settings', { method: 'PATCH', body: { helloPunctuation: '!' }, as: 'json' });
  t.same(
    res.json().data,
    {
      currency: 'USD',
      timezone: 'UTC',
      registerLimit: 3,
      twoFactorEnabled: true,
      registrationEmailRequired: true,
      guestEmail: 'optional',
      testMode: false,
      taxMode: 'off',
      sellerTaxNumber: '',
      newAccountDailyLimit: 0,
      newAccountDays: 7,
      stripeThreeDSecure: false,
      promotionsGoalAmount: 0,
      promotionsGoalStart: '',
      promotionsGoalEnd: '',
      cashbackPercent: 0,
      buyResponseStatus: 200,
      storefrontTitle: 'Community Store',
      storefrontDescription: 'Ranks, items and more for our game server.',
      storefrontLogo: '',
      storefrontAccent: '#0b4ea2',
      storefrontAccentText: '#ffffff',
      storefrontFooterLinks: '',
      storefrontServerAddress: '',
      storefrontLanguage: 'en',
      helloPunctuation: '!',
    },
    'after core and the built-in features',
  );
  t.same((await call(app, '/api/hello/greetings/1')).json(), { id: '1', text: 'Hello, Steve!' }, 'changed at run time');
  res = await call(app, '/api/hello/greetings/2');
  t.equal(res.statusCode, 404, 'its code has the status it declared');
  t.same(res.json(), { status: false, error: 'GREETING_NOT_FOUND', message: 'No greeting with ID 2.' });
  res = await call(app, '/api/admin/settings', { method: 'PATCH', body: { helloPunctuation: '?' }, as: 'json' });
  t.equal(res.json().error, 'VALIDATION_ERROR', 'its setting is checked');
  const url = await freshDatabaseUrl(t);
  await t.rejects(
    buildApp({ env: { DATABASE_URL: url }, config: { site: { helloPunctuation: '.' } }, logger: false }),
    { message: 'Invalid setting site.helloPunctuation: unknown setting (misspelled?)' },
    'a disabled package is not read: its setting is unknown',
  );
});

t.test('migrations run once: a restart on the same database keeps the data', async (t) => {
  const url = process.env.TEST_MYSQL_URL ? await freshDatabaseUrl(t) : `sqlite:${t.testdirName}/db.sqlite`;
  if (!process.env.TEST_MYSQL_URL) t.testdir({});
  const first = await buildApp({
    env: { DATABASE_URL: url, API_KEY: ADMIN_KEY },
    config: { log: { level: 'silent' }, plugins: { hello: { enabled: true } } },
    logger: false,
  });
  await call(first, '/api/hello/greetings', { body: { name: 'Alex' } });
  await first.close();
  const second = await buildApp({
    env: { DATABASE_URL: url, API_KEY: ADMIN_KEY },
    config: { log: { level: 'silent' }, plugins: { hello: { enabled: true } } },
    logger: false,
  });
  t.teardown(() => second.close());
  const res = await call(second, '/api/hello/greetings');
  t.same(res.json(), [{ id: '1', text: 'Hello, Alex!' }]);
});

t.test('features load once each, after the features they require; a circle stops boot', async (t) => {
  const { selectEnabled } = await import('../core/features.ts');
  const { createServiceRef } = await import('../core/registry.ts');
  const { loadConfig } = await import('../core/config.ts');
  const def = (name: string, requires: string[]) => ({
    def: { name, requires: requires.map((r) => createServiceRef(r)), register: async () => {} },
    source: 'package' as const,
    options: undefined,
  });
  const config = loadConfig({}, { plugins: Object.fromEntries(['a', 'b', 'c'].map((n) => [n, { enabled: true, package: n }])) });
  const order = selectEnabled([def('a', ['c']), def('b', []), def('c', ['b'])], config).map((f) => f.def.name);
  t.strictSame(order, ['b', 'c', 'a']);
  t.throws(() => selectEnabled([def('a', ['b']), def('b', ['a'])], config), { message: 'Features require each other in a circle: a → b → a.' });

  const app = await build(t);
  t.strictSame(
    app.features,
    [...app.features].filter((n, i, all) => all.indexOf(n) === i),
    'each feature once',
  );
  t.ok(app.features.indexOf('users') < app.features.indexOf('store'), 'users before store, which requires it');
});
