import t from 'tap';
import { apiKey, build, call } from '../../../test/helper.ts';
import type { EventMap } from '../../../core/events.ts';
import { expectErrors, newUser, settle, snapshot } from '../../../test/fixtures.ts';
import { USERS_TABLES, newRole, usersService } from './fixtures.ts';

t.test('admin roles: create, read, list, change, delete', async (t) => {
  const app = await build(t, { features: ['users'] });
  let res = await call(app, '/api/admin/roles', {
    body: { name: 'VIP Gold', priority: '10', chatRoleID: '222222222222222222', usernameCSS: 'color: gold', badgeCSS: 'background: gold' },
  });
  t.equal(res.statusCode, 201);
  const vip = res.json();
  t.strictSame(
    vip,
    {
      id: vip.id,
      name: 'VIP Gold',
      slug: 'vip-gold',
      usernameCSS: 'color: gold',
      badgeCSS: 'background: gold',
      priority: '10',
      chatRoleID: '222222222222222222',
    },
    'the slug is made from the name when omitted',
  );
  t.match(vip.id, /^[1-9][0-9]*$/);

  res = await call(app, '/api/admin/roles', { body: { name: 'Helper', slug: 'helper', priority: -1 }, as: 'json' });
  t.equal(res.statusCode, 201);
  const helper = res.json();
  t.strictSame(helper, { id: helper.id, name: 'Helper', slug: 'helper', usernameCSS: null, badgeCSS: null, priority: '-1', chatRoleID: '' });

  res = await call(app, `/api/admin/roles/${vip.id}`);
  t.strictSame(res.json(), vip);
  res = await call(app, '/api/admin/roles');
  t.strictSame(res.json(), [vip, helper], 'by priority, highest first');

  res = await call(app, `/api/admin/roles/${helper.id}`, { method: 'PATCH', body: { priority: '50', usernameCSS: 'color: green' }, as: 'urlencoded' });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), { ...helper, priority: '50', usernameCSS: 'color: green' }, 'only the fields sent change');
  res = await call(app, `/api/admin/roles/${helper.id}`, { method: 'PATCH', body: { usernameCSS: '' } });
  t.equal(res.json().usernameCSS, null, 'an empty CSS field clears it');

  const steve = await newUser(app, 'Steve');
  await call(app, `/api/users/${steve.id}/roles`, { body: { roleID: vip.id } });
  await call(app, `/api/users/${steve.id}/roles`, { body: { roleID: helper.id } });
  const revoked: EventMap['users.role.revoked'][] = [];
  app.events.on('users.role.revoked', (e) => {
    revoked.push(e);
  });
  res = await call(app, `/api/admin/roles/${vip.id}`, { method: 'DELETE' });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json(), { status: true });
  await settle();
  t.strictSame(revoked, [{ userId: steve.id, roleId: Number(vip.id), reason: 'revoked' }], 'holders lose the role');
  res = await call(app, `/api/users/${steve.id}/roles`);
  t.strictSame(
    res.json().map((r: { id: string }) => r.id),
    [helper.id],
  );
  res = await call(app, `/api/admin/roles/${vip.id}`);
  t.equal(res.statusCode, 404);
  t.equal(res.json().error, 'ROLE_NOT_FOUND');
});

t.test('admin roles: errors change nothing; the api scope may not use them', async (t) => {
  const app = await build(t, { features: ['users'] });
  const vip = await newRole(app, 'VIP');
  await newRole(app, 'Other');
  const before = await snapshot(app, USERS_TABLES);
  await expectErrors(t, app, [
    { url: '/api/admin/roles', body: { slug: 'x' }, status: 400, error: 'VALIDATION_ERROR', message: /name/ },
    { url: '/api/admin/roles', body: { name: 'VIP' }, status: 409, error: 'CONFLICT', message: /vip/ },
    { url: '/api/admin/roles', body: { name: '!!!' }, status: 400, error: 'VALIDATION_ERROR', message: /slug/ },
    { url: '/api/admin/roles', body: { name: 'A', slug: 'Not A Slug' }, status: 400, error: 'VALIDATION_ERROR', message: /slug/ },
    { url: '/api/admin/roles', body: { name: 'A', priority: 'high' }, status: 400, error: 'VALIDATION_ERROR', message: /priority/ },
    { url: '/api/admin/roles', body: { name: 'A', priority: '99999999999' }, status: 400, error: 'VALIDATION_ERROR', message: /priority/ },
    { url: '/api/admin/roles', body: { name: 'x'.repeat(65) }, status: 400, error: 'VALIDATION_ERROR', message: /name/ },
    { url: '/api/admin/roles/999', status: 404, error: 'ROLE_NOT_FOUND' },
    { url: '/api/admin/roles/999', method: 'PATCH', body: { name: 'B' }, status: 404, error: 'ROLE_NOT_FOUND' },
    { url: '/api/admin/roles/999', method: 'DELETE', status: 404, error: 'ROLE_NOT_FOUND' },
    { url: '/api/admin/roles/abc', method: 'DELETE', status: 400, error: 'VALIDATION_ERROR' },
    { url: `/api/admin/roles/${vip.id}`, method: 'PATCH', body: { slug: 'other' }, status: 409, error: 'CONFLICT' },
  ]);
  t.strictSame(await snapshot(app, USERS_TABLES), before, 'nothing changed by the failed calls');

  const key = await apiKey(app);
  const res = await call(app, '/api/admin/roles', { key, body: { name: 'Sneaky' } });
  t.equal(res.statusCode, 403);
  t.equal(res.json().error, 'FORBIDDEN');
});

t.test('admin users: isVerified and linked accounts', async (t) => {
  const app = await build(t, { features: ['users'] });
  const steve = await newUser(app, 'Steve');
  const alex = await newUser(app, 'Alex');
  let res = await call(app, `/api/admin/users/${steve.id}`, { method: 'PATCH', body: { isVerified: '0' } });
  t.equal(res.statusCode, 200);
  t.equal(res.json().isVerified, '0');
  t.equal(res.json().username, 'Steve', 'answers with the profile');
  res = await call(app, `/api/admin/users/${steve.id}`, { method: 'PATCH', body: { isVerified: true }, as: 'json' });
  t.equal(res.json().isVerified, '1');

  res = await call(app, `/api/admin/users/${steve.id}/linked-accounts/chat`, { method: 'PUT', body: { externalID: '111111111111111111' } });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json().linkedAccounts, { chat: '111111111111111111' });
  res = await call(app, `/api/admin/users/${steve.id}/linked-accounts/forum`, { method: 'PUT', body: { externalID: 'steve99' }, as: 'json' });
  t.strictSame(res.json().linkedAccounts, { chat: '111111111111111111', forum: 'steve99' });
  t.equal((await usersService(app).findByLinkedAccount('chat', '111111111111111111'))?.id, steve.id);

  res = await call(app, `/api/admin/users/${alex.id}/linked-accounts/chat`, { method: 'PUT', body: { externalID: '111111111111111111' } });
  t.strictSame(res.json().linkedAccounts, { chat: '111111111111111111' }, 'an external account links to one user at a time');
  res = await call(app, `/api/users/?userID=${steve.id}`);
  t.strictSame(res.json().linkedAccounts, { forum: 'steve99' });

  res = await call(app, `/api/admin/users/${steve.id}/linked-accounts/forum`, { method: 'DELETE' });
  t.equal(res.statusCode, 200);
  t.strictSame(res.json().linkedAccounts, {});

  const before = await snapshot(app, USERS_TABLES);
  await expectErrors(t, app, [
    { url: `/api/admin/users/${steve.id}/linked-accounts/forum`, method: 'DELETE', status: 404, error: 'NOT_FOUND' },
    { url: '/api/admin/users/999', method: 'PATCH', body: { isVerified: '1' }, status: 404, error: 'USER_NOT_FOUND' },
    { url: `/api/admin/users/${steve.id}`, method: 'PATCH', body: { isVerified: 'maybe' }, status: 400, error: 'VALIDATION_ERROR' },
    { url: `/api/admin/users/${steve.id}`, method: 'PATCH', body: {}, status: 400, error: 'VALIDATION_ERROR' },
    { url: '/api/admin/users/999/linked-accounts/chat', method: 'PUT', body: { externalID: '1' }, status: 404, error: 'USER_NOT_FOUND' },
    { url: `/api/admin/users/${steve.id}/linked-accounts/chat`, method: 'PUT', body: {}, status: 400, error: 'VALIDATION_ERROR' },
    { url: `/api/admin/users/${steve.id}/linked-accounts/chat`, method: 'PUT', body: { externalID: 'x'.repeat(65) }, status: 400, error: 'VALIDATION_ERROR' },
    { url: `/api/admin/users/${steve.id}/linked-accounts/Bad%20Name`, method: 'PUT', body: { externalID: '1' }, status: 400, error: 'VALIDATION_ERROR' },
    { url: '/api/admin/users/999/linked-accounts/chat', method: 'DELETE', status: 404, error: 'USER_NOT_FOUND' },
  ]);
  t.strictSame(await snapshot(app, USERS_TABLES), before, 'nothing changed by the failed calls');
});
