/**
 * Values made to break out of SQL, sent through real routes: every one is stored and returned
 * byte for byte, finds nothing it does not name, and changes nothing else. On MySQL/MariaDB the
 * same runs again with NO_BACKSLASH_ESCAPES, where an escaper's `\'` would end the string.
 */
import t, { type Test } from 'tap';
import { build, call, onMysql } from './helper.ts';
import { newUser, rowCount } from './fixtures.ts';

const PAYLOADS = [
  "'",
  "''",
  "\\'",
  '\\',
  "\\\\'; drop table users_accounts; -- ",
  "' or '1'='1",
  '" or ""="',
  "x' union select key_hash, name from core_api_keys -- ",
  "admin'/*",
  '*/ or 1=1 /*',
  '-- comment',
  '%_%',
  "¿'",
  "縷\\'",
  "😀' or 1=1 #",
  "\u00a0'\u2028\u2029",
  'a\r\nb\tc',
  `${"'\\".repeat(4000)}`,
];

async function scenario(t: Test, config: unknown) {
  const app = await build(t, { config });
  const steve = await newUser(app, 'Steve', { cents: 1000 });
  await newUser(app, 'Alex', { cents: 1000 });
  const category = (await call(app, '/api/admin/support/categories', { body: { name: 'Help' }, as: 'json' })).json();
  const server = (
    await call(app, '/api/admin/bazaar/servers', { body: { name: 'Lobby', slug: 'lobby', imageID: '', imageType: '', priority: 0, isActive: '1' }, as: 'json' })
  ).json();
  t.ok(category.id && server.id, 'set-up');
  const accounts = await rowCount(app, 'users_accounts');
  const keys = await rowCount(app, 'core_api_keys');

  for (const [i, evil] of PAYLOADS.entries()) {
    // ASCII only: a line separator in a test name would break the TAP stream.
    const ascii = JSON.stringify(evil.slice(0, 24)).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const label = `payload ${i} (${ascii}${evil.length > 24 ? '...' : ''})`;
    for (const as of ['json', 'urlencoded', 'multipart'] as const) {
      // Stored and read back unchanged.
      const created = await call(app, '/api/support/tickets', {
        body: { accountID: String(steve.id), categoryID: category.id, title: evil.slice(0, 200), message: evil },
        as,
      });
      t.equal(created.statusCode, 200, `${label} ${as}: ticket made`);
      const ticket = (await call(app, `/api/support/tickets/${created.json().data.id}`)).json();
      t.equal(ticket.title, evil.slice(0, 200), `${label} ${as}: title byte for byte`);
      t.equal(ticket.messages[0].message, evil, `${label} ${as}: message byte for byte`);
    }
    const added = await call(app, `/api/bazaar/storages/${steve.id}/items`, {
      body: { serverID: server.id, itemID: 'DIAMOND_SWORD', name: evil.slice(0, 200), lore: evil, amount: 1, durability: 0, maxDurability: 0, base64: 'AAAA' },
      as: 'urlencoded',
    });
    t.equal(added.statusCode, 200, `${label}: bazaar item stored`);
    const items = (await call(app, `/api/bazaar/storages/${steve.id}/items`)).json() as { lore: string; name: string }[];
    t.equal(items.at(-1)!.lore, evil, `${label}: lore byte for byte`);

    // Lookups by a crafted value find nothing and reveal nothing.
    for (const url of [
      `/api/users?username=${encodeURIComponent(evil)}`,
      `/api/credits?username=${encodeURIComponent(evil)}`,
      `/api/integrations/chat/users/${encodeURIComponent(evil.slice(0, 60)) || 'x'}`,
    ]) {
      const res = await call(app, url);
      t.ok([400, 404].includes(res.statusCode), `${label}: ${url.slice(0, 40)} finds nothing (${res.statusCode})`);
      t.notMatch(res.body, /\$argon2|[0-9a-f]{64}|ck_/, `${label}: nothing leaks`);
    }
    const sent = await call(app, '/api/credits/send', { body: { sender_username: 'Steve', target_username: evil, amount: '1.00' }, as: 'urlencoded' });
    t.ok([400, 404].includes(sent.statusCode), `${label}: a crafted credits target is refused (${sent.statusCode})`);
    const login = await call(app, '/api/auth/login', { body: { username: evil, password: evil, ip: evil.slice(0, 45), useragent: evil }, as: 'urlencoded' });
    t.ok([400, 404, 429].includes(login.statusCode), `${label}: login with it fails (${login.statusCode})`);
    const session = await call(app, '/api/auth/sessions', { body: { userID: String(steve.id), ip: evil.slice(0, 45), useragent: evil }, as: 'json' });
    t.ok([200, 201, 400].includes(session.statusCode), `${label}: a session with it (${session.statusCode})`);
  }

  t.equal(await rowCount(app, 'users_accounts'), accounts, 'no account made or removed');
  t.equal(await rowCount(app, 'core_api_keys'), keys, 'no key touched');
  t.equal((await call(app, '/api/credits?username=Steve')).json().raw_credits, 10, "Steve's balance is as it was");
  t.equal((await call(app, '/api/credits?username=Alex')).json().raw_credits, 10, "Alex's balance is as it was");
  const items = (await call(app, `/api/bazaar/storages/${steve.id}/items`)).json() as unknown[];
  t.equal(items.length, PAYLOADS.length, 'exactly the items sent, in the right storage');
}

t.test('crafted values are data, never SQL', (t) => scenario(t, {}));

t.test('the same with NO_BACKSLASH_ESCAPES in sql_mode', { skip: !onMysql && 'MySQL/MariaDB only' }, (t) =>
  scenario(t, { database: { sqlMode: 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES' } }),
);
