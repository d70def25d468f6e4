/**
 * The imports section: imports started from the console (LeaderOS; Tebex through its API; a
 * CraftingStore payments CSV uploaded), followed live, and their reports kept.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import nock from 'nock';
import type { FastifyInstance } from 'fastify';
import { build } from '../../../test/helper.ts';
import { rowCount, until } from '../../../test/fixtures.ts';
import { importsRef } from '../../imports/contract.ts';
import { TEBEX_API } from '../../imports/tebex.ts';
import { grant, register, role, signInByForm } from './browser.ts';

const FEATURES = ['users', 'auth', 'credits', 'console', 'imports'];
const SITE = 'https://shop.example';

nock.disableNetConnect();
t.teardown(() => nock.enableNetConnect());

/** A site of one user, in LeaderOS's shape. */
function site(): void {
  const scope = nock(SITE, { reqheaders: { 'x-api-key': 'owner-key' } });
  scope.get('/api/users/').query({ userID: '1' }).reply(200, { id: '1', username: 'Steve', email: 'steve@example.com', credit: '1.00', isVerified: '1' });
  scope.get('/api/users/1/roles').reply(200, []);
  for (const id of ['2', '3'])
    scope.get('/api/users/').query({ userID: id }).reply(404, { status: false, error: 'USER_NOT_FOUND', message: 'User not found.' });
  scope.get('/api/vote-links').reply(200, []);
  scope.get('/api/support/tickets').reply(200, []);
  scope.get('/api/store/listing').reply(200, { categories: [] });
}

async function staff(app: FastifyInstance): Promise<{ cookie: string; csrf: string }> {
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const page = await app.inject({ url: '/console/imports', headers: { cookie } });
  return { cookie, csrf: /name="_csrf" value="([0-9a-f]+)"/.exec(page.body)![1]! };
}

t.test('an import started in the console runs on, and its report stays', async (t) => {
  const app = await build(t, { features: FEATURES, config: { plugins: { imports: { leaderosMaxMissing: 2 } } } });
  const { cookie, csrf } = await staff(app);
  const post = (fields: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url: '/console/imports',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    });

  const refused = await post({ url: 'shop.example', apiKey: '' });
  t.equal(refused.statusCode, 422);
  t.match(refused.body, /An http\(s\) address/);
  t.match(refused.body, /The site&#39;s API key is needed|The site's API key is needed/);
  t.equal(await rowCount(app, 'imports_runs'), 0, 'nothing started');

  site();
  const started = await post({ url: SITE, apiKey: 'owner-key' });
  t.equal(started.statusCode, 303);
  const at = String(started.headers.location);
  t.match(at, /^\/console\/imports\/\d+$/);
  const id = Number(at.split('/').pop());
  const imports = app.services.get(importsRef);
  await until(async () => (await imports.getRun(id))?.status !== 'running');
  t.match(await imports.getRun(id), { status: 'done', dryRun: false, report: { created: { user: 1 } } });

  const page = await app.inject({ url: at, headers: { cookie } });
  t.equal(page.statusCode, 200);
  t.match(page.body, /done/);
  t.match(page.body, /Passwords: a LeaderOS site does not give them out/, 'the report is kept with the run');
  t.match((await app.inject({ url: '/console/imports', headers: { cookie } })).body, new RegExp(`href="${at}"`), 'the run is listed');
  t.equal((await app.inject({ url: '/console/imports/999', headers: { cookie } })).statusCode, 404);
});

/** A multipart body as a browser sends a form with a file input. */
function multipart(fields: Record<string, string>, file?: { field: string; filename: string; data: Buffer }) {
  const boundary = `----test${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = Object.entries(fields).map(([k, v]) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  if (file)
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.filename}"\r\nContent-Type: text/csv\r\n\r\n`),
      file.data,
      Buffer.from('\r\n'),
    );
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const HOSTED = ['users', 'auth', 'credits', 'store', 'console', 'imports'];

t.test('a Tebex import is followed live: its page reloads its figures while it runs, and stops once it is done', async (t) => {
  const app = await build(t, { features: HOSTED, config: { plugins: { imports: { progressEveryMs: 0 } } } });
  const { cookie, csrf } = await staff(app);
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const scope = nock(TEBEX_API, { reqheaders: { 'x-tebex-secret': 'server-secret' } });
  scope.get('/packages').reply(200, [{ id: 1, name: 'VIP', price: '5.00', expiry_length: 0, expiry_period: 'day', category: { id: 2, name: 'Ranks' } }]);
  // The payments answer waits for the test: the run is caught half way.
  scope
    .get('/payments')
    .query({ paged: '1' })
    .reply(async () => {
      await gate;
      return [200, { current_page: 1, last_page: 1, data: [] }];
    });

  const form = multipart({ _csrf: csrf, secret: 'server-secret' });
  const started = await app.inject({ method: 'POST', url: '/console/imports/tebex', headers: { cookie, ...form.headers }, payload: form.payload });
  t.equal(started.statusCode, 303);
  const at = String(started.headers.location);
  const id = Number(at.split('/').pop());
  const imports = app.services.get(importsRef);
  await until(async () => (await imports.getRun(id))?.report.created.product === 1);

  const going = await app.inject({ url: at, headers: { cookie } });
  t.match(going.body, /running/);
  t.match(going.body, new RegExp(`<main id="main" tabindex="-1" hx-get="${at}" hx-trigger="every \\d+s" hx-select="#main"`), 'the page reloads itself');
  t.match(going.body, /data-label="Kind">product<\/td>/, 'with what the run brought so far');

  open();
  await until(async () => (await imports.getRun(id))?.status !== 'running');
  const done = await app.inject({ url: at, headers: { cookie } });
  t.match(done.body, /done/);
  t.notMatch(done.body, /hx-trigger="every/, 'a finished run stops reloading');
});

t.test('a payments CSV uploaded in the console is imported, and a wrong upload is refused with the reason beside the field', async (t) => {
  const app = await build(t, { features: HOSTED });
  const { cookie, csrf } = await staff(app);
  const post = (path: string, fields: Record<string, string>, csv?: string | Buffer) => {
    const body = multipart({ _csrf: csrf, ...fields }, csv === undefined ? undefined : { field: 'csv', filename: 'payments.csv', data: Buffer.from(csv) });
    return app.inject({ method: 'POST', url: `/console/imports/${path}`, headers: { cookie, ...body.headers }, payload: body.payload });
  };

  const none = await post('tebex', {});
  t.equal(none.statusCode, 422);
  t.match(none.body, /The key is needed, or a payments CSV export/);
  const binary = await post('craftingstore', {}, Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00]));
  t.equal(binary.statusCode, 422);
  t.match(binary.body, /A CSV file is text; this one is not/);
  t.equal(await rowCount(app, 'imports_runs'), 0, 'nothing started');

  const csv = 'id,inGameName,uuid,packageName,price,currency,status,createdAt\n501,Steve,,Knight,15.00,USD,PAID,2024-03-01 12:00:00\n';
  const started = await post('craftingstore', { dryRun: 'true' }, csv);
  t.equal(started.statusCode, 303);
  const id = Number(String(started.headers.location).split('/').pop());
  const imports = app.services.get(importsRef);
  await until(async () => (await imports.getRun(id))?.status !== 'running');
  t.match(await imports.getRun(id), { status: 'done', dryRun: true, source: 'craftingstore', report: { created: { player: 1, payment: 1 } } });
  t.equal(await rowCount(app, 'users_accounts'), 1, 'a dry run brought nobody (only the staff account is here)');
});
