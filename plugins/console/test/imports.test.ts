/** The imports section: a LeaderOS import started from the console, followed, and its report kept. */
import t from 'tap';
import nock from 'nock';
import type { FastifyInstance } from 'fastify';
import { build } from '../../../test/helper.ts';
import { rowCount, until } from '../../../test/fixtures.ts';
import { importsRef } from '../../imports/contract.ts';
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
