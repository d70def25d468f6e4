import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { ENCODINGS, apiKey, build, call } from '../../../test/helper.ts';
import { PERMANENT, addSeconds, now } from '../../../core/format.ts';
import type { EventMap } from '../../../core/events.ts';
import { expectErrors, newUser, settle, snapshot } from '../../../test/fixtures.ts';
import { fields, sql } from '../../../core/sql.ts';
import { UsersRoleAssignment } from '../entities.ts';
import { USERS_TABLES, newRole, usersService, type RoleRowBody } from './fixtures.ts';

/** The user-role row api.md shows for a role held until `expiryDate`. */
function held(role: RoleRowBody, expiryDate = PERMANENT) {
  return { id: role.id, chatRoleID: role.chatRoleID, name: role.name, slug: role.slug, priority: role.priority, expiryDate };
}

/** A future time as clients write it (UTC site), whole seconds. */
const inDays = (days: number) => addSeconds(now(), days * 86400);
const A = UsersRoleAssignment.c;
/** Time passes for a role: its assignments now lie a second in the past. */
const expireRole = (app: FastifyInstance, roleId: number) =>
  app.db.run(sql`update ${UsersRoleAssignment} set ${A.expiryDate} = ${addSeconds(now(), -1)} where ${A.roleId} = ${roleId}`);

t.test('grant, list, re-grant, move and revoke roles', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve');
  const vip = await newRole(app, 'VIP', 10, '222222222222222222');
  const mvp = await newRole(app, 'MVP', 20, '333333333333333333');
  const helper = await newRole(app, 'Helper', 5);
  const events: unknown[] = [];
  app.events.on('users.role.granted', (e: EventMap['users.role.granted']) => {
    events.push(['granted', e]);
  });
  app.events.on('users.role.revoked', (e: EventMap['users.role.revoked']) => {
    events.push(['revoked', e]);
  });
  const key = await apiKey(app);
  const url = `/api/users/${steve.id}/roles`;

  let res = await call(app, url, { key });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), [], 'no roles yet');

  res = await call(app, url, { key, body: { roleID: vip.id } });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), [held(vip)], 'without expiryDate the role is permanent');

  const until = inDays(30);
  res = await call(app, url, { key, body: { roleID: Number(mvp.id), expiryDate: until }, as: 'json' });
  t.strictSame(res.json(), [held(mvp, until), held(vip)], 'highest priority first; a JSON number is accepted for roleID');

  const later = inDays(60);
  res = await call(app, url, { key, body: { roleID: mvp.id, expiryDate: later }, as: 'urlencoded' });
  t.strictSame(res.json(), [held(mvp, later), held(vip)], 'posting a held role sets its expiry');
  t.equal((await UsersRoleAssignment.select(app.db)).length, 2, 'still one assignment per role');

  res = await call(app, url, { key, body: { roleID: mvp.id, expiryDate: PERMANENT } });
  t.strictSame(res.json(), [held(mvp), held(vip)], 'the sentinel makes it permanent');

  res = await call(app, `${url}/${vip.id}`, { key, method: 'PATCH', body: { roleID: helper.id } });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), [held(mvp), held(helper)], 'PATCH moves the assignment and keeps its expiry');

  res = await call(app, `${url}/${helper.id}`, { key, method: 'PATCH', body: { roleID: helper.id, expiryDate: until } });
  t.strictSame(res.json(), [held(mvp), held(helper, until)], 'PATCH to the same role changes only the expiry');

  res = await call(app, `${url}/${mvp.id}`, { key, method: 'DELETE' });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), [held(helper, until)], 'DELETE answers with the roles left');
  res = await call(app, url, { key });
  t.strictSame(res.json(), [held(helper, until)]);

  await settle();
  const ids = { u: steve.id, vip: Number(vip.id), mvp: Number(mvp.id), helper: Number(helper.id) };
  t.strictSame(
    events,
    [
      ['granted', { userId: ids.u, roleId: ids.vip, expiryDate: PERMANENT }],
      ['granted', { userId: ids.u, roleId: ids.mvp, expiryDate: until }],
      ['granted', { userId: ids.u, roleId: ids.mvp, expiryDate: later }],
      ['granted', { userId: ids.u, roleId: ids.mvp, expiryDate: PERMANENT }],
      ['revoked', { userId: ids.u, roleId: ids.vip, reason: 'revoked' }],
      ['granted', { userId: ids.u, roleId: ids.helper, expiryDate: PERMANENT }],
      ['granted', { userId: ids.u, roleId: ids.helper, expiryDate: until }],
      ['revoked', { userId: ids.u, roleId: ids.mvp, reason: 'revoked' }],
    ],
    'every change is announced',
  );
});

t.test('role bodies arrive the same in every encoding', async (t) => {
  const app = await build(t, { features: ['users'] });
  const vip = await newRole(app, 'VIP');
  const until = inDays(7);
  for (const as of ENCODINGS) {
    const user = await newUser(app, `u_${as}`);
    const res = await call(app, `/api/users/${user.id}/roles`, { body: { roleID: vip.id, expiryDate: until }, as });
    t.equal(res.statusCode, 200, as);
    t.strictSame(res.json(), [held(vip, until)], as);
  }
});

t.test('expiryDate is read and shown in the site time zone', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve');
  const vip = await newRole(app, 'VIP');
  await call(app, '/api/admin/settings', { method: 'PATCH', body: { timezone: 'America/New_York' }, as: 'json' });
  const res = await call(app, `/api/users/${steve.id}/roles`, { body: { roleID: vip.id, expiryDate: '2031-01-15 12:00:00' } });
  t.strictSame(res.json(), [held(vip, '2031-01-15 12:00:00')]);
  const [row] = await UsersRoleAssignment.select(app.db);
  t.equal(row!.expiryDate, '2031-01-15 17:00:00', 'stored in UTC (New York is UTC-5 in January)');
});

t.test('role errors: codes, statuses, and nothing changed', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve');
  const vip = await newRole(app, 'VIP');
  const mvp = await newRole(app, 'MVP');
  await call(app, `/api/users/${steve.id}/roles`, { body: { roleID: vip.id } });
  const before = await snapshot(app, USERS_TABLES);
  const base = `/api/users/${steve.id}/roles`;
  const past = addSeconds(now(), -60);
  await expectErrors(t, app, [
    { url: '/api/users/999/roles', status: 404, error: 'USER_NOT_FOUND' },
    { url: '/api/users/abc/roles', status: 404, error: 'USER_NOT_FOUND', message: /"abc"/ },
    { url: '/api/users/abc/roles', body: { roleID: vip.id }, status: 400, error: 'VALIDATION_ERROR', message: /userId/ },
    { url: '/api/users/999/roles', body: { roleID: vip.id }, status: 404, error: 'USER_NOT_FOUND' },
    { url: base, body: { roleID: '999' }, status: 404, error: 'ROLE_NOT_FOUND', message: /999/ },
    { url: base, body: {}, status: 400, error: 'VALIDATION_ERROR', message: /roleID is required/ },
    { url: base, body: { roleID: 'abc' }, status: 400, error: 'VALIDATION_ERROR', message: /roleID/ },
    { url: base, body: { roleID: '0' }, status: 400, error: 'VALIDATION_ERROR', message: /roleID/ },
    { url: base, body: { roleID: mvp.id, expiryDate: 'tomorrow' }, status: 400, error: 'VALIDATION_ERROR', message: /expiryDate/ },
    { url: base, body: { roleID: mvp.id, expiryDate: '2031-02-30 00:00:00' }, status: 400, error: 'VALIDATION_ERROR', message: /expiryDate/ },
    { url: base, body: { roleID: mvp.id, expiryDate: past }, status: 400, error: 'VALIDATION_ERROR', message: /past/ },
    { url: `/api/users/999/roles/${vip.id}`, method: 'PATCH', body: { roleID: mvp.id }, status: 404, error: 'USER_NOT_FOUND' },
    { url: `${base}/${mvp.id}`, method: 'PATCH', body: { roleID: vip.id }, status: 404, error: 'ROLE_NOT_FOUND', message: /does not hold/ },
    { url: `${base}/${vip.id}`, method: 'PATCH', body: { roleID: '999' }, status: 404, error: 'ROLE_NOT_FOUND', message: /999/ },
    { url: `${base}/${vip.id}`, method: 'PATCH', body: {}, status: 400, error: 'VALIDATION_ERROR', message: /roleID/ },
    { url: `${base}/${vip.id}`, method: 'PATCH', body: { roleID: mvp.id, expiryDate: past }, status: 400, error: 'VALIDATION_ERROR' },
    { url: `${base}/vip`, method: 'PATCH', body: { roleID: mvp.id }, status: 400, error: 'VALIDATION_ERROR', message: /role/ },
    { url: `/api/users/999/roles/${vip.id}`, method: 'DELETE', status: 404, error: 'USER_NOT_FOUND' },
    { url: `${base}/${mvp.id}`, method: 'DELETE', status: 404, error: 'ROLE_NOT_FOUND' },
    { url: `${base}/999`, method: 'DELETE', status: 404, error: 'ROLE_NOT_FOUND' },
  ]);
  t.strictSame(await snapshot(app, USERS_TABLES), before, 'no failed call changed anything');
});

t.test('role expiry: gone from answers at once, deleted by the sweep, announced as expired', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve');
  const alex = await newUser(app, 'Alex');
  const [vip, mvp, old] = [await newRole(app, 'VIP'), await newRole(app, 'MVP'), await newRole(app, 'Old')];
  const until = inDays(1);
  await call(app, `/api/users/${steve.id}/roles`, { body: { roleID: vip.id } });
  await call(app, `/api/users/${steve.id}/roles`, { body: { roleID: mvp.id, expiryDate: until } });
  await call(app, `/api/users/${steve.id}/roles`, { body: { roleID: old.id, expiryDate: until } });
  await call(app, `/api/users/${alex.id}/roles`, { body: { roleID: old.id, expiryDate: until } });
  // Time passes for the Old role: its assignments now lie a second in the past.
  await expireRole(app, Number(old.id));

  let res = await call(app, `/api/users/${steve.id}/roles`);
  t.strictSame(
    res.json(),
    [held(vip), held(mvp, until)].sort((a, b) => Number(a.id) - Number(b.id)),
    'the expired role is not shown',
  );
  res = await call(app, `/api/users/${alex.id}/roles`);
  t.strictSame(res.json(), []);
  res = await call(app, `/api/users/${alex.id}/roles/${old.id}`, { method: 'DELETE' });
  t.equal(res.json().error, 'ROLE_NOT_FOUND', 'an expired role is not held any more');
  res = await call(app, `/api/users/${alex.id}/roles/${old.id}`, { method: 'PATCH', body: { roleID: vip.id } });
  t.equal(res.json().error, 'ROLE_NOT_FOUND');

  const revoked: EventMap['users.role.revoked'][] = [];
  app.events.on('users.role.revoked', (e) => {
    revoked.push(e);
  });
  t.equal(await usersService(app).sweepExpired(), 2, 'the sweep deletes both expired assignments');
  await settle();
  t.strictSame(
    revoked.sort((a, b) => a.userId - b.userId),
    [
      { userId: steve.id, roleId: Number(old.id), reason: 'expired' },
      { userId: alex.id, roleId: Number(old.id), reason: 'expired' },
    ],
  );
  const rows = await app.db.query(sql`select ${fields({ role_id: A.roleId })} from ${UsersRoleAssignment} order by ${A.roleId}`);
  t.strictSame(
    rows.map((r) => Number(r.role_id)),
    [Number(vip.id), Number(mvp.id)],
    'permanent and future assignments stay',
  );
  t.equal(await usersService(app).sweepExpired(), 0, 'nothing left to sweep');

  await expireRole(app, Number(mvp.id));
  res = await call(app, `/api/users/${steve.id}/roles`, { body: { roleID: mvp.id, expiryDate: until } });
  t.strictSame(
    res.json(),
    [held(vip), held(mvp, until)].sort((a, b) => Number(a.id) - Number(b.id)),
    'an expired assignment can be granted again',
  );
});
