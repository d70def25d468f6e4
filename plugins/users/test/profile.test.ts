import t from 'tap';
import { apiKey, build, call } from '../../../test/helper.ts';
import { formatMoney } from '../../../core/format.ts';
import { sql } from '../../../core/sql.ts';
import { usersRef } from '../contract.ts';
import { UsersAccount } from '../entities.ts';
import { expectErrors, newUser, snapshot } from '../../../test/fixtures.ts';
import { USERS_TABLES } from './fixtures.ts';

t.test('GET /api/users/ by userID or username: every field of the profile, as strings', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve', { creationIP: '203.0.113.7' });
  await newUser(app, 'alex');
  const stored = await UsersAccount.find(app.db, steve.id);
  t.match(stored!.creationDate, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  const expected = {
    id: String(steve.id),
    username: 'Steve',
    realname: 'Steve',
    email: 'steve@example.com',
    credit: '0.00',
    isVerified: '1',
    authStatus: '0',
    creationIP: '203.0.113.7',
    creationDate: stored!.creationDate,
    linkedAccounts: {},
    // The Kotlin wrapper's User requires these; no game has reported them.
    uuid: '',
    lastlogin: '',
    x: '',
    y: '',
    z: '',
    world: '',
    isLogged: '0',
  };

  const key = await apiKey(app);
  for (const url of [`/api/users/?userID=${steve.id}`, `/api/users?userID=${steve.id}`, '/api/users/?username=Steve', '/api/users/?username=sTEVE']) {
    const res = await call(app, url, { key });
    t.equal(res.statusCode, 200, url);
    t.strictSame(res.json(), expected, `${url}: the profile, field by field`);
  }
  // GET and DELETE may carry an empty form body (decisions.md §1).
  const res = await call(app, '/api/users/?username=steve', { headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(res.statusCode, 200);
});

t.test('profile: linked accounts, email-less accounts, time zone, credit from the credits feature', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve', { email: null });
  let res = await call(app, `/api/admin/users/${steve.id}/linked-accounts/chat`, { method: 'PUT', body: { externalID: '111111111111111111' } });
  t.equal(res.statusCode, 200);
  res = await call(app, `/api/users/?userID=${steve.id}`);
  t.strictSame(res.json().linkedAccounts, { chat: '111111111111111111' });
  t.equal(res.json().email, '', 'an account without email shows an empty string, never null');

  const utc = res.json().creationDate as string;
  res = await call(app, '/api/admin/settings', { method: 'PATCH', body: { timezone: 'Asia/Tokyo' }, as: 'json' });
  t.equal(res.statusCode, 200);
  res = await call(app, `/api/users/?userID=${steve.id}`);
  const shifted = new Date(`${utc.replace(' ', 'T')}Z`).getTime() + 9 * 3600_000;
  t.equal(res.json().creationDate, new Date(shifted).toISOString().slice(0, 19).replace('T', ' '), 'creationDate in the site time zone');

  t.equal(res.json().credit, '0.00', 'without the credits feature, credit is 0.00');

  // Another feature adds a field to every profile, read in the profile's own statement.
  app.services.get(usersRef).addProfileField({ field: 'credit', select: (id) => sql`(${id} * 0 + ${123456})`, show: (v) => formatMoney(Number(v)) });
  const before = app.db.statements;
  res = await call(app, '/api/users/?username=STEVE');
  t.equal(res.json().credit, '1234.56', 'credit is what the contributing feature shows');
  t.equal(app.db.statements - before, 1, 'one statement for the profile and its fields');
});

t.test('with the credits feature, a profile shows the balance in one statement', async (t) => {
  const app = await build(t, { features: ['users', 'credits'] });
  const steve = await newUser(app, 'Steve');
  let res = await call(app, '/api/credits/set', { body: { target_username: 'steve', amount: '12.30' } });
  t.equal(res.statusCode, 200);
  const before = app.db.statements;
  res = await call(app, '/api/users/?username=STEVE');
  t.equal(res.json().credit, '12.30');
  t.equal(app.db.statements - before, 1, 'the balance is read in the profile statement');
  res = await call(app, `/api/admin/users/${steve.id}`, { method: 'PATCH', body: { isVerified: '1' } });
  t.equal(res.json().credit, '12.30', 'admin answers show it too');
  await newUser(app, 'Alex');
  t.equal((await call(app, '/api/users/?username=alex')).json().credit, '0.00', 'no wallet yet: 0.00');
});

t.test('profile lookup errors change nothing', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve');
  const before = await snapshot(app, USERS_TABLES);
  // The game plugin looks players up here and reads `error` into its enum: USER_NOT_FOUND, ours in `code`.
  const malformed = { status: 400, error: 'USER_NOT_FOUND', code: 'VALIDATION_ERROR' };
  await expectErrors(t, app, [
    { url: '/api/users/', ...malformed, message: /exactly one/ },
    { url: `/api/users/?userID=${steve.id}&username=Steve`, ...malformed, message: /exactly one/ },
    { url: '/api/users/?userID=abc', ...malformed, message: /userID/ },
    { url: '/api/users/?userID=-1', ...malformed, message: /userID/ },
    { url: '/api/users/?userID=1&userID=2', ...malformed, message: /userID/ },
    { url: '/api/users/?username=', ...malformed, message: /username/ },
    { url: '/api/users/?userID=999', status: 404, error: 'USER_NOT_FOUND', message: 'No user with ID 999.' },
    { url: '/api/users/?userID=99999999999999999', status: 404, error: 'USER_NOT_FOUND', message: /ID/ },
    { url: '/api/users/?username=herobrine', status: 404, error: 'USER_NOT_FOUND', message: 'No user named "herobrine".' },
  ]);
  t.strictSame(await snapshot(app, USERS_TABLES), before);
});
