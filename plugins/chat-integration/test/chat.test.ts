import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { type ENCODINGS, apiKey, build, call } from '../../../test/helper.ts';
import { PERMANENT, addSeconds, now } from '../../../core/format.ts';
import { created, newUser } from '../../../test/fixtures.ts';
import { creditsRef } from '../../credits/contract.ts';
import { usersRef } from '../../users/contract.ts';
import { ChatIntegrationSetting } from '../entities.ts';

const FEATURES = ['users', 'chat-integration'];
const DEFAULT_SETTINGS = {
  roleSyncingStatus: false,
  syncedRoleID: '',
  ticketStatus: false,
  ticketCategoryID: '',
  ticketStaffRoleIDs: [],
  guildID: '',
  setNicknameStatus: false,
};

async function role(app: FastifyInstance, body: Record<string, unknown>): Promise<number> {
  return Number((await created(app, '/api/admin/roles', body, 'json')).id);
}

async function linkedUser(app: FastifyInstance, username: string, chatId: string): Promise<number> {
  const { id } = await newUser(app, username, { creationIP: '10.1.2.3' });
  await app.services.get(usersRef).linkAccount(id, 'chat', chatId);
  return id;
}

t.test('chat user: profile, credit, avatar and live roles of the linked user', async (t) => {
  const app = await build(t, { features: FEATURES });
  // The credits peer swapped for a stand-in of the same ref: this test is about what the chat user shows.
  const balances = new Map<number, number>();
  app.services.replace(creditsRef, {
    balance: async (userId) => balances.get(userId) ?? 0,
    balances: async (ids) => new Map(ids.map((i) => [i, balances.get(i) ?? 0])),
    change: async () => {
      throw new Error('not used');
    },
    takeUpTo: async () => {
      throw new Error('not used');
    },
    history: async () => {
      throw new Error('not used');
    },
    inCirculation: async () => {
      throw new Error('not used');
    },
  });
  const users = app.services.get(usersRef);
  const id = await linkedUser(app, 'Steve_1', '111111111111111111');
  const vip = await role(app, { name: 'VIP', priority: 5, chatRoleID: '900000000000000001' });
  const mvp = await role(app, { name: 'MVP', priority: 9, chatRoleID: '900000000000000002' });
  const old = await role(app, { name: 'Old', priority: 1 });
  const expiry = addSeconds(now(), 3600);
  await users.grantRole(id, vip);
  await users.grantRole(id, mvp, expiry);
  await users.grantRole(id, old, addSeconds(now(), -60));
  balances.set(id, 1250);

  const res = await call(app, '/api/integrations/chat/users/111111111111111111', { key: await apiKey(app) });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.same(
    body,
    {
      id: String(id),
      username: 'Steve_1',
      realname: 'Steve_1',
      email: 'steve_1@example.com',
      credit: '12.50',
      avatar: 'https://mc-heads.net/avatar/Steve_1/100',
      isVerified: '1',
      authStatus: '0',
      creationIP: '10.1.2.3',
      creationDate: body.creationDate,
      chatUserID: '111111111111111111',
      roles: [
        { id: String(mvp), name: 'MVP', slug: 'mvp', chatRoleID: '900000000000000002', expiryDate: expiry },
        { id: String(vip), name: 'VIP', slug: 'vip', chatRoleID: '900000000000000001', expiryDate: PERMANENT },
      ],
      // The Kotlin wrapper's `User` requires them, as on /api/users (docs/clients.md).
      uuid: '',
      lastlogin: '',
      x: '',
      y: '',
      z: '',
      world: '',
      isLogged: '0',
    },
    'expired roles are left out; the permanent sentinel is byte for byte',
  );
  t.match(body.creationDate, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
});

t.test('chat user: times in the site time zone, credit 0.00 without the credits feature, avatar template', async (t) => {
  const app = await build(t, {
    features: FEATURES,
    config: { plugins: { 'chat-integration': { avatarUrl: 'https://cdn.example/{id}/{username}.png' } } },
  });
  const id = await linkedUser(app, 'alex', '222');
  const vip = await role(app, { name: 'VIP' });
  await app.services.get(usersRef).grantRole(id, vip, '2030-01-01 12:00:00');
  await app.services.get(usersRef).grantRole(id, await role(app, { name: 'Forever' }));
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { timezone: 'Europe/Berlin' }, as: 'json' })).statusCode, 200);

  const body = (await call(app, '/api/integrations/chat/users/222')).json();
  t.equal(body.credit, '0.00');
  t.equal(body.avatar, `https://cdn.example/${id}/alex.png`);
  t.same(body.roles.map((r: { expiryDate: string }) => r.expiryDate).sort(), [PERMANENT, '2030-01-01 13:00:00']);
});

t.test('chat user: unknown and unlinked ids are USER_NOT_FOUND', async (t) => {
  const app = await build(t, { features: FEATURES });
  const users = app.services.get(usersRef);
  const id = await linkedUser(app, 'steve', '333');
  await users.linkAccount(id, 'game', '444');
  for (const chatId of ['999', '444', 'not-a-snowflake', '%27%3B--']) {
    const res = await call(app, `/api/integrations/chat/users/${chatId}`);
    t.equal(res.statusCode, 404, chatId);
    t.same(res.json(), { status: false, error: 'USER_NOT_FOUND', message: res.json().message }, chatId);
  }
  const nul = await call(app, '/api/integrations/chat/users/a%00b');
  t.equal(nul.statusCode, 400, 'a NUL in the id is malformed input, not a fault');
  t.equal(nul.json().error, 'VALIDATION_ERROR');
  await users.unlinkAccount(id, 'chat');
  t.equal((await call(app, '/api/integrations/chat/users/333')).json().error, 'USER_NOT_FOUND', 'an unlinked account is not found');
});

t.test('chat roles: every role with its styles and chat role ID', async (t) => {
  const app = await build(t, { features: FEATURES });
  t.same((await call(app, '/api/integrations/chat/roles')).json(), []);
  const vip = await role(app, { name: 'VIP', priority: 5, chatRoleID: '901', usernameCSS: 'color: gold', badgeCSS: 'background: #000' });
  const member = await role(app, { name: 'Member' });
  const res = await call(app, '/api/integrations/chat/roles', { key: await apiKey(app) });
  t.equal(res.statusCode, 200);
  t.same(
    res.json().sort((a: { id: string }, b: { id: string }) => Number(a.id) - Number(b.id)),
    [
      { id: String(vip), name: 'VIP', slug: 'vip', usernameCSS: 'color: gold', badgeCSS: 'background: #000', priority: '5', chatRoleID: '901' },
      { id: String(member), name: 'Member', slug: 'member', usernameCSS: null, badgeCSS: null, priority: '0', chatRoleID: '' },
    ],
  );
});

t.test('chat settings: defaults, JSON types, admin changes in every encoding', async (t) => {
  const app = await build(t, { features: FEATURES });
  const key = await apiKey(app);
  t.same((await call(app, '/api/integrations/chat/settings', { key })).json(), DEFAULT_SETTINGS);
  t.same((await call(app, '/api/admin/integrations/chat/settings')).json(), { status: true, data: DEFAULT_SETTINGS });

  const patches: [(typeof ENCODINGS)[number], Record<string, unknown>, Record<string, unknown>][] = [
    ['multipart', { roleSyncingStatus: 'true', ticketStaffRoleIDs: ['11', '12'] }, { roleSyncingStatus: true, ticketStaffRoleIDs: ['11', '12'] }],
    [
      'urlencoded',
      { ticketStatus: '1', ticketCategoryID: '777', ticketStaffRoleIDs: '13' },
      { ticketStatus: true, ticketCategoryID: '777', ticketStaffRoleIDs: ['13'] },
    ],
    [
      'json',
      { roleSyncingStatus: false, syncedRoleID: '555', ticketStaffRoleIDs: [] },
      { roleSyncingStatus: false, syncedRoleID: '555', ticketStaffRoleIDs: [] },
    ],
    ['urlencoded', { ticketStatus: 'false', ticketStaffRoleIDs: '' }, { ticketStatus: false, ticketStaffRoleIDs: [] }],
    // What the chat bot needs to remove expired roles and to set nicknames (a JSON string and a JSON boolean).
    ['multipart', { guildID: '111111111111111111', setNicknameStatus: 'true' }, { guildID: '111111111111111111', setNicknameStatus: true }],
    ['json', { setNicknameStatus: false }, { setNicknameStatus: false }],
  ];
  let expected: Record<string, unknown> = { ...DEFAULT_SETTINGS };
  for (const [as, body, change] of patches) {
    expected = { ...expected, ...change };
    const res = await call(app, '/api/admin/integrations/chat/settings', { method: 'PATCH', body, as });
    t.equal(res.statusCode, 200, as);
    t.same(res.json(), { status: true, data: expected }, `${as}: ${JSON.stringify(body)}`);
    t.same((await call(app, '/api/integrations/chat/settings', { key })).json(), expected, 'the public endpoint agrees');
  }
});

t.test('chat settings: bad values are refused and change nothing; admin scope needed', async (t) => {
  const app = await build(t, { features: FEATURES });
  const key = await apiKey(app);
  for (const body of [
    { roleSyncingStatus: 'maybe' },
    { setNicknameStatus: 'sometimes' },
    { guildID: 'not a guild!' },
    { syncedRoleID: 'has spaces' },
    { ticketStaffRoleIDs: ['ok', 'not ok!'] },
    { ticketCategoryID: 'x'.repeat(65) },
    { ticketStatus: true, syncedRoleID: { a: 1 } },
  ]) {
    const res = await call(app, '/api/admin/integrations/chat/settings', { method: 'PATCH', body, as: 'json' });
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.equal(res.json().error, 'VALIDATION_ERROR');
  }
  t.same((await call(app, '/api/integrations/chat/settings')).json(), DEFAULT_SETTINGS, 'nothing changed');
  const forbidden = await call(app, '/api/admin/integrations/chat/settings', { method: 'PATCH', body: { ticketStatus: true }, key });
  t.equal(forbidden.statusCode, 403);
  t.equal(forbidden.json().error, 'FORBIDDEN');
  t.equal((await call(app, '/api/admin/integrations/chat/settings', { key })).statusCode, 403);
  t.equal((await call(app, '/api/integrations/chat/settings', { key: null })).json().error, 'INVALID_API_KEY');
});

t.test('chat settings: defaults come from the feature options; a hand-broken stored value falls back', async (t) => {
  const app = await build(t, {
    features: FEATURES,
    config: { plugins: { 'chat-integration': { settings: { ticketStatus: true, ticketStaffRoleIDs: ['42'] } } } },
  });
  t.same((await call(app, '/api/integrations/chat/settings')).json(), { ...DEFAULT_SETTINGS, ticketStatus: true, ticketStaffRoleIDs: ['42'] });
  await ChatIntegrationSetting.insertMany(app.db, [
    { name: 'ticketCategoryID', value: '12' },
    { name: 'syncedRoleID', value: 'not json' },
  ]);
  t.same((await call(app, '/api/integrations/chat/settings')).json(), { ...DEFAULT_SETTINGS, ticketStatus: true, ticketStaffRoleIDs: ['42'] });
});
